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
//
// And one client address holds at most n places in that order (attempts
// waiting in a queue or comparing): its further attempts wait behind its
// own, first come first served, before they take a place. An address that
// tries many users thus delays another address's login by at most n
// turns, however many users it tries.
type turns struct {
	mu   sync.Mutex
	n    int       // comparisons at once, and places one client holds
	free int       // comparisons that may start now; 0 while any queue waits
	ring list.List // of *queue with attempts waiting, in the order their next turn comes
	// clients are the client addresses with places held or attempts
	// waiting for one.
	clients map[string]*client
}

// queue holds one user's attempts waiting for a turn, first come first
// served (or all unknown users' that are compared, or one stand-in).
type queue struct {
	waiting list.List     // of *attempt
	inRing  *list.Element // the queue's place in turns.ring; nil while nothing waits
	// stands in for an unknown user's attempt: it waits for its place like
	// a user's, so that it takes as long, but takes no comparison, so that
	// it delays no one.
	stand bool
}

// client is one client address's attempts.
type client struct {
	addr    string
	held    int       // places held: attempts waiting in a queue, or whose turn came
	waiting list.List // of *attempt waiting for a place
}

// attempt is one login's wait for its turn.
type attempt struct {
	q     *queue
	c     *client
	ready chan struct{} // closed when its turn comes
	// at is the attempt's element in c.waiting or, once placed, in
	// q.waiting, while it waits.
	at     *list.Element
	placed bool
}

func newTurns(n int) *turns { return &turns{n: n, free: n, clients: make(map[string]*client)} }

// wait waits for the next turn of q for an attempt from client address
// addr. It returns the attempt once its turn came, to be given back with
// done; nil when ctx ended first.
func (t *turns) wait(ctx context.Context, q *queue, addr string) *attempt {
	t.mu.Lock()
	c := t.clients[addr]
	if c == nil {
		c = &client{addr: addr}
		t.clients[addr] = c
	}
	a := &attempt{q: q, c: c, ready: make(chan struct{})}
	if c.held < t.n && c.waiting.Len() == 0 {
		t.place(a)
	} else {
		a.at = c.waiting.PushBack(a)
	}
	t.mu.Unlock()
	select {
	case <-a.ready:
		return a
	case <-ctx.Done():
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-a.ready: // it came meanwhile: pass it on
		t.release(a)
		return nil
	default:
	}
	if !a.placed {
		c.waiting.Remove(a.at)
		return nil
	}
	q.waiting.Remove(a.at)
	if q.waiting.Len() == 0 {
		t.ring.Remove(q.inRing)
		q.inRing = nil
	}
	t.leave(c)
	return nil
}

// done gives back the turn of a, and its place.
func (t *turns) done(a *attempt) {
	t.mu.Lock()
	t.release(a)
	t.mu.Unlock()
}

// place gives a one of its client's places: its turn at once when one is
// free (none is while any queue waits), else a place at the back of its
// queue.
func (t *turns) place(a *attempt) {
	a.placed = true
	a.c.held++
	if t.free > 0 {
		if !a.q.stand {
			t.free--
		}
		close(a.ready)
		return
	}
	a.at = a.q.waiting.PushBack(a)
	if a.q.inRing == nil {
		a.q.inRing = t.ring.PushBack(a.q)
	}
}

// release gives back the turn and the place of a, whose turn came.
func (t *turns) release(a *attempt) {
	// The client's next attempt goes to the back of the order before the
	// turn is handed on, so that it does not pass those already waiting.
	t.leave(a.c)
	if !a.q.stand {
		t.free++
	}
	t.give()
}

// leave gives up one of c's places, to c's next attempt waiting if any.
func (t *turns) leave(c *client) {
	c.held--
	if e := c.waiting.Front(); e != nil {
		t.place(c.waiting.Remove(e).(*attempt))
	} else if c.held == 0 {
		delete(t.clients, c.addr)
	}
}

// give hands the free turns to the queues of the ring in order, the first
// attempt of each; a queue with more waiting goes to the back. A queue
// that stands in is answered without using a turn.
func (t *turns) give() {
	for t.free > 0 && t.ring.Len() > 0 {
		e := t.ring.Front()
		q := e.Value.(*queue)
		close(q.waiting.Remove(q.waiting.Front()).(*attempt).ready)
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
