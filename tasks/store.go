package tasks

import (
	"cmp"
	"context"
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
	// Push are the task's push notification configs (see push.go).
	Push []PushConfig
}

// Tx is what an Update's callback may do besides changing the record it is
// given: take room in the store's byte budget for what it adds, and publish
// the events of the change, which reach the task's subscribers (on every
// replica that shares the store) in order, and only if the change is made.
type Tx interface {
	// Take reserves delta more bytes for the record and adds them to its
	// Bytes, making room by dropping terminal tasks, oldest first; when the
	// record's quota or the store has no room left it returns the store's
	// Limits.Refusal(OwnerBytes or StoreBytes) and reserves nothing. A
	// negative delta gives back bytes the record no longer holds, to the
	// store's budget and its quota's share, and is never refused; a caller
	// gives back no more than it took. A record changed without Take keeps
	// its Bytes.
	Take(delta int64) error
	// Listening reports whether an event published now could reach a
	// subscriber; when it says no, the callback may skip building one.
	Listening() bool
	// Publish queues ev for the task's subscribers.
	Publish(ev a2a.StreamResponse)
}

// Store keeps task records for a Manager: in this process (MemoryStore),
// or shared by replicas. Each method is one atomic step. A callback may run
// more than once (a shared store retries it when another replica changed
// the record first), so it must do nothing but change the record it is
// given and use its Tx; anything else happens after the method returns.
//
// A Manager makes its Updates of one task one at a time, so a store needs
// no lock of its own against them; only the store's own Sweep may change
// the task meanwhile, and its change must share no memory with the Update
// under way.
//
// Records handed out share their slices with the store: a holder may
// replace a slice or append to a copy, never write into an element.
//
// A store that can be unable to serve while the process runs (one reached
// over the network) implements ReadyChecker as well.
type Store interface {
	// Insert stores rec, a new task. A store at capacity, in tasks or in
	// bytes (rec.Bytes), makes room by dropping terminal tasks, oldest
	// first; when none can go, or when rec's quota already holds as many
	// live tasks or bytes as one may, it returns the store's
	// Limits.Refusal of the bound it ran into (the quota's are checked
	// first). But first, in the same atomic step: a record whose
	// MessageKey is that of a message still remembered (Limits.Resends:
	// its task live, or updated within the window) is a message sent
	// again, and is not stored; Insert returns a *Resent naming that task.
	// A task dropped to make room leaves its message remembered for the
	// rest of its window, within MaxResendKeys (see ResendKeyBounds; the
	// caller holding the most loses its oldest first): Insert then returns
	// a *Resent that says the task was dropped. Past the window the key is
	// free again, and no later message finds the task by it.
	Insert(ctx context.Context, rec Record) error
	// Get returns the record of task id; an unknown id is an *a2a.Error
	// TaskNotFound.
	Get(ctx context.Context, id string) (Record, error)
	// Update applies fn to the record of task id atomically and returns
	// fn's error; when fn returns nil the change and the events fn
	// published are made, and when the record became terminal every
	// OnEnd hook runs. An unknown id is an *a2a.Error TaskNotFound.
	Update(ctx context.Context, id string, fn func(rec *Record, tx Tx) error) error
	// Scan calls fn once with an iterator over owner's records, as they
	// are at one moment.
	Scan(ctx context.Context, owner string, fn func(records iter.Seq[*Record])) error
	// Subscribe returns the record of task id and a subscription to its
	// events after that record, with none lost or repeated in between.
	Subscribe(ctx context.Context, id string) (Record, *Subscription, error)
	// Sweep drops the terminal records not updated since now minus the
	// store's maximum age, and calls expire for each running record that
	// old, each interrupted record that has waited for input longer than
	// the store's MaxInputWait, and (in a shared store) each running
	// record whose lease ran out, saying which; expire must move the
	// record to a terminal state and set its Updated (the OnEnd hooks then
	// run). Sweep makes its calls of expire one at a time.
	Sweep(ctx context.Context, now time.Time, expire func(rec *Record, tx Tx, why Expiry)) error
	// Renew vouches that this replica still runs the tasks ids, until now
	// plus the store's LeaseTTL: a task whose lease runs out (its replica
	// died) is expired by whichever replica sweeps next. A store in one
	// process needs no leases and does nothing.
	Renew(ctx context.Context, now time.Time, ids []string) error
	// OnEnd registers fn, called with the id and state of each task that
	// becomes terminal, on the replica that made the change and, in a
	// shared store, on the replica that runs the task: it stops the run.
	OnEnd(fn func(taskID string, state a2a.TaskState))
	// OpenStreams is how many subscriptions are open here.
	OpenStreams() int
	// Len is how many tasks the store holds (in a shared store: all
	// replicas' tasks), for metrics.
	Len(ctx context.Context) (int, error)
	// EndStreams ends every subscription open here with Err cause: the
	// process is going away.
	EndStreams(cause error)
}

