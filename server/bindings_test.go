package server_test

import (
	"testing"

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
	c := grpcClient(t, a.url)
	ctx := v10(t.Context())

	sent, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Message: pbMessage(t, "weather", "", map[string]any{"city": "Paris"})})
	if err != nil {
		t.Fatal(err)
	}
	byGRPC := sent.GetTask().GetId()
	if got := a.rest("GET", "/tasks/"+byGRPC, ""); got.status != 200 || got.body["id"] != byGRPC || stateOf(got.body) != "TASK_STATE_COMPLETED" {
		t.Errorf("HTTP+JSON GetTask of a gRPC task: %d %s", got.status, got.raw)
	}
	if got := a.call("1.0", "GetTask", map[string]any{"id": byGRPC}); got.Error != nil || got.Result["id"] != byGRPC {
		t.Errorf("JSON-RPC GetTask of a gRPC task: %+v", got)
	}

	rest := a.rest("POST", "/message:send", sendBody(t, message("1.0", "weather", map[string]any{"city": "Tokyo"}), nil))
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
	if ans := a.rest("POST", "/tasks/"+byGRPC+":cancel", ""); ans.status != 400 {
		t.Errorf("HTTP+JSON cancel of a completed task: %d %s", ans.status, ans.raw)
	} else if _, _, reason, _ := ans.restError(); reason != "TASK_NOT_CANCELABLE" {
		t.Errorf("HTTP+JSON cancel reason %q", reason)
	}
}
