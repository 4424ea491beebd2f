package mcp_test

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/server"
	mcpbinding "github.com/caddy-a2a/caddy-a2a/server/mcp"
	"github.com/caddy-a2a/caddy-a2a/server/servertest"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// The MCP protocol versions the binding serves: stateless, and with
// sessions.
const (
	mcpStateless = "2026-07-28"
	mcpStateful  = "2025-11-25"
)

var mcpVersions = []string{mcpStateless, mcpStateful}

// withKey adds an API key to every request of a client.
type withKey struct {
	key  string
	next http.RoundTripper
}

func (k withKey) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-API-Key", k.key)
	return k.next.RoundTrip(r)
}

// connectMCP connects the SDK's client to the agent's MCP endpoint at
// version, sending key ("" none) with every request.
func connectMCP(t *testing.T, a *servertest.Agent, version, key string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	httpClient := a.HTTP
	if key != "" {
		httpClient = &http.Client{Transport: withKey{key, a.HTTP.Transport}}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: a.URL + "/mcp", HTTPClient: httpClient},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connecting at %s: %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("connected at %s, want %s", got, version)
	}
	// 2026-07-28 is served without sessions, the versions before with.
	if stateful := cs.ID() != ""; stateful != (version < mcpStateless) {
		t.Fatalf("at %s, the session id is %q", version, cs.ID())
	}
	return cs
}

// connectSession opens a 2025-11-25 session without the client's own
// standalone stream, for a test that opens that stream itself
// (openStream) and watches it.
func connectSession(t *testing.T, a *servertest.Agent) (*mcp.ClientSession, error) {
	t.Helper()
	return mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: a.URL + "/mcp", HTTPClient: a.HTTP, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: mcpStateful})
}

// openStream opens cs's standalone stream (GET), which must be answered
// 200.
func openStream(t *testing.T, ctx context.Context, a *servertest.Agent, cs *mcp.ClientSession) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.URL+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", mcpStateful)
	req.Header.Set("Mcp-Session-Id", cs.ID())
	resp, err := a.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("GET %s/mcp: %s", a.URL, resp.Status)
	}
	return resp
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	return res
}

// texts are a result's text contents.
func texts(res *mcp.CallToolResult) []string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return out
}

func TestMCPListTools(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	// Older versions go as 2025-11-25 does, with sessions.
	for _, version := range append(mcpVersions, "2025-06-18", "2025-03-26") {
		t.Run(version, func(t *testing.T) {
			cs := connectMCP(t, a, version, "", nil)
			list, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			tools := map[string]*mcp.Tool{}
			for _, tool := range list.Tools {
				tools[tool.Name] = tool
			}
			for _, want := range []string{"weather", "avatar", "place_order", "fail", "echo", "count", "report"} {
				if tools[want] == nil {
					t.Errorf("tools/list lacks %s: %v", want, slices.Collect(func(yield func(string) bool) {
						for n := range tools {
							yield(n)
						}
					}))
				}
			}
			weather := tools["weather"]
			if weather == nil {
				return
			}
			schema, _ := json.Marshal(weather.InputSchema)
			if !strings.Contains(string(schema), `"required":["city"]`) || weather.Title != "Weather" ||
				!strings.HasPrefix(weather.Description, "Current weather") {
				t.Errorf("weather = %+v, schema %s", weather, schema)
			}
			if ann := weather.Annotations; ann == nil || !ann.ReadOnlyHint || !ann.IdempotentHint || ann.DestructiveHint == nil || *ann.DestructiveHint {
				t.Errorf("weather (GET) annotations = %+v", ann)
			}
			if ann := tools["place_order"].Annotations; ann == nil || ann.ReadOnlyHint {
				t.Errorf("place_order (POST) annotations = %+v", ann)
			}
			if schema, _ := json.Marshal(tools["fail"].InputSchema); string(schema) != `{"type":"object"}` {
				t.Errorf("a skill without arguments has input schema %s", schema)
			}
		})
	}
}