// ReadyChecker is implemented by a Store that can be unable to serve while
// the process runs, such as one reached over the network. Readiness probes
// ask it through Manager.Ready, as often as they come, so it must be cheap
// however often that is (the Redis store sends one PING a second at most).
// A Store that does not implement it is always ready.
type ReadyChecker interface {
	// Ready says why the store cannot serve now, or returns nil.
	Ready(ctx context.Context) error
}

// Expiry says why Sweep expires a task.
type Expiry uint8

const (
	// ExpiredAge: a running task had no update for MaxAge.
	ExpiredAge Expiry = iota
	// ExpiredInputWait: an interrupted task got no follow-up within
	// MaxInputWait.
	ExpiredInputWait
	// ExpiredLease: the replica running the task stopped renewing its
	// lease: it died.
	ExpiredLease
)

// Limits bound a store. NewManager fills in their defaults.
//
// Live tasks (running or interrupted) are shared out so that no caller
// locks the others out: each authenticated owner holds at most
// MaxLivePerOwner of them; anonymous callers (owner "") together at most
// MaxLiveAnonymous, so that the rest stays for authenticated ones, and
// each anonymous client (its quota: the server gives each client address
// one) at most MaxLivePerClient, so that it takes many addresses to fill
// the anonymous share. The same goes for their bytes.
type Limits struct {
	// MaxTasks bounds the number of stored tasks.
	MaxTasks int
	// MaxLivePerOwner bounds the live tasks of one authenticated owner.
	MaxLivePerOwner int
	// MaxBytes bounds the bytes of all stored tasks.
	MaxBytes int64
	// MaxLiveBytesPerOwner bounds the bytes of one authenticated owner's
	// live tasks.
	MaxLiveBytesPerOwner int64
	// MaxLivePerClient and MaxLiveBytesPerClient bound the live tasks of
	// one anonymous client, and their bytes (0: as for an owner).
	MaxLivePerClient      int
	MaxLiveBytesPerClient int64
	// MaxLiveAnonymous and MaxLiveBytesAnonymous bound the live tasks of
	// all anonymous callers together, and their bytes (0: the store's
	// whole capacity).
	MaxLiveAnonymous      int
	MaxLiveBytesAnonymous int64
	// MaxAge bounds how long a terminal task is kept after its last update,
	// and how long a running one may go without one.
	MaxAge time.Duration
	// MaxInputWait bounds how long an interrupted task waits for input.
	MaxInputWait time.Duration
	// StreamBuffer is how many events each subscriber may fall behind
	// before it is dropped.
	StreamBuffer int
	// LeaseTTL is how long a replica's word that it runs a task holds
	// (shared stores only).
	LeaseTTL time.Duration
	// ResendWindow is how long a new task's message is remembered (see
	// resend.go) after the task's last update, whether or not the task is
	// still stored; a live task's message is remembered as long as the
	// task is live. 0: MaxAge; negative: no message is remembered.
	ResendWindow time.Duration
	// MaxResendKeys bounds the messages remembered apart from their
	// tasks, those of tasks dropped to make room (0: MaxTasks); anonymous
	// callers' hold at most their share of it, as of the live tasks
	// (MaxLiveAnonymous of MaxTasks).
	MaxResendKeys int
}

// Resends says for how long after its task's last update a message is
// remembered, and whether messages are remembered at all.
func (l Limits) Resends() (window time.Duration, on bool) {
	if l.ResendWindow < 0 {
		return 0, false
	}
	return cmp.Or(l.ResendWindow, l.MaxAge), true
}

// ResendKeyBounds are how many messages may be remembered apart from
// their tasks, and how many of them anonymous callers' may be.
func (l Limits) ResendKeyBounds() (all, anonymous int) {
	all = max(cmp.Or(l.MaxResendKeys, l.MaxTasks), 1)
	anonLive, _ := l.AnonymousBounds()
	return all, min(max(int(int64(all)*int64(anonLive)/int64(max(l.MaxTasks, 1))), 1), all)
}

