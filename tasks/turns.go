package tasks

import "sync"

// taskTurns make the changes a Manager makes to one task wait for each
// other: each takes the task's turn before its Store.Update and gives it
// back once the change is handed to the pusher. This one lock orders the
// notifications of a task as its changes, and spares every store a lock
// of its own: a shared store's optimistic writes then race only other
// replicas', never this one's. A lock per task being changed, not stripes,
// so that a change waiting on a shared store's round trip holds up no
// other task.
type taskTurns struct {
	mu    sync.Mutex
	turns map[string]*turn
}

// turn is one task's lock, and how many changes hold or wait for it.
type turn struct {
	sync.Mutex
	users int
}

// turnPool keeps the turns of tasks no change holds, so that a change
// allocates none.
var turnPool = sync.Pool{New: func() any { return new(turn) }}

// take waits for task id's turn, and returns it for give.
func (t *taskTurns) take(id string) *turn {
	t.mu.Lock()
	tn := t.turns[id]
	if tn == nil {
		tn = turnPool.Get().(*turn)
		t.turns[id] = tn
	}
	tn.users++
	t.mu.Unlock()
	tn.Lock()
	return tn
}

// give gives back task id's turn, taken by take.
func (t *taskTurns) give(id string, tn *turn) {
	tn.Unlock()
	t.mu.Lock()
	if tn.users--; tn.users == 0 {
		delete(t.turns, id)
		turnPool.Put(tn)
	}
	t.mu.Unlock()
}
