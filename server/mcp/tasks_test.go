package mcp_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/server/servertest"
)

const tasksExtension = "io.modelcontextprotocol/tasks"

// The _meta of a 2026-07-28 request whose client declares the tasks
// extension (withTasks), or not.
const (
	withTasks = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"extensions":{"` + tasksExtension + `":{}}}}`
	withoutTasks = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
)

// taskAgent serves a slow skill (a polled job's kind, marked so), one
// that runs only as a task, one that asks to confirm after its upstream
// answered (confirm_delete_later once released), and a quick one; release
// lets the slow upstream calls answer.
func taskAgent(t *testing.T, tune ...func(*server.Config)) (a *servertest.Agent, release func()) {
	t.Helper()
	gate := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/slow":
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
			io.WriteString(w, `{"done":true}`)
		case "/delete", "/delete-later":
			if r.URL.Path == "/delete-later" {
				select {
				case <-gate:
				case <-r.Context().Done():
					return
				}
			}
			body, _ := io.ReadAll(r.Body)
			if !strings.Contains(string(body), `"confirm":true`) {
				w.WriteHeader(http.StatusUnprocessableEntity)
				io.WriteString(w, `{"fields":{"confirm":"say whether to delete the file"}}`)
				return
			}
			io.WriteString(w, `{"deleted":true}`)
		case "/fail":
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":"down"}`)
		case "/echo":
			io.Copy(w, r.Body)
		default:
			io.WriteString(w, `{"hello":"world"}`)
		}
	}))
	t.Cleanup(upstream.Close)
	a = servertest.NewAgentWith(t, `upstream: {url: `+upstream.URL+`}
skills:
  - {id: slow, description: d, request: {path: /slow}, mcp: {task: optional}}
  - {id: only_task, description: d, request: {path: /slow}, mcp: {task: required}}
  - {id: quick, description: d, request: {path: /quick}}
  - id: confirm_delete
    description: d
    mcp: {task: optional}
    arguments:
      filename: {type: string, required: true}
      confirm: {type: boolean}
    request: {method: POST, path: /delete, body: args}
    response:
      - when: response.status == 422
        state: input-required
        message: "Confirm: {response.body.fields.confirm}."
        ask: response.body.fields
  - id: confirm_delete_later
    description: d
    mcp: {task: optional}
    arguments:
      filename: {type: string, required: true}
      confirm: {type: boolean}
    request: {method: POST, path: /delete-later, body: args}
    response:
      - when: response.status == 422
        state: input-required
        message: "Confirm: {response.body.fields.confirm}."
        ask: response.body.fields
  - id: pair
    description: d
    mcp: {task: optional}
    arguments: {name: {type: string, required: true}, confirm: {type: boolean, required: true}}
    request: {method: POST, path: /echo, body: args}
  - id: pair_asked_first
    description: d
    mcp: {task: required, ask_before_task: true}
    arguments: {name: {type: string, required: true}}
    request: {method: POST, path: /echo, body: args}
  - {id: service_fails, description: d, mcp: {task: required}, request: {path: /fail}}
  - id: agent_fails
    description: d
    mcp: {task: required}
    arguments: {text: {type: string, default: not a number}}
    request: {path: /quick, query: {n: "{int(args.text)}"}}
`, func(cfg *server.Config) {
		withMCP(cfg)
		for _, f := range tune {
			f(cfg)
		}
	})
	a.CancelOnCleanup()
	var once bool
	return a, func() {
		if !once {
			once = true
			close(gate)
		}
	}
}

