// Package tasks keeps A2A tasks: their lifecycle (spec 1.0 §4.1.3), a store
// bounded by count and age, and the bus that feeds streams. The Manager is
// the only type the server uses.
//
// Policies:
//
//   - Owners. Every read, cancel, subscribe and follow-up sees only the
//     caller's own tasks; another owner's task answers exactly like an
//     unknown one (TaskNotFound). Owner "" is the anonymous caller.
//   - Contexts are per owner. A client may choose the contextId of a new
//     task; one that another owner uses is accepted exactly like an
//     unknown one (refusing it would tell that it exists), and the two
//     owners' tasks under it never meet: List filters by owner first, and
//     a follow-up names a task, which must be the caller's.
//   - Full store. The store holds at most MaxTasks tasks. A new task makes
//     room by evicting the terminal task updated longest ago. A running or
//     interrupted task is never dropped: when every stored task is live,
//     Create fails with an *a2a.Error (code -32603, reason
//     RESOURCE_EXHAUSTED) that asks the client to retry later.
//   - Per owner. One owner holds at most MaxLivePerOwner running or
//     interrupted tasks; past that its Create fails with RESOURCE_EXHAUSTED
//     while other owners are unaffected. Anonymous callers together hold
//     at most MaxLiveAnonymous, so that they cannot lock authenticated
//     callers out, and each anonymous client (the server gives each client
//     address a quota) at most MaxLivePerClient, so that it takes many
//     addresses to fill the anonymous share. Bytes are shared out alike. A task holds at most MaxHistory
//     messages: a follow-up whose turn could go past that is refused with
//     InvalidParams.
//   - Bytes. Every task carries an estimate of the memory it holds; the
//     store keeps a total budget (MaxBytes) and a budget for each owner's
//     live tasks (MaxLiveBytesPerOwner) under the same rules as the counts,
//     and one task holds at most MaxTaskBytes: a message that would go past
//     it is refused with InvalidParams before anything is kept.
//   - Age. A terminal task is evicted MaxAge after its last update. A
//     running task not updated for MaxAge, or an interrupted one that got
//     no follow-up within MaxInputWait, is moved to failed with an agent
//     message saying it expired, its tracked context is canceled with
//     cause ErrExpired and its streams end; it is evicted MaxAge later, so
//     a client can still read why it failed. Ages are checked when a task
//     starts and by a janitor every SweepInterval.
//   - Slow consumers. Publishing never blocks. A subscriber whose buffer of
//     StreamBuffer events is full is dropped: its channel is closed and Err
//     returns ErrSlowConsumer. It may subscribe again and gets the task's
//     current state first.
//   - Sharing. Tasks returned by the Manager and events on the bus share
//     their messages, parts, artifacts and metadata with the store: callers
//     may re-slice or replace a returned task's fields but must not modify
//     what they point to. Likewise the Manager keeps the parts and metadata
//     of messages and artifacts handed to it.
package tasks

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

var (
	// ErrTerminal reports an update of a task already in a terminal state,
	// typically from a worker that finished after its task was canceled or
	// expired. The task is left unchanged.
	ErrTerminal = errors.New("tasks: task is in a terminal state")
	// ErrTransition reports a status change the lifecycle does not allow.
	ErrTransition = errors.New("tasks: state transition not allowed")
	// ErrCanceled is the cause given to a tracked context when its task is
	// canceled.
	ErrCanceled = errors.New("tasks: task canceled")
	// ErrExpired is the cause given to a tracked context when its task
	// exceeds MaxAge without an update.
	ErrExpired = errors.New("tasks: task expired")
)

// The defaults of Options.MaxTasks and Options.MaxBytes.
const (
	DefaultMaxTasks       = 10000
	DefaultMaxBytes int64 = 256 << 20
)

