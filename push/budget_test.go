package push_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/push"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// TestHangingReceiversHoldNoMoreThanTheBudget is the load of the attack
// review scaled down: tasks whose one receiver never answers, each with a
// large message. Every receiver has room in its own queue; the sender's
// total budget is what bounds the memory.
func TestHangingReceiversHoldNoMoreThanTheBudget(t *testing.T) {
	const (
		receivers = 200
		textBytes = 256 << 10
		budget    = 8 << 20
		// margin covers what does not scale with a task: the connections
		// to the receiver and their buffers on both sides, the JWTs, the
		// goroutines' bookkeeping.
		margin = 8 << 20
	)
	release := make(chan struct{})
	arrived := make(chan struct{}, receivers)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hang.Close)
	var dropped atomic.Int64
	log, warnings := logs(t)
	s := newSender(t, push.Options{AllowInsecure: true, AllowPrivate: true, Timeout: time.Minute, MaxBytes: budget, Logger: log,
		OnOutcome: func(o push.Outcome) {
			if o == push.Dropped {
				dropped.Add(1)
			}
		}})
	t.Cleanup(func() { close(release) })

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	configs := []tasks.PushConfig{{ID: "hangs", URL: hang.URL, Version: a2a.V10}}
	for i := range receivers {
		msg := a2a.Message{MessageID: fmt.Sprint("m", i), Role: a2a.RoleUser,
			Parts: []a2a.Part{a2a.TextPart(strings.Repeat("x", textBytes))}}
		tk := &a2a.Task{ID: fmt.Sprint("t", i), ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking},
			History: []a2a.Message{msg}}
		s.Push(tk, configs, []a2a.StreamResponse{{Task: tk}})
	}
	accepted := receivers - int(dropped.Load())
	for range accepted {
		select {
		case <-arrived:
		case <-time.After(30 * time.Second):
			t.Fatalf("not every accepted notification reached its receiver (%d accepted)", accepted)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)

	if accepted == receivers {
		t.Errorf("all %d notifications of %d KiB were taken with a budget of %d MiB", receivers, textBytes>>10, budget>>20)
	}
	// Logged once, as a slow receiver's drops are: the budget stays full.
	if n := len(warnings); n != 1 {
		t.Errorf("%d warnings for %d drops, want 1", n, receivers-accepted)
	} else if e := <-warnings; !strings.Contains(e.Message, "max_bytes") {
		t.Errorf("warning %q, want one that names max_bytes", e.Message)
	}
	if held := s.HeldBytes(); held > budget {
		t.Errorf("the sender counts %d bytes held, over its budget of %d", held, budget)
	}
	grew := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("%d of %d notifications taken; the sender holds %d KiB; the heap grew by %d KiB", accepted, receivers, s.HeldBytes()>>10, grew>>10)
	if grew > budget+margin {
		t.Errorf("the heap grew by %d MiB with %d receivers hanging, over the budget of %d MiB and the margin of %d MiB",
			grew>>20, accepted, budget>>20, margin>>20)
	}
}

// TestABodySharedByReceiversCountsOnce: the configs of one task get the
// same body, encoded once; the budget counts it once, so a change that fits
// once fits for every config.
func TestABodySharedByReceiversCountsOnce(t *testing.T) {
	const textBytes = 64 << 10
	release := make(chan struct{}) // the receiver hangs: the notifications stay held
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hang.Close)
	var dropped atomic.Int64
	s := newSender(t, push.Options{AllowInsecure: true, AllowPrivate: true, Timeout: time.Minute, MaxBytes: textBytes * 3 / 2,
		OnOutcome: func(o push.Outcome) {
			if o == push.Dropped {
				dropped.Add(1)
			}
		}})
	t.Cleanup(func() { close(release) })
	configs := []tasks.PushConfig{
		{ID: "a", URL: hang.URL, Version: a2a.V10}, {ID: "b", URL: hang.URL, Version: a2a.V10}, {ID: "c", URL: hang.URL, Version: a2a.V10}}
	tk := &a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking,
		Message: &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(strings.Repeat("x", textBytes))}}}}
	s.Push(tk, configs, []a2a.StreamResponse{{Task: tk}})
	if n := dropped.Load(); n != 0 {
		t.Errorf("%d of the notifications of one change were dropped", n)
	}
	if held := s.HeldBytes(); held < textBytes || held > textBytes*3/2 {
		t.Errorf("the sender counts %d bytes for one body of %d KiB shared by 3 receivers", held, textBytes>>10)
	}
}