func TestMCPCallTool(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	for _, version := range mcpVersions {
		t.Run(version, func(t *testing.T) {
			cs := connectMCP(t, a, version, "", nil)

			t.Run("json", func(t *testing.T) {
				res := callTool(t, cs, "weather", map[string]any{"city": "Paris"})
				got := texts(res)
				if res.IsError || len(got) != 2 || !strings.HasPrefix(got[0], "Paris: ") || !strings.Contains(got[1], `"city":"Paris"`) {
					t.Fatalf("result = %+v, texts %q", res, got)
				}
				if m, ok := res.StructuredContent.(map[string]any); !ok || m["city"] != "Paris" {
					t.Errorf("structured content = %#v", res.StructuredContent)
				}
				// The call is a task the same caller reads over A2A.
				taskID, _ := res.Meta[mcpbinding.TaskIDMeta].(string)
				ans := a.Call("1.0", "GetTask", map[string]any{"id": taskID})
				if ans.Error != nil || servertest.StateOf(ans.Result) != "TASK_STATE_COMPLETED" {
					t.Errorf("GetTask %q = %+v", taskID, ans)
				}
			})
			t.Run("text", func(t *testing.T) {
				res := callTool(t, cs, "echo", map[string]any{"tags": []string{"a", "b"}})
				if got := texts(res); res.IsError || len(got) == 0 || !strings.Contains(strings.Join(got, " "), "/echo") {
					t.Errorf("result = %+v, texts %q", res, got)
				}
			})
			t.Run("file", func(t *testing.T) {
				res := callTool(t, cs, "avatar", map[string]any{"id": 1})
				var image *mcp.ImageContent
				for _, c := range res.Content {
					if ic, ok := c.(*mcp.ImageContent); ok {
						image = ic
					}
				}
				if res.IsError || image == nil || image.MIMEType != "image/png" || len(image.Data) == 0 {
					t.Errorf("result = %+v", res)
				}
			})
			t.Run("upstream failure", func(t *testing.T) {
				res := callTool(t, cs, "fail", nil)
				if got := texts(res); !res.IsError || len(got) != 1 || !strings.Contains(got[0], "boom") {
					t.Errorf("result = %+v, texts %q", res, got)
				}
			})
			t.Run("arguments not an object", func(t *testing.T) {
				res := callTool(t, cs, "weather", []int{1})
				if got := texts(res); !res.IsError || len(got) != 1 || !strings.Contains(got[0], "object") {
					t.Errorf("result = %+v, texts %q", res, got)
				}
			})
			t.Run("bad argument", func(t *testing.T) {
				res := callTool(t, cs, "user", map[string]any{"id": "one"})
				if got := texts(res); !res.IsError || len(got) == 0 || !strings.Contains(got[0], "id") {
					t.Errorf("result = %+v, texts %q", res, got)
				}
			})
			t.Run("unknown tool", func(t *testing.T) {
				if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "nope"}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
					t.Errorf("error = %v", err)
				}
			})
		})
	}
}

