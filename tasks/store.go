package tasks

import (
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
	Task  a2a.Task
	// Updated is the time of the task's last change (status, artifact or
	// message); MaxAge is measured from it.
	Updated time.Time
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
	// Insert stores a copy of rec, a new task. A store at capacity makes
	// room by dropping terminal tasks, oldest first; when none can go it
	// returns an *a2a.Error that asks the caller to retry later.
	Insert(rec Record) error
	// View calls fn with the record of task id while no Insert, Update or
	// Sweep runs, and returns fn's error. fn must not modify the record
	// nor keep it. An unknown id is an *a2a.Error TaskNotFound.
	View(id string, fn func(rec *Record) error) error
	// Update calls fn with the record of task id, with exclusive access,
	// and returns fn's error. When fn returns nil the store takes the
	// record's new state and Updated into account. An unknown id is an
	// *a2a.Error TaskNotFound.
	Update(id string, fn func(rec *Record) error) error
	// Scan calls fn once with an iterator over owner's records, under the
	// same guarantee as View.
	Scan(owner string, fn func(records iter.Seq[*Record]))
	// Sweep drops the terminal records not updated since now minus the
	// store's maximum age, and calls expire, with exclusive access, for
	// each live record that old; expire must move the record to a terminal
	// state and set its Updated.
	Sweep(now time.Time, expire func(rec *Record))
}

// MemoryStore is a Store in memory, bounded by count and by age. Eviction
// costs O(1) per task: terminal and live tasks sit in two lists ordered by
// their last update, so the oldest of each is always at the front.
type MemoryStore struct {
	maxTasks        int
	maxLivePerOwner int
	maxAge          time.Duration

	mu       sync.RWMutex
	byID     map[string]*memEntry
	owners   map[string]*ownerList
	live     ageList // not terminal, least recently updated first
	terminal ageList // terminal, least recently updated first
}

type memEntry struct {
	rec          Record
	prev, next   *memEntry // in live or terminal
	oprev, onext *memEntry // in the owner's list
	terminal     bool      // which age list holds the entry
}

// NewMemoryStore returns an empty store that holds at most maxTasks tasks,
// of which at most maxLivePerOwner live ones of any one owner, and drops
// terminal tasks maxAge after their last update.
func NewMemoryStore(maxTasks, maxLivePerOwner int, maxAge time.Duration) *MemoryStore {
	return &MemoryStore{
		maxTasks:        maxTasks,
		maxLivePerOwner: maxLivePerOwner,
		maxAge:          maxAge,
		byID:            make(map[string]*memEntry),
		owners:          make(map[string]*ownerList),
	}
}

// Insert implements Store.
func (s *MemoryStore) Insert(rec Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.byID[rec.Task.ID]; dup {
		return fmt.Errorf("tasks: insert task %s: id already stored", rec.Task.ID)
	}
	terminal := rec.Task.Status.State.Terminal()
	ow := s.owners[rec.Owner]
	if !terminal && ow != nil && ow.live >= s.maxLivePerOwner {
		return ownerFull(s.maxLivePerOwner)
	}
	if len(s.byID) >= s.maxTasks {
		if s.terminal.head == nil {
			return storeFull(s.maxTasks)
		}
		s.remove(s.terminal.head)
		ow = s.owners[rec.Owner] // the eviction may have emptied it
	}
	e := &memEntry{rec: rec, terminal: terminal}
	if ow == nil {
		ow = &ownerList{owner: rec.Owner}
		s.owners[rec.Owner] = ow
	}
	e.rec.Owner = ow.owner // one copy of the owner string for all its tasks
	ow.push(e)
	if !terminal {
		ow.live++
	}
	s.byID[rec.Task.ID] = e
	s.ages(e.terminal).pushBack(e)
	return nil
}

// ownerFull is the answer to a new task of a caller that already has as
// many live tasks as one caller may: one caller cannot fill the store for
// everyone else.
func ownerFull(max int) *a2a.Error {
	e := a2a.InternalError(fmt.Sprintf(
		"you have %d tasks running or waiting for input, as many as one caller may; finish or cancel some, or retry later", max))
	e.Reason = "RESOURCE_EXHAUSTED"
	return e
}

// storeFull is the answer to a new task when every stored task is live.
func storeFull(maxTasks int) *a2a.Error {
	e := a2a.InternalError(fmt.Sprintf(
		"the agent holds %d tasks that are running or waiting for input; retry later", maxTasks))
	e.Reason = "RESOURCE_EXHAUSTED"
	return e
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
func (s *MemoryStore) Update(id string, fn func(rec *Record) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byID[id]
	if e == nil {
		return a2a.TaskNotFound(id)
	}
	if err := fn(&e.rec); err != nil {
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
	cutoff := now.Add(-s.maxAge)
	s.mu.Lock()
	defer s.mu.Unlock()
	for e := s.terminal.head; e != nil && e.rec.Updated.Before(cutoff); e = s.terminal.head {
		s.remove(e)
	}
	// Bounded by the count, not by the clock, so that an expire that does
	// not advance Updated cannot keep the loop going.
	for n := s.live.n; n > 0; n-- {
		e := s.live.head
		if e == nil || !e.rec.Updated.Before(cutoff) {
			break
		}
		expire(&e.rec)
		s.touch(e)
	}
}

// touch moves an updated entry to the back of the age list its state
// belongs to.
func (s *MemoryStore) touch(e *memEntry) {
	s.ages(e.terminal).remove(e)
	if terminal := e.rec.Task.Status.State.Terminal(); terminal != e.terminal {
		e.terminal = terminal
		s.owners[e.rec.Owner].live-- // a terminal task never becomes live again
	}
	s.ages(e.terminal).pushBack(e)
}

func (s *MemoryStore) remove(e *memEntry) {
	s.ages(e.terminal).remove(e)
	ow := s.owners[e.rec.Owner]
	if !e.terminal {
		ow.live--
	}
	ow.remove(e)
	if ow.head == nil {
		delete(s.owners, e.rec.Owner)
	}
	delete(s.byID, e.rec.Task.ID)
}

func (s *MemoryStore) ages(terminal bool) *ageList {
	if terminal {
		return &s.terminal
	}
	return &s.live
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
	live  int // how many of the owner's tasks are not terminal
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
