package taskstest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

func exists(m *tasks.Manager, id string) bool {
	_, err := m.Get("", id, nil)
	return err == nil
}

// A full store evicts terminal tasks, least recently updated first, and
// refuses a new task rather than drop a live one.
func (s *suite) TestEvictionOrder(t *testing.T) {
	m, clk := s.newManager(t, tasks.Options{MaxTasks: 3, MaxLivePerOwner: 3, MaxLiveAnonymous: 3, MaxLivePerClient: 3})
	a := mustCreate(t, m, "", userMsg("a"))
	b := mustCreate(t, m, "", userMsg("b"))
	c := mustCreate(t, m, "", userMsg("c"))
	clk.Advance(time.Second)
	mustSetStatus(t, m, b.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted})
	clk.Advance(time.Second)
	mustSetStatus(t, m, a.ID, a2a.TaskStatus{State: a2a.TaskStateFailed})
	mustSetStatus(t, m, c.ID, a2a.TaskStatus{State: a2a.TaskStateInputRequired})

	d := mustCreate(t, m, "", userMsg("d"))
	if exists(m, b.ID) || !exists(m, a.ID) {
		t.Fatalf("after d: b kept %v, a kept %v; want b (the older terminal task) evicted", exists(m, b.ID), exists(m, a.ID))
	}
	e := mustCreate(t, m, "", userMsg("e"))
	if exists(m, a.ID) {
		t.Fatal("after e: a kept, want it evicted")
	}

	// c (interrupted), d and e (submitted) are live: no room.
	_, err := create(m, "", userMsg("f"))
	var ae *a2a.Error
	if !errors.As(err, &ae) || ae.Code != a2a.CodeInternalError || ae.Reason != "RESOURCE_EXHAUSTED" ||
		!strings.Contains(ae.Description, "retry later") {
		t.Fatalf("Create in a store full of live tasks: err = %#v, want a retry-later error", err)
	}
	for _, task := range []*a2a.Task{c, d, e} {
		if !exists(m, task.ID) {
			t.Errorf("live task %s was dropped", task.History[0].Parts[0].Text)
		}
	}

	// Once one finishes there is room again.
	mustSetStatus(t, m, d.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted})
	mustCreate(t, m, "", userMsg("g"))
	if exists(m, d.ID) {
		t.Error("d was not evicted for g")
	}
}

// MaxAge is measured from the last update. Terminal tasks are evicted; live
// ones are failed (their work canceled, their streams ended) and evicted a
// MaxAge later.
func (s *suite) TestAgeExpiry(t *testing.T) {
	const maxAge = time.Hour
	m, clk := s.newManager(t, tasks.Options{MaxAge: maxAge, MaxInputWait: maxAge})

	done := mustCreate(t, m, "", userMsg("done"))
	mustSetStatus(t, m, done.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted})
	waiting := mustCreate(t, m, "", userMsg("waiting"))
	mustSetStatus(t, m, waiting.ID, a2a.TaskStatus{State: a2a.TaskStateInputRequired})
	_, sub, err := m.Subscribe("", waiting.ID)
	if err != nil {
		t.Fatal(err)
	}
	run := mustStart(t, m, "", userMsg("running"))
	running, ctx := run.Task, run.Context()

	clk.Advance(maxAge / 2)
	mustSetStatus(t, m, running.ID, a2a.TaskStatus{State: a2a.TaskStateWorking}) // refreshes its age
	if err := m.AddArtifact(running.ID, a2a.Artifact{ArtifactID: "x"}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(maxAge / 2)
	mustCreate(t, m, "", userMsg("tick")) // Create applies the ages
	if !exists(m, done.ID) {
		t.Fatal("a task exactly MaxAge old was evicted")
	}

	clk.Advance(time.Second)
	mustCreate(t, m, "", userMsg("tick"))
	if exists(m, done.ID) {
		t.Error("a terminal task older than MaxAge is still there")
	}
	got := mustGet(t, m, "", waiting.ID)
	if got.Status.State != a2a.TaskStateFailed || got.Status.Message == nil ||
		!strings.Contains(got.Status.Message.Parts[0].Text, "expired") || !got.Status.Timestamp.Equal(clk.Now()) {
		t.Errorf("expired interrupted task: status %+v, want failed now with an expiry message", got.Status)
	}
	if ev := recv(t, sub); ev.StatusUpdate == nil || ev.StatusUpdate.Status.State != a2a.TaskStateFailed || !ev.StatusUpdate.Final {
		t.Errorf("subscriber got %+v, want the final failed update", ev)
	}
	if _, closed := drain(sub); !closed {
		t.Error("the expired task's stream is still open")
	}
	if got := mustGet(t, m, "", running.ID); got.Status.State != a2a.TaskStateWorking || ctx.Err() != nil {
		t.Errorf("a task updated half a MaxAge ago was expired (%s, ctx %v)", got.Status.State, ctx.Err())
	}

	clk.Advance(maxAge / 2)
	mustCreate(t, m, "", userMsg("tick"))
	if got := mustGet(t, m, "", running.ID); got.Status.State != a2a.TaskStateFailed {
		t.Errorf("running task after MaxAge without update: %s, want failed", got.Status.State)
	}
	if !errors.Is(context.Cause(ctx), tasks.ErrExpired) {
		t.Errorf("running task's context: cause %v, want ErrExpired", context.Cause(ctx))
	}
	if _, err := m.SetStatus(running.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted}); !errors.Is(err, tasks.ErrTerminal) {
		t.Errorf("late completion of an expired task: err = %v, want ErrTerminal", err)
	}
	if !exists(m, waiting.ID) {
		t.Error("the expired task was evicted before a second MaxAge")
	}
	clk.Advance(maxAge/2 + time.Second)
	mustCreate(t, m, "", userMsg("tick"))
	if exists(m, waiting.ID) {
		t.Error("the expired task is still there a MaxAge after it failed")
	}
}