// MemoryStore is a Store in memory, bounded by count, bytes and age.
// Eviction costs O(1) per task: running, interrupted and terminal tasks
// sit in three lists ordered by their last update, so the oldest of each is
// always at the front.
type MemoryStore struct {
	limits Limits

	mu   sync.RWMutex
	byID map[string]*memEntry
	// messages finds a task by the message that made it, also once the
	// task was dropped to make room, until its window ends.
	messages messageIndex
	// resendWindow is Limits.Resends': how long after its task's last
	// update a message is remembered, if resends are on.
	resendWindow time.Duration
	resends      bool
	owners       map[string]*ownerList
	// quotas count the live tasks of each quota; one goes when it has none.
	quotas map[string]*quota
	// anonymous counts the live tasks of every anonymous caller.
	anonymous quota
	// Each list holds the least recently updated first.
	running     ageList
	interrupted ageList
	terminal    ageList
	bytes       int64 // of every stored task
	// tx is the Tx of the Update under way (the lock is held).
	tx    memTx
	bus   *Bus
	onEnd []func(taskID string, state a2a.TaskState)
}

type memEntry struct {
	rec          Record
	prev, next   *memEntry // in running, interrupted or terminal
	oprev, onext *memEntry // in the owner's list
	// terminal and interrupted say which age list holds the entry.
	terminal, interrupted bool
	// quota is what the entry counts against while it is live.
	quota *quota
	// sent is the message that made the task, when keyed (in messages):
	// the stored strings.
	sent  sentMessage
	keyed bool
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
		limits:   limits,
		byID:     make(map[string]*memEntry),
		messages: newMessageIndex(limits),
		owners:   make(map[string]*ownerList),
		quotas:   make(map[string]*quota),
		bus:      NewBus(limits.StreamBuffer),
	}
	s.resendWindow, s.resends = limits.Resends()
	s.tx.s = s
	return s
}

// Insert implements Store.
func (s *MemoryStore) Insert(_ context.Context, rec Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.byID[rec.Task.ID]; dup {
		return fmt.Errorf("tasks: insert task %s: id already stored", rec.Task.ID)
	}
	sent, keyed := sentBy(&rec)
	var key uint64
	if keyed = keyed && s.resends; keyed {
		key = s.messages.keyOf(sent)
		switch first := s.messages.byKey[key]; {
		case first.dropped != nil && first.dropped.expires >= rec.Updated.UnixNano():
			return &Resent{TaskID: first.dropped.taskID, Dropped: true}
		case first.dropped != nil:
			s.messages.forget(first.dropped) // its window ended: the message is new again
		case first.task == nil: // a new message
		case first.task.sent != sent:
			keyed = false // another message of the same hash, which no later message can reach
		case s.remembers(first.task, rec.Updated):
			return &Resent{TaskID: first.task.rec.Task.ID}
		default:
			delete(s.messages.byKey, key) // its window ended: the message is new again
			first.task.keyed = false
		}
	}
	terminal := rec.Task.Status.State.Terminal()
	quotaKey := cmp.Or(rec.Quota, rec.Owner)
	if !terminal {
		var q quota
		if held := s.quotas[quotaKey]; held != nil {
			q = *held
		}
		if short := s.limits.overShare(rec.Owner == "", &q, &s.anonymous, 1, rec.Bytes); short != 0 {
			return s.limits.Refusal(short)
		}
	}
	if len(s.byID) >= s.limits.MaxTasks {
		if s.terminal.head == nil {
			return s.limits.Refusal(StoreTasks)
		}
		s.evict(s.terminal.head)
	}
	if !s.makeRoom(rec.Bytes, nil) {
		return s.limits.Refusal(StoreBytes)
	}
	ow := s.owners[rec.Owner]
	e := &memEntry{rec: rec, terminal: terminal, interrupted: rec.Task.Status.State.Interrupted(),
		keyed: keyed}
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
		if rec.Owner == "" {
			s.anonymous.live++
			s.anonymous.bytes += rec.Bytes
		}
	}
	s.bytes += rec.Bytes
	s.byID[rec.Task.ID] = e
	if keyed {
		e.sent = sentMessage{e.rec.Owner, e.rec.Quota, e.rec.Task.History[0].MessageID} // the stored strings
		s.messages.byKey[key] = messageRef{task: e}
	}
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
		s.evict(e)
	}
	return true
}

