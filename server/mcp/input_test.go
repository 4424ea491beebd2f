package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/server"
	mcpbinding "github.com/caddy-a2a/caddy-a2a/server/mcp"
	"github.com/caddy-a2a/caddy-a2a/server/servertest"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

func TestMCPMissingArguments(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	for _, version := range mcpVersions {
		t.Run(version, func(t *testing.T) {
			var asked []*mcp.ElicitParams
			answer := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"city": "Tokyo"}}
			cs := connectMCP(t, a, version, "", &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = append(asked, req.Params)
					return answer, nil
				}})

			res := callTool(t, cs, "weather", nil)
			if got := texts(res); res.IsError || len(got) == 0 || !strings.HasPrefix(got[0], "Tokyo: ") {
				t.Fatalf("result = %+v, texts %q", res, got)
			}
			if len(asked) != 1 {
				t.Fatalf("asked %d times", len(asked))
			}
			schema, _ := json.Marshal(asked[0].RequestedSchema)
			if asked[0].Mode != "form" || !strings.Contains(asked[0].Message, "city") || !strings.Contains(string(schema), `"required":["city"]`) {
				t.Errorf("asked %+v, schema %s", asked[0], schema)
			}
			// The answer went to the task that asked: one task, two messages.
			taskID, _ := res.Meta[mcpbinding.TaskIDMeta].(string)
			task, err := a.Tasks.Get("", taskID, nil)
			if err != nil || len(task.History) != 4 { // the call, the question, the answer, the weather
				t.Errorf("task %q: %v, history %d", taskID, err, len(task.History))
			}

			// A value the skill cannot use is the caller's to correct: an
			// error result, not a question for the user.
			before := len(asked)
			res = callTool(t, cs, "user", map[string]any{"id": "one"})
			taskID, _ = res.Meta[mcpbinding.TaskIDMeta].(string)
			if got := texts(res); !res.IsError || len(got) != 1 || !strings.Contains(got[0], "id") || len(asked) != before {
				t.Errorf("invalid argument: result = %+v, texts %q, asked %d times", res, got, len(asked)-before)
			}
			if task, err := a.Tasks.Get("", taskID, nil); err != nil || task.Status.State != a2a.TaskStateCanceled {
				t.Errorf("the task of invalid arguments %q: %v, %v", taskID, err, task)
			}

			answer = &mcp.ElicitResult{Action: "decline"}
			res = callTool(t, cs, "weather", nil)
			taskID, _ = res.Meta[mcpbinding.TaskIDMeta].(string)
			if got := texts(res); !res.IsError || len(got) != 1 || !strings.Contains(got[0], "decline") {
				t.Errorf("declined: result = %+v, texts %q", res, got)
			}
			if task, err := a.Tasks.Get("", taskID, nil); err != nil || task.Status.State != a2a.TaskStateCanceled {
				t.Errorf("declined task %q: %v, %v", taskID, err, task)
			}
		})
	}
	for _, version := range mcpVersions {
		t.Run("no elicitation capability at "+version, func(t *testing.T) {
			cs := connectMCP(t, a, version, "", nil)
			res := callTool(t, cs, "weather", nil)
			if got := texts(res); !res.IsError || len(got) != 1 || !strings.Contains(got[0], "city") {
				t.Errorf("result = %+v, texts %q", res, got)
			}
			taskID, _ := res.Meta[mcpbinding.TaskIDMeta].(string)
			if task, err := a.Tasks.Get("", taskID, nil); err != nil || task.Status.State != a2a.TaskStateCanceled {
				t.Errorf("the task %q: %v, %v", taskID, err, task)
			}
		})
	}
}

