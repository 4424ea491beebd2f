package redisstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/internal/redistest"
	"github.com/caddy-a2a/caddy-a2a/tasks"
	"github.com/caddy-a2a/caddy-a2a/tasks/redisstore"
)

// The store takes no lock of its own (the Manager makes the updates of a
// task one at a time), so its sweep may expire a task while an update of
// it is under way on this replica: the two then share no memory. Here the
// update has added a message to the task as this replica last wrote it
// (whose history has room to grow in place) when the sweep expires the
// task, adding its own; the update's message is still its own after, and
// the update, which the sweep's change came before, is made on the task
// as the sweep left it.
func TestSweepSharesNothingWithAnUpdateUnderWay(t *testing.T) {
	srv := redistest.Start(t)
	limits := tasks.Options{MaxAge: time.Hour}.StoreLimits()
	store := newStore(t, redisstore.Options{Client: srv.Client(t), Limits: limits})
	at := time.Now().Add(-2 * limits.MaxAge)
	say := func(rec *tasks.Record, state a2a.TaskState, text string) {
		rec.Task.History = append(rec.Task.History, *agentMsg(text))
		rec.Task.Status = a2a.TaskStatus{State: state, Timestamp: at, Message: &rec.Task.History[len(rec.Task.History)-1]}
	}
	if err := store.Insert(t.Context(), tasks.Record{Owner: "alice", Updated: at, Task: a2a.Task{ID: "t", ContextID: "c",
		Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: at}, History: []a2a.Message{userMsg("start")}}}); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"one", "two"} { // the history: 3 messages, room for 4
		if err := store.Update(t.Context(), "t", func(rec *tasks.Record, _ tasks.Tx) error {
			say(rec, a2a.TaskStateWorking, text)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}

	added, swept := make(chan struct{}), make(chan struct{})
	updated := make(chan error, 1)
	go func() {
		first := true
		updated <- store.Update(t.Context(), "t", func(rec *tasks.Record, _ tasks.Tx) error {
			if rec.Task.Status.State.Terminal() {
				return tasks.ErrTerminal
			}
			say(rec, a2a.TaskStateWorking, "update")
			if first {
				first = false
				close(added)
				<-swept
				if got := rec.Task.History[len(rec.Task.History)-1].Parts[0].Text; got != "update" {
					t.Errorf("the update's last message is %q after the sweep; want its own, %q", got, "update")
				}
			}
			return nil
		})
	}()
	<-added
	err := store.Sweep(t.Context(), time.Now(), func(rec *tasks.Record, _ tasks.Tx, _ tasks.Expiry) {
		say(rec, a2a.TaskStateFailed, "expired")
	})
	close(swept)
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if err := <-updated; !errors.Is(err, tasks.ErrTerminal) {
		t.Errorf("the update, made after the sweep expired the task: %v; want the callback's ErrTerminal", err)
	}
	rec, err := store.Get(t.Context(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if h := rec.Task.History; rec.Task.Status.State != a2a.TaskStateFailed || len(h) != 4 || h[3].Parts[0].Text != "expired" {
		t.Errorf("the task: %s, history %v; want failed, with the sweep's message last", rec.Task.Status.State, h)
	}
}
