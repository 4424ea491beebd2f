package tasks

import (
	"cmp"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// Record is a stored task with what a store needs to scope and age it.
type Record struct {
	// Owner is the only caller who may see the task; "" is the anonymous
	// caller.
	Owner string
	// Quota is whose share of the store the task counts against while it
	// is live: "" for its owner's. Anonymous callers share one owner, so
	// the server gives each client address a quota of its own.
	Quota string
	Task  a2a.Task
	// Updated is the time of the task's last change (status, artifact or
	// message); MaxAge is measured from it.
	Updated time.Time
	// Bytes is what the task takes in memory, as estimated when it was
	// stored and as it grew (Room.Take): what the byte budgets count.
	Bytes int64
}

// Room is a store's byte budget, handed to an Update's callback for the
// record it updates.
type Room interface {
	// Take reserves delta more bytes for the record and adds them to its
	// Bytes, making room by dropping terminal tasks, oldest first; when the
	// store or the record's owner has no room left it returns an
	// *a2a.Error (RESOURCE_EXHAUSTED) and reserves nothing. A record
	// changed without Take keeps its Bytes.
	Take(delta int64) error
}

// Store keeps task records. The Manager enforces the lifecycle and owner
// scoping and publishes events inside the store's callbacks, so a Store must
// run each callback with the guarantee its method states: that is what makes
// a snapshot and a subscription atomic with respect to updates.
//
// Records handed to callbacks share their slices with snapshots already
// given out: a callback may replace a slice or append to it, never write
// into an element that is already there.
type Store interface {
	// Insert stores a copy of rec, a new task. A store at capacity, in
	// tasks or in bytes (rec.Bytes), makes room by dropping terminal tasks,
	// oldest first; when none can go, or when rec's owner already holds as
	// many live tasks or bytes as one owner may, it returns an *a2a.Error
	// that asks the caller to retry later.
	Insert(rec Record) error
	// View calls fn with the record of task id while no Insert, Update or
	// Sweep runs, and returns fn's error. fn must not modify the record
	// nor keep it. An unknown id is an *a2a.Error TaskNotFound.
	View(id string, fn func(rec *Record) error) error
	// Update calls fn with the record of task id, with exclusive access,
	// and the room it may take for what it adds; it returns fn's error.
	// When fn returns nil the store takes the record's new state and
	// Updated into account. An unknown id is an *a2a.Error TaskNotFound.
	Update(id string, fn func(rec *Record, room Room) error) error
	// Scan calls fn once with an iterator over owner's records, under the
	// same guarantee as View.
	Scan(owner string, fn func(records iter.Seq[*Record]))
	// Sweep drops the terminal records not updated since now minus the
	// store's maximum age, and calls expire, with exclusive access, for
	// each running record that old and each interrupted record that has
	// waited for input longer than the store's MaxInputWait; expire must
	// move the record to a terminal state and set its Updated.
	Sweep(now time.Time, expire func(rec *Record))
}

// Limits bound a store. NewManager fills in their defaults.
type Limits struct {
	// MaxTasks bounds the number of stored tasks.
	MaxTasks int
	// MaxLivePerOwner bounds the running or interrupted tasks of one owner.
	MaxLivePerOwner int
	// MaxBytes bounds the bytes of all stored tasks.
	MaxBytes int64
	// MaxLiveBytesPerOwner bounds the bytes of one owner's running or
	// interrupted tasks.
	MaxLiveBytesPerOwner int64
	// MaxAge bounds how long a terminal task is kept after its last update,
	// and how long a running one may go without one.
	MaxAge time.Duration
	// MaxInputWait bounds how long an interrupted task waits for input.
	MaxInputWait time.Duration
}

// MemoryStore is a Store in memory, bounded by count, bytes and age.
// Eviction costs O(1) per task: running, interrupted and terminal tasks
// sit in three lists ordered by their last update, so the oldest of each is
// always at the front.
type MemoryStore struct {
	limits Limits

	mu     sync.RWMutex
	byID   map[string]*memEntry
	owners map[string]*ownerList
	// quotas count the live tasks of each quota; one goes when it has none.
	quotas map[string]*quota
	// Each list holds the least recently updated first.
	running     ageList
	interrupted ageList
	terminal    ageList
	bytes       int64 // of every stored task
	// room is the Room of the Update under way (the lock is held).
	room memRoom
}

type memEntry struct {
	rec          Record
	prev, next   *memEntry // in running, interrupted or terminal
	oprev, onext *memEntry // in the owner's list
	// terminal and interrupted say which age list holds the entry.
	terminal, interrupted bool
	// quota is what the entry counts against while it is live.
	quota *quota
}

// quota is the live tasks of one owner, or of one anonymous client.
type quota struct {
	key   string
	live  int
	bytes int64
}

// NewMemoryStore returns an empty store within limits, which must all be
// positive.
func NewMemoryStore(limits Limits) *MemoryStore {
	s := &MemoryStore{
		limits: limits,
		byID:   make(map[string]*memEntry),
		owners: make(map[string]*ownerList),
		quotas: make(map[string]*quota),
	}
	s.room.s = s
	return s
}

// Insert implements Store.
func (s *MemoryStore) Insert(rec Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.byID[rec.Task.ID]; dup {
		return fmt.Errorf("tasks: insert task %s: id already stored", rec.Task.ID)
	}
	terminal := rec.Task.Status.State.Terminal()
	quotaKey := cmp.Or(rec.Quota, rec.Owner)
	if q := s.quotas[quotaKey]; !terminal && q != nil {
		if q.live >= s.limits.MaxLivePerOwner {
			return ownerFull(fmt.Sprintf("%d tasks", s.limits.MaxLivePerOwner))
		}
		if q.bytes+rec.Bytes > s.limits.MaxLiveBytesPerOwner {
			return ownerFull(fmt.Sprintf("%d bytes of tasks", s.limits.MaxLiveBytesPerOwner))
		}
	}
	if len(s.byID) >= s.limits.MaxTasks {
		if s.terminal.head == nil {
			return storeFull(fmt.Sprintf("%d tasks", s.limits.MaxTasks))
		}
		s.remove(s.terminal.head)
	}
	if !s.makeRoom(rec.Bytes, nil) {
		return storeFull(fmt.Sprintf("%d bytes of tasks", s.limits.MaxBytes))
	}
	ow := s.owners[rec.Owner]
	e := &memEntry{rec: rec, terminal: terminal, interrupted: rec.Task.Status.State.Interrupted()}
	if ow == nil {
		ow = &ownerList{owner: rec.Owner}
		s.owners[rec.Owner] = ow
	}
	e.rec.Owner = ow.owner // one copy of the owner string for all its tasks
	ow.push(e)
	if !terminal {
		q := s.quotas[quotaKey]
		if q == nil {
			q = &quota{key: quotaKey}
			s.quotas[quotaKey] = q
		}
		e.quota = q
		q.live++
		q.bytes += rec.Bytes
	}
	s.bytes += rec.Bytes
	s.byID[rec.Task.ID] = e
	s.ages(e).pushBack(e)
	return nil
}

// makeRoom drops terminal tasks, oldest first, but never keep, until delta
// more bytes fit in the store's budget, and reports whether they do.
func (s *MemoryStore) makeRoom(delta int64, keep *memEntry) bool {
	for s.bytes+delta > s.limits.MaxBytes {
		e := s.terminal.head
		if e == keep && e != nil {
			e = e.next
		}
		if e == nil {
			return false
		}
		s.remove(e)
	}
	return true
}

// ownerFull is the answer to a caller that already has as many live tasks,
// or bytes of them, as one caller may: one caller cannot fill the store for
// everyone else.
func ownerFull(what string) *a2a.Error {
	e := a2a.InternalError(fmt.Sprintf(
		"you have %s running or waiting for input, as much as one caller may; finish or cancel some, or retry later", what))
	e.Reason = "RESOURCE_EXHAUSTED"
	return e
}

// storeFull is the answer when every stored task is live and the store is
// at its limit.
func storeFull(what string) *a2a.Error {
	e := a2a.InternalError(fmt.Sprintf(
		"the agent holds %s that are running or waiting for input, as much as it may; retry later", what))
	e.Reason = "RESOURCE_EXHAUSTED"
	return e
}

// memRoom is the MemoryStore's Room for the entry being updated.
type memRoom struct {
	s *MemoryStore
	e *memEntry
}

func (r *memRoom) Take(delta int64) error {
	s, e := r.s, r.e
	if delta <= 0 {
		return nil
	}
	if !e.terminal && e.quota.bytes+delta > s.limits.MaxLiveBytesPerOwner {
		return ownerFull(fmt.Sprintf("%d bytes of tasks", s.limits.MaxLiveBytesPerOwner))
	}
	if !s.makeRoom(delta, e) {
		return storeFull(fmt.Sprintf("%d bytes of tasks", s.limits.MaxBytes))
	}
	e.rec.Bytes += delta
	s.bytes += delta
	if !e.terminal {
		e.quota.bytes += delta
	}
	return nil
}

// View implements Store.
func (s *MemoryStore) View(id string, fn func(rec *Record) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.byID[id]
	if e == nil {
		return a2a.TaskNotFound(id)
	}
	return fn(&e.rec)
}

// Update implements Store.
func (s *MemoryStore) Update(id string, fn func(rec *Record, room Room) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byID[id]
	if e == nil {
		return a2a.TaskNotFound(id)
	}
	s.room.e = e
	err := fn(&e.rec, &s.room)
	s.room.e = nil
	if err != nil {
		return err
	}
	s.touch(e)
	return nil
}

// Scan implements Store.
func (s *MemoryStore) Scan(owner string, fn func(records iter.Seq[*Record])) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ow := s.owners[owner]
	fn(func(yield func(*Record) bool) {
		if ow == nil {
			return
		}
		for e := ow.head; e != nil; e = e.onext {
			if !yield(&e.rec) {
				return
			}
		}
	})
}

