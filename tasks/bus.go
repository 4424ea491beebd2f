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

// ErrInterrupted is a Subscription's Err after a shared store ended it
// because events may have been lost (its connection to the other replicas
// dropped). The subscriber may subscribe again, as after ErrSlowConsumer.
var ErrInterrupted = errors.New("tasks: subscription interrupted: events may have been lost")

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
	// idle, when set, hears (on a goroutine of its own) of each task that
	// lost its last subscriber.
	idle func(taskID string)
}

// OnIdle has fn told, on a goroutine of its own, of each task that lost its
// last subscriber. fn must check that it still has none. Set it before the
// bus is used.
func (b *Bus) OnIdle(fn func(taskID string)) { b.idle = fn }

// dropTopic forgets a task that has no subscriber left. b.mu must be held.
func (b *Bus) dropTopic(taskID string) {
	delete(b.topics, taskID)
	if b.idle != nil {
		go b.idle(taskID)
	}
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

// Open is how many subscriptions are open.
func (b *Bus) Open() int { return int(b.open.Load()) }

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
func (b *Bus) Publish(taskID string, ev a2a.StreamResponse) { b.PublishSeq(taskID, 0, ev) }

// PublishSeq is Publish for the event numbered seq of its task (0: not
// numbered), as a shared store delivers them: a held subscription keeps it
// until Release, and a released one takes it only past the number it was
// released at.
func (b *Bus) PublishSeq(taskID string, seq uint64, ev a2a.StreamResponse) {
	if b.open.Load() == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	subs := b.topics[taskID]
	kept := subs[:0]
	for _, s := range subs {
		if b.offer(s, seq, ev) {
			kept = append(kept, s)
		}
	}
	clear(subs[len(kept):])
	if len(kept) == 0 {
		b.dropTopic(taskID)
	} else {
		b.topics[taskID] = kept
	}
}

// offer hands ev to s, or keeps it while s is held, and reports whether s
// stays open. b.mu must be held.
func (b *Bus) offer(s *Subscription, seq uint64, ev a2a.StreamResponse) bool {
	if s.held {
		if len(s.pending) >= b.buffer+1 {
			b.end(s, subSlow)
			return false
		}
		s.pending = append(s.pending, numbered{seq, ev})
		return true
	}
	if seq != 0 && seq <= s.after {
		return true // already in the snapshot the subscriber started from
	}
	final := ev.StatusUpdate != nil && ev.StatusUpdate.Final
	// Only the bus sends, under b.mu, so len(s.ch) can only shrink
	// meanwhile: a non-final event is sent only below b.buffer, which
	// leaves the last slot for the final event.
	if !final && len(s.ch) >= b.buffer {
		b.end(s, subSlow)
		return false
	}
	select {
	case s.ch <- ev:
	default:
		b.end(s, subSlow)
		return false
	}
	if final {
		b.end(s, subDone)
		return false
	}
	return true
}

// SubscribeHeld opens a subscription whose events wait until Release. A
// shared store subscribes, then reads the task, then releases the
// subscription at that read's event number: what the read already shows
// is dropped, and nothing after it is lost.
func (b *Bus) SubscribeHeld(taskID string) *Subscription {
	s := b.Subscribe(taskID)
	b.mu.Lock()
	s.held = true
	b.mu.Unlock()
	return s
}

// Release starts delivering the events numbered after after, those kept
// meanwhile first.
func (s *Subscription) Release(after uint64) {
	b := s.bus
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.state.Load() != subOpen || !s.held {
		return
	}
	pending := s.pending
	s.held, s.after, s.pending = false, after, nil
	for _, p := range pending {
		if !b.offer(s, p.seq, p.ev) {
			b.unlist(s)
			return
		}
	}
}

// EndAll closes every subscription with Err cause: a shared store that
// lost events (its connection to the other replicas dropped) tells the
// subscribers to subscribe again, and a draining Manager ends the streams
// of a process that exits.
func (b *Bus) EndAll(cause error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, subs := range b.topics {
		for _, s := range subs {
			s.cause = cause
			b.end(s, subEnded)
		}
		b.dropTopic(id)
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
	subOpen  int32 = iota
	subDone        // final event delivered, or closed by its owner
	subSlow        // dropped because its buffer was full
	subEnded       // ended by the store: see cause
)

// Subscription is one subscriber's stream of a task's events.
type Subscription struct {
	bus    *Bus
	taskID string
	ch     chan a2a.StreamResponse
	state  atomic.Int32 // written under bus.mu

	// Under bus.mu: a held subscription keeps its events in pending until
	// Release; a released one takes only those numbered past after.
	held    bool
	pending []numbered
	after   uint64
	cause   error // why the store ended it (subEnded)
}

// numbered is an event with its number among its task's events.
type numbered struct {
	seq uint64
	ev  a2a.StreamResponse
}

// Events is the subscription's stream. It is closed after the task's final
// event, after Close, or when the bus drops a slow subscriber (see Err).
func (s *Subscription) Events() <-chan a2a.StreamResponse { return s.ch }

// Err tells why Events was closed early: ErrSlowConsumer when the bus
// dropped the subscriber. It is nil after the final event or Close.
func (s *Subscription) Err() error {
	switch s.state.Load() {
	case subSlow:
		return ErrSlowConsumer
	case subEnded:
		s.bus.mu.Lock()
		defer s.bus.mu.Unlock()
		return s.cause
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
	b.unlist(s)
	b.end(s, subDone)
}

// unlist takes s out of its topic. b.mu must be held.
func (b *Bus) unlist(s *Subscription) {
	subs := b.topics[s.taskID]
	for i, x := range subs {
		if x == s {
			subs = slices.Delete(subs, i, i+1)
			break
		}
	}
	if len(subs) == 0 {
		b.dropTopic(s.taskID)
	} else {
		b.topics[s.taskID] = subs
	}
}
