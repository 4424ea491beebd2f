package server_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// TestBindingsShareOneEngine: with all three bindings on one handler (the
// HTTP+JSON one at the root, where gRPC's paths must still reach gRPC), a
// task made over one binding is the same task over the others, and a
// task's error reads the same everywhere.
func TestBindingsShareOneEngine(t *testing.T) {
	a := newAgent(t, func(c *server.Config) {
		c.Bindings = []server.NewBinding{server.GRPC(), server.HTTPJSON("/")}
	})
	c := grpcClient(t, a.URL)
	ctx := v10(t.Context())

	sent, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Message: pbMessage(t, "weather", "", map[string]any{"city": "Paris"})})
	if err != nil {
		t.Fatal(err)
	}
	byGRPC := sent.GetTask().GetId()
	if got := restRequest(a, "GET", "/tasks/"+byGRPC, ""); got.status != 200 || got.body["id"] != byGRPC || stateOf(got.body) != "TASK_STATE_COMPLETED" {
		t.Errorf("HTTP+JSON GetTask of a gRPC task: %d %s", got.status, got.raw)
	}
	if got := a.Call("1.0", "GetTask", map[string]any{"id": byGRPC}); got.Error != nil || got.Result["id"] != byGRPC {
		t.Errorf("JSON-RPC GetTask of a gRPC task: %+v", got)
	}

	rest := restRequest(a, "POST", "/message:send", sendBody(t, message("1.0", "weather", map[string]any{"city": "Tokyo"}), nil))
	task, _ := rest.body["task"].(map[string]any)
	byREST, _ := task["id"].(string)
	if rest.status != 200 || byREST == "" {
		t.Fatalf("HTTP+JSON send: %d %s", rest.status, rest.raw)
	}
	got, err := c.GetTask(ctx, &a2apb.GetTaskRequest{Id: byREST})
	if err != nil || got.GetId() != byREST || got.GetStatus().GetState() != a2apb.TaskState_TASK_STATE_COMPLETED {
		t.Errorf("gRPC GetTask of an HTTP+JSON task: %v %v", got, err)
	}

	// A finished task cannot be canceled, whichever binding asks.
	_, err = c.CancelTask(ctx, &a2apb.CancelTaskRequest{Id: byREST})
	if f := failureOf(t, err); f.reason != "TASK_NOT_CANCELABLE" {
		t.Errorf("gRPC cancel of a completed task: %+v", f)
	}
	if ans := restRequest(a, "POST", "/tasks/"+byGRPC+":cancel", ""); ans.status != 400 {
		t.Errorf("HTTP+JSON cancel of a completed task: %d %s", ans.status, ans.raw)
	} else if _, _, reason, _ := ans.restError(); reason != "TASK_NOT_CANCELABLE" {
		t.Errorf("HTTP+JSON cancel reason %q", reason)
	}
}

// lifecycleBinding is a binding of another protocol on /other that
// answers "ok" through the engine's exported surface, and notes its
// lifecycle.
type lifecycleBinding struct {
	h                *server.Handler
	shutdown, closed atomic.Int32
}

func (b *lifecycleBinding) Serve(w http.ResponseWriter, r *http.Request, c *server.Exchange) bool {
	if r.URL.Path != "/other" {
		return false
	}
	c.Begin("OTHER")
	if _, ok := b.h.Authenticate(w, r, c); !ok {
		return true
	}
	b.h.StartOperation(r, c, "other/call")
	b.h.WriteJSON(w, http.StatusOK, "application/json", []byte(`"ok"`))
	return true
}

func (b *lifecycleBinding) Shutdown() { b.shutdown.Add(1) }

func (b *lifecycleBinding) Close() { b.closed.Add(1) }

// A binding the adapter gives the handler is served on its path, before
// JSON-RPC, observed by its own method and no A2A version, and told of
// the handler's shutdown and close.
func TestBindingLifecycle(t *testing.T) {
	b := new(lifecycleBinding)
	obs := make(observations, 64)
	a := newAgent(t, func(c *server.Config) {
		c.Observer = obs
		c.Bindings = []server.NewBinding{func(h *server.Handler) (server.Binding, error) { b.h = h; return b, nil }}
	})
	resp, body := postTo(t, a, "/other")
	if resp.StatusCode != http.StatusOK || string(body) != `"ok"` {
		t.Fatalf("/other: HTTP %d %s", resp.StatusCode, body)
	}
	obs.Expect(t, "start OTHER other/call ", "end other/call  0 span=other/call")
	if got := a.Call("1.0", "GetTask", map[string]any{"id": "none"}); got.Error == nil {
		t.Errorf("JSON-RPC beside the binding: %+v", got)
	}
	obs.Expect(t, "start JSONRPC GetTask 1.0", fmt.Sprintf("end GetTask 1.0 %d span=GetTask", a2a.CodeTaskNotFound))

	h := a.Handler.(*server.Handler)
	h.Shutdown()
	if b.shutdown.Load() != 1 || b.closed.Load() != 0 {
		t.Errorf("after Shutdown: shut down %d times, closed %d", b.shutdown.Load(), b.closed.Load())
	}
	h.Close()
	if b.closed.Load() != 1 {
		t.Errorf("after Close: closed %d times", b.closed.Load())
	}
}

// postTo posts an empty JSON object to path.
func postTo(t *testing.T, a *agent, path string) (*http.Response, []byte) {
	t.Helper()
	resp, err := a.HTTP.Post(a.URL+path, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}
