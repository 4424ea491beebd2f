package server_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/server"
)

func TestObserver(t *testing.T) {
	obs := make(observations, 64)
	a := newAgent(t, func(c *server.Config) { c.Observer = obs })

	// A task run: its skill and state, the request's span carried into
	// the run, the task for the log, and the request's end without error.
	a.Call("1.0", "SendMessage", map[string]any{"message": message("1.0", "weather", map[string]any{"city": "Paris"})})
	obs.Expect(t, "start JSONRPC SendMessage 1.0", "annotate weather true", "detach span=SendMessage",
		"ended weather completed", "run weather true", "end SendMessage 1.0 0 span=SendMessage")

	// A task waiting for input, then canceled: each state once, the
	// cancellation with the task's skill.
	ans := a.Call("1.0", "SendMessage", map[string]any{"message": message("1.0", "weather", map[string]any{})})
	id, _ := taskOf("1.0", ans.Result)["id"].(string)
	obs.Expect(t, "start JSONRPC SendMessage 1.0", "annotate weather true", "detach span=SendMessage",
		"ended weather input-required", "run weather true", "end SendMessage 1.0 0 span=SendMessage")
	a.Call("1.0", "CancelTask", map[string]any{"id": id})
	obs.Expect(t, "start JSONRPC CancelTask 1.0", "annotate weather true", "ended weather canceled", "end CancelTask 1.0 0 span=CancelTask")

	// An unknown method is not a method: one value, with its error code.
	a.Call("", "tasks/frobnicate", map[string]any{})
	obs.Expect(t, fmt.Sprintf("end  0.3 %d span=", a2a.CodeMethodNotFound))

	// A stream that ends in an error event counts that error; an id that
	// names no task is not the log's.
	_, events := a.Stream(t.Context(), "1.0", "SubscribeToTask", map[string]any{"id": "no-such-task"})
	for range events {
	}
	obs.Expect(t, "start JSONRPC SubscribeToTask 1.0",
		fmt.Sprintf("end SubscribeToTask 1.0 %d span=SubscribeToTask", a2a.CodeTaskNotFound))
}

func TestObserverAuthFailure(t *testing.T) {
	obs := make(observations, 64)
	a := newAuthAgent(t, nil, func(c *server.Config) { c.Observer = obs })
	if ans := a.As("wrong-key-0123456789", "GetTask", map[string]any{"id": "x"}); ans.Status != http.StatusUnauthorized {
		t.Fatalf("HTTP %d: %s", ans.Status, ans.Raw)
	}
	obs.Expect(t, `auth key "the API key is not valid"`, fmt.Sprintf("end  1.0 %d span=", a2a.CodeUnauthenticated))
}
