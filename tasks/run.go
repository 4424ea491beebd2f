package tasks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// errRunFinished is the cause given to a run's context when its outcome is
// recorded, so that work still holding it stops.
var errRunFinished = errors.New("tasks: run finished")

// StartOptions shape the task a Start begins.
type StartOptions struct {
	// Metadata is a new task's metadata (the server keeps the task's skill
	// there); a continued task keeps its own. The task holds the map as it
	// is, never writing to it, so that tasks may share one.
	Metadata map[string]any
	// Subscribe opens a subscription to the task's events from the
	// returned snapshot on, in the same transaction.
	Subscribe bool
	// Quota is whose share of the store a new task counts against while
	// it is live (see Record.Quota); "" for its owner's.
	Quota string
	// Push, when set, registers a push notification config on the task
	// (see SetPushConfig); a config without an id gets a new one.
	Push *PushConfig
}

// Run is one turn of work on a task, from Start to Finish: the snapshot it
// started from, and a context that CancelTask and expiry cancel. The
// context is detached from any caller's connection, so a client that hangs
// up does not stop the work.
type Run struct {
	// Task is the task as started: working, the message last in its
	// history.
	Task *a2a.Task
	// Subscription carries the task's events when StartOptions.Subscribe
	// asked for it; the caller closes it.
	Subscription *Subscription
	// Unfollowed, when StartOptions.Subscribe asked for a subscription,
	// says why there is none: the store failed (it is unavailable) once
	// the task was stored. The run holds the task all the same and must be
	// run and finished as any other, so that nothing waits for a lease
	// nobody renews; the caller is told Unfollowed, which names the task.
	Unfollowed *a2a.Error
	// Resent says that the message was sent before (see resend.go): no
	// run started, Task is the task the message made as it is now, and
	// Subscription (whatever StartOptions asked) carries its events while
	// it has not settled, nil once it is terminal or interrupted. A resent
	// run is neither finished nor abandoned; the caller closes its
	// subscription.
	Resent bool

	m      *Manager
	ctx    context.Context
	cancel context.CancelCauseFunc
	// taskID and seq name the run's registration in Manager.tracked.
	taskID string
	seq    uint64
}

// Start begins a turn of work in one store transaction: a message that
// names no task makes a new one (a new id, the message's contextId or a new
// one, the given metadata); a message that names a task continues that
// task, which must be the caller's and interrupted (input-required or
// auth-required). Either way the message joins the history and the task is
// working. An unknown task, or another owner's, is TaskNotFound; a terminal
// one UnsupportedOperation; a contextId other than the task's
// InvalidParams. A draining Manager refuses (see Drain). The Run must end
// with Finish (or Abandon), unless it is Resent: a message the caller sent
// before starts nothing, and a message id sent before with other content
// is InvalidParams.
func (m *Manager) Start(owner string, msg a2a.Message, opts StartOptions) (*Run, error) {
	run := &Run{m: m}
	run.ctx, run.cancel = context.WithCancelCause(context.Background())
	var err error
	if msg.TaskID == "" {
		err = m.startNew(run, owner, msg, opts)
	} else {
		err = m.startFollowUp(run, owner, msg, opts)
	}
	if err != nil {
		run.cancel(err)
		return nil, err
	}
	return run, nil
}

func (m *Manager) startNew(run *Run, owner string, msg a2a.Message, opts StartOptions) error {
	ctx := context.Background()
	now := m.now()
	if err := m.sweep(ctx, now); err != nil {
		return err
	}
	sent := msg
	msg.TaskID = m.newID(TaskID)
	if msg.ContextID == "" {
		msg.ContextID = m.newID(ContextID)
	}
	rec := Record{
		Owner:   owner,
		Quota:   opts.Quota,
		Updated: now,
		Bytes:   sizeOfNewTask(&msg, opts.Metadata),
		Task: a2a.Task{
			ID:        msg.TaskID,
			ContextID: msg.ContextID,
			Status:    a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: now},
			History:   []a2a.Message{msg},
			Metadata:  opts.Metadata,
		},
	}
	if opts.Push != nil {
		c := m.withPushID(*opts.Push)
		rec.Push = []PushConfig{c}
		rec.Bytes += sizeOfPushConfig(&c)
	}
	if rec.Bytes > m.maxTaskBytes {
		return tooLarge(rec.Bytes, m.maxTaskBytes)
	}
	// Tracked before the task can be seen, so that no cancellation falls
	// in between.
	if err := m.track(run, rec.Task.ID); err != nil {
		return err
	}
	if err := m.store.Insert(ctx, rec); err != nil {
		m.untrack(run)
		if resent, ok := errors.AsType[*Resent](err); ok {
			if resent.Dropped {
				return droppedMessage(sent.MessageID, resent.TaskID)
			}
			return m.resend(run, owner, &sent, resent.TaskID)
		}
		if storeUnavailable(err) {
			return insertUnknown(rec.Task.ID)
		}
		return err
	}
	if pp := m.pusher.Load(); pp != nil && rec.Push != nil {
		// The receiver hears of the task first, as a stream does.
		task := snapshot(&rec, -1, true)
		(*pp).Push(task, rec.Push, []a2a.StreamResponse{{Task: task}})
	}
	return m.started(ctx, run, &rec, opts)
}

