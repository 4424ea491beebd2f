package server_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// A run that CancelTask stops is no failure: it is logged at debug level,
// never as a warning that a skill failed.
func TestCanceledRunIsNoWarning(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	a := newAgent(t, func(c *server.Config) { c.Logger = zap.New(core) })
	ans := a.Call("1.0", "SendMessage", map[string]any{"message": message("1.0", "slow", map[string]any{"seconds": 30}),
		"configuration": map[string]any{"returnImmediately": true}})
	if ans.Error != nil {
		t.Fatal(ans.Error)
	}
	id, _ := taskOf("1.0", ans.Result)["id"].(string)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := a.API.WaitStats(ctx, func(s demoapi.Stats) bool { return s.SlowStarted > 0 }); err != nil {
		t.Fatal(err)
	}
	if ans := a.Call("1.0", "CancelTask", map[string]any{"id": id}); ans.Error != nil {
		t.Fatal(ans.Error)
	}
	// The run ends once its upstream call is aborted, and says so.
	for logs.FilterMessage("skill run stopped: its task ended").Len() == 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("the canceled run did not end: logs %v", logs.All())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if warned := logs.FilterLevelExact(zapcore.WarnLevel).All(); len(warned) > 0 {
		t.Errorf("a canceled run was logged as a warning: %v", warned)
	}
	if got := a.Call("1.0", "GetTask", map[string]any{"id": id}); stateOf(got.Result) != wireState("1.0", a2a.TaskStateCanceled) {
		t.Errorf("task after the cancel: %v", got.Result)
	}
}