// postTasks sends method with params (JSON members) and the _meta meta,
// with the routing headers a 2026-07-28 client sets.
func postTasks(t *testing.T, a *servertest.Agent, method, params, meta string, header ...string) map[string]any {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{%s,%s}}`, method, params, meta)
	var p struct {
		Name   string `json:"name"`
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal([]byte("{"+params+"}"), &p)
	_, msg := postMCP(t, a, body, append([]string{"Mcp-Name", p.Name + p.TaskID}, header...)...)
	return msg
}

func resultOf(t *testing.T, msg map[string]any) map[string]any {
	t.Helper()
	res, ok := msg["result"].(map[string]any)
	if !ok {
		t.Fatalf("no result: %v", msg)
	}
	return res
}

func errorCodeOf(msg map[string]any) any {
	e, _ := msg["error"].(map[string]any)
	return e["code"]
}

// awaitState waits until the anonymous caller's task id is in state.
func awaitState(t *testing.T, a *servertest.Agent, id string, state a2a.TaskState) {
	t.Helper()
	task, sub, err := a.Tasks.Subscribe("", id)
	if err != nil {
		if task, err = a.Tasks.Get("", id, nil); err != nil || task.Status.State != state {
			t.Fatalf("task %s: %v, %v; want %s", id, task, err, state)
		}
		return
	}
	defer sub.Close()
	if task.Status.State == state {
		return
	}
	for ev := range sub.Events() {
		if ev.StatusUpdate != nil && ev.StatusUpdate.Status.State == state {
			return
		}
	}
	t.Fatalf("task %s ended without reaching %s", id, state)
}

// TestMCPTasksLifecycle: a client that declares the tasks extension gets
// a handle for a slow skill at once, polls it to its result, and cancels
// another; each is the A2A task of the same id.
func TestMCPTasksLifecycle(t *testing.T) {
	a, release := taskAgent(t)
	defer release()

	discover := postTasks(t, a, "server/discover", `"x":0`, withTasks)
	caps, _ := resultOf(t, discover)["capabilities"].(map[string]any)
	if exts, _ := caps["extensions"].(map[string]any); exts[tasksExtension] == nil {
		t.Errorf("server/discover does not declare the tasks extension: %v", discover)
	}

	handle := resultOf(t, postTasks(t, a, "tools/call", `"name":"slow","arguments":{}`, withTasks))
	id, _ := handle["taskId"].(string)
	for _, member := range []string{"result", "error", "inputRequests", "requestState"} {
		if _, ok := handle[member]; ok {
			t.Errorf("the handle carries %s: %v", member, handle)
		}
	}
	if handle["resultType"] != "task" || id == "" || handle["status"] != "working" || handle["ttlMs"] != float64(a.Tasks.MaxAge().Milliseconds()) ||
		handle["pollIntervalMs"] != float64(1000) || handle["createdAt"] == nil || handle["lastUpdatedAt"] == nil {
		t.Fatalf("handle = %v", handle)
	}
	if got := resultOf(t, postTasks(t, a, "tasks/get", `"taskId":"`+id+`"`, withTasks)); got["status"] != "working" ||
		got["resultType"] != "complete" || got["taskId"] != id {
		t.Errorf("tasks/get while it runs = %v", got)
	}

	other, _ := resultOf(t, postTasks(t, a, "tools/call", `"name":"only_task","arguments":{}`, withTasks))["taskId"].(string)
	for range 2 { // canceling again, once it ended, is no error
		if ack := resultOf(t, postTasks(t, a, "tasks/cancel", `"taskId":"`+other+`"`, withTasks)); len(ack) != 1 || ack["resultType"] != "complete" {
			t.Errorf("tasks/cancel = %v, want the empty ack", ack)
		}
	}
	if got := resultOf(t, postTasks(t, a, "tasks/get", `"taskId":"`+other+`"`, withTasks)); got["status"] != "cancelled" {
		t.Errorf("tasks/get of the canceled task = %v", got)
	}
	if st := servertest.StateOf(a.Call("1.0", "GetTask", map[string]any{"id": other}).Result); st != "TASK_STATE_CANCELED" {
		t.Errorf("GetTask over A2A of the canceled task: %s", st)
	}

	release()
	awaitState(t, a, id, a2a.TaskStateCompleted)
	done := resultOf(t, postTasks(t, a, "tasks/get", `"taskId":"`+id+`"`, withTasks))
	content, _ := done["result"].(map[string]any)["content"].([]any)
	if done["status"] != "completed" || len(content) == 0 || !strings.Contains(fmt.Sprint(content), `done`) {
		t.Errorf("tasks/get once done = %v", done)
	}
	if st := servertest.StateOf(a.Call("1.0", "GetTask", map[string]any{"id": id}).Result); st != "TASK_STATE_COMPLETED" {
		t.Errorf("GetTask over A2A: %s", st)
	}
}

// TestMCPTasksInput: a task that asks for input shows the question on
// tasks/get, ignores answers to questions it did not ask, and goes on
// with the answer tasks/update brings.
func TestMCPTasksInput(t *testing.T) {
	a, _ := taskAgent(t)
	handle := resultOf(t, postTasks(t, a, "tools/call", `"name":"confirm_delete","arguments":{"filename":"a.txt"}`, withTasks))
	id, _ := handle["taskId"].(string)
	awaitState(t, a, id, a2a.TaskStateInputRequired)
	asking := resultOf(t, postTasks(t, a, "tasks/get", `"taskId":"`+id+`"`, withTasks))
	requests, _ := asking["inputRequests"].(map[string]any)
	if asking["status"] != "input_required" || len(requests) != 1 {
		t.Fatalf("tasks/get of a task that asks = %v", asking)
	}
	var key string
	for key = range requests {
	}
	if request, _ := requests[key].(map[string]any); request["method"] != "elicitation/create" {
		t.Errorf("input request %s = %v", key, requests[key])
	}

	if ack := resultOf(t, postTasks(t, a, "tasks/update", `"taskId":"`+id+`","inputResponses":{"unknown":{"ignored":true}}`, withTasks)); len(ack) != 1 {
		t.Errorf("tasks/update of no question = %v, want the empty ack", ack)
	}
	if st := resultOf(t, postTasks(t, a, "tasks/get", `"taskId":"`+id+`"`, withTasks))["status"]; st != "input_required" {
		t.Errorf("after an answer to no question: %v", st)
	}
	update := `"taskId":"` + id + `","inputResponses":{"` + key + `":{"action":"accept","content":{"confirm":true}}}`
	if ack := resultOf(t, postTasks(t, a, "tasks/update", update, withTasks)); len(ack) != 1 || ack["resultType"] != "complete" {
		t.Errorf("tasks/update = %v, want the empty ack", ack)
	}
	awaitState(t, a, id, a2a.TaskStateCompleted)
	if done := resultOf(t, postTasks(t, a, "tasks/get", `"taskId":"`+id+`"`, withTasks)); !strings.Contains(fmt.Sprint(done["result"]), "deleted") {
		t.Errorf("tasks/get once answered = %v", done)
	}
}

// TestMCPTasksAskForArguments: a call that lacks arguments gets its task
// at once, and the task asks for each on tasks/get; an answer to some
// leaves it asking for the others. A skill that asks before its task asks
// in the call's own answer, and its task starts with the answer.
func TestMCPTasksAskForArguments(t *testing.T) {
	a, _ := taskAgent(t)
	handle := resultOf(t, postTasks(t, a, "tools/call", `"name":"pair","arguments":{}`, withTasks))
	id, _ := handle["taskId"].(string)
	if handle["resultType"] != "task" || handle["status"] != "input_required" || handle["inputRequests"] != nil {
		t.Fatalf("handle of a call lacking arguments = %v", handle)
	}
	asking := resultOf(t, postTasks(t, a, "tasks/get", `"taskId":"`+id+`"`, withTasks))
	if requests, _ := asking["inputRequests"].(map[string]any); len(requests) != 2 || requests["name"] == nil || requests["confirm"] == nil {
		t.Fatalf("tasks/get = %v, want an input request per argument", asking)
	}
	// Each answer gives the argument it was asked for, whatever else its
	// content holds.
	update := `"taskId":"` + id + `","inputResponses":{"name":{"action":"accept","content":{"name":"Ada","confirm":true}}}`
	if ack := resultOf(t, postTasks(t, a, "tasks/update", update, withTasks)); len(ack) != 1 {
		t.Errorf("tasks/update = %v, want the empty ack", ack)
	}
	asking = resultOf(t, postTasks(t, a, "tasks/get", `"taskId":"`+id+`"`, withTasks))
	if requests, _ := asking["inputRequests"].(map[string]any); asking["status"] != "input_required" || len(requests) != 1 || requests["confirm"] == nil {
		t.Fatalf("tasks/get after answering one = %v, want it asking for confirm only", asking)
	}
	update = `"taskId":"` + id + `","inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}}`
	resultOf(t, postTasks(t, a, "tasks/update", update, withTasks))
	awaitState(t, a, id, a2a.TaskStateCompleted)
	if done := resultOf(t, postTasks(t, a, "tasks/get", `"taskId":"`+id+`"`, withTasks)); !strings.Contains(fmt.Sprint(done["result"]), "Ada") {
		t.Errorf("tasks/get once answered = %v", done)
	}

	first := resultOf(t, postTasks(t, a, "tools/call", `"name":"pair_asked_first","arguments":{}`, withTasks))
	state, _ := first["requestState"].(string)
	if first["resultType"] != "input_required" || first["taskId"] != nil || state == "" {
		t.Fatalf("a call to a skill that asks before its task = %v, want its input requests", first)
	}
	answer := `"name":"pair_asked_first","arguments":{},"requestState":"` + state + `","inputResponses":{"name":{"action":"accept","content":{"name":"Bo"}}}`
	handle = resultOf(t, postTasks(t, a, "tools/call", answer, withTasks))
	if _, leaked := handle["requestState"]; handle["resultType"] != "task" || handle["taskId"] == nil || leaked {
		t.Fatalf("the answer's call = %v, want a task handle", handle)
	}
}