// Sweep implements Store.
func (s *MemoryStore) Sweep(now time.Time, expire func(rec *Record)) {
	cutoff := now.Add(-s.limits.MaxAge)
	s.mu.Lock()
	defer s.mu.Unlock()
	for e := s.terminal.head; e != nil && e.rec.Updated.Before(cutoff); e = s.terminal.head {
		s.remove(e)
	}
	s.expireOlder(&s.running, cutoff, expire)
	s.expireOlder(&s.interrupted, now.Add(-s.limits.MaxInputWait), expire)
}

// expireOlder expires the entries of l updated before cutoff. It is bounded
// by the count, not by the clock, so that an expire that does not advance
// Updated cannot keep it going.
func (s *MemoryStore) expireOlder(l *ageList, cutoff time.Time, expire func(rec *Record)) {
	for n := l.n; n > 0; n-- {
		e := l.head
		if e == nil || !e.rec.Updated.Before(cutoff) {
			return
		}
		expire(&e.rec)
		s.touch(e)
	}
}

// touch moves an updated entry to the back of the age list its state
// belongs to.
func (s *MemoryStore) touch(e *memEntry) {
	s.ages(e).remove(e)
	if terminal := e.rec.Task.Status.State.Terminal(); terminal != e.terminal {
		e.terminal = terminal
		s.release(e) // a terminal task never becomes live again
	}
	e.interrupted = e.rec.Task.Status.State.Interrupted()
	s.ages(e).pushBack(e)
}