// Options configure a Manager. Zero values take the defaults.
type Options struct {
	// MaxTasks bounds the number of stored tasks (default 10000).
	MaxTasks int
	// MaxLivePerOwner bounds the running or interrupted tasks of one
	// authenticated owner (default MaxTasks/4), so that one caller cannot
	// fill the store.
	MaxLivePerOwner int
	// MaxLiveAnonymous bounds the running or interrupted tasks of all
	// anonymous callers together (default MaxTasks/2), so that the rest
	// stays for authenticated callers; MaxLiveBytesAnonymous bounds their
	// bytes (default MaxBytes/2). Set them to MaxTasks and MaxBytes where
	// no caller can authenticate.
	MaxLiveAnonymous      int
	MaxLiveBytesAnonymous int64
	// MaxLivePerClient bounds the running or interrupted tasks of one
	// anonymous client, a quota of its own (default MaxTasks/100, at least
	// 1, at most MaxLivePerOwner and MaxLiveAnonymous), so that many
	// addresses are needed to fill the anonymous share;
	// MaxLiveBytesPerClient bounds their bytes (default MaxBytes/64, at
	// most MaxLiveBytesPerOwner and MaxLiveBytesAnonymous).
	MaxLivePerClient      int
	MaxLiveBytesPerClient int64
	// MaxHistory bounds the messages of one task (default 100): a
	// follow-up to a task that holds as many is refused.
	MaxHistory int
	// MaxAge bounds how long a task is kept after its last update
	// (default 1h).
	MaxAge time.Duration
	// ResendWindow is how long after its task's last update a message is
	// remembered, so that the same message sent again does not run again
	// (default MaxAge, at most MaxAge; negative: no message is remembered,
	// and every message runs, whatever its id). While its task is live, a
	// message is remembered whatever the window.
	ResendWindow time.Duration
	// MaxResendKeys bounds the messages remembered apart from their
	// tasks: those of tasks dropped to make room before their window ended
	// (default MaxTasks). Each takes tens of bytes.
	MaxResendKeys int
	// MaxInputWait bounds how long an input-required or auth-required task
	// waits for a follow-up (default 10m, at most MaxAge): then it fails,
	// saying so, and no longer counts against its owner's live tasks.
	// Interrupted tasks that nobody continues would otherwise hold their
	// owner's places for MaxAge.
	MaxInputWait time.Duration
	// MaxBytes bounds the memory all stored tasks take, as estimated from
	// what they hold (default 256 MiB). A new task makes room by evicting
	// terminal tasks, oldest first; when every stored task is live it is
	// refused with RESOURCE_EXHAUSTED, as for MaxTasks.
	MaxBytes int64
	// MaxLiveBytesPerOwner bounds the memory of one owner's running or
	// interrupted tasks (default MaxBytes/4), as MaxLivePerOwner bounds
	// their count.
	MaxLiveBytesPerOwner int64
	// MaxTaskBytes bounds the memory of one task (default 16 MiB, at most
	// MaxLiveBytesPerOwner): a message that would take more is refused
	// with InvalidParams before anything is kept, and an outcome that
	// would take more fails the task instead. It also bounds what one
	// answer holds: a GetTask of one task, a page of ListTasks.
	MaxTaskBytes int64
	// StreamBuffer is how many events each subscriber may fall behind
	// before it is dropped (default 64).
	StreamBuffer int
	// LeaseTTL is how long, in a store shared by replicas, a task stays
	// working after its replica stops vouching for it (it died) before
	// another replica fails it (default 30s). Replicas renew the leases of
	// their runs every LeaseTTL/3.
	LeaseTTL time.Duration
	// SweepInterval is how often the janitor applies MaxAge (default
	// MaxAge/10, between 1s and 1m). Negative: no janitor; ages are then
	// applied on Create only.
	SweepInterval time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Store keeps the tasks (default a MemoryStore within these options'
	// limits). A store given here must have been made with StoreLimits.
	Store Store
	// MaxPushConfigs bounds the push notification configs of one task
	// (default 10). With MaxLivePerOwner it bounds those of one caller.
	MaxPushConfigs int
	// NewID makes the ids the Manager fills in: of tasks, contexts, agent
	// messages, artifacts and push configs (default: random version 4
	// UUIDs). The dry run makes them predictable.
	NewID func(kind IDKind) string
}

// IDKind says what an id is for.
type IDKind uint8

const (
	TaskID IDKind = iota
	ContextID
	MessageID
	ArtifactID
	PushConfigID
)

// Manager runs the task lifecycle on a Store and publishes every change on
// a Bus. It holds no per-handler state, so one Manager can outlive config
// reloads; the last user calls Close. It is safe for concurrent use.
type Manager struct {
	now          func() time.Time
	newID        func(IDKind) string
	maxAge       time.Duration
	maxInputWait time.Duration
	maxHistory   int
	maxTaskBytes int64
	// resendWindow and resends are the store limits' Resends.
	resendWindow time.Duration
	resends      bool
	store        Store
	ready        ReadyChecker // the store, when it is one; nil otherwise
	// turns make the changes of one task one at a time (see update).
	turns taskTurns
	// pusher, when set, hears of every change of a task with push configs
	// (SetPusher), in the order of the turns.
	pusher         atomic.Pointer[Pusher]
	maxPushConfigs int
	// expireFn is m.expire bound once, so that sweeping allocates nothing.
	expireFn func(*Record, Tx, Expiry)

	trackMu  sync.Mutex
	tracked  map[string]tracked
	trackSeq uint64
	leaseTTL time.Duration
	renewed  time.Time // when the leases of the tracked runs were last renewed

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	drain drainState
}

// tracked is the cancel function of a task's running work; seq tells one
// Track call from a later one for the same task.
type tracked struct {
	cancel context.CancelCauseFunc
	seq    uint64
}

// NewManager returns a Manager and starts its janitor.
// withDefaults fills in the zero values of o.
func (o Options) withDefaults() Options {
	opts := o
	if opts.MaxTasks <= 0 {
		opts.MaxTasks = DefaultMaxTasks
	}
	if opts.MaxLivePerOwner <= 0 {
		opts.MaxLivePerOwner = max(opts.MaxTasks/4, 1)
	}
	if opts.MaxHistory <= 0 {
		opts.MaxHistory = 100
	}
	opts.MaxHistory = max(opts.MaxHistory, 1+messagesPerTurn)
	if opts.MaxAge <= 0 {
		opts.MaxAge = time.Hour
	}
	if opts.ResendWindow == 0 {
		opts.ResendWindow = opts.MaxAge
	}
	opts.ResendWindow = min(opts.ResendWindow, opts.MaxAge)
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxLiveBytesPerOwner <= 0 {
		opts.MaxLiveBytesPerOwner = opts.MaxBytes / 4
	}
	if opts.MaxLiveAnonymous <= 0 {
		opts.MaxLiveAnonymous = max(opts.MaxTasks/2, 1)
	}
	if opts.MaxLiveBytesAnonymous <= 0 {
		opts.MaxLiveBytesAnonymous = opts.MaxBytes / 2
	}
	if opts.MaxLivePerClient <= 0 {
		opts.MaxLivePerClient = min(max(opts.MaxTasks/100, 1), opts.MaxLivePerOwner, opts.MaxLiveAnonymous)
	}
	if opts.MaxLiveBytesPerClient <= 0 {
		opts.MaxLiveBytesPerClient = min(opts.MaxBytes/64, opts.MaxLiveBytesPerOwner, opts.MaxLiveBytesAnonymous)
	}
	if opts.MaxTaskBytes <= 0 {
		opts.MaxTaskBytes = 16 << 20
	}
	opts.MaxTaskBytes = min(opts.MaxTaskBytes, opts.MaxLiveBytesPerOwner, opts.MaxBytes)
	if opts.StreamBuffer <= 0 {
		opts.StreamBuffer = 64
	}
	if opts.MaxInputWait <= 0 {
		opts.MaxInputWait = 10 * time.Minute
	}
	opts.MaxInputWait = min(opts.MaxInputWait, opts.MaxAge)
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = 30 * time.Second
	}
	if opts.SweepInterval == 0 {
		opts.SweepInterval = min(max(opts.MaxInputWait/10, time.Second), time.Minute, opts.LeaseTTL/3)
	}
	if opts.MaxPushConfigs <= 0 {
		opts.MaxPushConfigs = 10
	}
	if opts.MaxResendKeys <= 0 {
		opts.MaxResendKeys = opts.MaxTasks
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NewID == nil {
		opts.NewID = randomID
	}
	return opts
}

// StoreLimits are the limits a Store made for these options must keep,
// defaults filled in: a shared store is made by the caller, and enforces
// them itself.
func (o Options) StoreLimits() Limits {
	opts := o.withDefaults()
	return Limits{
		MaxTasks: opts.MaxTasks, MaxLivePerOwner: opts.MaxLivePerOwner,
		MaxBytes: opts.MaxBytes, MaxLiveBytesPerOwner: opts.MaxLiveBytesPerOwner,
		MaxLivePerClient: opts.MaxLivePerClient, MaxLiveBytesPerClient: opts.MaxLiveBytesPerClient,
		MaxLiveAnonymous: opts.MaxLiveAnonymous, MaxLiveBytesAnonymous: opts.MaxLiveBytesAnonymous,
		MaxAge: opts.MaxAge, MaxInputWait: opts.MaxInputWait, StreamBuffer: opts.StreamBuffer,
		LeaseTTL: opts.LeaseTTL, ResendWindow: opts.ResendWindow, MaxResendKeys: opts.MaxResendKeys,
	}
}

func NewManager(opts Options) *Manager {
	opts = opts.withDefaults()
	if opts.Store == nil {
		opts.Store = NewMemoryStore(opts.StoreLimits())
	}
	m := &Manager{
		now:          opts.Now,
		newID:        opts.NewID,
		maxAge:       opts.MaxAge,
		maxInputWait: opts.MaxInputWait,
		maxHistory:   opts.MaxHistory,
		maxTaskBytes: opts.MaxTaskBytes,
		store:        opts.Store,
		turns:        taskTurns{turns: make(map[string]*turn)},

		maxPushConfigs: opts.MaxPushConfigs,
		tracked:        make(map[string]tracked),
		leaseTTL:       opts.LeaseTTL,
	}
	m.ready, _ = opts.Store.(ReadyChecker)
	m.resendWindow, m.resends = opts.StoreLimits().Resends()
	m.drain.init()
	m.expireFn = m.expire
	m.store.OnEnd(m.ended)
	if opts.SweepInterval > 0 {
		m.stop, m.done = make(chan struct{}), make(chan struct{})
		go m.janitor(opts.SweepInterval)
	}
	return m
}

// Close stops the janitor. Running tasks are not canceled: they finish and
// their updates still apply; but a Drain under way ends at once, as if its
// deadline had passed. Close is idempotent.
func (m *Manager) Close() {
	m.closeOnce.Do(func() {
		m.hurryDrain()
		if m.stop != nil {
			close(m.stop)
			<-m.done
		}
	})
}

func (m *Manager) janitor(interval time.Duration) {
	defer close(m.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			_ = m.sweep(context.Background(), m.now()) // a shared store logs its own faults
		}
	}
}