// What a call that lacks arguments is told says what its client can do:
// over A2A, reply on the task; over MCP, which has no task to reply on,
// answer the input request, or else call the tool again with the
// arguments.
func TestMCPAskTexts(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	const (
		facts   = `Skill "weather" needs the argument city (string): `
		a2aHint = ` Reply on this task with data such as {"city": …}, or with the value as text.`
		again   = ` Call the tool again with {"city": …} in its arguments.`
		answer  = ` Answer this request to go on, or decline it to cancel the call.`
	)
	ans := a.Call("1.0", "SendMessage", map[string]any{"message": servertest.Message("1.0", "weather", map[string]any{})})
	if parts := servertest.StatusParts(servertest.TaskOf("1.0", ans.Result)); len(parts) == 0 ||
		!strings.HasPrefix(fmt.Sprint(parts[0]["text"]), facts) || !strings.HasSuffix(fmt.Sprint(parts[0]["text"]), a2aHint) {
		t.Errorf("over A2A: %v; want %q…%q", parts, facts, a2aHint)
	}
	for _, version := range mcpVersions {
		t.Run(version, func(t *testing.T) {
			res := callTool(t, connectMCP(t, a, version, "", nil), "weather", nil)
			if got := texts(res); !res.IsError || len(got) != 1 || !strings.HasPrefix(got[0], facts) || !strings.HasSuffix(got[0], again) {
				t.Errorf("no elicitation: %q; want %q…%q", got, facts, again)
			}
			res = callTool(t, connectMCP(t, a, version, "", nil), "user", map[string]any{"id": "one"})
			if got := texts(res); len(got) != 1 || !strings.HasSuffix(got[0], ` Call the tool again with {"id": …} in its arguments.`) {
				t.Errorf("an invalid argument: %q", got)
			}
			var asked string
			cs := connectMCP(t, a, version, "", &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = req.Params.Message
					return &mcp.ElicitResult{Action: "cancel"}, nil
				}})
			callTool(t, cs, "weather", nil)
			if !strings.HasPrefix(asked, facts) || !strings.HasSuffix(asked, answer) {
				t.Errorf("the elicitation: %q; want %q…%q", asked, facts, answer)
			}
		})
	}
}

func TestMCPRequestState(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	cs := connectMCP(t, a, mcpStateless, "", &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, nil }})
	res := callTool(t, cs, "weather", nil)
	if !res.NeedsInput() || !strings.HasPrefix(res.RequestState, "a2a-task:") {
		t.Fatalf("result = %+v", res)
	}
	answer := mcp.InputResponseMap{"city": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"city": "Paris"}}}
	for _, tc := range []struct{ name, tool, state, want string }{
		{"not ours", "weather", "something", "requeststate"},
		{"too long", "weather", res.RequestState + strings.Repeat("x", 300), "requeststate"},
		{"unknown task", "weather", "a2a-task:nope/1", "not found"},
		{"another tool's task", "user", res.RequestState, "another tool"},
		{"tampered", "weather", res.RequestState + "-TAMPERED", "stale"},
		{"no round", "weather", strings.Split(res.RequestState, "/")[0], "requeststate"},
	} {
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.tool, InputResponses: answer, RequestState: tc.state})
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	// An answer whose action is none of the three is an error in the
	// call; the task still waits.
	bogus := mcp.InputResponseMap{"city": &mcp.ElicitResult{Action: "bogus"}}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "weather", InputResponses: bogus, RequestState: res.RequestState}); err == nil ||
		!strings.Contains(err.Error(), `action "bogus"`) {
		t.Errorf("an answer with action bogus: %v", err)
	}
	// Responses to nothing it asked: the same requests again.
	again, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "weather", RequestState: res.RequestState,
		InputResponses: mcp.InputResponseMap{"town": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"town": "Paris"}}}})
	if err != nil || !again.NeedsInput() || again.InputRequests["city"] == nil {
		t.Errorf("answered nothing asked: %v, %+v", err, again)
	}
	done, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "weather", InputResponses: answer, RequestState: res.RequestState})
	if err != nil || done.IsError || !strings.HasPrefix(texts(done)[0], "Paris: ") {
		t.Errorf("answered: %v, %+v", err, done)
	}
	// Once answered, the round's state is stale.
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "weather", InputResponses: answer, RequestState: res.RequestState}); err == nil ||
		!strings.Contains(err.Error(), "stale") {
		t.Errorf("the answered round's state again: %v", err)
	}
}

