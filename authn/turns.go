package authn

import (
	"container/list"
	"context"
	"sync"
)

// turns gives out the turns to compare a password with its hash. At most
// n comparisons run at once, so that failed logins, which no cache spares,
// cannot take every CPU. Turns go round-robin between queues, one per
// configured user: a login waits for its own user's attempts that came
// before it and for at most one turn of each other queue, never for
// everything that was sent before it.
type turns struct {
	mu   sync.Mutex
	free int       // comparisons that may start now; 0 while any queue waits
	ring list.List // of *queue with attempts waiting, in the order their next turn comes
}

// queue holds one user's attempts waiting for a turn, first come first
// served (or all unknown users' that are compared, or one stand-in).
type queue struct {
	waiting list.List     // of chan struct{}, closed when the attempt's turn comes
	inRing  *list.Element // the queue's place in turns.ring; nil while nothing waits
	// stands in for an unknown user's attempt: it waits for its place like
	// a user's, so that it takes as long, but takes no comparison, so that
	// it delays no one.
	stand bool
}

func newTurns(n int) *turns { return &turns{free: n} }

// wait waits for q's next turn and reports whether it came before ctx
// ended. A turn that came must be given back with done, unless q stands in.
func (t *turns) wait(ctx context.Context, q *queue) bool {
	t.mu.Lock()
	if t.free > 0 {
		if !q.stand {
			t.free--
		}
		t.mu.Unlock()
		return true
	}
	ready := make(chan struct{})
	w := q.waiting.PushBack(ready)
	if q.inRing == nil {
		q.inRing = t.ring.PushBack(q)
	}
	t.mu.Unlock()
	select {
	case <-ready:
		return true
	case <-ctx.Done():
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-ready: // it came meanwhile: pass it on
		if !q.stand {
			t.free++
			t.give()
		}
		return false
	default:
	}
	q.waiting.Remove(w)
	if q.waiting.Len() == 0 {
		t.ring.Remove(q.inRing)
		q.inRing = nil
	}
	return false
}

// done gives back a turn.
func (t *turns) done() {
	t.mu.Lock()
	t.free++
	t.give()
	t.mu.Unlock()
}

// give hands the free turns to the queues of the ring in order, the first
// attempt of each; a queue with more waiting goes to the back. A queue
// that stands in is answered without using a turn.
func (t *turns) give() {
	for t.free > 0 && t.ring.Len() > 0 {
		e := t.ring.Front()
		q := e.Value.(*queue)
		close(q.waiting.Remove(q.waiting.Front()).(chan struct{}))
		if !q.stand {
			t.free--
		}
		if q.waiting.Len() > 0 {
			t.ring.MoveToBack(e)
		} else {
			t.ring.Remove(e)
			q.inRing = nil
		}
	}
}
