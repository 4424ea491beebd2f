package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
)

// While the task manager drains, the endpoint refuses new tasks with a
// retryable error, in JSON and in SSE; at the deadline a stream of a
// running task ends on its final failed status, and one of a task that
// waits for input asks to subscribe again.
func TestDrain(t *testing.T) {
	a := newAgent(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	_, running := a.stream(ctx, "1.0", "SendStreamingMessage", map[string]any{"message": message("1.0", "slow", map[string]any{"seconds": 30})})
	first := <-running
	if task, _ := first["result"].(map[string]any)["task"].(map[string]any); task == nil {
		t.Fatalf("first event: %v", first)
	}
	waiting := taskOf("1.0", a.call("1.0", "SendMessage", map[string]any{"message": message("1.0", "weather", map[string]any{})}).Result)
	if stateOf(waiting) != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("weather without a city: %v", waiting)
	}
	_, subscribed := a.stream(ctx, "1.0", "SubscribeToTask", map[string]any{"id": waiting["id"]})
	<-subscribed // the task as it is

	a.tasks.BeginDrain()
	refused := a.call("1.0", "SendMessage", map[string]any{"message": message("1.0", "weather", map[string]any{"city": "Paris"})})
	if refused.Error == nil || refused.Error.Code != -32603 || !strings.Contains(string(refused.Error.Data), `"UNAVAILABLE"`) ||
		!strings.Contains(refused.Error.Message, "send the message again") {
		t.Errorf("SendMessage while draining: %+v, want -32603 UNAVAILABLE asking to send again", refused.Error)
	}
	// A skill that answers with a message is new work too.
	echo := a.call("1.0", "SendMessage", map[string]any{"message": message("1.0", "echo", map[string]any{"tags": []string{"a"}})})
	if echo.Error == nil || echo.Error.Code != -32603 {
		t.Errorf("a message skill while draining: %+v, want -32603", echo.Error)
	}
	_, refusedStream := a.stream(ctx, "1.0", "SendStreamingMessage", map[string]any{"message": message("1.0", "weather", map[string]any{"city": "Paris"})})
	if ev := <-refusedStream; ev["error"] == nil {
		t.Errorf("SendStreamingMessage while draining: %v, want an error event", ev)
	}

	deadlinePassed, pass := context.WithCancel(context.Background())
	pass()
	a.tasks.Drain(deadlinePassed)

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

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// When the store fails as a new task's stream is opened (it is stored, but
// the subscription cannot be made), the task runs all the same and the
// caller is told so, naming it: the same message sent again follows it to
// its end, and nothing waits for a run that nobody makes.
func TestStreamUnfollowedTaskRuns(t *testing.T) {
	a, store, _ := agentOnFailingStore(t, nil)
	msg := message("1.0", "weather", map[string]any{"city": "Paris"})
	store.subscribe.Store(true)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, events := a.stream(ctx, "1.0", "SendStreamingMessage", map[string]any{"message": msg})
	first := <-events
	e, _ := first["error"].(map[string]any)
	data, _ := json.Marshal(e["data"])
	if e == nil || !strings.Contains(fmt.Sprint(e["message"]), "the task runs all the same") || !strings.Contains(string(data), `"taskId"`) {
		t.Fatalf("a stream the store could not open: %v, want an error saying the task runs, naming it", first)
	}
	store.subscribe.Store(false)
	_, again := a.stream(ctx, "1.0", "SendStreamingMessage", map[string]any{"message": msg})
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

// An MCP call whose run the agent stopped as its drain's deadline passed
// is told so in MCP's terms: A2A's text asks for a new message, where an
// MCP client calls the tool again.
func TestMCPCallStoppedByDrain(t *testing.T) {
	a := newAgent(t, withMCP)
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
	if _, err := a.api.WaitStats(ctx, func(s demoapi.Stats) bool { return s.SlowStarted > 0 }); err != nil {
		t.Fatal(err)
	}
	deadlinePassed, pass := context.WithCancel(context.Background())
	pass()
	a.tasks.Drain(deadlinePassed)
	res := <-ended
	if got := texts(res); res == nil || !res.IsError || len(got) != 1 ||
		got[0] != "The agent stopped while this call ran, so whether its work was done is unknown; calling the tool again runs it again." {
		t.Errorf("the call the drain stopped: %+v", res)
	}
}
