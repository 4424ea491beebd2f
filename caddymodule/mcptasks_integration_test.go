package caddymodule

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/internal/redistest"
)

// jobUpstream is a REST API of jobs: POST /jobs starts one (202 and its
// Location), which started(id) reports, GET polls it (202 until
// finish(id) is called), DELETE cancels it, which canceled(id) reports.
// POST /delete asks to confirm (422 naming the field) until its body
// confirms.
type jobUpstream struct {
	url      string
	mu       sync.Mutex
	next     int
	finished map[string]bool
	// created and deleted are closed when job id is, each made by the
	// first to need it: the job, or the test waiting for it.
	created, deleted map[string]chan struct{}
}

// event is the channel of job id in events; the caller holds u.mu.
func (u *jobUpstream) event(events map[string]chan struct{}, id string) chan struct{} {
	ch, ok := events[id]
	if !ok {
		ch = make(chan struct{})
		events[id] = ch
	}
	return ch
}

func newJobUpstream(t *testing.T) *jobUpstream {
	u := &jobUpstream{finished: map[string]bool{}, created: map[string]chan struct{}{}, deleted: map[string]chan struct{}{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		u.mu.Lock()
		defer u.mu.Unlock()
		id := strings.TrimPrefix(r.URL.Path, "/jobs/")
		switch {
		case r.URL.Path == "/delete":
			if body, _ := io.ReadAll(r.Body); !strings.Contains(string(body), `"confirm":true`) {
				w.WriteHeader(http.StatusUnprocessableEntity)
				io.WriteString(w, `{"fields":{"confirm":"true to delete"}}`)
				return
			}
			io.WriteString(w, `{"deleted":true}`)
		case r.Method == http.MethodPost:
			u.next++
			id = fmt.Sprint(u.next)
			close(u.event(u.created, id))
			w.Header().Set("Location", "/jobs/"+id)
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, `{"state":"running"}`)
		case r.Method == http.MethodDelete:
			close(u.event(u.deleted, id))
			w.WriteHeader(http.StatusNoContent)
		case u.finished[id]:
			io.WriteString(w, `{"report":"ready","job":"`+id+`"}`)
		default:
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, `{"state":"running"}`)
		}
	}))
	t.Cleanup(srv.Close)
	u.url = srv.URL
	return u
}

func (u *jobUpstream) finish(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.finished[id] = true
}

// started waits until job id was created, and canceled until it got its
// DELETE.
func (u *jobUpstream) started(t *testing.T, id string) { u.await(t, u.created, id, "started") }

func (u *jobUpstream) canceled(t *testing.T, id string) {
	u.await(t, u.deleted, id, "canceled upstream")
}

func (u *jobUpstream) await(t *testing.T, events map[string]chan struct{}, id, what string) {
	t.Helper()
	u.mu.Lock()
	ch := u.event(events, id)
	u.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("job %s was not %s", id, what)
	}
}

// mcpTasks sends an MCP request at 2026-07-28, as a client that declares
// the tasks extension, with the caller's API key, and answers its result,
// or its error as {"error": …}.
func (a *securedAgent) mcpTasks(key, method, params string) map[string]any {
	a.t.Helper()
	resp := a.mcpTasksRequest(key, method, params)
	defer resp.Body.Close()
	var msg struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		a.t.Fatalf("%s: the answer is not JSON-RPC: %v", method, err)
	}
	if msg.Error != nil {
		return map[string]any{"error": msg.Error}
	}
	return msg.Result
}

// mcpTasksRequest sends an MCP request at 2026-07-28, as a client that
// declares the tasks extension, with the caller's API key.
func (a *securedAgent) mcpTasksRequest(key, method, params string) *http.Response {
	a.t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{%s,"_meta":{`+
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":`+
		`{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`, method, params)
	var p struct{ Name, TaskID string }
	_ = json.Unmarshal([]byte("{"+params+"}"), &p)
	req, _ := http.NewRequest(http.MethodPost, a.base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name := p.Name + p.TaskID; name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		a.t.Fatalf("%s: %v", method, err)
	}
	return resp
}

// mcpListen opens subscriptions/listen for the tasks ids, as the caller
// of key, and answers a function that reads the stream's next message
// (the "method" of a notification, or the "result" of the listen's end)
// with its params or result; ok is false once the stream ended.
func (a *securedAgent) mcpListen(key string, ids ...string) func() (kind string, body map[string]any, ok bool) {
	a.t.Helper()
	list, _ := json.Marshal(ids)
	resp := a.mcpTasksRequest(key, "subscriptions/listen", `"notifications":{"taskIds":`+string(list)+`}`)
	a.t.Cleanup(func() { resp.Body.Close() })
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		raw, _ := io.ReadAll(resp.Body)
		a.t.Fatalf("subscriptions/listen: %s %s, want a stream", resp.Status, raw)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	return func() (string, map[string]any, bool) {
		a.t.Helper()
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var msg struct {
				Method         string
				Params, Result map[string]any
			}
			if err := json.Unmarshal([]byte(data), &msg); err != nil {
				a.t.Fatalf("subscriptions/listen: %q is not JSON-RPC: %v", data, err)
			}
			if msg.Method == "" {
				return "result", msg.Result, true
			}
			return msg.Method, msg.Params, true
		}
		return "", nil, false
	}
}