// The janitor applies ages without any request coming in.
func (s *suite) TestJanitor(t *testing.T) {
	m, clk := s.newManager(t, tasks.Options{MaxAge: time.Minute, SweepInterval: time.Millisecond})
	task := mustCreate(t, m, "", userMsg("forgotten"))
	_, sub, err := m.Subscribe("", task.ID)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	if ev := recv(t, sub); ev.StatusUpdate == nil || ev.StatusUpdate.Status.State != a2a.TaskStateFailed {
		t.Errorf("event = %+v, want failed", ev)
	}
}

// One caller cannot fill the store for everyone: past its share of live
// tasks its new tasks are refused, while other callers still get theirs,
// and a task that ends frees its place.
func (s *suite) TestLiveTasksPerOwner(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{MaxTasks: 10, MaxLivePerOwner: 2})
	first := mustCreate(t, m, "mallory", userMsg("1"))
	mustCreate(t, m, "mallory", userMsg("2"))
	_, err := create(m, "mallory", userMsg("3"))
	var protoErr *a2a.Error
	if !errors.As(err, &protoErr) || protoErr.Reason != "RESOURCE_EXHAUSTED" {
		t.Fatalf("third live task of one caller: %v, want RESOURCE_EXHAUSTED", err)
	}
	mustCreate(t, m, "alice", userMsg("a"))
	mustSetStatus(t, m, first.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted})
	mustCreate(t, m, "mallory", userMsg("3 again"))
}

// A task's history is bounded: a follow-up whose turn could take the task
// past MaxHistory messages is refused, and the task is unchanged.
func (s *suite) TestHistoryLimit(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{MaxHistory: 5})
	task := mustCreate(t, m, "", userMsg("1"))
	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: agentMsg("more?")})
	if _, err := followUp(m, "", task.ID, userMsg("2")); err != nil {
		t.Fatalf("follow-up within the limit: %v", err)
	}
	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateInputRequired})
	_, err := followUp(m, "", task.ID, userMsg("3"))
	var protoErr *a2a.Error
	if !errors.As(err, &protoErr) || protoErr.Code != a2a.CodeInvalidParams {
		t.Fatalf("follow-up past the limit: %v, want invalid params", err)
	}
	got, err := m.Get("", task.ID, nil)
	if err != nil || len(got.History) != 3 || got.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("task after the refused follow-up: %d messages, state %v (%v)", len(got.History), got.Status.State, err)
	}
}

// An interrupted task that nobody continues fails after MaxInputWait, long
// before MaxAge, and frees its owner's place; a running task is not
// touched.
func (s *suite) TestInputWait(t *testing.T) {
	m, clk := s.newManager(t, tasks.Options{MaxAge: time.Hour, MaxInputWait: time.Minute, MaxLivePerOwner: 2})
	waiting := mustCreate(t, m, "anon", userMsg("book a table"))
	mustSetStatus(t, m, waiting.ID, a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: agentMsg("for how many?")})
	running := mustCreate(t, m, "anon", userMsg("long job"))
	if _, err := create(m, "anon", userMsg("one more")); a2aCode(err) != a2a.CodeInternalError {
		t.Fatalf("third live task: err = %v, want RESOURCE_EXHAUSTED", err)
	}

	clk.Advance(time.Minute + time.Second)
	mustCreate(t, m, "anon", userMsg("now there is room")) // applies the ages
	got := mustGet(t, m, "anon", waiting.ID)
	if got.Status.State != a2a.TaskStateFailed || got.Status.Message == nil ||
		!strings.Contains(got.Status.Message.Parts[0].Text, "no input arrived within 1m0s") {
		t.Errorf("interrupted task after MaxInputWait: %s %+v, want failed saying no input arrived", got.Status.State, got.Status.Message)
	}
	if got := mustGet(t, m, "anon", running.ID); got.Status.State != a2a.TaskStateWorking {
		t.Errorf("running task: %s, want still working", got.Status.State)
	}
}
