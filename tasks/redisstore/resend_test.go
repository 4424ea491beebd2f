package redisstore_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/internal/redistest"
	"github.com/caddy-a2a/caddy-a2a/tasks"
	"github.com/caddy-a2a/caddy-a2a/tasks/redisstore"
)

// The index that finds a task by its message, broken behind the store's
// back (a key of another type), is rebuilt from the tasks at the next
// insert: the insert goes through, and the messages sent before are found
// again.
func TestMessagesIndexRebuilt(t *testing.T) {
	srv := redistest.Start(t)
	m := replica(t, srv, tasks.Options{})
	first := userMsg("order")
	run, err := m.Start("alice", first, tasks.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	client := srv.Client(t)
	if err := client.Set(t.Context(), redisstore.KeyPrefix("test")+":messages", "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Start("alice", userMsg("another"), tasks.StartOptions{}); err != nil {
		t.Fatalf("an insert with the index broken: %v", err)
	}
	again, err := m.Start("alice", first, tasks.StartOptions{})
	if err != nil || !again.Resent || again.Task.ID != run.Task.ID {
		t.Fatalf("the first message sent again: %+v, %v; want its task %s", again, err, run.Task.ID)
	}
	again.Subscription.Close()
}

// The messages of tasks dropped between two sweeps are filed, and kept
// within their budget, by the next sweep, however many they are: here
// thousands, past what one Lua call unpacks.
func TestRememberedMessagesFiledBySweep(t *testing.T) {
	srv := redistest.Start(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var clock atomic.Pointer[time.Time]
	clock.Store(&now)
	m := replica(t, srv, tasks.Options{MaxTasks: 10, MaxResendKeys: 100, Now: func() time.Time { return *clock.Load() }})
	var first a2a.Message
	for i := range 4500 { // a sweep at the first start only: the clock stands still
		msg := userMsg("order")
		if i == 0 {
			first = msg
		}
		run, err := m.Start("alice", msg, tasks.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := run.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted}, nil); err != nil {
			t.Fatal(err)
		}
	}
	later := now.Add(2 * time.Second)
	clock.Store(&later)
	if _, err := m.Start("alice", userMsg("sweeps"), tasks.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	filed, err := srv.Client(t).ZCard(t.Context(), redisstore.KeyPrefix("test")+":gone:o").Result()
	if err != nil || filed != 100 {
		t.Errorf("alice's messages remembered after the sweep: %d (%v), want the budget's 100", filed, err)
	}
	// Her oldest went first.
	if run, err := m.Start("alice", first, tasks.StartOptions{}); err != nil || run.Resent {
		t.Errorf("alice's first message sent again: %+v, %v; want a new task", run, err)
	}
}