// A call that lacks several arguments gets an input request for each,
// keyed by its name; an answer to some of them is a round, and the next
// asks for the rest, with a state of its own.
func TestMCPInputRequestPerArgument(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	cs := connectMCP(t, a, mcpStateless, "", &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, nil }})
	first := callTool(t, cs, "place_order", map[string]any{})
	if !first.NeedsInput() || len(first.InputRequests) != 2 {
		t.Fatalf("result = %+v", first)
	}
	for _, name := range []string{"item", "quantity"} {
		asked, _ := first.InputRequests[name].(*mcp.ElicitParams)
		schema, _ := json.Marshal(asked.RequestedSchema)
		if asked == nil || !strings.Contains(string(schema), `"required":["`+name+`"]`) || strings.Count(string(schema), `"type"`) != 2 {
			t.Errorf("the request for %s: %+v, schema %s", name, asked, schema)
		}
	}
	// A client may name the one value of a form otherwise.
	second, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "place_order", RequestState: first.RequestState,
		InputResponses: mcp.InputResponseMap{"item": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"value": "tea"}}}})
	if err != nil || !second.NeedsInput() || len(second.InputRequests) != 1 || second.InputRequests["quantity"] == nil ||
		second.RequestState == first.RequestState {
		t.Fatalf("after the item: %v, %+v", err, second)
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "place_order", RequestState: first.RequestState,
		InputResponses: mcp.InputResponseMap{"quantity": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"quantity": 2}}}}); err == nil ||
		!strings.Contains(err.Error(), "stale") {
		t.Errorf("the first round's state in the second: %v", err)
	}
	done, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "place_order", RequestState: second.RequestState,
		InputResponses: mcp.InputResponseMap{"quantity": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"quantity": 2}}}})
	if err != nil || done.IsError || !strings.Contains(texts(done)[0], "2 × tea") {
		t.Errorf("after the quantity: %v, %+v", err, done)
	}
}

// A call on a session whose client never answers the input request waits
// no longer than its task waits for input, nor past the server's shutdown
// or its client's cancel, and its task is then canceled: nothing is left
// holding a request or a live task.
func TestMCPInputWaitIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(a *servertest.Agent, cancel context.CancelFunc) // ends the wait; nil: its bound does
	}{
		{"bound", nil},
		{"shutdown", func(a *servertest.Agent, _ context.CancelFunc) { a.Handler.(*server.Handler).Shutdown() }},
		{"client's cancel", func(_ *servertest.Agent, cancel context.CancelFunc) { cancel() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The bound is short only where it is what ends the wait.
			wait := time.Minute
			if tc.end == nil {
				wait = 300 * time.Millisecond
			}
			var manager *tasks.Manager
			a := servertest.NewAgent(t, func(cfg *server.Config) {
				withMCP(cfg)
				manager = tasks.NewManager(tasks.Options{MaxInputWait: wait})
				t.Cleanup(manager.Close)
				cfg.Tasks = manager
			})
			asked, gone := make(chan struct{}, 1), make(chan struct{})
			cs := connectMCP(t, a, mcpStateful, "", &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked <- struct{}{}
					<-gone // a user who never answers, until the test ends
					return nil, errors.New("gone")
				}})
			t.Cleanup(func() { close(gone) }) // before the session closes, which waits for the handler
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			ended := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{}})
				ended <- err
			}()
			select {
			case <-asked:
			case <-ctx.Done():
				t.Fatal("the client was never asked")
			}
			if tc.end != nil {
				tc.end(a, cancel)
			}
			if err := <-ended; err == nil {
				t.Fatal("the call answered")
			}
			// The client may learn its call ended before the server has
			// canceled the task: its events say when.
			list, err := manager.List("", &a2a.ListTasksRequest{})
			if err != nil || len(list.Tasks) != 1 {
				t.Fatalf("tasks: %v, %v", list, err)
			}
			taskID := list.Tasks[0].ID
			if _, sub, err := manager.Subscribe("", taskID); err == nil {
				waitEnd(t, sub)
			}
			if task, err := manager.Get("", taskID, nil); err != nil || task.Status.State != a2a.TaskStateCanceled {
				t.Errorf("task %s: %v, %v; want it canceled", taskID, task.Status.State, err)
			}
		})
	}
}

// waitEnd reads sub's events until its final one, for 30 s at most.
func waitEnd(t *testing.T, sub *tasks.Subscription) {
	t.Helper()
	defer sub.Close()
	bound := time.After(30 * time.Second)
	for {
		select {
		case _, open := <-sub.Events():
			if !open {
				return
			}
		case <-bound:
			t.Fatal("the task had no final event within 30 s")
		}
	}
}

