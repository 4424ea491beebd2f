package interop_test

import (
	"slices"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// newGRPCClient makes the official Go SDK's client from the agent's card
// with the gRPC transport only, so that it must find the gRPC interface
// the card lists and dial it (Caddy serves it over h2c here).
func newGRPCClient(t *testing.T) *a2aclient.Client {
	t.Helper()
	ctx := ctxTimeout(t, 30*time.Second)
	card, err := (&agentcard.Resolver{Client: recordedHTTPClient(t)}).Resolve(ctx, agent.URL)
	if err != nil {
		t.Fatalf("resolving the card: %v", err)
	}
	if !slices.ContainsFunc(card.SupportedInterfaces, func(i *a2a.AgentInterface) bool {
		return i.ProtocolBinding == a2a.TransportProtocolGRPC && i.ProtocolVersion == a2a.Version
	}) {
		t.Fatalf("the card lists no gRPC 1.0 interface: %s", jsonString(card.SupportedInterfaces))
	}
	c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithDefaultsDisabled(),
		a2agrpc.WithGRPCTransport(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		t.Fatalf("creating the gRPC client from the card: %v", err)
	}
	t.Cleanup(func() { c.Destroy() })
	return c
}

// TestGRPC runs the flow over the SDK's gRPC transport: send, stream, get,
// list, multi-turn, cancel, subscribe and the protocol errors.
func TestGRPC(t *testing.T) {
	c := newGRPCClient(t)

	t.Run("send", func(t *testing.T) {
		task := sendForTask(t, c, skillMessage("weather", map[string]any{"city": "Paris"}))
		if task.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("state %s: %s", task.Status.State, jsonString(task))
		}
		requireWeatherArtifact(t, task.Artifacts)
		got, err := c.GetTask(ctxTimeout(t, 10*time.Second), &a2a.GetTaskRequest{ID: task.ID})
		if err != nil || got.ID != task.ID || got.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("GetTask: %s, %v", jsonString(got), err)
		}
		list, err := c.ListTasks(ctxTimeout(t, 10*time.Second), &a2a.ListTasksRequest{ContextID: task.ContextID})
		if err != nil || len(list.Tasks) != 1 || list.Tasks[0].ID != task.ID {
			t.Fatalf("ListTasks by context: %s, %v", jsonString(list), err)
		}
	})

	t.Run("stream", func(t *testing.T) {
		events, err := collect(c.SendStreamingMessage(ctxTimeout(t, 30*time.Second),
			&a2a.SendMessageRequest{Message: skillMessage("weather", map[string]any{"city": "Paris"})}))
		if err != nil {
			t.Fatalf("stream: %v after:%s", err, describe(events))
		}
		requireStreamShape(t, events, a2a.TaskStateCompleted, true)
	})

	t.Run("multi-turn", func(t *testing.T) {
		task := sendForTask(t, c, skillMessage("weather", map[string]any{}))
		if task.Status.State != a2a.TaskStateInputRequired {
			t.Fatalf("weather without a city: state %s", task.Status.State)
		}
		done := sendForTask(t, c, a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewDataPart(map[string]any{"city": "Paris"})))
		if done.ID != task.ID || done.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("follow-up: %s", jsonString(done))
		}
		requireWeatherArtifact(t, done.Artifacts)
	})

	t.Run("subscribe", func(t *testing.T) {
		task := startSlow(t, c, 2)
		events, err := collect(c.SubscribeToTask(ctxTimeout(t, 30*time.Second), &a2a.SubscribeToTaskRequest{ID: task.ID}))
		if err != nil {
			t.Fatalf("SubscribeToTask: %v after:%s", err, describe(events))
		}
		if id := requireStreamShape(t, events, a2a.TaskStateCompleted, true); id != task.ID {
			t.Fatalf("subscription carried task %s, want %s", id, task.ID)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		before := getStats(t)
		task := startSlow(t, c, 30)
		waitStats(t, 15*time.Second, "the slow request", func(s demoStats) bool { return s.SlowStarted > before.SlowStarted })
		canceled, err := c.CancelTask(ctxTimeout(t, 10*time.Second), &a2a.CancelTaskRequest{ID: task.ID})
		if err != nil || canceled.Status.State != a2a.TaskStateCanceled {
			t.Fatalf("CancelTask: %s, %v", jsonString(canceled), err)
		}
		waitStats(t, 10*time.Second, "the slow request's cancellation", func(s demoStats) bool { return s.SlowCanceled > before.SlowCanceled })
	})

	t.Run("errors", func(t *testing.T) {
		ctx := ctxTimeout(t, 30*time.Second)
		done := sendForTask(t, c, skillMessage("weather", map[string]any{"city": "Paris"}))
		unknown := a2a.NewTaskID()
		_, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: unknown})
		requireError(t, err, a2a.ErrTaskNotFound, -32001)
		events, err := collect(c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: unknown}))
		requireStreamError(t, events, err, a2a.ErrTaskNotFound, -32001)
		_, err = c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: done.ID})
		requireError(t, err, a2a.ErrTaskNotCancelable, -32002)
		_, err = c.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: done.ID, ID: "cfg-1"})
		requireError(t, err, a2a.ErrPushNotificationNotSupported, -32003)
		events, err = collect(c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: done.ID}))
		requireStreamError(t, events, err, a2a.ErrUnsupportedOperation, -32004)
		_, err = c.GetExtendedAgentCard(ctx, &a2a.GetExtendedAgentCardRequest{})
		requireError(t, err, a2a.ErrExtendedCardNotConfigured, -32007)
		m := a2a.NewMessage(a2a.MessageRoleUser) // a message needs at least one part
		m.Metadata = map[string]any{"skill": "weather"}
		_, err = c.SendMessage(ctx, &a2a.SendMessageRequest{Message: m})
		requireError(t, err, a2a.ErrInvalidParams, -32602)
	})
}