// sweep renews the leases of this replica's runs, then has the store
// apply the ages: renewing first, so that no sweep, here or on another
// replica, takes this replica's runs for dead.
func (m *Manager) sweep(ctx context.Context, now time.Time) error {
	m.trackMu.Lock()
	var ids []string
	if due := now.Sub(m.renewed) >= m.leaseTTL/3 || now.Before(m.renewed); due && len(m.tracked) > 0 {
		m.renewed = now
		ids = make([]string, 0, len(m.tracked))
		for id := range m.tracked {
			ids = append(ids, id)
		}
	}
	m.trackMu.Unlock()
	if len(ids) > 0 {
		if err := m.store.Renew(ctx, now, ids); err != nil {
			return err
		}
	}
	if m.pusher.Load() == nil {
		return m.store.Sweep(ctx, now, m.expireFn)
	}
	var expired []*pushNotice
	err := m.store.Sweep(ctx, now, m.expireNotifying(&expired))
	m.pushExpired(ctx, expired)
	return err
}

// expire fails a live task that exceeded MaxAge, an interrupted one that
// waited too long, or one whose replica died; the store calls it inside
// its transaction.
func (m *Manager) expire(rec *Record, tx Tx, why Expiry) {
	text := fmt.Sprintf("Task expired: no update for %s.", m.maxAge)
	switch why {
	case ExpiredInputWait:
		text = fmt.Sprintf("Task expired: no input arrived within %s.", m.maxInputWait)
	case ExpiredLease:
		text = StoppedText
	}
	msg := a2a.Message{Parts: []a2a.Part{a2a.TextPart(text)}}
	m.apply(rec, tx, a2a.TaskStatus{State: a2a.TaskStateFailed, Message: &msg}, m.now())
}

