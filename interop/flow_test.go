package interop_test

import (
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
)

// TestSendMessage: a blocking SendMessage answers the finished task, with
// the upstream's JSON as a data artifact.
func TestSendMessage(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p protocol, c *a2aclient.Client) {
		m := skillMessage("weather", map[string]any{"city": "Paris"})
		task := sendForTask(t, c, m)
		if task.ID == "" || task.ContextID == "" {
			t.Errorf("task id %q, context id %q: want both set", task.ID, task.ContextID)
		}
		if task.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("task state %s, want completed: %s", task.Status.State, jsonString(task))
		}
		requireWeatherArtifact(t, task.Artifacts)
	})
}

// TestSendMessageUpstreamFailure: an upstream 500 fails the task; it is not
// a protocol error.
func TestSendMessageUpstreamFailure(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p protocol, c *a2aclient.Client) {
		task := sendForTask(t, c, skillMessage("fail", map[string]any{}))
		if task.Status.State != a2a.TaskStateFailed {
			t.Fatalf("task state %s, want failed: %s", task.Status.State, jsonString(task))
		}
	})
}

// TestSendMessageStream: the stream starts with the Task, then carries
// status and artifact updates of that task, and ends with the terminal
// status update.
func TestSendMessageStream(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p protocol, c *a2aclient.Client) {
		ctx := ctxTimeout(t, 30*time.Second)
		m := skillMessage("weather", map[string]any{"city": "Paris"})
		events, err := collect(c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: m}))
		if err != nil {
			t.Fatalf("stream: %v after %d events:%s", err, len(events), describe(events))
		}
		taskID := requireStreamShape(t, events, a2a.TaskStateCompleted, true)
		var arts []*a2a.Artifact
		for _, ev := range events {
			if au, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok {
				arts = append(arts, au.Artifact)
			}
		}
		if len(arts) == 0 {
			t.Fatalf("no artifact-update event in the stream:%s", describe(events))
		}
		requireWeatherArtifact(t, arts)

		// The stream's task is the stored one.
		got, err := c.GetTask(ctxTimeout(t, 10*time.Second), &a2a.GetTaskRequest{ID: taskID})
		if err != nil {
			t.Fatalf("GetTask %s: %v", taskID, err)
		}
		if got.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("GetTask after the stream: state %s, want completed", got.Status.State)
		}
		requireWeatherArtifact(t, got.Artifacts)
	})
}

// requireStreamShape checks the order A2A streams follow: optionally a Task
// first, then updates of that task only, the last one a status update in
// the terminal state want, and no artifact after it. It returns the task id.
func requireStreamShape(t *testing.T, events []a2a.Event, want a2a.TaskState, taskFirst bool) a2a.TaskID {
	t.Helper()
	if len(events) == 0 {
		t.Fatalf("empty stream")
	}
	var taskID a2a.TaskID
	if first, ok := events[0].(*a2a.Task); ok {
		taskID = first.ID
	} else if taskFirst {
		t.Fatalf("first event is %s, want the Task:%s", describeEvent(events[0]), describe(events))
	}
	for i, ev := range events {
		var id a2a.TaskID
		switch e := ev.(type) {
		case *a2a.Task:
			id = e.ID
			if i > 0 && i != len(events)-1 {
				t.Errorf("event %d is a Task snapshot in the middle of the stream:%s", i, describe(events))
			}
		case *a2a.TaskStatusUpdateEvent:
			id = e.TaskID
			if e.Status.State.Terminal() && i != len(events)-1 {
				if _, lastIsTask := events[len(events)-1].(*a2a.Task); !(lastIsTask && i == len(events)-2) {
					t.Errorf("terminal status at event %d is not the end of the stream:%s", i, describe(events))
				}
			}
		case *a2a.TaskArtifactUpdateEvent:
			id = e.TaskID
		default:
			t.Fatalf("event %d is %s, want a task event:%s", i, describeEvent(ev), describe(events))
		}
		if taskID == "" {
			taskID = id
		}
		if id != taskID {
			t.Errorf("event %d belongs to task %q, want %q:%s", i, id, taskID, describe(events))
		}
	}
	// The spec allows a final Task snapshot after the terminal update.
	last := events[len(events)-1]
	if snap, ok := last.(*a2a.Task); ok && len(events) > 1 {
		if snap.Status.State != want {
			t.Fatalf("final Task snapshot in state %s, want %s:%s", snap.Status.State, want, describe(events))
		}
		last = events[len(events)-2]
	}
	su, ok := last.(*a2a.TaskStatusUpdateEvent)
	if !ok || su.Status.State != want {
		t.Fatalf("the stream does not end with a %s status update:%s", want, describe(events))
	}
	return taskID
}

