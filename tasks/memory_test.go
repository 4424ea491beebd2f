package tasks_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
	"github.com/caddy-a2a/caddy-a2a/tasks/taskstest"
)

// The memory store keeps the Store contract: the conformance suite that
// every store runs.
func TestMemoryStore(t *testing.T) {
	taskstest.Run(t, func(_ testing.TB, limits tasks.Limits) tasks.Store {
		return tasks.NewMemoryStore(limits)
	})
}

// What follows is the memory store's alone: the heap its tasks take, and
// the goroutines of a Manager on it (a networked store has its own).

// The estimate follows the decoded shape, not the wire size: it stays
// within a factor of two of the heap a stored task really takes, for
// typical and hostile shapes alike.
func TestStoredBytesEstimate(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap")
	}
	emptyObjects := "[" + strings.TrimSuffix(strings.Repeat("{},", 20000), ",") + "]"
	for _, tc := range []struct{ name, src string }{
		{"empty objects", emptyObjects},
		{"records", "[" + strings.TrimSuffix(strings.Repeat(`{"id":12345,"name":"Ada Lovelace","email":"ada@example.org","tags":["a","b"]},`, 2000), ",") + "]"},
		{"long string", `"` + strings.Repeat("x", 1<<20) + `"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tasks.NewManager(tasks.Options{SweepInterval: -1})
			t.Cleanup(m.Close)
			const n = 10
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for i := range n {
				// Decoded here, as the codecs would decode it.
				var v any
				if err := json.Unmarshal([]byte(tc.src), &v); err != nil {
					t.Fatal(err)
				}
				msg := a2a.Message{MessageID: fmt.Sprint("msg-", i), Role: a2a.RoleUser, Parts: []a2a.Part{a2a.DataPart(v)}}
				if _, err := m.Start("alice", msg, tasks.StartOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(m)
			heap := float64(after.HeapAlloc) - float64(before.HeapAlloc)
			estimated := float64(tasks.StoredBytes(m))
			t.Logf("estimated %.0f bytes, heap %.0f bytes, wire %d bytes", estimated, heap, n*len(tc.src))
			if ratio := estimated / heap; ratio < 0.5 || ratio > 2 {
				t.Errorf("the estimate is %.2f times the heap, want within a factor of 2", ratio)
			}
		})
	}
}

// The Manager starts no goroutine but its janitor, and Close stops it.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	m := tasks.NewManager(tasks.Options{SweepInterval: time.Millisecond, MaxTasks: 50})
	for i := range 100 {
		owner := fmt.Sprint(i % 3)
		msg := a2a.Message{MessageID: fmt.Sprint("msg-", i), Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("x")}}
		run, err := m.Start(owner, msg, tasks.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, sub, err := m.Subscribe(owner, run.Task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			sub.Close()
		}
		if _, err := m.SetStatus(run.Task.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted}); err != nil {
			t.Fatal(err)
		}
	}
	m.Close()
	m.Close()
	// The janitor has returned; let the runtime retire it.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after Close, %d before", n, before)
	}
}