// ended stops the run of a task that became terminal, wherever that
// happened (on every replica, the store calls it): a cancellation cancels
// the run's context with cause ErrCanceled, an expiry with ErrExpired.
func (m *Manager) ended(taskID string, state a2a.TaskState) {
	cause := ErrExpired
	switch state {
	case a2a.TaskStateCanceled:
		cause = ErrCanceled
	case a2a.TaskStateCompleted, a2a.TaskStateRejected:
		cause = errRunFinished
	case a2a.TaskStateFailed:
		if m.drain.started.Load() {
			cause = ErrShutdown
		}
	}
	m.cancelTracked(taskID, cause)
}

// messagesPerTurn is what one follow-up can add to a history: the message
// itself, a working message and the answer. Start keeps room for all three,
// so that MaxHistory is a hard cap.
const messagesPerTurn = 3

// SetStatus moves a task to st if the lifecycle allows it (see
// CanTransition; ErrTerminal or ErrTransition otherwise), stamps st's
// Timestamp if zero, appends st's message (an agent message, given its ids)
// to the history and publishes a status update, final when st is terminal
// or interrupted.
func (m *Manager) SetStatus(taskID string, st a2a.TaskStatus) (*a2a.Task, error) {
	var out *a2a.Task
	err := m.update(context.Background(), taskID, func(rec *Record, tx Tx) error {
		if err := checkTransition(rec, st.State); err != nil {
			return err
		}
		if err := m.grow(rec, tx, sizeOfStatus(&st)); err != nil {
			return err
		}
		m.apply(rec, tx, st, m.now())
		out = snapshot(rec, -1, true)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// grow reserves delta more bytes for rec's task, within MaxTaskBytes and
// the store's budget. It refuses with an *a2a.Error whose message says
// which.
func (m *Manager) grow(rec *Record, tx Tx, delta int64) error {
	if size := rec.Bytes + delta; size > m.maxTaskBytes {
		return tooLarge(size, m.maxTaskBytes)
	}
	return tx.Take(delta)
}

// tooLarge refuses what would make a task hold more than a task may.
func tooLarge(size, limit int64) *a2a.Error {
	return a2a.InvalidParams("params.message", fmt.Sprintf(
		"the task would hold about %d bytes in memory, over the limit of %d; send less data (fewer or smaller parts)",
		size, limit))
}

// checkTransition says whether rec's task may move to state: nil, or an
// error wrapping ErrTerminal or ErrTransition.
func checkTransition(rec *Record, to a2a.TaskState) error {
	from := rec.Task.Status.State
	if CanTransition(from, to) {
		return nil
	}
	cause := ErrTransition
	if from.Terminal() {
		cause = ErrTerminal
	}
	return fmt.Errorf("tasks: set status of task %s from %s to %s: %w", rec.Task.ID, from, to, cause)
}

// apply sets rec's status to st (a transition already checked), appends its
// message to the history as an agent message with its ids filled in, and
// publishes the change.
func (m *Manager) apply(rec *Record, tx Tx, st a2a.TaskStatus, now time.Time) {
	if st.Timestamp.IsZero() {
		st.Timestamp = now
	}
	if st.Message != nil {
		msg := *st.Message
		msg.Role = a2a.RoleAgent
		if msg.MessageID == "" {
			msg.MessageID = m.newID(MessageID)
		}
		msg.TaskID, msg.ContextID = rec.Task.ID, rec.Task.ContextID
		rec.Task.History = append(rec.Task.History, msg)
		// The status shares the history's copy instead of keeping another.
		st.Message = &rec.Task.History[len(rec.Task.History)-1]
	}
	rec.Task.Status = st
	rec.Updated = now
	if tx.Listening() {
		tx.Publish(a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{
			TaskID:    rec.Task.ID,
			ContextID: rec.Task.ContextID,
			Status:    st,
			Final:     st.State.Terminal() || st.State.Interrupted(),
		}})
	}
}

// AddArtifact adds art to a task that is not terminal, replacing an
// artifact with the same id, and publishes an artifact update. An empty
// ArtifactID is given a new one.
func (m *Manager) AddArtifact(taskID string, art a2a.Artifact) error {
	_, err := m.AddArtifactChunk(taskID, art, false, true)
	return err
}

// AddArtifactChunk adds one chunk of an artifact that a run produces piece
// by piece, and returns the artifact's id. The first chunk (appendParts
// false) is added as AddArtifact adds an artifact, given a new id when it
// has none; each later chunk names that id, and its parts are appended to
// the stored artifact's (its other fields are not kept). Subscribers get
// each chunk as it is, with Append and LastChunk, while the stored task
// holds the whole artifact, counted against the byte budgets like anything
// it holds: a chunk that does not fit is refused, and not published.
func (m *Manager) AddArtifactChunk(taskID string, art a2a.Artifact, appendParts, lastChunk bool) (string, error) {
	if art.ArtifactID == "" && !appendParts {
		art.ArtifactID = m.newID(ArtifactID) // here: the callback may run more than once
	}
	err := m.update(context.Background(), taskID, func(rec *Record, tx Tx) error {
		if state := rec.Task.Status.State; state.Terminal() {
			return fmt.Errorf("tasks: add artifact to task %s in state %s: %w", taskID, state, ErrTerminal)
		}
		if !appendParts {
			if err := m.grow(rec, tx, sizeOfStoredArtifact(&art)); err != nil {
				return err
			}
			m.putArtifact(rec, tx, art, m.now(), lastChunk)
			return nil
		}
		i := slices.IndexFunc(rec.Task.Artifacts, func(a a2a.Artifact) bool { return a.ArtifactID == art.ArtifactID })
		if i < 0 {
			return fmt.Errorf("tasks: append to artifact %q of task %s: no such artifact", art.ArtifactID, taskID)
		}
		if err := m.grow(rec, tx, sizeOfParts(art.Parts)); err != nil {
			return err
		}
		// Snapshots share the slice: change a copy. The parts grow in
		// place, past the length of every snapshot, which caps them.
		arts := append(rec.Task.Artifacts[:0:0], rec.Task.Artifacts...)
		arts[i].Parts = append(arts[i].Parts, art.Parts...)
		rec.Task.Artifacts = arts
		rec.Updated = m.now()
		m.publishArtifact(rec, tx, art, true, lastChunk)
		return nil
	})
	return art.ArtifactID, err
}

// putArtifact adds art to rec's task (not terminal), replacing an artifact
// with the same id and giving it one if it has none, and publishes it.
func (m *Manager) putArtifact(rec *Record, tx Tx, art a2a.Artifact, now time.Time, lastChunk bool) {
	if art.ArtifactID == "" {
		art.ArtifactID = m.newID(ArtifactID)
	}
	arts := rec.Task.Artifacts
	i := 0
	for i < len(arts) && arts[i].ArtifactID != art.ArtifactID {
		i++
	}
	if i < len(arts) {
		// Snapshots share the slice: replace in a copy.
		arts = append(arts[:0:0], arts...)
		arts[i] = art
	} else {
		arts = append(arts, art)
	}
	rec.Task.Artifacts = arts
	rec.Updated = now
	m.publishArtifact(rec, tx, art, false, lastChunk)
}

// publishArtifact publishes an artifact update, when someone listens.
func (m *Manager) publishArtifact(rec *Record, tx Tx, art a2a.Artifact, appendParts, lastChunk bool) {
	if tx.Listening() {
		tx.Publish(a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{
			TaskID:    rec.Task.ID,
			ContextID: rec.Task.ContextID,
			Artifact:  art,
			Append:    appendParts,
			LastChunk: lastChunk,
		}})
	}
}

// Get returns a snapshot of the caller's task, with its last historyLength
// messages (nil: all; 0: none).
func (m *Manager) Get(owner, taskID string, historyLength *int32) (*a2a.Task, error) {
	hl, err := historyLimit(historyLength)
	if err != nil {
		return nil, err
	}
	rec, err := m.store.Get(context.Background(), taskID)
	if err != nil {
		return nil, err
	}
	if rec.Owner != owner {
		return nil, a2a.TaskNotFound(taskID)
	}
	return snapshot(&rec, hl, true), nil
}

func (m *Manager) cancelTracked(taskID string, cause error) {
	m.trackMu.Lock()
	t, ok := m.tracked[taskID]
	m.trackMu.Unlock()
	if ok {
		t.cancel(cause)
	}
}

// Cancel moves the caller's task to canceled and publishes the final
// status update; its run, on whichever replica it runs, is canceled with
// cause ErrCanceled. A terminal task is TaskNotCancelable.
func (m *Manager) Cancel(owner, taskID string) (*a2a.Task, error) {
	var out *a2a.Task
	err := m.update(context.Background(), taskID, func(rec *Record, tx Tx) error {
		if rec.Owner != owner {
			return a2a.TaskNotFound(taskID)
		}
		if state := rec.Task.Status.State; state.Terminal() {
			return a2a.TaskNotCancelable(taskID, state)
		}
		m.apply(rec, tx, a2a.TaskStatus{State: a2a.TaskStateCanceled}, m.now())
		out = snapshot(rec, -1, true)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Subscribe returns a snapshot of the caller's task and a subscription to
// its events from that snapshot on, with no event lost or repeated in
// between. A terminal task is UnsupportedOperation. A subscription taken
// while the task is interrupted stays open until the next final event,
// after a follow-up message.
func (m *Manager) Subscribe(owner, taskID string) (*a2a.Task, *Subscription, error) {
	if m.drain.ended.Load() {
		return nil, nil, ShuttingDown("subscribe again")
	}
	rec, sub, err := m.store.Subscribe(context.Background(), taskID)
	switch {
	case err != nil:
		return nil, nil, err
	case rec.Owner != owner:
		sub.Close()
		return nil, nil, a2a.TaskNotFound(taskID)
	case rec.Task.Status.State.Terminal():
		sub.Close()
		return nil, nil, a2a.UnsupportedOperation(fmt.Sprintf("task is in terminal state %s", rec.Task.Status.State))
	}
	return snapshot(&rec, -1, true), sub, nil
}

// OpenStreams is how many subscriptions are open here: the streams being
// served right now.
func (m *Manager) OpenStreams() int { return m.store.OpenStreams() }

// Ready says why the store cannot serve now (see ReadyChecker), or
// returns nil.
func (m *Manager) Ready(ctx context.Context) error {
	if m.ready == nil {
		return nil
	}
	return m.ready.Ready(ctx)
}

// Stored is how many tasks the store holds (in a shared store: every
// replica's).
func (m *Manager) Stored(ctx context.Context) (int, error) { return m.store.Len(ctx) }

// MaxAge is how long a task is kept after its last update
// (Options.MaxAge).
func (m *Manager) MaxAge() time.Duration { return m.maxAge }

// MaxInputWait is how long a task waits for the input it asked for
// before it fails (Options.MaxInputWait).
func (m *Manager) MaxInputWait() time.Duration { return m.maxInputWait }

// NewID returns a new id of the given kind from the Manager's id source.
// The server gives it to what has no task: the context and message of a
// skill that answers with a message.
func (m *Manager) NewID(kind IDKind) string { return m.newID(kind) }

// randomID returns a random (version 4) UUID. Filling a uuid.UUID in place
// costs one allocation where uuid.NewString costs two.
func randomID(IDKind) string {
	var u uuid.UUID
	rand.Read(u[:])         // never fails: crypto/rand crashes the program instead
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return u.String()
}

// historyLimit validates a historyLength: -1 stands for "all".
func historyLimit(historyLength *int32) (int, error) {
	switch {
	case historyLength == nil:
		return -1, nil
	case *historyLength < 0:
		return 0, a2a.InvalidParams("params.historyLength",
			fmt.Sprintf("must be a non-negative integer, got %d", *historyLength))
	}
	return int(*historyLength), nil
}

// snapshot returns a copy of rec's task with its last historyLength
// messages (-1: all) and, if withArtifacts, its artifacts.
func snapshot(rec *Record, historyLength int, withArtifacts bool) *a2a.Task {
	t := new(a2a.Task)
	snapshotInto(t, rec, historyLength, withArtifacts)
	return t
}

func snapshotInto(t *a2a.Task, rec *Record, historyLength int, withArtifacts bool) {
	*t = rec.Task
	// Full slice expressions cap the copies, so that appending to them
	// never writes into the store's arrays.
	h := rec.Task.History
	switch {
	case historyLength == 0 || len(h) == 0:
		t.History = nil
	case historyLength > 0 && historyLength < len(h):
		t.History = h[len(h)-historyLength : len(h) : len(h)]
	default:
		t.History = h[:len(h):len(h)]
	}
	if a := rec.Task.Artifacts; withArtifacts && len(a) > 0 {
		t.Artifacts = capParts(a[:len(a):len(a)])
	} else {
		t.Artifacts = nil
	}
}

// capParts caps the parts of artifacts that grow in place (streamed ones,
// see AddArtifactChunk), in a copy, so that appending to a snapshot's
// parts never writes into the store's arrays.
func capParts(arts []a2a.Artifact) []a2a.Artifact {
	for i := range arts {
		if cap(arts[i].Parts) > len(arts[i].Parts) {
			out := append([]a2a.Artifact(nil), arts...)
			for j := range out {
				out[j].Parts = slices.Clip(out[j].Parts)
			}
			return out
		}
	}
	return arts
}