// TestGetTask: GetTask returns the stored task with its conversation,
// trimmed to the most recent messages by historyLength.
func TestGetTask(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p protocol, c *a2aclient.Client) {
		m := skillMessage("weather", map[string]any{"city": "Paris"})
		task := sendForTask(t, c, m)
		ctx := ctxTimeout(t, 10*time.Second)
		full, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
		if err != nil {
			t.Fatalf("GetTask: %v", err)
		}
		if full.ID != task.ID || full.ContextID != task.ContextID || full.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("GetTask: task %s context %s state %s, want %s %s completed", full.ID, full.ContextID, full.Status.State, task.ID, task.ContextID)
		}
		requireWeatherArtifact(t, full.Artifacts)
		ids := messageIDs(full.History)
		if len(ids) == 0 || ids[0] != m.ID {
			t.Fatalf("history %v, want it to start with the user's message %s", ids, m.ID)
		}
		requireHistoryLength(t, p, c, task.ID, ids)
	})
}

// requireHistoryLength checks that GetTask with historyLength n answers the
// last n messages of the full history ids.
func requireHistoryLength(t *testing.T, p protocol, c *a2aclient.Client, id a2a.TaskID, ids []string) {
	t.Helper()
	ctx := ctxTimeout(t, 10*time.Second)
	lengths := []int{1, 2}
	if p.version == a2a.Version { // 1.0: zero asks for no history at all
		lengths = append(lengths, 0)
	}
	for _, n := range lengths {
		got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: id, HistoryLength: &n})
		if err != nil {
			t.Fatalf("GetTask historyLength=%d: %v", n, err)
		}
		want := ids[max(0, len(ids)-n):]
		if have := messageIDs(got.History); !slices.Equal(have, want) {
			t.Errorf("GetTask historyLength=%d: history %v, want the last %d of %v", n, have, n, ids)
		}
	}
}

// TestMultiTurn: a task asks for a missing argument (input-required), the
// follow-up message on the same task completes it, and the task's history
// holds the whole conversation.
func TestMultiTurn(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p protocol, c *a2aclient.Client) {
		first := skillMessage("weather", map[string]any{})
		task := sendForTask(t, c, first)
		if task.Status.State != a2a.TaskStateInputRequired {
			t.Fatalf("weather without a city: state %s, want input-required: %s", task.Status.State, jsonString(task))
		}
		if task.Status.Message == nil || !strings.Contains(strings.ToLower(jsonString(task.Status.Message.Parts)), "city") {
			t.Errorf("the input-required status message should name the missing argument city: %s", jsonString(task.Status.Message))
		}

		follow := a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewDataPart(map[string]any{"city": "Paris"}))
		done := sendForTask(t, c, follow)
		if done.ID != task.ID {
			t.Fatalf("the follow-up answered task %s, want the same task %s", done.ID, task.ID)
		}
		if done.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("after the follow-up: state %s, want completed: %s", done.Status.State, jsonString(done))
		}
		requireWeatherArtifact(t, done.Artifacts)

		full, err := c.GetTask(ctxTimeout(t, 10*time.Second), &a2a.GetTaskRequest{ID: task.ID})
		if err != nil {
			t.Fatalf("GetTask: %v", err)
		}
		ids := messageIDs(full.History)
		if len(ids) < 3 || ids[0] != first.ID || !slices.Contains(ids, follow.ID) {
			t.Fatalf("history %v: want the first message %s, the agent's question, then the follow-up %s", ids, first.ID, follow.ID)
		}
		requireHistoryLength(t, p, c, task.ID, ids)
	})
}

