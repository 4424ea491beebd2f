package mcp_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/server/mcp"
	"github.com/caddy-a2a/caddy-a2a/server/servertest"
)

// listenStream is an open subscriptions/listen: its messages, in order,
// and the HTTP answer's status and content type.
type listenStream struct {
	t        *testing.T
	messages chan map[string]any
	status   int
	typ      string
	body     map[string]any // the answer when it is no stream
}

// openListen sends subscriptions/listen with notifications (JSON) as the
// request of id 7, and the _meta meta.
func openListen(t *testing.T, a *servertest.Agent, notifications, meta string) *listenStream {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":%s,%s}}`, notifications, meta)
	req, err := http.NewRequest(http.MethodPost, a.URL+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", mcpStateless)
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := a.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	s := &listenStream{t: t, messages: make(chan map[string]any, 64), status: resp.StatusCode, typ: resp.Header.Get("Content-Type")}
	if !strings.HasPrefix(s.typ, "text/event-stream") {
		_ = json.NewDecoder(resp.Body).Decode(&s.body)
		close(s.messages)
		return s
	}
	go func() {
		defer close(s.messages)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			msg := map[string]any{}
			if err := json.Unmarshal([]byte(data), &msg); err != nil {
				msg = map[string]any{"undecodable": data}
			}
			s.messages <- msg
		}
	}()
	return s
}

// next is the stream's next message; nil once it ended.
func (s *listenStream) next() map[string]any {
	s.t.Helper()
	select {
	case msg := <-s.messages:
		return msg
	case <-time.After(20 * time.Second):
		s.t.Fatalf("no message on the listen stream for 20s")
		return nil
	}
}

// subscriptionOf is the subscription id a message's _meta names.
func subscriptionOf(msg map[string]any) any {
	params, _ := msg["params"].(map[string]any)
	if params == nil {
		params, _ = msg["result"].(map[string]any)
	}
	meta, _ := params["_meta"].(map[string]any)
	return meta["io.modelcontextprotocol/subscriptionId"]
}

// TestMCPTaskNotifications: a listen that names tasks is acknowledged with
// those of the caller's that exist, then tells each one's state at once
// and at each change, as tasks/get has it: a task that comes to ask for
// input while followed (where its A2A stream ends), and goes on with the
// answer, to its end; then the listen's answer ends the stream.
func TestMCPTaskNotifications(t *testing.T) {
	a, release := taskAgent(t)
	defer release()
	slow, _ := resultOf(t, postTasks(t, a, "tools/call", `"name":"slow","arguments":{}`, withTasks))["taskId"].(string)
	asking, _ := resultOf(t, postTasks(t, a, "tools/call", `"name":"confirm_delete_later","arguments":{"filename":"a.txt"}`, withTasks))["taskId"].(string)
	ended, _ := resultOf(t, postTasks(t, a, "tools/call", `"name":"service_fails","arguments":{}`, withTasks))["taskId"].(string)
	awaitState(t, a, ended, a2a.TaskStateFailed)

	s := openListen(t, a, fmt.Sprintf(`{"taskIds":[%q,%q,%q,"no-such-task",%q]}`, slow, asking, ended, slow), withTasks)
	ack := s.next()
	params, _ := ack["params"].(map[string]any)
	notifications, _ := params["notifications"].(map[string]any)
	if ack["method"] != "notifications/subscriptions/acknowledged" || subscriptionOf(ack) != float64(7) ||
		fmt.Sprint(notifications["taskIds"]) != fmt.Sprint([]any{slow, asking, ended}) {
		t.Fatalf("first message = %v, want the acknowledgment of the three tasks", ack)
	}

	// Each task's states, in the order told; the last one is its state now.
	states := map[string][]string{}
	last := map[string]map[string]any{}
	await := func(id, status string) map[string]any {
		t.Helper()
		for len(states[id]) == 0 || states[id][len(states[id])-1] != status {
			msg := s.next()
			if msg == nil {
				t.Fatalf("the stream ended before %s was %s: %v", id, status, states)
			}
			p, _ := msg["params"].(map[string]any)
			if msg["method"] != "notifications/tasks" || subscriptionOf(msg) != float64(7) || p["resultType"] != nil {
				t.Fatalf("message %v, want notifications/tasks of the subscription", msg)
			}
			taskID, _ := p["taskId"].(string)
			st, _ := p["status"].(string)
			states[taskID] = append(states[taskID], st)
			last[taskID] = p
		}
		return last[id]
	}
	if got := await(ended, "completed"); got["result"].(map[string]any)["isError"] != true {
		t.Errorf("the ended task = %v, want its tool error", got)
	}
	await(slow, "working")
	await(asking, "working")
	release()
	question := await(asking, "input_required")
	requests, _ := question["inputRequests"].(map[string]any)
	if len(requests) != 1 {
		t.Fatalf("the asking task = %v, want its input request", question)
	}
	var key string
	for key = range requests {
	}
	resultOf(t, postTasks(t, a, "tasks/update", `"taskId":"`+asking+`","inputResponses":{"`+key+`":{"action":"accept","content":{"confirm":true}}}`, withTasks))
	if done := await(asking, "completed"); !strings.Contains(fmt.Sprint(done["result"]), "deleted") {
		t.Errorf("the answered task = %v", done)
	}
	if done := await(slow, "completed"); !strings.Contains(fmt.Sprint(done["result"]), "done") {
		t.Errorf("the slow task = %v", done)
	}

	end := s.next()
	if result, _ := end["result"].(map[string]any); end["id"] != float64(7) || result["resultType"] != "complete" || subscriptionOf(end) != float64(7) {
		t.Errorf("after every task ended: %v, want the listen's answer", end)
	}
	if msg := s.next(); msg != nil {
		t.Errorf("after the listen's answer: %v, want the stream's end", msg)
	}
	if got := states[ended]; len(got) != 1 {
		t.Errorf("the ended task was told %v, want once", got)
	}
}