// started sets the run's snapshot, and opens its subscription when asked:
// from a snapshot taken with it, so that no event is lost.
func (m *Manager) started(ctx context.Context, run *Run, rec *Record, opts StartOptions) error {
	if opts.Subscribe {
		latest, sub, err := m.store.Subscribe(ctx, rec.Task.ID)
		switch {
		case err == nil:
			rec, run.Subscription = &latest, sub
		case storeUnavailable(err):
			// The task is stored, and this run holds it: it runs unfollowed.
			run.Unfollowed = unfollowed(rec.Task.ID)
		default:
			m.untrack(run)
			return err
		}
	}
	run.Task = snapshot(rec, -1, true)
	return nil
}

func (m *Manager) startFollowUp(run *Run, owner string, msg a2a.Message, opts StartOptions) error {
	ctx, taskID := context.Background(), msg.TaskID
	if err := m.track(run, taskID); err != nil { // before the task can go on, as for a new one
		return err
	}
	var started Record
	err := m.update(ctx, taskID, func(rec *Record, tx Tx) error {
		if rec.Owner != owner {
			return a2a.TaskNotFound(taskID)
		}
		if m.resends && sentIndex(rec.Task.History, msg.MessageID) >= 0 &&
			remembered(!rec.Task.Status.State.Terminal(), rec.Updated, m.now(), m.resendWindow) {
			return errSentBefore
		}
		if msg.ContextID != "" && msg.ContextID != rec.Task.ContextID {
			return a2a.InvalidParams("params.message.contextId", "does not match the context of the task")
		}
		switch state := rec.Task.Status.State; {
		case state.Terminal():
			return a2a.UnsupportedOperation(fmt.Sprintf("task is in terminal state %s", state))
		case !state.Interrupted():
			return a2a.UnsupportedOperation(fmt.Sprintf(
				"task is %s: only an input-required or auth-required task takes a follow-up message", state))
		}
		if len(rec.Task.History)+messagesPerTurn > m.maxHistory {
			return a2a.InvalidParams("params.message.taskId", fmt.Sprintf(
				"the task holds %d messages and may hold %d; start a new task (referenceTaskIds may name this one), and cancel this one to free its place",
				len(rec.Task.History), m.maxHistory))
		}
		grow := sizeOfStoredMessage(&msg)
		if opts.Push != nil {
			configs, delta, err := m.withPushConfig(rec.Push, m.withPushID(*opts.Push))
			if err != nil {
				return err
			}
			rec.Push, grow = configs, grow+delta
		}
		if err := m.grow(rec, tx, grow); err != nil {
			return err
		}
		msg.ContextID = rec.Task.ContextID
		rec.Task.History = append(rec.Task.History, msg)
		m.apply(rec, tx, a2a.TaskStatus{State: a2a.TaskStateWorking}, m.now())
		started = *rec
		return nil
	})
	if err != nil {
		m.untrack(run)
		if errors.Is(err, errSentBefore) {
			return m.resend(run, owner, &msg, taskID)
		}
		return err
	}
	return m.started(ctx, run, &started, opts)
}

// Context is the run's context: canceled with cause ErrCanceled by
// CancelTask, ErrExpired by expiry, and when the run ends.
func (r *Run) Context() context.Context { return r.ctx }

// Working records a progress message: the task stays working, the message
// joins the history and subscribers see a status update.
func (r *Run) Working(msg *a2a.Message) error {
	_, err := r.m.SetStatus(r.taskID, a2a.TaskStatus{State: a2a.TaskStateWorking, Message: msg})
	return err
}

// Artifact adds an artifact, or a chunk of one, as the run produces it,
// and returns its id (see Manager.AddArtifactChunk).
func (r *Run) Artifact(art a2a.Artifact, appendParts, lastChunk bool) (string, error) {
	return r.m.AddArtifactChunk(r.taskID, art, appendParts, lastChunk)
}

