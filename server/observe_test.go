package server_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// observations records what a server.Observer is told, one line per call,
// in a channel the test reads (EndRequest comes after the answer is out).
type observations chan string

type spanKey struct{}

func (o observations) StartMethod(r *http.Request, c server.Call) context.Context {
	o <- fmt.Sprintf("start %s %s %s", c.Binding, c.Method.Name(a2a.V10), c.Version)
	return context.WithValue(r.Context(), spanKey{}, c.Method.Name(a2a.V10))
}

func (o observations) EndRequest(ctx context.Context, c server.Call) {
	span, _ := ctx.Value(spanKey{}).(string)
	o <- fmt.Sprintf("end %s %s %d span=%s", c.Method.Name(a2a.V10), c.Version, c.Code, span)
}

func (o observations) Detach(request, run context.Context) context.Context {
	span, _ := request.Value(spanKey{}).(string)
	o <- "detach span=" + span
	return run
}

func (o observations) TaskEnded(skill string, state a2a.TaskState) {
	o <- fmt.Sprintf("ended %s %s", skill, state)
}

func (o observations) TaskRun(skill string, d time.Duration) {
	o <- fmt.Sprintf("run %s %t", skill, d > 0)
}

func (o observations) AuthFailure(f *authn.Failure) {
	o <- fmt.Sprintf("auth %s %q", f.Scheme, f.Cause)
}

func (o observations) Annotate(_ context.Context, skill, taskID string) {
	o <- fmt.Sprintf("annotate %s %t", skill, taskID != "")
}

// expect reads the next observations and compares them with want.
func (o observations) expect(t *testing.T, want ...string) {
	t.Helper()
	for _, w := range want {
		select {
		case got := <-o:
			if got != w {
				t.Fatalf("observed %q; want %q", got, w)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("nothing observed; want %q", w)
		}
	}
	select {
	case got := <-o:
		t.Fatalf("observed %q more", got)
	default:
	}
}

func TestObserver(t *testing.T) {
	obs := make(observations, 64)
	a := newAgent(t, func(c *server.Config) { c.Observer = obs })

	// A task run: its skill and state, the request's span carried into
	// the run, the task for the log, and the request's end without error.
	a.call("1.0", "SendMessage", map[string]any{"message": message("1.0", "weather", map[string]any{"city": "Paris"})})
	obs.expect(t, "start JSONRPC SendMessage 1.0", "annotate weather true", "detach span=SendMessage",
		"ended weather completed", "run weather true", "end SendMessage 1.0 0 span=SendMessage")

	// A task waiting for input, then canceled: each state once, the
	// cancellation with the task's skill.
	ans := a.call("1.0", "SendMessage", map[string]any{"message": message("1.0", "weather", map[string]any{})})
	id, _ := taskOf("1.0", ans.Result)["id"].(string)
	obs.expect(t, "start JSONRPC SendMessage 1.0", "annotate weather true", "detach span=SendMessage",
		"ended weather input-required", "run weather true", "end SendMessage 1.0 0 span=SendMessage")
	a.call("1.0", "CancelTask", map[string]any{"id": id})
	obs.expect(t, "start JSONRPC CancelTask 1.0", "annotate weather true", "ended weather canceled", "end CancelTask 1.0 0 span=CancelTask")

	// An unknown method is not a method: one value, with its error code.
	a.call("", "tasks/frobnicate", map[string]any{})
	obs.expect(t, fmt.Sprintf("end  0.3 %d span=", a2a.CodeMethodNotFound))

	// A stream that ends in an error event counts that error; an id that
	// names no task is not the log's.
	_, events := a.stream(t.Context(), "1.0", "SubscribeToTask", map[string]any{"id": "no-such-task"})
	for range events {
	}
	obs.expect(t, "start JSONRPC SubscribeToTask 1.0",
		fmt.Sprintf("end SubscribeToTask 1.0 %d span=SubscribeToTask", a2a.CodeTaskNotFound))
}

func TestObserverAuthFailure(t *testing.T) {
	obs := make(observations, 64)
	a := newAuthAgent(t, nil, func(c *server.Config) { c.Observer = obs })
	if ans := a.as("wrong-key-0123456789", "GetTask", map[string]any{"id": "x"}); ans.status != http.StatusUnauthorized {
		t.Fatalf("HTTP %d: %s", ans.status, ans.raw)
	}
	obs.expect(t, `auth key "the API key is not valid"`, fmt.Sprintf("end  1.0 %d span=", a2a.CodeUnauthenticated))
}