// remembers reports whether the message that made e's task is remembered
// at now: while the task is live, and for the resend window after its
// last update.
func (s *MemoryStore) remembers(e *memEntry, now time.Time) bool {
	return remembered(!e.terminal, e.rec.Updated, now, s.resendWindow)
}

// evict drops a terminal task to make room; the message that made it is
// remembered until its window ends.
func (s *MemoryStore) evict(e *memEntry) {
	if e.keyed {
		e.keyed = false
		s.messages.drop(s.messages.keyOf(e.sent), e.rec.Task.ID, e.rec.Updated.Add(s.resendWindow),
			keyHolderID{quota: cmp.Or(e.rec.Quota, e.rec.Owner), anonymous: e.rec.Owner == ""})
	}
	s.remove(e)
}

// Shortage names the bound a store ran into when it refused a task, or a
// Tx.Take.
type Shortage uint8

const (
	// OwnerTasks: the owner's quota holds MaxLivePerOwner live tasks.
	OwnerTasks Shortage = iota + 1
	// OwnerBytes: the owner's live tasks would hold more than
	// MaxLiveBytesPerOwner.
	OwnerBytes
	// StoreTasks: the store holds MaxTasks tasks, none of them terminal.
	StoreTasks
	// StoreBytes: the store would hold more than MaxBytes, and no
	// terminal task is left to make room.
	StoreBytes
	// ClientTasks and ClientBytes: an anonymous client's quota is full
	// (MaxLivePerClient, MaxLiveBytesPerClient).
	ClientTasks
	ClientBytes
	// AnonymousTasks and AnonymousBytes: the anonymous callers' share is
	// full (MaxLiveAnonymous, MaxLiveBytesAnonymous).
	AnonymousTasks
	AnonymousBytes
)

// ClientBounds are the live tasks and bytes one anonymous client may hold.
func (l Limits) ClientBounds() (int, int64) {
	return cmp.Or(l.MaxLivePerClient, l.MaxLivePerOwner), cmp.Or(l.MaxLiveBytesPerClient, l.MaxLiveBytesPerOwner)
}

// AnonymousBounds are the live tasks and bytes all anonymous callers
// together may hold.
func (l Limits) AnonymousBounds() (int, int64) {
	return cmp.Or(l.MaxLiveAnonymous, l.MaxTasks), cmp.Or(l.MaxLiveBytesAnonymous, l.MaxBytes)
}

// overShare names the share that adding live tasks and bytes to quota q
// (an anonymous client's when anonymous, whose callers hold pool) would
// take past its bound, or 0 when they fit. Quotas' bounds are checked
// before the pool's.
func (l Limits) overShare(anonymous bool, q, pool *quota, live int, bytes int64) Shortage {
	if !anonymous {
		switch {
		case q.live+live > l.MaxLivePerOwner:
			return OwnerTasks
		case q.bytes+bytes > l.MaxLiveBytesPerOwner:
			return OwnerBytes
		}
		return 0
	}
	maxLive, maxBytes := l.ClientBounds()
	poolLive, poolBytes := l.AnonymousBounds()
	switch {
	case q.live+live > maxLive:
		return ClientTasks
	case q.bytes+bytes > maxBytes:
		return ClientBytes
	case pool.live+live > poolLive:
		return AnonymousTasks
	case pool.bytes+bytes > poolBytes:
		return AnonymousBytes
	}
	return 0
}

// Refusal is the error every store answers when it refuses for want of
// what short names (RESOURCE_EXHAUSTED, asking the caller to retry later),
// so that a client reads the same whichever store keeps the tasks.
func (l Limits) Refusal(short Shortage) *a2a.Error {
	clientLive, clientBytes := l.ClientBounds()
	anonLive, anonBytes := l.AnonymousBounds()
	switch short {
	case OwnerTasks:
		return ownerFull(tasksOf(l.MaxLivePerOwner))
	case OwnerBytes:
		return ownerFull(bytesOf(l.MaxLiveBytesPerOwner))
	case StoreTasks:
		return storeFull(tasksOf(l.MaxTasks))
	case StoreBytes:
		return storeFull(bytesOf(l.MaxBytes))
	case ClientTasks:
		return clientFull(tasksOf(clientLive))
	case ClientBytes:
		return clientFull(bytesOf(clientBytes))
	case AnonymousTasks:
		return anonymousFull(tasksOf(anonLive))
	case AnonymousBytes:
		return anonymousFull(bytesOf(anonBytes))
	}
	panic(fmt.Sprintf("tasks: no refusal for shortage %d", short))
}

