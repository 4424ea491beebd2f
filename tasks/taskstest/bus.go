package taskstest

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

func subscribe(t testing.TB, m *tasks.Manager, owner, id string) (*a2a.Task, *tasks.Subscription) {
	t.Helper()
	snap, sub, err := m.Subscribe(owner, id)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	t.Cleanup(sub.Close)
	return snap, sub
}

// Every subscriber gets the same events in the same order, then its
// channel closes after the final one.
func (s *suite) TestBusFanOut(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{})
	task := mustCreate(t, m, "", userMsg("go"))
	subs := make([]*tasks.Subscription, 3)
	for i := range subs {
		snap, sub := subscribe(t, m, "", task.ID)
		if snap.Status.State != a2a.TaskStateWorking {
			t.Fatalf("snapshot state %s", snap.Status.State)
		}
		subs[i] = sub
	}
	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateWorking, Message: agentMsg("on it")})
	art := a2a.Artifact{ArtifactID: "r", Parts: []a2a.Part{a2a.TextPart("result")}}
	if err := m.AddArtifact(task.ID, art); err != nil {
		t.Fatal(err)
	}
	final := mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted})

	for i, sub := range subs {
		got, closed := readAll(sub)
		if !closed {
			t.Errorf("subscriber %d: the stream is open 10s after the final event", i)
		}
		if sub.Err() != nil {
			t.Errorf("subscriber %d: Err = %v after the final event", i, sub.Err())
		}
		if len(got) != 3 {
			t.Fatalf("subscriber %d got %d events, want 3", i, len(got))
		}
		st, ar, fin := got[0].StatusUpdate, got[1].ArtifactUpdate, got[2].StatusUpdate
		if st == nil || st.Status.State != a2a.TaskStateWorking || st.Final || st.TaskID != task.ID ||
			st.ContextID != task.ContextID || st.Status.Message == nil || st.Status.Message.Parts[0].Text != "on it" {
			t.Errorf("subscriber %d event 0 = %+v, want working with its message", i, st)
		}
		if ar == nil || !reflect.DeepEqual(ar.Artifact, art) || ar.TaskID != task.ID || ar.Append || !ar.LastChunk {
			t.Errorf("subscriber %d event 1 = %+v, want the artifact", i, ar)
		}
		if fin == nil || !fin.Final || !reflect.DeepEqual(fin.Status, final.Status) {
			t.Errorf("subscriber %d event 2 = %+v, want final completed", i, fin)
		}
	}
}

// An interrupted status ends a stream too; a subscription taken while the
// task waits stays open across the follow-up until the next final event.
func (s *suite) TestSubscribeInterrupted(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{})
	task := mustCreate(t, m, "", userMsg("book"))
	_, early := subscribe(t, m, "", task.ID)
	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: agentMsg("when?")})
	if ev := recv(t, early); ev.StatusUpdate == nil || !ev.StatusUpdate.Final {
		t.Errorf("event = %+v, want final input-required", ev)
	}
	if _, closed := drain(early); !closed {
		t.Error("stream open after input-required")
	}

	snap, sub := subscribe(t, m, "", task.ID)
	if snap.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("snapshot state %s", snap.Status.State)
	}
	if _, err := followUp(m, "", task.ID, userMsg("tonight")); err != nil {
		t.Fatal(err)
	}
	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted})
	if ev := recv(t, sub); ev.StatusUpdate == nil || ev.StatusUpdate.Status.State != a2a.TaskStateWorking {
		t.Errorf("event = %+v, want working", ev)
	}
	if ev := recv(t, sub); ev.StatusUpdate == nil || ev.StatusUpdate.Status.State != a2a.TaskStateCompleted {
		t.Errorf("event = %+v, want completed", ev)
	}
	if _, closed := drain(sub); !closed {
		t.Error("stream open after completed")
	}
}

// A subscriber that falls StreamBuffer events behind is dropped; the
// others are not held up, and it can come back from the current state.
func (s *suite) TestSlowConsumer(t *testing.T) {
	const buffer = 4
	m, _ := s.newManager(t, tasks.Options{StreamBuffer: buffer})
	task := mustCreate(t, m, "", userMsg("chatty"))
	_, slow := subscribe(t, m, "", task.ID)
	_, fast := subscribe(t, m, "", task.ID)

	for i := range buffer + 1 {
		mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateWorking, Message: agentMsg(fmt.Sprint(i))})
		recv(t, fast)
	}
	n, closed := drain(slow)
	if n != buffer || !closed || !errors.Is(slow.Err(), tasks.ErrSlowConsumer) {
		t.Fatalf("slow subscriber: %d events, closed %v, Err %v; want %d, closed, ErrSlowConsumer", n, closed, slow.Err(), buffer)
	}

	snap, again := subscribe(t, m, "", task.ID)
	if len(snap.History) != buffer+2 {
		t.Errorf("resubscribed snapshot has %d messages, want %d", len(snap.History), buffer+2)
	}
	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted})
	for _, sub := range []*tasks.Subscription{fast, again} {
		if ev := recv(t, sub); ev.StatusUpdate == nil || ev.StatusUpdate.Status.State != a2a.TaskStateCompleted {
			t.Errorf("event = %+v, want completed", ev)
		}
		if _, closed := drain(sub); !closed || sub.Err() != nil {
			t.Errorf("after the final event: closed %v, Err %v", closed, sub.Err())
		}
	}
}