// TestMCPTasksFailures: a skill whose service fails ends "completed" with
// the tool's error; one the agent cannot run as written ends "failed" with
// a protocol error, and no result.
func TestMCPTasksFailures(t *testing.T) {
	a, _ := taskAgent(t)
	for _, tc := range []struct{ tool, status string }{{"service_fails", "completed"}, {"agent_fails", "failed"}} {
		id, _ := resultOf(t, postTasks(t, a, "tools/call", `"name":"`+tc.tool+`","arguments":{}`, withTasks))["taskId"].(string)
		awaitState(t, a, id, a2a.TaskStateFailed)
		got := resultOf(t, postTasks(t, a, "tasks/get", `"taskId":"`+id+`"`, withTasks))
		result, _ := got["result"].(map[string]any)
		rpcErr, _ := got["error"].(map[string]any)
		switch {
		case got["status"] != tc.status:
			t.Errorf("%s: tasks/get = %v, want status %s", tc.tool, got, tc.status)
		case tc.status == "completed" && (result["isError"] != true || rpcErr != nil):
			t.Errorf("%s: tasks/get = %v, want the tool's error", tc.tool, got)
		case tc.status == "failed" && (result != nil || rpcErr["code"] != float64(-32603) || !strings.Contains(fmt.Sprint(rpcErr["message"]), "could not build its request")):
			t.Errorf("%s: tasks/get = %v, want a -32603 error saying why", tc.tool, got)
		}
	}
}