func tasksOf(n int) string   { return fmt.Sprintf("%d tasks", n) }
func bytesOf(n int64) string { return fmt.Sprintf("%d bytes of tasks", n) }

// ownerFull is the answer to a caller that already has as many live tasks,
// or bytes of them, as one caller may: one caller cannot fill the store for
// everyone else.
func ownerFull(what string) *a2a.Error {
	return resourceExhausted(fmt.Sprintf(
		"you have %s running or waiting for input, as much as one caller may; finish or cancel some, or retry later", what))
}

// clientFull is the answer to an anonymous caller whose address holds as
// much as one anonymous client may.
func clientFull(what string) *a2a.Error {
	return resourceExhausted(fmt.Sprintf(
		"callers from your address have %s running or waiting for input, as much as one anonymous client may; finish or cancel some, authenticate, or retry later", what))
}

// anonymousFull is the answer to an anonymous caller when anonymous
// callers together hold their share: the rest is kept for authenticated
// callers.
func anonymousFull(what string) *a2a.Error {
	return resourceExhausted(fmt.Sprintf(
		"anonymous callers have %s running or waiting for input, as much as the agent keeps for them; authenticate, or retry later", what))
}

// storeFull is the answer when every stored task is live and the store is
// at its limit: the caller can only wait.
func storeFull(what string) *a2a.Error {
	return resourceExhausted(fmt.Sprintf(
		"the agent holds %s that are running or waiting for input, as much as it may; retry later", what))
}

// resourceExhausted is a refusal for want of room: -32603, reason
// RESOURCE_EXHAUSTED, which asks the caller to retry later.
func resourceExhausted(detail string) *a2a.Error {
	e := a2a.InternalError(detail)
	e.Reason = "RESOURCE_EXHAUSTED"
	return e
}

// memTx is the MemoryStore's Tx for the entry being updated: its events
// wait in events until the change is made.
type memTx struct {
	s      *MemoryStore
	e      *memEntry
	events []a2a.StreamResponse
	before Record // the record as it was, to restore when the callback fails
	taken  int64  // what Take reserved, to give back then
}

func (t *memTx) Listening() bool { return t.s.bus.Active(t.e.rec.Task.ID) }

func (t *memTx) Publish(ev a2a.StreamResponse) { t.events = append(t.events, ev) }

// begin sets t up for an update of e.
func (t *memTx) begin(e *memEntry) {
	t.e, t.before, t.taken = e, e.rec, 0
	clear(t.events)
	t.events = t.events[:0]
}

// rollback undoes what a failed callback did: the record as it was, and
// the bytes Take reserved.
func (t *memTx) rollback() {
	s, e := t.s, t.e
	e.rec = t.before
	s.bytes -= t.taken
	if !e.terminal {
		s.holdLive(e, -t.taken)
	}
	t.e, t.before = nil, Record{}
}

// commit hands the events to the subscribers, and tells whether the entry
// became terminal.
func (t *memTx) commit(wasTerminal bool) (ended bool) {
	for _, ev := range t.events {
		t.s.bus.Publish(t.e.rec.Task.ID, ev)
	}
	t.s.touch(t.e)
	return !wasTerminal && t.e.terminal
}

func (t *memTx) Take(delta int64) error {
	s, e := t.s, t.e
	if delta > 0 {
		if !e.terminal {
			if short := s.limits.overShare(e.rec.Owner == "", e.quota, &s.anonymous, 0, delta); short != 0 {
				return s.limits.Refusal(short)
			}
		}
		if !s.makeRoom(delta, e) {
			return s.limits.Refusal(StoreBytes)
		}
	}
	e.rec.Bytes += delta
	s.bytes += delta
	t.taken += delta
	if !e.terminal {
		s.holdLive(e, delta)
	}
	return nil
}

// Get implements Store.
func (s *MemoryStore) Get(_ context.Context, id string) (Record, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.byID[id]
	if e == nil {
		return Record{}, a2a.TaskNotFound(id)
	}
	return e.rec, nil
}

// Update implements Store.
func (s *MemoryStore) Update(_ context.Context, id string, fn func(rec *Record, tx Tx) error) error {
	s.mu.Lock()
	e := s.byID[id]
	if e == nil {
		s.mu.Unlock()
		return a2a.TaskNotFound(id)
	}
	s.tx.begin(e)
	if err := fn(&e.rec, &s.tx); err != nil {
		s.tx.rollback()
		s.mu.Unlock()
		return err
	}
	ended := s.tx.commit(e.terminal)
	s.tx.e, s.tx.before = nil, Record{}
	state := e.rec.Task.Status.State
	s.mu.Unlock()
	if ended {
		s.ended(id, state)
	}
	return nil
}