// A listen whose store fails ends without its answer, which would tell
// the client that nothing more comes: a task still runs, and the client
// listens again. So does one whose task cannot be followed on once it
// asks for input (its subscription ends there).
func TestMCPTaskNotificationsStoreFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(*servertest.FailingStore)
	}{
		{"reading the task", func(s *servertest.FailingStore) { s.FailGet.Store(true) }},
		{"following it on", func(s *servertest.FailingStore) { s.FailSubscribe.Store(true) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, manager := servertest.FailingTasks(t)
			a, release := taskAgent(t, func(cfg *server.Config) { cfg.Tasks = manager })
			a.Tasks = manager
			id, _ := resultOf(t, postTasks(t, a, "tools/call", `"name":"confirm_delete_later","arguments":{"filename":"a.txt"}`, withTasks))["taskId"].(string)
			s := openListen(t, a, fmt.Sprintf(`{"taskIds":[%q]}`, id), withTasks)
			for _, want := range []string{"notifications/subscriptions/acknowledged", "notifications/tasks"} {
				if msg := s.next(); msg["method"] != want {
					t.Fatalf("message %v, want %s", msg, want)
				}
			}
			tc.fail(store)
			release() // the task asks for input: a change to tell, and its subscription ends
			for msg := s.next(); msg != nil; msg = s.next() {
				if msg["result"] != nil {
					t.Errorf("the listen answered %v, which says nothing more comes, though its store failed", msg)
				}
			}
			store.FailGet.Store(false)
			awaitState(t, a, id, a2a.TaskStateInputRequired)
		})
	}
}

// The stream's answer comes when the endpoint stops, after each task's
// state as the store has it then.
func TestMCPTaskNotificationsShutdown(t *testing.T) {
	a, _ := taskAgent(t)
	id, _ := resultOf(t, postTasks(t, a, "tools/call", `"name":"slow","arguments":{}`, withTasks))["taskId"].(string)
	s := openListen(t, a, fmt.Sprintf(`{"taskIds":[%q]}`, id), withTasks)
	for _, want := range []string{"notifications/subscriptions/acknowledged", "notifications/tasks"} {
		if msg := s.next(); msg["method"] != want {
			t.Fatalf("message %v, want %s", msg, want)
		}
	}
	a.Handler.(*server.Handler).Shutdown()
	if end := s.next(); end["id"] != float64(7) || end["result"].(map[string]any)["resultType"] != "complete" {
		t.Errorf("at shutdown: %v, want the listen's answer", end)
	}
}

// The listens of one caller follow at most MaxListenTasksPerCaller tasks
// together: past it a listen is refused (-32029), until one ends.
func TestMCPTaskNotificationsPerCaller(t *testing.T) {
	a, release := taskAgent(t)
	defer release()
	id, _ := resultOf(t, postTasks(t, a, "tools/call", `"name":"slow","arguments":{}`, withTasks))["taskId"].(string)
	names := []string{id}
	for i := 1; i < mcp.MaxListenTasks; i++ {
		names = append(names, fmt.Sprintf("unknown-%d", i))
	}
	list, _ := json.Marshal(names)
	open := make([]*listenStream, 0, mcp.MaxListenTasksPerCaller/mcp.MaxListenTasks)
	for range cap(open) {
		s := openListen(t, a, `{"taskIds":`+string(list)+`}`, withTasks)
		if ack := s.next(); ack["method"] != "notifications/subscriptions/acknowledged" {
			t.Fatalf("listen %d: %v", len(open), ack)
		}
		open = append(open, s)
	}
	refused := openListen(t, a, fmt.Sprintf(`{"taskIds":[%q]}`, id), withTasks)
	if code := errorCodeOf(refused.body); code != float64(mcp.CodeResourceExhausted) {
		t.Fatalf("one listen past the caller's bound: %d %v, want %d", refused.status, refused.body, mcp.CodeResourceExhausted)
	}
	release()
	for _, s := range open {
		for s.next() != nil { // to the listen's end
		}
	}
	if ack := openListen(t, a, fmt.Sprintf(`{"taskIds":[%q]}`, id), withTasks).next(); ack["method"] != "notifications/subscriptions/acknowledged" {
		t.Errorf("a listen once the others ended: %v", ack)
	}
}

// A listen for tasks from a client that does not declare the extension,
// or for too many, is refused; one that names no task is the SDK's.
func TestMCPTaskNotificationsRefused(t *testing.T) {
	a, _ := taskAgent(t)
	many := strings.Repeat(`"t",`, mcp.MaxListenTasks) + `"t"`
	for _, tc := range []struct {
		name, notifications, meta string
		code                      float64
	}{
		{"without the extension", `{"taskIds":["t"]}`, withoutTasks, -32021},
		{"too many tasks", `{"taskIds":[` + many + `]}`, withTasks, -32602},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openListen(t, a, tc.notifications, tc.meta)
			if s.status != http.StatusBadRequest || errorCodeOf(s.body) != tc.code {
				t.Errorf("status %d, answer %v; want 400 and %v", s.status, s.body, tc.code)
			}
		})
	}
	for _, notifications := range []string{`{"toolsListChanged":false}`, `{"taskIds":[]}`} {
		s := openListen(t, a, notifications, withTasks)
		for msg := s.next(); msg != nil; msg = s.next() {
			if params, _ := msg["params"].(map[string]any); params != nil && params["notifications"] != nil {
				if n, _ := params["notifications"].(map[string]any); n["taskIds"] != nil {
					t.Errorf("%s: the SDK's listen acknowledges tasks: %v", notifications, msg)
				}
			}
		}
	}
}