// Finish records the run's outcome in one store transaction: the
// artifacts, then the status st (its message joins the history), each
// published to subscribers; it returns the task as finished. An outcome
// that does not fit the task's or the store's byte budget fails the task
// instead, with a message that says so. A task that moved on meanwhile
// (canceled, expired) is left unchanged: the error wraps ErrTerminal.
// Either way the run ends: its context is canceled and it is no longer
// tracked.
//
// When the store fails (it is unavailable: the outcome may or may not be
// stored), Finish answers OutcomeUnknown and keeps trying in the
// background, the run still tracked (its lease renewed), for as long as
// the lease lasts, so that the outcome is not lost to a store that
// recovers, and the message sent again finds it (see keepRecording).
func (r *Run) Finish(st a2a.TaskStatus, artifacts []a2a.Artifact) (*a2a.Task, error) {
	task, err := r.record(st, artifacts)
	if err != nil && storeUnavailable(err) {
		go r.keepRecording(st, artifacts)
		return nil, OutcomeUnknown(r.taskID)
	}
	r.Abandon(errRunFinished)
	return task, err
}

// Pauses between keepRecording's attempts: growing, so that a store that
// recovers is not met by every stalled outcome at once.
const (
	firstRecordRetry = 50 * time.Millisecond
	maxRecordRetry   = 2 * time.Second
)

// keepRecording tries again to store an outcome the store failed to take,
// with growing pauses, until it is stored, the task moved on, a drain's
// deadline passes or the Manager closes, or the run's lease would have run
// out: from then on another replica may fail the task, its runner looking
// dead. Then the run ends.
func (r *Run) keepRecording(st a2a.TaskStatus, artifacts []a2a.Artifact) {
	defer r.Abandon(errRunFinished)
	giveUp := time.Now().Add(r.m.leaseTTL)
	pause := firstRecordRetry
	timer := time.NewTimer(pause)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
		case <-r.m.drain.stopping.Done():
			return
		case <-r.m.drain.hurry:
			return
		}
		if _, err := r.record(st, artifacts); err == nil || !storeUnavailable(err) || time.Now().After(giveUp) {
			return
		}
		pause = min(2*pause, maxRecordRetry)
		timer.Reset(pause)
	}
}

// record stores the run's outcome, as Finish says, in one store
// transaction.
func (r *Run) record(st a2a.TaskStatus, artifacts []a2a.Artifact) (*a2a.Task, error) {
	m, taskID := r.m, r.taskID
	var out *a2a.Task
	err := m.update(context.Background(), taskID, func(rec *Record, tx Tx) error {
		if err := checkTransition(rec, st.State); err != nil {
			return err
		}
		now := m.now()
		status := st // st itself is captured by value: one allocation less
		size := sizeOfStatus(&status)
		for i := range artifacts {
			size += sizeOfStoredArtifact(&artifacts[i])
		}
		if err := m.grow(rec, tx, size); err != nil {
			var refusal *a2a.Error
			if !errors.As(err, &refusal) {
				return err
			}
			// The failure's own message is small and not counted.
			m.apply(rec, tx, a2a.TaskStatus{State: a2a.TaskStateFailed, Message: &a2a.Message{Parts: []a2a.Part{a2a.TextPart(
				"The result is too large to keep: " + cmp.Or(refusal.Description, refusal.Message))}}}, now)
			out = snapshot(rec, -1, true)
			return nil
		}
		for _, art := range artifacts {
			m.putArtifact(rec, tx, art, now, true)
		}
		m.apply(rec, tx, st, now)
		out = snapshot(rec, -1, true)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Abandon ends the run without an outcome: its context is canceled with
// cause and it is no longer tracked. The task keeps its state (expiry ends
// a task left working). Abandon after Finish does nothing.
func (r *Run) Abandon(cause error) {
	r.m.untrack(r)
	r.cancel(cause)
}

// track registers run as the work of taskID, replacing an earlier run's
// registration, so that Cancel and expiry reach its context. A draining
// Manager starts no run.
func (m *Manager) track(run *Run, taskID string) error {
	m.trackMu.Lock()
	defer m.trackMu.Unlock()
	if m.drain.started.Load() {
		return ShuttingDown("send the message again")
	}
	m.trackSeq++
	run.taskID, run.seq = taskID, m.trackSeq
	m.tracked[taskID] = tracked{cancel: run.cancel, seq: run.seq}
	return nil
}

func (m *Manager) untrack(run *Run) {
	m.trackMu.Lock()
	if t, ok := m.tracked[run.taskID]; ok && t.seq == run.seq {
		delete(m.tracked, run.taskID)
		m.drain.untracked(len(m.tracked))
	}
	m.trackMu.Unlock()
}