func TestMCPAuth(t *testing.T) {
	a := servertest.NewAuthAgent(t, nil, withMCP)
	t.Run("unauthenticated", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, a.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := a.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || len(resp.Header.Values("WWW-Authenticate")) == 0 {
			t.Errorf("HTTP %d, challenges %q", resp.StatusCode, resp.Header.Values("WWW-Authenticate"))
		}
	})
	for _, version := range mcpVersions {
		t.Run(version, func(t *testing.T) {
			alice := connectMCP(t, a.Agent, version, servertest.AliceKey, nil)
			bob := connectMCP(t, a.Agent, version, servertest.BobKey, nil)
			names := func(cs *mcp.ClientSession) []string {
				list, err := cs.ListTools(t.Context(), nil)
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, tool := range list.Tools {
					out = append(out, tool.Name)
				}
				return out
			}
			if got := names(alice); slices.Contains(got, "admin") || !slices.Contains(got, "secret") {
				t.Errorf("alice's tools: %v", got)
			}
			if got := names(bob); !slices.Contains(got, "admin") {
				t.Errorf("bob's tools: %v", got)
			}
			if _, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "admin"}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
				t.Errorf("alice calling admin: %v", err)
			}
			res := callTool(t, bob, "admin", nil)
			taskID, _ := res.Meta[mcpbinding.TaskIDMeta].(string)
			if res.IsError || taskID == "" {
				t.Fatalf("bob calling admin: %+v", res)
			}
			if ans := a.As(servertest.BobKey, "GetTask", map[string]any{"id": taskID}); ans.Error != nil {
				t.Errorf("bob's GetTask of his call's task: %s", ans.Raw)
			}
			if ans := a.As(servertest.AliceKey, "GetTask", map[string]any{"id": taskID}); ans.Error == nil || ans.Error.Code != a2a.CodeTaskNotFound {
				t.Errorf("alice's GetTask of bob's task: %s", ans.Raw)
			}
		})
	}
	t.Run("a session is its opener's", func(t *testing.T) {
		alice := connectMCP(t, a.Agent, mcpStateful, servertest.AliceKey, nil)
		for key, want := range map[string]int{servertest.AliceKey: http.StatusOK, servertest.BobKey: http.StatusForbidden} {
			req, _ := http.NewRequest(http.MethodPost, a.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", mcpStateful)
			req.Header.Set("Mcp-Session-Id", alice.ID())
			req.Header.Set("X-API-Key", key)
			resp, err := a.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("alice's session with the key of %s: HTTP %d, want %d", key[:3], resp.StatusCode, want)
			}
		}
	})
}

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
	answer := mcp.InputResponseMap{"arguments": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"city": "Paris"}}}
	for _, tc := range []struct{ name, tool, state, want string }{
		{"not ours", "weather", "something", "requeststate"},
		{"too long", "weather", "a2a-task:" + strings.Repeat("x", 300), "requeststate"},
		{"unknown task", "weather", "a2a-task:nope", "not found"},
		{"another tool's task", "user", res.RequestState, "another tool"},
	} {
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.tool, InputResponses: answer, RequestState: tc.state})
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	// An answer whose action is none of the three is an error in the
	// call; the task still waits.
	bogus := mcp.InputResponseMap{"arguments": &mcp.ElicitResult{Action: "bogus"}}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "weather", InputResponses: bogus, RequestState: res.RequestState}); err == nil ||
		!strings.Contains(err.Error(), `action "bogus"`) {
		t.Errorf("an answer with action bogus: %v", err)
	}
	done, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "weather", InputResponses: answer, RequestState: res.RequestState})
	if err != nil || done.IsError || !strings.HasPrefix(texts(done)[0], "Paris: ") {
		t.Errorf("answered: %v, %+v", err, done)
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

func TestMCPProgress(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	for _, version := range mcpVersions {
		t.Run(version, func(t *testing.T) {
			progress := make(chan *mcp.ProgressNotificationParams, 256)
			cs := connectMCP(t, a, version, "", &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
					progress <- req.Params
				}})
			for _, tc := range []struct {
				tool string
				args map[string]any
				want string // in a notification's message
			}{
				{"report", nil, "% done"},               // a polled job
				{"count", map[string]any{"to": 3}, "3"}, // a streamed answer
			} {
				params := &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args}
				params.SetProgressToken("p-" + tc.tool)
				res, err := cs.CallTool(t.Context(), params)
				if err != nil || res.IsError {
					t.Fatalf("%s: %v, %+v", tc.tool, err, res)
				}
				for seen := false; !seen; {
					select {
					case p := <-progress:
						// The client may handle the last notifications of
						// a call after its result.
						seen = p.ProgressToken == "p-"+tc.tool && strings.Contains(p.Message, tc.want)
					case <-t.Context().Done():
						t.Fatalf("%s: no progress says %q", tc.tool, tc.want)
					}
				}
			}
		})
	}
}

func TestMCPCancel(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	a.CancelOnCleanup()
	for _, version := range mcpVersions {
		t.Run(version, func(t *testing.T) {
			cs := connectMCP(t, a, version, "", nil)
			before := a.API.Stats()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			ended := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 30}})
				ended <- err
			}()
			if _, err := a.API.WaitStats(t.Context(), func(s demoapi.Stats) bool { return s.SlowStarted > before.SlowStarted }); err != nil {
				t.Fatal(err)
			}
			cancel()
			if err := <-ended; err == nil {
				t.Error("a canceled call answered")
			}
			// The task's upstream call is canceled with it.
			if _, err := a.API.WaitStats(t.Context(), func(s demoapi.Stats) bool { return s.SlowCanceled > before.SlowCanceled }); err != nil {
				t.Fatal(err)
			}
			list, err := a.Tasks.List("", &a2a.ListTasksRequest{})
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range list.Tasks {
				if skillOfTask(&task) == "slow" && task.Status.State != a2a.TaskStateCanceled {
					t.Errorf("task %s is %s; want it canceled", task.ID, task.Status.State)
				}
			}
		})
	}
}

func skillOfTask(task *a2a.Task) string {
	s, _ := task.Metadata["skill"].(string)
	return s
}