func messageIDs(ms []*a2a.Message) []string {
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	return ids
}

// TestListTasks (1.0 only: 0.3 has no tasks/list), over each 1.0 binding:
// filter by context and state, page through the result, and leave
// artifacts out unless asked.
func TestListTasks(t *testing.T) {
	ps := []protocol{v10}
	if agent.RESTURL != "" {
		ps = append(ps, v10REST)
	}
	for _, p := range ps {
		t.Run(p.name, func(t *testing.T) { listTasks(t, newClient(t, p)) })
	}
}

func listTasks(t *testing.T, c *a2aclient.Client) {
	contextID := a2a.NewContextID()
	var want []a2a.TaskID
	for _, city := range []string{"Paris", "London"} {
		m := skillMessage("weather", map[string]any{"city": city})
		m.ContextID = contextID
		task := sendForTask(t, c, m)
		if task.ContextID != contextID {
			t.Fatalf("task context %q, want the message's %q", task.ContextID, contextID)
		}
		want = append(want, task.ID)
	}
	ctx := ctxTimeout(t, 10*time.Second)

	all, err := c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: contextID})
	if err != nil {
		t.Fatalf("ListTasks: %v", err)
	}
	if got := taskIDs(all.Tasks); !sameSet(got, want) || all.TotalSize != 2 {
		t.Fatalf("ListTasks contextId: tasks %v totalSize %d, want %v and 2", got, all.TotalSize, want)
	}
	for _, task := range all.Tasks {
		if len(task.Artifacts) != 0 {
			t.Errorf("ListTasks without includeArtifacts returned artifacts for %s", task.ID)
		}
	}

	withArts, err := c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: contextID, IncludeArtifacts: true})
	if err != nil {
		t.Fatalf("ListTasks includeArtifacts: %v", err)
	}
	for _, task := range withArts.Tasks {
		if len(task.Artifacts) == 0 {
			t.Errorf("ListTasks includeArtifacts: task %s has no artifacts", task.ID)
		}
	}

	completed, err := c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: contextID, Status: a2a.TaskStateCompleted})
	if err != nil {
		t.Fatalf("ListTasks status=completed: %v", err)
	}
	if len(completed.Tasks) != 2 {
		t.Errorf("ListTasks status=completed: %d tasks, want 2", len(completed.Tasks))
	}
	working, err := c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: contextID, Status: a2a.TaskStateWorking})
	if err != nil {
		t.Fatalf("ListTasks status=working: %v", err)
	}
	if len(working.Tasks) != 0 {
		t.Errorf("ListTasks status=working: %d tasks, want none", len(working.Tasks))
	}

	page1, err := c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: contextID, PageSize: 1})
	if err != nil {
		t.Fatalf("ListTasks pageSize=1: %v", err)
	}
	if len(page1.Tasks) != 1 || page1.NextPageToken == "" || page1.TotalSize != 2 {
		t.Fatalf("ListTasks pageSize=1: %d tasks, nextPageToken %q, totalSize %d; want 1, a token, 2", len(page1.Tasks), page1.NextPageToken, page1.TotalSize)
	}
	page2, err := c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: contextID, PageSize: 1, PageToken: page1.NextPageToken})
	if err != nil {
		t.Fatalf("ListTasks page 2: %v", err)
	}
	if len(page2.Tasks) != 1 || page2.NextPageToken != "" {
		t.Fatalf("ListTasks page 2: %d tasks, nextPageToken %q; want 1 and none", len(page2.Tasks), page2.NextPageToken)
	}
	if got := taskIDs(append(page1.Tasks, page2.Tasks...)); !sameSet(got, want) {
		t.Errorf("the two pages hold %v, want %v", got, want)
	}
}

func taskIDs(ts []*a2a.Task) []a2a.TaskID {
	var ids []a2a.TaskID
	for _, t := range ts {
		ids = append(ids, t.ID)
	}
	return ids
}

