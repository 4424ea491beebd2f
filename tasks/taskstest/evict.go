package taskstest

import (
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// A terminal task that grows past the store's budget makes room by evicting
// the oldest other terminal task, even when it is itself the oldest, and
// keeps its own place in the order of eviction.
func (s *suite) TestEvictionSparesTheTaskItMakesRoomFor(t *testing.T) {
	store := s.newStore(t, smallLimits) // 1000 bytes
	at := newClock().Now()
	mustInsert(t, store,
		record("oldest", "alice", a2a.TaskStateCompleted, at, 400),
		record("next", "alice", a2a.TaskStateCompleted, at.Add(time.Second), 400))
	mustUpdate(t, store, "oldest", func(rec *tasks.Record, tx tasks.Tx) error {
		return tx.Take(300) // 1,100 bytes without an eviction
	})
	if got := mustGetRecord(t, store, "oldest"); got.Bytes != 700 {
		t.Errorf("the grown task holds %d bytes, want 700", got.Bytes)
	}
	if _, err := store.Get(t.Context(), "next"); a2aCode(err) != a2a.CodeTaskNotFound {
		t.Errorf("the other terminal task is still there (err %v), want it evicted", err)
	}
	// Still the oldest terminal task: the next insert that needs room
	// evicts it.
	mustInsert(t, store, record("new", "bob", a2a.TaskStateWorking, at.Add(2*time.Second), 400))
	if _, err := store.Get(t.Context(), "oldest"); a2aCode(err) != a2a.CodeTaskNotFound {
		t.Errorf("the grown task is still there (err %v), want it evicted to make room", err)
	}
}