// A request other than initialize without a session, at a version that
// has sessions, is the transport's 400 in JSON-RPC terms, and opens no
// session: the only one the cap allows is still there for initialize.
func TestMCPRequestWithoutSession(t *testing.T) {
	a := servertest.NewAgent(t, func(cfg *server.Config) { withMCPConfig(cfg, mcpbinding.Config{MaxSessions: 1}) })
	for range 3 {
		_, msg := postMCP(t, a, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather","arguments":{"city":"Paris"}}}`,
			"Mcp-Protocol-Version", mcpStateful)
		e, _ := msg["error"].(map[string]any)
		if msg["httpStatus"] != float64(http.StatusBadRequest) || e["code"] != float64(-32600) ||
			!strings.Contains(fmt.Sprint(e["message"]), "tools/call needs a session: send initialize first") {
			t.Errorf("tools/call without a session: %v", msg)
		}
	}
	connectMCP(t, a, mcpStateful, "", nil)
}

func TestMCPSessionCap(t *testing.T) {
	a := servertest.NewAgent(t, func(cfg *server.Config) {
		withMCPConfig(cfg, mcpbinding.Config{MaxSessions: 1, MaxSessionsPerCaller: 2})
	})
	first := connectMCP(t, a, mcpStateful, "", nil)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	transport := &mcp.StreamableClientTransport{Endpoint: a.URL + "/mcp", HTTPClient: a.HTTP}
	if cs, err := client.Connect(t.Context(), transport, &mcp.ClientSessionOptions{ProtocolVersion: mcpStateful}); err == nil {
		cs.Close()
		t.Fatal("a session past the cap was opened")
	} else if !strings.Contains(err.Error(), "Service Unavailable") {
		t.Errorf("past the cap: %v", err)
	}
	// Stateless calls need no session.
	callTool(t, connectMCP(t, a, mcpStateless, "", nil), "weather", map[string]any{"city": "Paris"})
	// A session closed makes room for another.
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	connectMCP(t, a, mcpStateful, "", nil)
}

// No caller holds more than its share of the sessions: past it, 429 for
// that caller alone, until one of its sessions closes.
func TestMCPSessionsPerCaller(t *testing.T) {
	a := servertest.NewAuthAgent(t, nil, func(cfg *server.Config) { withMCPConfig(cfg, mcpbinding.Config{MaxSessionsPerCaller: 2}) })
	open := func(key string) (*mcp.ClientSession, error) {
		client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		return client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: a.URL + "/mcp",
			HTTPClient: &http.Client{Transport: withKey{key, a.HTTP.Transport}}}, &mcp.ClientSessionOptions{ProtocolVersion: mcpStateful})
	}
	connectMCP(t, a.Agent, mcpStateful, servertest.AliceKey, nil)
	second := connectMCP(t, a.Agent, mcpStateful, servertest.AliceKey, nil)
	if cs, err := open(servertest.AliceKey); err == nil {
		cs.Close()
		t.Fatal("alice opened a third session")
	} else if !strings.Contains(err.Error(), "Too Many Requests") {
		t.Errorf("alice's third session: %v", err)
	}
	connectMCP(t, a.Agent, mcpStateful, servertest.BobKey, nil) // others are not locked out
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	connectMCP(t, a.Agent, mcpStateful, servertest.AliceKey, nil)
}