func sameSet[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// TestCancelTask: canceling a running task answers it canceled, ends its
// subscribers' streams with the canceled status, and cancels the upstream
// request (the demo API counts it).
func TestCancelTask(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p protocol, c *a2aclient.Client) {
		before := getStats(t)
		task := startSlow(t, c, 30)
		// Cancel only once the upstream call is in flight, so that the
		// cancellation has a request to reach.
		waitStats(t, 15*time.Second, "the slow request", func(s demoStats) bool { return s.SlowStarted > before.SlowStarted })

		// 1.0 streams begin with the Task, which tells us the subscription
		// is live before we cancel; 0.3 makes no such promise.
		var subEvents []a2a.Event
		var next func() (a2a.Event, error, bool)
		if p.version == a2a.Version {
			var stop func()
			next, stop = iter.Pull2(c.SubscribeToTask(ctxTimeout(t, 30*time.Second), &a2a.SubscribeToTaskRequest{ID: task.ID}))
			defer stop()
			ev, err, ok := next()
			if !ok || err != nil {
				t.Fatalf("SubscribeToTask: no first event (err %v)", err)
			}
			subEvents = append(subEvents, ev)
		}

		canceled, err := c.CancelTask(ctxTimeout(t, 10*time.Second), &a2a.CancelTaskRequest{ID: task.ID})
		if err != nil {
			t.Fatalf("CancelTask: %v", err)
		}
		if canceled.ID != task.ID || canceled.Status.State != a2a.TaskStateCanceled {
			t.Fatalf("CancelTask answered task %s in state %s, want %s canceled", canceled.ID, canceled.Status.State, task.ID)
		}

		waitStats(t, 10*time.Second, "the slow request's cancellation", func(s demoStats) bool { return s.SlowCanceled > before.SlowCanceled })

		got, err := c.GetTask(ctxTimeout(t, 10*time.Second), &a2a.GetTaskRequest{ID: task.ID})
		if err != nil {
			t.Fatalf("GetTask after cancel: %v", err)
		}
		if got.Status.State != a2a.TaskStateCanceled {
			t.Errorf("GetTask after cancel: state %s, want canceled", got.Status.State)
		}

		if next != nil {
			for {
				ev, err, ok := next()
				if !ok {
					break
				}
				if err != nil {
					t.Fatalf("subscription after cancel: %v after:%s", err, describe(subEvents))
				}
				subEvents = append(subEvents, ev)
			}
			requireStreamShape(t, subEvents, a2a.TaskStateCanceled, true)
		}
	})
}

// TestSubscribeToTask: a subscriber to a running task gets its updates
// until it completes (1.0: starting with the Task).
func TestSubscribeToTask(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p protocol, c *a2aclient.Client) {
		task := startSlow(t, c, 2)
		ctx := ctxTimeout(t, 30*time.Second)
		events, err := collect(c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}))
		if err != nil {
			t.Fatalf("SubscribeToTask: %v after %d events:%s", err, len(events), describe(events))
		}
		if id := requireStreamShape(t, events, a2a.TaskStateCompleted, p.version == a2a.Version); id != task.ID {
			t.Fatalf("subscription carried task %s, want %s", id, task.ID)
		}
	})
}

// TestSendMessageReturnsMessage: a skill declared to answer with a message
// (echo) makes SendMessage answer a Message, not a Task.
func TestSendMessageReturnsMessage(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p protocol, c *a2aclient.Client) {
		m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello interop"), a2a.NewDataPart(map[string]any{"tags": []any{"a", "b"}}))
		m.Metadata = map[string]any{"skill": "echo"}
		res := send(t, c, &a2a.SendMessageRequest{Message: m})
		msg, ok := res.(*a2a.Message)
		if !ok {
			t.Fatalf("SendMessage to echo answered %T, want a Message: %s", res, jsonString(res))
		}
		if msg.Role != a2a.MessageRoleAgent || msg.ID == "" || len(msg.Parts) == 0 {
			t.Fatalf("echo answered role %s id %q with %d parts, want an agent message with an id and parts", msg.Role, msg.ID, len(msg.Parts))
		}
		if got := jsonString(msg.Parts); !strings.Contains(got, "/echo") {
			t.Errorf("echo's answer does not mention the path it called: %s", got)
		}
	})
}