// TestMCPTasksRefusals: the extension's errors, in the codes the spec
// and the conformance suite give them.
func TestMCPTasksRefusals(t *testing.T) {
	a, release := taskAgent(t)
	release()
	for _, tc := range []struct {
		name, method, params, meta string
		header                     []string
		wantCode, wantStatus       float64
	}{
		{"a tool that runs only as a task, without the extension", "tools/call", `"name":"only_task","arguments":{}`, withoutTasks, nil, -32021, 400},
		{"tasks/get without the extension", "tasks/get", `"taskId":"x"`, withoutTasks, nil, -32021, 400},
		{"tasks/update without the extension", "tasks/update", `"taskId":"x","inputResponses":{}`, withoutTasks, nil, -32021, 400},
		{"tasks/cancel without the extension", "tasks/cancel", `"taskId":"x"`, withoutTasks, nil, -32021, 400},
		{"an unknown task", "tasks/get", `"taskId":"nope"`, withTasks, nil, -32602, 400},
		{"canceling an unknown task", "tasks/cancel", `"taskId":"nope"`, withTasks, nil, -32602, 400},
		{"Mcp-Name not the task", "tasks/get", `"taskId":"nope"`, withTasks, []string{"Mcp-Name", "other"}, -32020, 400},
		{"tasks/result, removed", "tasks/result", `"taskId":"nope"`, withTasks, nil, -32601, 404},
	} {
		msg := postTasks(t, a, tc.method, tc.params, tc.meta, tc.header...)
		if errorCodeOf(msg) != tc.wantCode || msg["httpStatus"] != tc.wantStatus {
			t.Errorf("%s: %v, want code %v, HTTP %v", tc.name, msg, tc.wantCode, tc.wantStatus)
		}
	}
	msg := postTasks(t, a, "tools/call", `"name":"only_task","arguments":{}`, withoutTasks)
	rpcErr, _ := msg["error"].(map[string]any)
	data, _ := rpcErr["data"].(map[string]any)
	if exts, _ := data["requiredCapabilities"].(map[string]any)["extensions"].(map[string]any); exts[tasksExtension] == nil {
		t.Errorf("the refusal does not name the extension it needs: %v", msg)
	}

	// Without the extension a slow skill runs to its end, as before; a
	// quick one never makes a task.
	for _, tc := range []struct{ tool, meta string }{{"slow", withoutTasks}, {"quick", withTasks}} {
		res := resultOf(t, postTasks(t, a, "tools/call", `"name":"`+tc.tool+`","arguments":{}`, tc.meta))
		if res["resultType"] != "complete" || res["taskId"] != nil || res["content"] == nil {
			t.Errorf("%s: %v, want its result", tc.tool, res)
		}
	}
}