// A full server makes room for a caller that holds fewer sessions than
// another by two or more: the least recently used session of the one that
// holds the most is closed. Callers that hold as many wait.
func TestMCPFullServerMakesRoom(t *testing.T) {
	a := servertest.NewAuthAgent(t, nil, func(cfg *server.Config) {
		withMCPConfig(cfg, mcpbinding.Config{MaxSessions: 3, MaxSessionsPerCaller: 3})
	})
	open := func(key string) (*mcp.ClientSession, error) {
		return mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(),
			&mcp.StreamableClientTransport{Endpoint: a.URL + "/mcp", HTTPClient: &http.Client{Transport: withKey{key, a.HTTP.Transport}},
				DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: mcpStateful})
	}
	var alice [3]*mcp.ClientSession
	for i := range alice {
		cs, err := open(servertest.AliceKey)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		alice[i] = cs
	}
	if _, err := alice[0].ListTools(t.Context(), nil); err != nil { // alice[1] is now the least recently used
		t.Fatal(err)
	}
	bob, err := open(servertest.BobKey)
	if err != nil {
		t.Fatalf("bob, on a server alice filled: %v", err)
	}
	defer bob.Close()
	// It closes once its calls under way end: none here.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		if _, err := alice[1].ListTools(ctx, nil); err != nil {
			if ctx.Err() != nil {
				t.Fatal("alice's least recently used session is still open")
			}
			break
		}
	}
	for _, cs := range []*mcp.ClientSession{alice[0], alice[2], bob} {
		if _, err := cs.ListTools(t.Context(), nil); err != nil {
			t.Errorf("session %s: %v", cs.ID(), err)
		}
	}
	// Alice holds two, bob would too: nobody's session is taken.
	if cs, err := open(servertest.BobKey); err == nil {
		cs.Close()
		t.Error("bob's second session was opened")
	} else if !strings.Contains(err.Error(), "Service Unavailable") {
		t.Errorf("bob's second session: %v", err)
	}
}

