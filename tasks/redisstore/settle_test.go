package redisstore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/internal/redistest"
	"github.com/caddy-a2a/caddy-a2a/tasks"
	"github.com/caddy-a2a/caddy-a2a/tasks/redisstore"
)

// Redis paused while a new task is inserted: the caller is told that
// whether the task was stored is unknown and that its skill has not run,
// with the task's id. Redis runs the insert once the pause ends, and the
// replica settles it: the message sent again runs, or finds that task
// ended as never started, at once, not when its lease runs out.
func TestInsertWithUnknownOutcomeSettled(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2, MaxRetries: 1})
	t.Cleanup(func() { client.Close() })
	store, err := redisstore.New(redisstore.Options{Client: client, Prefix: "settle", Limits: tasks.Options{}.StoreLimits(),
		Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	t.Cleanup(func() { checkBookkeeping(t, client, "settle") })
	m := tasks.NewManager(tasks.Options{Store: store, SweepInterval: -1})
	t.Cleanup(m.Close)
	// A start sweeps the store at most once a second: this one does, so
	// that the next one goes straight to its insert.
	warm, err := m.Start("alice", userMsg("warm up"), tasks.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := warm.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted}, nil); err != nil {
		t.Fatal(err)
	}

	// Longer than the store's timeout: the insert is held in Redis.
	if err := srv.Client(t).Do(t.Context(), "CLIENT", "PAUSE", 2000, "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	msg := userMsg("order")
	_, err = m.Start("alice", msg, tasks.StartOptions{})
	var e *a2a.Error
	if !errors.As(err, &e) || e.Reason != "UNAVAILABLE" || e.Metadata["taskId"] == "" || !strings.Contains(e.Description, "has not run") {
		t.Fatalf("an insert held in a paused Redis: %v, want UNAVAILABLE saying the skill has not run, with the task id", err)
	}
	first := e.Metadata["taskId"]

	var run *tasks.Run
	waitFor(t, "the message sent again to be answered", func() bool {
		run, err = m.Start("alice", msg, tasks.StartOptions{})
		return err == nil || !unreachable(err)
	})
	if err != nil {
		t.Fatalf("the message sent again: %v", err)
	}
	if run.Resent {
		// It found a task stored by this insert, or by one of the sends
		// again while Redis was paused, before the replica settled it: it
		// hears of the task's end when that is done.
		if sub := run.Subscription; sub != nil {
			if ev := recv(t, sub); ev.StatusUpdate == nil || ev.StatusUpdate.Status.State != a2a.TaskStateFailed {
				t.Errorf("the task it waits for: %+v, want it failed", ev)
			}
			sub.Close()
		}
		requireNeverStarted(t, m, run.Task.ID)
		if run, err = m.Start("alice", msg, tasks.StartOptions{}); err != nil || run.Resent {
			t.Fatalf("the message sent again, its task settled: %+v, %v; want it run", run, err)
		}
	}
	if _, err := run.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted}, nil); err != nil {
		t.Fatal(err)
	}
	requireNeverStarted(t, m, first)
}

// requireNeverStarted requires alice's task id to have failed, saying it
// never started.
func requireNeverStarted(t *testing.T, m *tasks.Manager, id string) {
	t.Helper()
	task, err := m.Get("alice", id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if task.Status.State != a2a.TaskStateFailed || task.Status.Message == nil ||
		!strings.Contains(task.Status.Message.Parts[0].Text, "never started") {
		t.Errorf("task %s: %s, %+v; want failed, saying it never started", id, task.Status.State, task.Status.Message)
	}
}

// unreachable reports whether err is the store's UNAVAILABLE.
func unreachable(err error) bool {
	var e *a2a.Error
	return errors.As(err, &e) && e.Reason == "UNAVAILABLE"
}