// ended runs the OnEnd hooks.
func (s *MemoryStore) ended(id string, state a2a.TaskState) {
	for _, fn := range s.onEnd {
		fn(id, state)
	}
}

// OnEnd implements Store. Hooks are registered before the store is used.
func (s *MemoryStore) OnEnd(fn func(taskID string, state a2a.TaskState)) {
	s.onEnd = append(s.onEnd, fn)
}

// Subscribe implements Store.
func (s *MemoryStore) Subscribe(_ context.Context, id string) (Record, *Subscription, error) {
	s.mu.Lock() // no update between the copy and the subscription
	defer s.mu.Unlock()
	e := s.byID[id]
	if e == nil {
		return Record{}, nil, a2a.TaskNotFound(id)
	}
	return e.rec, s.bus.Subscribe(id), nil
}

// OpenStreams implements Store.
func (s *MemoryStore) OpenStreams() int { return s.bus.Open() }

// Len is how many tasks the store holds.
func (s *MemoryStore) Len(context.Context) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.byID), nil
}

// EndStreams implements Store.
func (s *MemoryStore) EndStreams(cause error) { s.bus.EndAll(cause) }

// Renew implements Store: this process runs every task it holds, and a
// task outlives it no more than the store does.
func (s *MemoryStore) Renew(context.Context, time.Time, []string) error { return nil }

// Scan implements Store.
func (s *MemoryStore) Scan(_ context.Context, owner string, fn func(records iter.Seq[*Record])) error {
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
	return nil
}

// Sweep implements Store.
func (s *MemoryStore) Sweep(_ context.Context, now time.Time, expire func(rec *Record, tx Tx, why Expiry)) error {
	cutoff := now.Add(-s.limits.MaxAge)
	s.mu.Lock()
	for e := s.terminal.head; e != nil && e.rec.Updated.Before(cutoff); e = s.terminal.head {
		s.remove(e)
	}
	s.messages.sweep(now)
	var ended []*Record
	ended = s.expireOlder(&s.running, cutoff, ExpiredAge, expire, ended)
	ended = s.expireOlder(&s.interrupted, now.Add(-s.limits.MaxInputWait), ExpiredInputWait, expire, ended)
	ends := make([]struct {
		id    string
		state a2a.TaskState
	}, len(ended))
	for i, rec := range ended {
		ends[i].id, ends[i].state = rec.Task.ID, rec.Task.Status.State
	}
	s.mu.Unlock()
	for _, end := range ends {
		s.ended(end.id, end.state)
	}
	return nil
}

// expireOlder expires the entries of l updated before cutoff, and appends
// those that became terminal to ended. It is bounded by the count, not by
// the clock, so that an expire that does not advance Updated cannot keep it
// going.
func (s *MemoryStore) expireOlder(l *ageList, cutoff time.Time, why Expiry, expire func(rec *Record, tx Tx, why Expiry), ended []*Record) []*Record {
	for n := l.n; n > 0; n-- {
		e := l.head
		if e == nil || !e.rec.Updated.Before(cutoff) {
			return ended
		}
		s.tx.begin(e)
		expire(&e.rec, &s.tx, why)
		if s.tx.commit(e.terminal) {
			ended = append(ended, &e.rec)
		}
		s.tx.e, s.tx.before = nil, Record{}
	}
	return ended
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
	if e.keyed {
		delete(s.messages.byKey, s.messages.keyOf(e.sent))
	}
}

// holdLive counts delta more bytes for a live entry, in its quota and, for
// an anonymous caller's, in the anonymous callers' pool.
func (s *MemoryStore) holdLive(e *memEntry, delta int64) {
	e.quota.bytes += delta
	if e.rec.Owner == "" {
		s.anonymous.bytes += delta
	}
}

// release takes a live entry off its quota (and the anonymous pool).
func (s *MemoryStore) release(e *memEntry) {
	q := e.quota
	q.live--
	q.bytes -= e.rec.Bytes
	if q.live == 0 {
		delete(s.quotas, q.key)
	}
	if e.rec.Owner == "" {
		s.anonymous.live--
		s.anonymous.bytes -= e.rec.Bytes
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