func TestMCPTransportLimits(t *testing.T) {
	a := servertest.NewAgent(t, func(cfg *server.Config) {
		withMCPConfig(cfg, mcpbinding.Config{Path: "/tools"})
		cfg.MaxRequestBytes = 1024
	})
	post := func(path, body string, header ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, a.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", mcpStateless)
		req.Header.Set("Mcp-Method", "tools/list")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		req.Host = cmp.Or(req.Header.Get("Host"), req.Host)
		resp, err := a.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	if resp := post("/tools", list); resp.StatusCode != http.StatusOK {
		t.Errorf("tools/list: HTTP %d", resp.StatusCode)
	}
	if resp := post("/tools", list[:len(list)-1]+`,"pad":"`+strings.Repeat("x", 1024)+`"}`); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a body past the cap: HTTP %d", resp.StatusCode)
	}
	if resp := post("/tools", list, "Origin", "https://elsewhere.example", "Sec-Fetch-Site", "cross-site"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-origin request: HTTP %d", resp.StatusCode)
	}
	// DNS rebinding: a name that is not loopback's, on a loopback connection.
	if resp := post("/tools", list, "Host", "agent.example"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a request for another host on loopback: HTTP %d", resp.StatusCode)
	}
	// Another path is JSON-RPC's, as before.
	if resp := post("/mcp", list); resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("/mcp: HTTP %d, %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

func TestMCPConfigErrors(t *testing.T) {
	var cfg server.Config
	servertest.NewAgent(t, func(c *server.Config) { cfg = *c })
	longID := strings.Repeat("a", 129)
	long, err := mapping.Parse("t.yaml", []byte("upstream: {url: http://up}\nskills:\n  - {id: "+longID+", description: d, request: {path: /x}}\n"),
		mapping.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mcp    mcpbinding.Config
		skills *mapping.Skills
		want   string
	}{
		{"relative path", mcpbinding.Config{Path: "mcp"}, nil, "must start with /"},
		{"card path", mcpbinding.Config{Path: server.CardPath}, nil, "card path"},
		{"negative timeout", mcpbinding.Config{SessionTimeout: -1}, nil, "negative"},
		{"negative cap", mcpbinding.Config{MaxSessions: -1}, nil, "negative"},
		{"negative cap per caller", mcpbinding.Config{MaxSessionsPerCaller: -1}, nil, "max_sessions_per_caller: -1 is negative"},
		{"skill id too long", mcpbinding.Config{}, long, `skill "` + longID + `": its id is not an MCP tool name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			withMCPConfig(&c, tc.mcp)
			if tc.skills != nil {
				c.Skills = tc.skills
			}
			_, err := server.New(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// An MCP call is observed by its binding and its MCP method, and with no
// A2A version: MCP speaks none.
func TestMCPObserved(t *testing.T) {
	obs := make(servertest.Observations, 64)
	a := servertest.NewAgent(t, func(cfg *server.Config) { withMCP(cfg); cfg.Observer = obs })
	cs := connectMCP(t, a, mcpStateless, "", nil)
	obs.Expect(t, "start MCP mcp/other ", "end mcp/other  0 span=mcp/other") // server/discover
	callTool(t, cs, "weather", map[string]any{"city": "Paris"})
	obs.Expect(t, "start MCP tools/call ", "annotate weather true", "detach span=tools/call",
		"ended weather completed", "run weather true", "end tools/call  0 span=tools/call")
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	obs.Expect(t, "start MCP tools/list ", "end tools/list  0 span=tools/list")

	// A JSON-RPC error ends the call with its code, in a 400 answer
	// (2026-07-28) as in a 200 one (a session's).
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "nope"}); err == nil {
		t.Fatal("an unknown tool was called")
	}
	obs.Expect(t, "start MCP tools/call ", "end tools/call  -32602 span=tools/call")
	session, err := connectSession(t, a)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	if _, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: "nope"}); err == nil {
		t.Fatal("an unknown tool was called in a session")
	}
	// The handshake's requests (initialize, initialized) come first, their
	// ends and starts interleaved with the call's.
	for got := ""; !strings.HasPrefix(got, "end tools/call "); {
		select {
		case got = <-obs:
			if strings.HasPrefix(got, "end tools/call ") && got != "end tools/call  -32602 span=tools/call" {
				t.Errorf("observed %q; want the call in a session ended with -32602", got)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the call in a session was not observed")
		}
	}

	// An answer the SDK refuses ends the call with an error code.
	req, _ := http.NewRequest(http.MethodPost, a.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "text/plain")
	if resp, err := a.HTTP.Do(req); err != nil || resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}
	obs.Expect(t, "start MCP tools/list ", "end tools/list  -32600 span=tools/list")
}

// A refusal is observed with its own code, as the other bindings' are.
func TestMCPRefusalObserved(t *testing.T) {
	obs := make(servertest.Observations, 64)
	a := servertest.NewAuthAgent(t, nil, func(cfg *server.Config) { withMCP(cfg); cfg.Observer = obs })
	req, _ := http.NewRequest(http.MethodPost, a.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	obs.Expect(t, `auth  "no credentials"`, "end unknown  -31401 span=")
}

// As the server shuts down, the sessions' standalone streams end, which
// its graceful shutdown would otherwise wait for, while a call under way
// still answers on its session. Closing the sessions, which Caddy does as
// it discards a config, before the old server's calls have ended on a
// reload, waits for those calls too.
func TestMCPShutdownEndsStreamsNotCalls(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(*server.Handler)
	}{
		{"Shutdown", (*server.Handler).Shutdown},
		{"Close", (*server.Handler).Close},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := servertest.NewAgent(t, withMCP)
			cs, err := connectSession(t, a)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			stream := openStream(t, t.Context(), a, cs)
			defer stream.Body.Close()

			before := a.API.Stats()
			answered := make(chan error, 1)
			go func() {
				res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 0.5}})
				if err == nil && res.IsError {
					err = fmt.Errorf("the call failed: %v", res.Content)
				}
				answered <- err
			}()
			if _, err := a.API.WaitStats(t.Context(), func(s demoapi.Stats) bool { return s.SlowStarted > before.SlowStarted }); err != nil {
				t.Fatal(err)
			}
			h := a.Handler.(*server.Handler)
			tc.end(h)
			if _, err := io.Copy(io.Discard, stream.Body); err != nil {
				t.Errorf("the stream ended with %v", err)
			}
			// A stream opened since ends at once.
			late := openStream(t, t.Context(), a, cs)
			defer late.Body.Close()
			if _, err := io.Copy(io.Discard, late.Body); err != nil {
				t.Errorf("the late stream ended with %v", err)
			}
			if err := <-answered; err != nil {
				t.Errorf("the call under way: %v", err)
			}

			if tc.name == "Shutdown" {
				h.Close()
			}
			// The session closes as its last request ends, which may be just
			// after its answer reached the client: a request that slips in
			// before is answered, and closes it as it ends.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			for {
				if _, err := cs.ListTools(ctx, nil); err != nil {
					if ctx.Err() != nil {
						t.Fatal("the session stayed open")
					}
					break
				}
			}
			// A session opened since is refused, for the client to retry
			// on the config that replaces this one.
			if _, err := connectSession(t, a); err == nil || !strings.Contains(err.Error(), "Service Unavailable") {
				t.Errorf("opening a session once they closed: %v; want 503", err)
			}
		})
	}
}

// An MCP stream gets an SSE comment every heartbeat interval, as A2A's
// do, so that proxies keep an idle one open: a session's standalone
// stream, and a call's while the skill runs; clients read past them.
func TestMCPStreamsHeartbeat(t *testing.T) {
	a := servertest.NewAgent(t, func(cfg *server.Config) {
		withMCP(cfg)
		cfg.HeartbeatInterval = 10 * time.Millisecond
	})
	a.CancelOnCleanup()
	cs, err := connectSession(t, a)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp := openStream(t, ctx, a, cs)
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	beats := 0
	for beats < 2 && lines.Scan() {
		if lines.Text() == ": keep-alive" {
			beats++
		}
	}
	if beats < 2 {
		t.Fatalf("the standalone stream ended (%v) after %d heartbeats", lines.Err(), beats)
	}
	// A call whose answer comes as a stream, over many heartbeats.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 0.2}})
	if err != nil || res.IsError {
		t.Fatalf("a call with heartbeats on its stream: %v %+v", err, res)
	}
}

// Files become embedded resources or resource links, sound audio, and
// the one data object the structured content.
func TestMCPFileResults(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/doc":
			w.Header().Set("Content-Type", "application/pdf")
			w.Header().Set("Content-Disposition", `attachment; filename="r.pdf"`)
			io.WriteString(w, "%PDF-1.7")
		case "/sound":
			w.Header().Set("Content-Type", "audio/wav")
			io.WriteString(w, "RIFF")
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"url":"https://files.example/r.pdf","items":[1,2]}`)
		}
	}))
	t.Cleanup(upstream.Close)
	skills, err := mapping.Parse("t.yaml", []byte(`upstream: {url: `+upstream.URL+`}
skills:
  - {id: doc, description: d, request: {path: /doc}, response: [{when: "true", state: completed, artifacts: [{name: doc, file: {}}]}]}
  - {id: sound, description: d, request: {path: /sound}, response: [{when: "true", state: completed, artifacts: [{name: s, file: {}}]}]}
  - id: link
    description: d
    request: {path: /link}
    response:
      - when: "true"
        state: completed
        artifacts:
          - {name: link, file: {url: "{response.body.url}", media_type: application/pdf}}
          - {name: items, data: response.body.items}
`), mapping.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(skills.Close)
	a := servertest.NewAgent(t, func(cfg *server.Config) { cfg.Skills = skills; withMCP(cfg) })
	cs := connectMCP(t, a, mcpStateless, "", nil)

	res := callTool(t, cs, "doc", nil)
	if r, ok := res.Content[0].(*mcp.EmbeddedResource); !ok || r.Resource.MIMEType != "application/pdf" ||
		string(r.Resource.Blob) != "%PDF-1.7" || !strings.HasSuffix(r.Resource.URI, "r.pdf") {
		t.Errorf("doc: %+v", res.Content[0])
	}
	res = callTool(t, cs, "sound", nil)
	if s, ok := res.Content[0].(*mcp.AudioContent); !ok || s.MIMEType != "audio/wav" || string(s.Data) != "RIFF" {
		t.Errorf("sound: %+v", res.Content[0])
	}
	res = callTool(t, cs, "link", nil)
	if l, ok := res.Content[0].(*mcp.ResourceLink); !ok || l.URI != "https://files.example/r.pdf" || l.MIMEType != "application/pdf" {
		t.Errorf("link: %+v", res.Content[0])
	}
	// The data is an array, not an object: no structured content.
	if got := texts(res); res.StructuredContent != nil || len(got) != 1 || got[0] != "[1,2]" {
		t.Errorf("link's data: %#v, texts %q", res.StructuredContent, got)
	}
}

