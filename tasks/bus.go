package tasks

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// ErrSlowConsumer is a Subscription's Err after the bus dropped it because
// its buffer was full. The subscriber may subscribe again: it then gets the
// task's current state first, and the events from there on.
var ErrSlowConsumer = errors.New("tasks: subscription dropped: its event buffer was full")

// Bus fans the events of each task out to that task's subscribers.
//
// Publish never blocks: each subscriber has a buffer of StreamBuffer events,
// and one that falls that far behind is dropped (its channel closed, Err
// ErrSlowConsumer) so that neither the task nor the other subscribers wait
// for it. One extra slot is kept for the final event (a terminal or
// interrupted status update), which therefore always reaches a subscriber
// that kept up; after it the subscription's channel is closed.
//
// Events are shared between subscribers: receivers must not modify them.
type Bus struct {
	buffer int
	// open counts open subscriptions, so that publishing when nobody
	// listens anywhere costs one atomic load.
	open   atomic.Int64
	mu     sync.Mutex
	topics map[string][]*Subscription
}

// NewBus returns a bus whose subscribers buffer up to buffer events each.
func NewBus(buffer int) *Bus {
	return &Bus{buffer: max(buffer, 1), topics: make(map[string][]*Subscription)}
}

// Subscribe opens a subscription to task taskID's events from now on. To
// start from a consistent state the caller must take the task's snapshot
// and subscribe with no update of that task in between: Manager.Subscribe
// does that.
func (b *Bus) Subscribe(taskID string) *Subscription {
	s := &Subscription{bus: b, taskID: taskID, ch: make(chan a2a.StreamResponse, b.buffer+1)}
	b.mu.Lock()
	b.topics[taskID] = append(b.topics[taskID], s)
	b.open.Add(1)
	b.mu.Unlock()
	return s
}

// Active reports whether task taskID has subscribers, so that a publisher
// builds an event only when someone listens.
func (b *Bus) Active(taskID string) bool {
	if b.open.Load() == 0 {
		return false
	}
	b.mu.Lock()
	n := len(b.topics[taskID])
	b.mu.Unlock()
	return n > 0
}

// Publish hands ev to every subscriber of task taskID without blocking.
// After a final event (a status update with Final set) every subscription
// of the task is closed.
func (b *Bus) Publish(taskID string, ev a2a.StreamResponse) {
	if b.open.Load() == 0 {
		return
	}
	final := ev.StatusUpdate != nil && ev.StatusUpdate.Final
	b.mu.Lock()
	defer b.mu.Unlock()
	subs := b.topics[taskID]
	kept := subs[:0]
	for _, s := range subs {
		// Only Publish sends, under b.mu, so len(s.ch) can only shrink
		// meanwhile: a non-final event is sent only below b.buffer, which
		// leaves the last slot for the final event.
		if !final && len(s.ch) >= b.buffer {
			b.end(s, subSlow)
			continue
		}
		select {
		case s.ch <- ev:
		default:
			b.end(s, subSlow)
			continue
		}
		if final {
			b.end(s, subDone)
			continue
		}
		kept = append(kept, s)
	}
	clear(subs[len(kept):])
	if len(kept) == 0 {
		delete(b.topics, taskID)
	} else {
		b.topics[taskID] = kept
	}
}

// end closes s, which the caller has taken or is taking out of its topic.
// b.mu must be held.
func (b *Bus) end(s *Subscription, state int32) {
	s.state.Store(state)
	close(s.ch)
	b.open.Add(-1)
}

const (
	subOpen int32 = iota
	subDone       // final event delivered, or closed by its owner
	subSlow       // dropped because its buffer was full
)

// Subscription is one subscriber's stream of a task's events.
type Subscription struct {
	bus    *Bus
	taskID string
	ch     chan a2a.StreamResponse
	state  atomic.Int32 // written under bus.mu
}

// Events is the subscription's stream. It is closed after the task's final
// event, after Close, or when the bus drops a slow subscriber (see Err).
func (s *Subscription) Events() <-chan a2a.StreamResponse { return s.ch }

// Err tells why Events was closed early: ErrSlowConsumer when the bus
// dropped the subscriber. It is nil after the final event or Close.
func (s *Subscription) Err() error {
	if s.state.Load() == subSlow {
		return ErrSlowConsumer
	}
	return nil
}

// Close ends the subscription at once and frees it, e.g. when the client
// disconnected. It is safe to call more than once, and concurrently with
// Publish.
func (s *Subscription) Close() {
	b := s.bus
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.state.Load() != subOpen {
		return
	}
	subs := b.topics[s.taskID]
	for i, x := range subs {
		if x == s {
			subs = slices.Delete(subs, i, i+1)
			break
		}
	}
	if len(subs) == 0 {
		delete(b.topics, s.taskID)
	} else {
		b.topics[s.taskID] = subs
	}
	b.end(s, subDone)
}