// The final event always fits: the buffer keeps a slot for it.
func (s *suite) TestFinalEventFitsFullBuffer(t *testing.T) {
	const buffer = 3
	m, _ := s.newManager(t, tasks.Options{StreamBuffer: buffer})
	task := mustCreate(t, m, "", userMsg("x"))
	_, sub := subscribe(t, m, "", task.ID)
	for range buffer {
		mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateWorking})
	}
	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted})
	if n, closed := drain(sub); n != buffer+1 || !closed || sub.Err() != nil {
		t.Errorf("%d events, closed %v, Err %v; want %d, closed, nil", n, closed, sub.Err(), buffer+1)
	}
}

func (s *suite) TestSubscriptionClose(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{})
	task := mustCreate(t, m, "", userMsg("x"))
	_, gone := subscribe(t, m, "", task.ID)
	_, stays := subscribe(t, m, "", task.ID)
	gone.Close()
	gone.Close() // idempotent
	if _, closed := drain(gone); !closed || gone.Err() != nil {
		t.Errorf("after Close: closed %v, Err %v", closed, gone.Err())
	}
	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateWorking})
	if ev := recv(t, stays); ev.StatusUpdate == nil {
		t.Errorf("the other subscriber got %+v", ev)
	}

	// Close races with publishing (run with -race).
	var wg sync.WaitGroup
	for range 8 {
		_, sub := subscribe(t, m, "", task.ID)
		wg.Go(sub.Close)
	}
	for range 20 {
		mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateWorking})
	}
	wg.Wait()
	stays.Close()
	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted})
}

func (s *suite) TestSubscribeErrors(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{})
	task := mustCreate(t, m, "alice", userMsg("x"))
	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted})
	tests := []struct {
		name, owner, id string
		wantCode        int
	}{
		{"terminal", "alice", task.ID, a2a.CodeUnsupportedOperation},
		{"unknown", "alice", "nope", a2a.CodeTaskNotFound},
		{"another owner's", "bob", task.ID, a2a.CodeTaskNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, sub, err := m.Subscribe(tt.owner, tt.id)
			if a2aCode(err) != tt.wantCode || snap != nil || sub != nil {
				t.Errorf("Subscribe = %v, %v, %v; want code %d", snap, sub, err, tt.wantCode)
			}
		})
	}
}

// Subscribing while the task is being updated loses and repeats nothing:
// the snapshot's history plus the events are exactly every message, once.
func (s *suite) TestSubscribeAtomic(t *testing.T) {
	const updates = 300
	m, _ := s.newManager(t, tasks.Options{StreamBuffer: updates + 1})
	task := mustCreate(t, m, "", userMsg("0"))

	type result struct {
		snap   *a2a.Task
		events []a2a.StreamResponse
	}
	results := make(chan result, 8)
	var wg sync.WaitGroup
	for range cap(results) {
		wg.Go(func() {
			runtime.Gosched()
			snap, sub, err := m.Subscribe("", task.ID)
			if err != nil { // subscribed after the end
				results <- result{}
				return
			}
			r := result{snap: snap}
			var closed bool
			if r.events, closed = readAll(sub); !closed {
				t.Error("a stream is open 10s after the final event")
			}
			results <- r
		})
	}
	for i := 1; i <= updates; i++ {
		mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateWorking, Message: agentMsg(fmt.Sprint(i))})
	}
	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted, Message: agentMsg(fmt.Sprint(updates + 1))})
	wg.Wait()
	close(results)

	for r := range results {
		if r.snap == nil {
			continue
		}
		var texts []string
		for _, msg := range r.snap.History {
			texts = append(texts, msg.Parts[0].Text)
		}
		for _, ev := range r.events {
			texts = append(texts, ev.StatusUpdate.Status.Message.Parts[0].Text)
		}
		if len(texts) != updates+2 {
			t.Errorf("snapshot of %d messages + %d events = %d, want %d", len(r.snap.History), len(r.events), len(texts), updates+2)
			continue
		}
		for i, text := range texts {
			if text != fmt.Sprint(i) {
				t.Errorf("message %d is %q: lost or repeated across the snapshot", i, text)
				break
			}
		}
	}
}
