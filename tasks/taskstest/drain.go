package taskstest

import (
	"context"
	"errors"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// A drain refuses new work at once, lets the runs under way finish until
// its deadline, then fails the rest, stores why, tells their streams, and
// ends every other stream with ErrShutdown.
func (s *suite) TestDrain(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{})
	quick := mustStart(t, m, "alice", userMsg("quick job"))
	stuck := mustStart(t, m, "alice", userMsg("stuck job"))
	_, stuckSub, err := m.Subscribe("alice", stuck.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	// A task that waits for input runs nowhere: its stream is ended, and
	// the task stays as it is.
	waiting := mustStart(t, m, "alice", userMsg("needs input"))
	if _, err := waiting.Finish(a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: agentMsg("which city?")}, nil); err != nil {
		t.Fatal(err)
	}
	_, waitingSub, err := m.Subscribe("alice", waiting.Task.ID)
	if err != nil {
		t.Fatal(err)
	}

	deadline, passDeadline := context.WithCancel(context.Background())
	m.BeginDrain()
	if !m.Draining() {
		t.Fatal("Draining is false after BeginDrain")
	}
	drained := make(chan struct{})
	go func() {
		m.Drain(deadline)
		close(drained)
	}()

	// New tasks and follow-ups are refused, with a retryable error.
	for name, start := range map[string]func() error{
		"new task": func() error { _, err := create(m, "alice", userMsg("one more")); return err },
		"follow-up": func() error {
			_, err := followUp(m, "alice", waiting.Task.ID, userMsg("Paris"))
			return err
		},
	} {
		var e *a2a.Error
		if err := start(); !errors.As(err, &e) || e.Code != a2a.CodeInternalError || e.Reason != "UNAVAILABLE" {
			t.Errorf("%s while draining: err = %v, want -32603 UNAVAILABLE", name, err)
		}
	}

	// A run that finishes before the deadline ends as usual.
	if _, err := quick.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted, Message: agentMsg("done")}, nil); err != nil {
		t.Fatalf("Finish while draining: %v", err)
	}
	select {
	case <-drained:
		t.Fatal("Drain returned while a run was under way and before its deadline")
	default:
	}

	passDeadline()
	<-drained

	got := mustGet(t, m, "alice", stuck.Task.ID)
	if got.Status.State != a2a.TaskStateFailed || got.Status.Message == nil ||
		got.Status.Message.Parts[0].Text != "The agent stopped while this task ran, so whether its work was done is unknown; to try again, send a new message (a new messageId)." {
		t.Errorf("stuck task after the drain: %+v, want failed saying the agent stopped", got.Status)
	}
	if cause := context.Cause(stuck.Context()); !errors.Is(cause, tasks.ErrShutdown) {
		t.Errorf("stuck run's context cause = %v, want ErrShutdown", cause)
	}
	if _, err := stuck.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted}, nil); !errors.Is(err, tasks.ErrTerminal) {
		t.Errorf("late Finish: err = %v, want ErrTerminal", err)
	}
	if st := mustGet(t, m, "alice", quick.Task.ID).Status.State; st != a2a.TaskStateCompleted {
		t.Errorf("quick task: %s, want completed", st)
	}
	if st := mustGet(t, m, "alice", waiting.Task.ID).Status.State; st != a2a.TaskStateInputRequired {
		t.Errorf("waiting task: %s, want input-required", st)
	}
	if !errors.Is(context.Cause(m.Stopping()), tasks.ErrShutdown) {
		t.Error("Stopping is not canceled with ErrShutdown after the drain")
	}

	// The stuck task's stream ends on its final status: through the event,
	// or, when the store ended the stream first, through FinalStatus.
	evs, closed := readAll(stuckSub)
	if !closed {
		t.Fatal("the stuck task's stream is still open after the drain")
	}
	var final *a2a.TaskStatusUpdateEvent
	if n := len(evs); n > 0 && evs[n-1].StatusUpdate != nil && evs[n-1].StatusUpdate.Final {
		final = evs[n-1].StatusUpdate
	}
	if final == nil {
		if !errors.Is(stuckSub.Err(), tasks.ErrShutdown) {
			t.Fatalf("stuck stream ended without its final event, Err %v", stuckSub.Err())
		}
		if ev := m.FinalStatus(stuckSub); ev != nil {
			final = ev.StatusUpdate
		}
	}
	if final == nil || final.Status.State != a2a.TaskStateFailed || !final.Final || final.TaskID != stuck.Task.ID {
		t.Errorf("stuck stream's last word: %+v, want the final failed status", final)
	}

	if _, closed := readAll(waitingSub); !closed || !errors.Is(waitingSub.Err(), tasks.ErrShutdown) {
		t.Errorf("waiting task's stream: closed %v, Err %v; want closed with ErrShutdown", closed, waitingSub.Err())
	}
	if m.FinalStatus(waitingSub) != nil {
		t.Error("FinalStatus of a live task is not nil")
	}
	if _, _, err := m.Subscribe("alice", waiting.Task.ID); a2aCode(err) != a2a.CodeInternalError {
		t.Errorf("Subscribe after the drain: err = %v, want -32603", err)
	}

	// Later calls wait for the first and do nothing more.
	m.Drain(context.Background())
}

// A drain with nothing running ends at once, and Close during a drain
// ends its wait.
func (s *suite) TestDrainIdleAndClose(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{})
	m.Drain(context.Background()) // nothing runs: returns without a deadline

	m2, _ := s.newManager(t, tasks.Options{})
	run := mustStart(t, m2, "bob", userMsg("long job"))
	m2.BeginDrain()
	drained := make(chan struct{})
	go func() {
		m2.Drain(context.Background()) // no deadline: only Close ends it
		close(drained)
	}()
	m2.Close()
	<-drained
	if st := mustGet(t, m2, "bob", run.Task.ID).Status.State; st != a2a.TaskStateFailed {
		t.Errorf("task left running by Close during a drain: %s, want failed", st)
	}
}