// On a session, where the SDK asks the user each request of a round in
// turn (elicitation/create), the arguments are asked in one form.
func TestMCPInputRequestOneFormOnSession(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	var asked []string
	cs := connectMCP(t, a, mcpStateful, "", &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			schema, _ := json.Marshal(req.Params.RequestedSchema)
			asked = append(asked, string(schema))
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"item": "tea", "quantity": 2}}, nil
		}})
	res := callTool(t, cs, "place_order", map[string]any{})
	if got := texts(res); res.IsError || len(got) == 0 || !strings.Contains(got[0], "2 × tea") ||
		len(asked) != 1 || !strings.Contains(asked[0], `"required":["item","quantity"]`) {
		t.Errorf("result = %+v, texts %q, asked %q", res, got, asked)
	}
}

// Input responses without a request state answer the arguments they are
// keyed by; those that name none are ignored.
func TestMCPInputResponsesWithoutState(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	cs := connectMCP(t, a, mcpStateless, "", &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, nil }})
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{},
		InputResponses: mcp.InputResponseMap{
			"city":  &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Paris"}},
			"extra": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"foo": "bar"}},
		}})
	if err != nil || res.IsError || res.NeedsInput() || !strings.HasPrefix(texts(res)[0], "Paris: ") {
		t.Errorf("%v, %+v", err, res)
	}
}

// A form holds only what MCP's forms define (PrimitiveSchemaDefinition):
// a field keeps the keys of its type (not pattern, exclusiveMinimum, a
// number's enum, or a format forms do not define such as uuid, while date
// stays), an array of strings with an enum stays a multi-select,
// and a union or an object is asked as a string holding JSON, read back as
// JSON; so the Go SDK's client, which refuses a form with a nested or a
// union field, answers it, and the answers are still checked in full.
func TestMCPMissingArgumentsOnlyFormFields(t *testing.T) {
	const skills = `
upstream:
  url: http://upstream.invalid
skills:
  - id: order
    description: takes an order
    arguments:
      id: {type: string, required: true, format: uuid}
      day: {type: string, required: true, format: date}
      code: {type: string, required: true, pattern: '^[A-Z]{3}$', max_length: 3}
      count: {type: integer, required: true, exclusive_minimum: 0, maximum: 9, enum: [1, 2, 3]}
      address: {type: object, required: true, properties: {city: {type: string, required: true}}}
      meta: {type: [object, string], required: true}
      tags: {type: array, required: true, items: {type: string, enum: [a, b]}}
    request: {method: POST, path: "/orders/{args.id}/{args.day}", body: args}
`
	front := httptest.NewServer(servertest.MemoryHandler(t, "order.yaml", skills, servertest.Answering(`{"placed":true}`), withMCP))
	t.Cleanup(front.Close)
	for _, version := range mcpVersions {
		t.Run(version, func(t *testing.T) {
			var mu sync.Mutex // at 2026-07-28, the requests are answered at once
			var schemas []string
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					schema, _ := json.Marshal(req.Params.RequestedSchema)
					mu.Lock()
					schemas = append(schemas, string(schema))
					mu.Unlock()
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{
						"id": "0f8fad5b-d9cb-469f-a165-70867728950e", "day": "2026-01-31", "code": "ABC", "count": 2,
						"address": `{"city": "Paris"}`, "meta": "a note", "tags": []any{"a"}}}, nil
				}})
			cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: front.URL + "/mcp"},
				&mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			res := callTool(t, cs, "order", nil)
			if got := texts(res); res.IsError || len(got) == 0 || !strings.Contains(strings.Join(got, " "), "placed") {
				t.Errorf("result %+v, texts %q", res, got)
			}
			all := strings.Join(schemas, " ")
			for _, left := range []string{"uuid", `"pattern"`, `"exclusiveMinimum"`, `"enum":[1,2,3]`, `"required":["city"]`, `"type":["object"`} {
				if strings.Contains(all, left) {
					t.Errorf("asked with %s: %s", left, all)
				}
			}
			for _, kept := range []string{`"format":"date"`, `"maxLength":3`, `"maximum":9`, `"items":{"enum":["a","b"],"type":"string"}`, `As JSON (object or string)`} {
				if !strings.Contains(all, kept) {
					t.Errorf("asked without %s: %s", kept, all)
				}
			}
		})
	}
}