// a2aState is the state of task id as GetTask over A2A answers it to the
// caller of key, or its error code.
func (a *securedAgent) a2aState(key, id string) string {
	a.t.Helper()
	var header []string
	if key != "" {
		header = []string{"X-API-Key", key}
	}
	_, r, raw := a.rpc("GetTask", fmt.Sprintf(`{"id":%q}`, id), header...)
	if r.Error != nil {
		return fmt.Sprint(r.Error.Code)
	}
	var task struct {
		Status struct{ State string } `json:"status"`
	}
	if err := json.Unmarshal(r.Result, &task); err != nil {
		a.t.Fatalf("GetTask: %s", raw)
	}
	return task.Status.State
}

// TestIntegrationMCPTasks drives a polled upstream job as an MCP task
// through Caddy: created over MCP, polled to its result, read over A2A by
// its owner only; another one canceled over MCP, which cancels its job
// upstream.
func TestIntegrationMCPTasks(t *testing.T) {
	jobs := newJobUpstream(t)
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	skills := `upstream: {url: ` + jobs.url + `}
skills:
  - id: report
    description: Makes a report, a job to poll.
    request:
      method: POST
      path: /jobs
      poll: {interval: 20ms, backoff: 1, cancel: DELETE}
`
	tester := loadSecured(t, fmt.Sprintf(":%d", port), "", fmt.Sprintf(`
		skills "%s"
		url %s/
		name "Reports"
		description "Reports, as MCP tasks"
		security {
			api_key key header X-API-Key {
				key %s alice tasks
				key %s bob tasks
			}
		}
		mcp`, writeSkills(t, skills), base, aliceKey, bobKey))
	a := &securedAgent{t: t, tester: tester, base: base, client: tester.Client}

	handle := a.mcpTasks(aliceKey, "tools/call", `"name":"report","arguments":{}`)
	id, _ := handle["taskId"].(string)
	if handle["resultType"] != "task" || id == "" || handle["status"] != "working" {
		t.Fatalf("tools/call: %v, want a task handle", handle)
	}
	if got := a.mcpTasks(aliceKey, "tasks/get", `"taskId":"`+id+`"`); got["status"] != "working" {
		t.Errorf("tasks/get while the job runs: %v", got)
	}
	if got := a.mcpTasks(bobKey, "tasks/get", `"taskId":"`+id+`"`); fmt.Sprint(got["error"]) == "<nil>" ||
		got["error"].(map[string]any)["code"] != float64(-32602) {
		t.Errorf("bob's tasks/get of alice's task: %v", got)
	}
	if st := a.a2aState(aliceKey, id); st != "TASK_STATE_WORKING" {
		t.Errorf("alice's GetTask over A2A: %s", st)
	}
	if st := a.a2aState(bobKey, id); st != "-32001" {
		t.Errorf("bob's GetTask over A2A of alice's task: %s", st)
	}
	// bob's listen for alice's task follows none, and so ends at once.
	next := a.mcpListen(bobKey, id)
	if kind, body, _ := next(); kind != "notifications/subscriptions/acknowledged" || fmt.Sprint(body["notifications"]) != "map[taskIds:[]]" {
		t.Errorf("bob's listen for alice's task: %s %v, want acknowledged with no task", kind, body)
	}
	if kind, body, _ := next(); kind != "result" || body["resultType"] != "complete" {
		t.Errorf("bob's listen for alice's task: then %s %v, want its end", kind, body)
	}

	other, _ := a.mcpTasks(aliceKey, "tools/call", `"name":"report","arguments":{}`)["taskId"].(string)
	jobs.started(t, "2") // a job canceled before the agent learns of it has no address to cancel
	if ack := a.mcpTasks(aliceKey, "tasks/cancel", `"taskId":"`+other+`"`); len(ack) != 1 || ack["resultType"] != "complete" {
		t.Errorf("tasks/cancel: %v", ack)
	}
	jobs.canceled(t, "2")
	if st := a.a2aState(aliceKey, other); st != "TASK_STATE_CANCELED" {
		t.Errorf("GetTask over A2A of the canceled task: %s", st)
	}

	jobs.finish("1")
	if done := a.pollTask(aliceKey, id, "working"); done["status"] != "completed" || !strings.Contains(fmt.Sprint(done["result"]), "ready") {
		t.Fatalf("tasks/get once the job is done: %v", done)
	}
	if st := a.a2aState(aliceKey, id); st != "TASK_STATE_COMPLETED" {
		t.Errorf("GetTask over A2A once done: %s", st)
	}
}

