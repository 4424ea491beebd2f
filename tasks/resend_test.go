package tasks_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// faultyStore is a memory store whose updates fail, as a shared store's do
// while it cannot be reached, when down is set.
type faultyStore struct {
	*tasks.MemoryStore
	down atomic.Bool
}

func (s *faultyStore) Update(ctx context.Context, id string, fn func(*tasks.Record, tasks.Tx) error) error {
	if s.down.Load() {
		e := a2a.InternalError("the task store is unavailable; retry later")
		e.Reason = "UNAVAILABLE"
		return e
	}
	return s.MemoryStore.Update(ctx, id, fn)
}

// An outcome the store could not take is said to be unknown, and is not
// lost: the Manager stores it once the store answers again, and the
// message sent again, in between, waits for it instead of running again.
func TestOutcomeKeptThroughStoreFault(t *testing.T) {
	opts := tasks.Options{SweepInterval: -1}
	store := &faultyStore{MemoryStore: tasks.NewMemoryStore(opts.StoreLimits())}
	opts.Store = store
	m := tasks.NewManager(opts)
	t.Cleanup(m.Close)

	msg := a2a.Message{MessageID: "order-1", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("one order")}}
	run, err := m.Start("alice", msg, tasks.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	store.down.Store(true)
	_, err = run.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted}, []a2a.Artifact{{Parts: []a2a.Part{a2a.TextPart("ord-1")}}})
	var e *a2a.Error
	if !errors.As(err, &e) || e.Reason != "UNAVAILABLE" || e.Metadata["taskId"] != run.Task.ID {
		t.Fatalf("Finish while the store fails: err = %v, want OutcomeUnknown naming the task", err)
	}

	again, err := m.Start("alice", msg, tasks.StartOptions{})
	if err != nil || !again.Resent || again.Subscription == nil {
		t.Fatalf("the message sent again: run %+v, err %v; want the task, resent, with a subscription", again, err)
	}
	defer again.Subscription.Close()
	store.down.Store(false)
	for final := false; !final; {
		select {
		case ev := <-again.Subscription.Events():
			if ev.StatusUpdate != nil {
				if ev.StatusUpdate.Status.State != a2a.TaskStateCompleted {
					t.Fatalf("status %s, want the task completed", ev.StatusUpdate.Status.State)
				}
				final = true
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the outcome was not stored once the store answered again")
		}
	}
	task, err := m.Get("alice", run.Task.ID, nil)
	if err != nil || len(task.Artifacts) != 1 {
		t.Fatalf("the task after the fault: %+v, %v; want its artifact", task, err)
	}
}