// TestMCPOutputSchema: a skill's declared output schema is its tool's,
// and a call whose answer is not one data object is an error result,
// since its client may require the structured content the tool promises.
func TestMCPOutputSchema(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/list" {
			io.WriteString(w, `[1,2]`)
			return
		}
		io.WriteString(w, `{"id":7}`)
	}))
	t.Cleanup(upstream.Close)
	skills, err := mapping.Parse("t.yaml", []byte(`upstream: {url: `+upstream.URL+`}
skills:
  - {id: item, description: d, request: {path: /item}, mcp: {output_schema: {type: object, properties: {id: {type: integer}}}}}
  - {id: list, description: d, request: {path: /list}, mcp: {output_schema: {type: object}}}
`), mapping.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(skills.Close)
	a := servertest.NewAgent(t, func(cfg *server.Config) { cfg.Skills = skills; withMCP(cfg) })
	for _, version := range mcpVersions {
		t.Run(version, func(t *testing.T) {
			cs := connectMCP(t, a, version, "", nil)
			list, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if schema, _ := json.Marshal(list.Tools[0].OutputSchema); string(schema) != `{"properties":{"id":{"type":"integer"}},"type":"object"}` {
				t.Errorf("item's output schema: %s", schema)
			}
			res := callTool(t, cs, "item", nil)
			if structured, _ := json.Marshal(res.StructuredContent); res.IsError || string(structured) != `{"id":7}` {
				t.Errorf("item: isError %v, structured content %s", res.IsError, structured)
			}
			if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list"}); err != nil || !res.IsError ||
				!strings.Contains(strings.Join(texts(res), " "), "no single data object") {
				t.Errorf("list, whose answer is an array: %v %+v", err, res)
			}
		})
	}
	// The dry run's result (MCPResult) follows the same rule.
	list := skills.ByID("list")
	task := &a2a.Task{ID: "t", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted},
		Artifacts: []a2a.Artifact{{Parts: []a2a.Part{a2a.DataPart([]any{1.0, 2.0})}}}}
	if res := mcpbinding.Result(list, task, nil); !res.IsError {
		t.Errorf("MCPResult of list's array: %+v", res)
	}
}