// pollTask polls task id with tasks/get, as a client does, while its
// status is one of while, and answers the task once it is not.
func (a *securedAgent) pollTask(key, id string, while ...string) map[string]any {
	a.t.Helper()
	var got map[string]any
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got = a.mcpTasks(key, "tasks/get", `"taskId":"`+id+`"`); !slices.Contains(while, fmt.Sprint(got["status"])) {
			break
		}
	}
	return got
}

// TestIntegrationMCPTasksRedisReplicas: two replicas on one Redis serve
// one set of MCP tasks. A task made on A is polled, answered and read on
// B, and over A2A on A; another made on A is canceled on B, which cancels
// its job upstream from A.
func TestIntegrationMCPTasksRedisReplicas(t *testing.T) {
	srv := redistest.Start(t)
	jobs := newJobUpstream(t)
	skills := writeSkills(t, `upstream: {url: `+jobs.url+`}
skills:
  - id: report
    description: Makes a report, a job to poll.
    request: {method: POST, path: /jobs, poll: {interval: 20ms, backoff: 1, cancel: DELETE}}
  - id: delete
    description: Deletes, once confirmed.
    mcp: {task: optional}
    arguments:
      confirm: {type: boolean}
    request: {method: POST, path: /delete, body: args}
    response:
      - {when: response.status == 422, state: input-required, message: Confirm., ask: response.body.fields}
`)
	portA, portB := freePort(t), freePort(t)
	tester := newTester(t)
	initServer(t, tester, fmt.Sprintf("{\n\tadmin localhost:%d\n\tpersist_config off\n}\n", adminPort)+
		replicaSite(portA, "a", skills, jobs.url, srv.Addr(), "mcptasks", "mcp")+
		replicaSite(portB, "b", skills, jobs.url, srv.Addr(), "mcptasks", "mcp"))
	a := &securedAgent{t: t, tester: tester, base: fmt.Sprintf("http://127.0.0.1:%d", portA), client: tester.Client}
	b := &securedAgent{t: t, tester: tester, base: fmt.Sprintf("http://127.0.0.1:%d", portB), client: tester.Client}

	id, _ := a.mcpTasks("", "tools/call", `"name":"delete","arguments":{}`)["taskId"].(string)
	asking := b.pollTask("", id, "working")
	requests, _ := asking["inputRequests"].(map[string]any)
	if asking["status"] != "input_required" || len(requests) != 1 {
		t.Fatalf("tasks/get on B: %v", asking)
	}
	for key := range requests {
		update := `"taskId":"` + id + `","inputResponses":{"` + key + `":{"action":"accept","content":{"confirm":true}}}`
		if ack := b.mcpTasks("", "tasks/update", update); ack["resultType"] != "complete" {
			t.Fatalf("tasks/update on B: %v", ack)
		}
	}
	if done := b.pollTask("", id, "input_required", "working"); done["status"] != "completed" || !strings.Contains(fmt.Sprint(done["result"]), "deleted") {
		t.Fatalf("tasks/get on B once answered: %v", done)
	}
	if st := a.a2aState("", id); st != "TASK_STATE_COMPLETED" {
		t.Errorf("GetTask over A2A on A, once answered on B: %s", st)
	}

	other, _ := a.mcpTasks("", "tools/call", `"name":"report","arguments":{}`)["taskId"].(string)
	jobs.started(t, "1")
	if ack := b.mcpTasks("", "tasks/cancel", `"taskId":"`+other+`"`); ack["resultType"] != "complete" {
		t.Fatalf("tasks/cancel on B: %v", ack)
	}
	jobs.canceled(t, "1")
	if got := b.mcpTasks("", "tasks/get", `"taskId":"`+other+`"`); got["status"] != "cancelled" {
		t.Errorf("tasks/get on B of the canceled task: %v", got)
	}

	// Notifications on B of a job that A runs: its state now, its end
	// when A's poll finds the job done, and the listen's end.
	third, _ := a.mcpTasks("", "tools/call", `"name":"report","arguments":{}`)["taskId"].(string)
	jobs.started(t, "2")
	next := b.mcpListen("", third)
	for _, want := range []string{"notifications/subscriptions/acknowledged", "notifications/tasks working"} {
		kind, body, _ := next()
		if got := strings.TrimSpace(kind + " " + fmt.Sprint(body["status"])); kind == "notifications/tasks" && got != want ||
			kind != "notifications/tasks" && (kind != want || fmt.Sprint(body["notifications"]) != fmt.Sprintf("map[taskIds:[%s]]", third)) {
			t.Fatalf("listen on B: %s %v, want %s", kind, body, want)
		}
	}
	jobs.finish("2")
	kind, body, _ := next()
	for kind == "notifications/tasks" && body["status"] == "working" {
		kind, body, _ = next()
	}
	if kind != "notifications/tasks" || body["status"] != "completed" || !strings.Contains(fmt.Sprint(body["result"]), "ready") {
		t.Fatalf("listen on B once the job is done: %s %v", kind, body)
	}
	if kind, body, _ := next(); kind != "result" || body["resultType"] != "complete" {
		t.Errorf("listen on B after its task ended: %s %v, want its answer", kind, body)
	}
}
