package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// While the task manager drains, the endpoint refuses new tasks with a
// retryable error, in JSON and in SSE; at the deadline a stream of a
// running task ends on its final failed status, and one of a task that
// waits for input asks to subscribe again.
func TestDrain(t *testing.T) {
	a := newAgent(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	_, running := a.Stream(ctx, "1.0", "SendStreamingMessage", map[string]any{"message": message("1.0", "slow", map[string]any{"seconds": 30})})
	first := <-running
	if task, _ := first["result"].(map[string]any)["task"].(map[string]any); task == nil {
		t.Fatalf("first event: %v", first)
	}
	waiting := taskOf("1.0", a.Call("1.0", "SendMessage", map[string]any{"message": message("1.0", "weather", map[string]any{})}).Result)
	if stateOf(waiting) != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("weather without a city: %v", waiting)
	}
	_, subscribed := a.Stream(ctx, "1.0", "SubscribeToTask", map[string]any{"id": waiting["id"]})
	<-subscribed // the task as it is

	a.Tasks.BeginDrain()
	refused := a.Call("1.0", "SendMessage", map[string]any{"message": message("1.0", "weather", map[string]any{"city": "Paris"})})
	if refused.Error == nil || refused.Error.Code != -32603 || !strings.Contains(string(refused.Error.Data), `"UNAVAILABLE"`) ||
		!strings.Contains(refused.Error.Message, "send the message again") {
		t.Errorf("SendMessage while draining: %+v, want -32603 UNAVAILABLE asking to send again", refused.Error)
	}
	// A skill that answers with a message is new work too.
	echo := a.Call("1.0", "SendMessage", map[string]any{"message": message("1.0", "echo", map[string]any{"tags": []string{"a"}})})
	if echo.Error == nil || echo.Error.Code != -32603 {
		t.Errorf("a message skill while draining: %+v, want -32603", echo.Error)
	}
	_, refusedStream := a.Stream(ctx, "1.0", "SendStreamingMessage", map[string]any{"message": message("1.0", "weather", map[string]any{"city": "Paris"})})
	if ev := <-refusedStream; ev["error"] == nil {
		t.Errorf("SendStreamingMessage while draining: %v, want an error event", ev)
	}

	deadlinePassed, pass := context.WithCancel(context.Background())
	pass()
	a.Tasks.Drain(deadlinePassed)

	last := lastEvent(running)
	update, _ := last["result"].(map[string]any)["statusUpdate"].(map[string]any)
	if stateOf(update) != "TASK_STATE_FAILED" || !strings.Contains(mustJSON(update), "The agent stopped while this task ran") {
		t.Errorf("the running task's stream ended on %v, want its final failed status", last)
	}
	if last := lastEvent(subscribed); last["error"] == nil || !strings.Contains(mustJSON(last), "subscribe again") {
		t.Errorf("the waiting task's stream ended on %v, want an error asking to subscribe again", last)
	}
}

// lastEvent reads a stream to its end.
func lastEvent(events <-chan map[string]any) map[string]any {
	var last map[string]any
	for ev := range events {
		last = ev
	}
	return last
}

// When the store fails as a new task's stream is opened (it is stored, but
// the subscription cannot be made), the task runs all the same and the
// caller is told so, naming it: the same message sent again follows it to
// its end, and nothing waits for a run that nobody makes.
func TestStreamUnfollowedTaskRuns(t *testing.T) {
	a, store, _ := agentOnFailingStore(t, nil)
	msg := message("1.0", "weather", map[string]any{"city": "Paris"})
	store.FailSubscribe.Store(true)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, events := a.Stream(ctx, "1.0", "SendStreamingMessage", map[string]any{"message": msg})
	first := <-events
	e, _ := first["error"].(map[string]any)
	data, _ := json.Marshal(e["data"])
	if e == nil || !strings.Contains(fmt.Sprint(e["message"]), "the task runs all the same") || !strings.Contains(string(data), `"taskId"`) {
		t.Fatalf("a stream the store could not open: %v, want an error saying the task runs, naming it", first)
	}
	store.FailSubscribe.Store(false)
	_, again := a.Stream(ctx, "1.0", "SendStreamingMessage", map[string]any{"message": msg})
	var last map[string]any
	for ev := range again {
		last = ev
	}
	// The task's last update, or the task alone when it ended before.
	result, _ := last["result"].(map[string]any)
	ended, _ := result["statusUpdate"].(map[string]any)
	if ended == nil {
		ended = taskOf("1.0", result)
	}
	if stateOf(ended) != "TASK_STATE_COMPLETED" {
		t.Errorf("the message sent again: last event %v, want the task completed", last)
	}
}