// An MCP call refused because the store failed, or the agent shuts down,
// is told what an MCP client can do, which is not A2A's advice to send
// the same message again: a call made again runs the skill again. So the
// text says whether the skill ran, as the error's data does.
func TestMCPUnavailableTexts(t *testing.T) {
	a, store, manager := servertest.AgentOnFailingStore(t, withMCP)
	call := func(version string) (string, map[string]any) {
		t.Helper()
		_, err := connectMCP(t, a, version, "", nil).CallTool(t.Context(), &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{"city": "Paris"}})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != mcpbinding.CodeUnavailable {
			t.Fatalf("at %s: %v, want %d", version, err, mcpbinding.CodeUnavailable)
		}
		var data struct{ Metadata map[string]any }
		_ = json.Unmarshal(rpcErr.Data, &data)
		return rpcErr.Message, data.Metadata
	}
	for _, version := range mcpVersions {
		t.Run(version, func(t *testing.T) {
			store.FailInsert.Store(true)
			msg, meta := call(version)
			store.FailInsert.Store(false)
			if !strings.Contains(msg, "has not run, so calling the tool again is safe") || meta["skillRan"] != "false" ||
				meta["taskId"] == nil || strings.Contains(msg, "messageId") {
				t.Errorf("an insert that failed: %q, %v", msg, meta)
			}
			store.FailAfterInsert.Store(true)
			msg, meta = call(version)
			store.FailAfterInsert.Store(false)
			store.FailUpdate.Store(false)
			if !strings.Contains(msg, "The skill ran: calling the tool again runs it again. Read the task over A2A instead (GetTask") ||
				meta["skillRan"] != "true" || meta["taskId"] == nil || strings.Contains(msg, "messageId") {
				t.Errorf("an outcome that could not be stored: %q, %v", msg, meta)
			}
		})
	}
	manager.BeginDrain()
	if msg, meta := call(mcpStateless); !strings.Contains(msg, "shutting down, and the skill has not run: call the tool again") ||
		meta["skillRan"] != "false" || strings.Contains(msg, "message") {
		t.Errorf("while the agent drains: %q, %v", msg, meta)
	}
}

// An MCP call whose run the agent stopped as its drain's deadline passed
// is told so in MCP's terms: A2A's text asks for a new message, where an
// MCP client calls the tool again.
func TestMCPCallStoppedByDrain(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	ended := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := connectMCP(t, a, mcpStateless, "", nil).CallTool(t.Context(),
			&mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 30}})
		if err != nil {
			t.Error(err)
		}
		ended <- res
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := a.API.WaitStats(ctx, func(s demoapi.Stats) bool { return s.SlowStarted > 0 }); err != nil {
		t.Fatal(err)
	}
	deadlinePassed, pass := context.WithCancel(context.Background())
	pass()
	a.Tasks.Drain(deadlinePassed)
	res := <-ended
	if got := texts(res); res == nil || !res.IsError || len(got) != 1 ||
		got[0] != "The agent stopped while this call ran, so whether its work was done is unknown; calling the tool again runs it again." {
		t.Errorf("the call the drain stopped: %+v", res)
	}
}
