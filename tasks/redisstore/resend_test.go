package redisstore_test

import (
	"testing"

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
