package interop_test

import (
	"errors"
	"testing"
	"time"

	legacy "github.com/a2aproject/a2a-go/a2a"
	legacyclient "github.com/a2aproject/a2a-go/a2aclient"
	legacycard "github.com/a2aproject/a2a-go/a2aclient/agentcard"
)

// TestLegacyGoClient03 drives the agent with the last 0.3 release of the Go
// SDK (github.com/a2aproject/a2a-go v0.3.15), the client deployed 0.3 agents
// and callers still run. It reads the 0.3 card fields (url,
// preferredTransport) and decodes JSON-RPC error data as an object, where
// the v2 SDK's a2av0 layer decodes it as an array: an agent that wants
// both to see its error codes leaves 0.3 error data out, or makes it fit both.
func TestLegacyGoClient03(t *testing.T) {
	hc := recordedHTTPClient(t)
	ctx := ctxTimeout(t, 30*time.Second)
	card, err := (&legacycard.Resolver{Client: hc}).Resolve(ctx, agent.URL)
	if err != nil {
		t.Fatalf("resolving the card with the 0.3 SDK: %v", err)
	}
	c, err := legacyclient.NewFromCard(ctx, card, legacyclient.WithJSONRPCTransport(hc))
	if err != nil {
		t.Fatalf("creating a 0.3 SDK client from the card (url %q, preferredTransport %q): %v", card.URL, card.PreferredTransport, err)
	}
	defer c.Destroy()

	m := legacy.NewMessage(legacy.MessageRoleUser, legacy.DataPart{Data: map[string]any{"city": "Paris"}})
	m.Metadata = map[string]any{"skill": "weather"}
	res, err := c.SendMessage(ctx, &legacy.MessageSendParams{Message: m})
	if err != nil {
		t.Fatalf("message/send: %v", err)
	}
	task, ok := res.(*legacy.Task)
	if !ok {
		t.Fatalf("message/send answered %T, want a Task", res)
	}
	if task.Status.State != legacy.TaskStateCompleted {
		t.Fatalf("task state %s, want completed", task.Status.State)
	}
	found := false
	for _, a := range task.Artifacts {
		for _, p := range a.Parts {
			if d, ok := p.(legacy.DataPart); ok && d.Data["city"] == "Paris" {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no data artifact with city Paris: %s", jsonString(task.Artifacts))
	}

	// 0.3 marks the last event of a stream with final: true (the v2 SDK's
	// a2av0 layer drops the flag, so only this client can check it).
	t.Run("message/stream ends with final", func(t *testing.T) {
		m := legacy.NewMessage(legacy.MessageRoleUser, legacy.DataPart{Data: map[string]any{"city": "Paris"}})
		m.Metadata = map[string]any{"skill": "weather"}
		var events []legacy.Event
		for ev, err := range c.SendStreamingMessage(ctx, &legacy.MessageSendParams{Message: m}) {
			if err != nil {
				t.Fatalf("message/stream: %v after %s", err, jsonString(events))
			}
			events = append(events, ev)
		}
		if len(events) == 0 {
			t.Fatal("message/stream: no events")
		}
		if _, ok := events[0].(*legacy.Task); !ok {
			t.Errorf("first event is %T, want the task", events[0])
		}
		for i, ev := range events {
			su, ok := ev.(*legacy.TaskStatusUpdateEvent)
			last := i == len(events)-1
			switch {
			case last && (!ok || !su.Final || su.Status.State != legacy.TaskStateCompleted):
				t.Errorf("last event %s, want a completed status-update with final true", jsonString(ev))
			case !last && ok && su.Final:
				t.Errorf("event %d has final true but is not the last: %s", i, jsonString(events))
			}
		}
	})

	t.Run("task not found -32001", func(t *testing.T) {
		_, err := c.GetTask(ctx, &legacy.TaskQueryParams{ID: legacy.NewTaskID()})
		if !errors.Is(err, legacy.ErrTaskNotFound) {
			t.Fatalf("tasks/get of an unknown task: %v, want -32001 (%v)", err, legacy.ErrTaskNotFound)
		}
	})
	t.Run("task not cancelable -32002", func(t *testing.T) {
		_, err := c.CancelTask(ctx, &legacy.TaskIDParams{ID: task.ID})
		if !errors.Is(err, legacy.ErrTaskNotCancelable) {
			t.Fatalf("tasks/cancel of a completed task: %v, want -32002 (%v)", err, legacy.ErrTaskNotCancelable)
		}
	})
}