func (s *MemoryStore) remove(e *memEntry) {
	s.ages(e).remove(e)
	ow := s.owners[e.rec.Owner]
	if !e.terminal {
		s.release(e)
	}
	s.bytes -= e.rec.Bytes
	ow.remove(e)
	if ow.head == nil {
		delete(s.owners, e.rec.Owner)
	}
	delete(s.byID, e.rec.Task.ID)
}

// release takes a live entry off its quota.
func (s *MemoryStore) release(e *memEntry) {
	q := e.quota
	q.live--
	q.bytes -= e.rec.Bytes
	if q.live == 0 {
		delete(s.quotas, q.key)
	}
	e.quota = nil
}

func (s *MemoryStore) ages(e *memEntry) *ageList {
	switch {
	case e.terminal:
		return &s.terminal
	case e.interrupted:
		return &s.interrupted
	}
	return &s.running
}

// ageList is an intrusive doubly linked list through memEntry.prev/next.
type ageList struct {
	head, tail *memEntry
	n          int
}

func (l *ageList) pushBack(e *memEntry) {
	e.prev, e.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = e
	} else {
		l.head = e
	}
	l.tail = e
	l.n++
}

func (l *ageList) remove(e *memEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		l.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		l.tail = e.prev
	}
	e.prev, e.next = nil, nil
	l.n--
}

// ownerList is an intrusive doubly linked list through memEntry.oprev/onext
// of one owner's tasks, so that a List reads only the caller's tasks.
type ownerList struct {
	owner string
	head  *memEntry
}

func (l *ownerList) push(e *memEntry) {
	e.oprev, e.onext = nil, l.head
	if l.head != nil {
		l.head.oprev = e
	}
	l.head = e
}

func (l *ownerList) remove(e *memEntry) {
	if e.oprev != nil {
		e.oprev.onext = e.onext
	} else {
		l.head = e.onext
	}
	if e.onext != nil {
		e.onext.oprev = e.oprev
	}
	e.oprev, e.onext = nil, nil
}
