package tasks

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// ErrShutdown is the Err of a subscription that Drain ended, and the cause
// given to the runs it stopped and to Stopping.
var ErrShutdown = errors.New("tasks: the agent is shutting down")

// StoppedText is the status message of a task whose run ended because the
// agent stopped: drained past its deadline, or on a replica that died. Its
// advice is A2A's; a binding whose clients send no messages (MCP) words
// its own.
const StoppedText = "The agent stopped while this task ran, so whether its work was done is unknown; to try again, send a new message (a new messageId)."

// drainState is a Manager's way out of a process that exits.
type drainState struct {
	started atomic.Bool // Start refuses; set under trackMu
	ended   atomic.Bool // the deadline passed: Subscribe refuses
	once    sync.Once
	// idle is closed when no run is tracked any more (under trackMu).
	idle chan struct{}
	// hurry is closed by Close: a drain under way stops waiting.
	hurry     chan struct{}
	hurryOnce sync.Once
	// stopping is canceled with ErrShutdown when the drain's deadline passes.
	stopping context.Context
	stop     context.CancelCauseFunc
}

func (d *drainState) init() {
	d.idle, d.hurry = make(chan struct{}), make(chan struct{})
	d.stopping, d.stop = context.WithCancelCause(context.Background())
}

// untracked notes that a run ended, leaving n tracked. trackMu must be held.
func (d *drainState) untracked(n int) {
	if n == 0 && d.started.Load() {
		select {
		case <-d.idle:
		default:
			close(d.idle)
		}
	}
}

// ShuttingDown is what a request that needs the agent past its drain is
// told (-32603, reason UNAVAILABLE): the agent is going away, and another
// replica, or this one once it is back, takes the request; what says how.
// Nothing has run for it (SkillRan "false").
func ShuttingDown(what string) *a2a.Error {
	e := a2a.InternalError("the agent is shutting down; " + what + " (another replica, or this agent once restarted, takes it)")
	e.Reason = "UNAVAILABLE"
	e.Metadata = map[string]string{SkillRan: "false"}
	return e
}

// Drain takes the Manager out of service, for a process that exits:
//
//   - at once, Start refuses new tasks and follow-up messages with an
//     *a2a.Error (-32603, reason UNAVAILABLE) that asks to send again;
//   - the runs under way get until ctx is done to finish as usual;
//   - those still running then end failed, with a status message saying the
//     agent stopped, stored like any outcome (with a shared store another
//     replica serves them from then on, and what a slow store cannot take
//     within storeWait its leases fail later) and published to their
//     streams; their contexts are canceled with cause ErrShutdown, as is
//     Stopping;
//   - last, every stream still open here ends with Err ErrShutdown (see
//     FinalStatus), and Subscribe refuses.
//
// Drain returns when all that is done. It runs once: later calls wait for
// the first. Close during a Drain ends the wait at once.
func (m *Manager) Drain(ctx context.Context) {
	m.BeginDrain()
	m.drain.once.Do(func() { m.runDrain(ctx) })
}

// BeginDrain is Drain's first step alone: from its return on, Start
// refuses. A caller that runs Drain in the background and must know that
// the refusal is in place calls it first.
func (m *Manager) BeginDrain() {
	m.trackMu.Lock()
	m.drain.started.Store(true)
	m.drain.untracked(len(m.tracked))
	m.trackMu.Unlock()
}

// Draining reports whether Drain has begun.
func (m *Manager) Draining() bool { return m.drain.started.Load() }

// Stopping is canceled with cause ErrShutdown when a drain's deadline
// passes: work that is not a tracked run (a skill that answers with a
// message) stops with it.
func (m *Manager) Stopping() context.Context { return m.drain.stopping }

func (m *Manager) runDrain(ctx context.Context) {
	d := &m.drain
	select {
	case <-d.idle:
	case <-ctx.Done():
	case <-d.hurry:
	}

	m.trackMu.Lock()
	ids := make([]string, 0, len(m.tracked))
	for id := range m.tracked {
		ids = append(ids, id)
	}
	m.trackMu.Unlock()
	storing, cancel := context.WithTimeout(context.Background(), storeWait)
	defer cancel()
	for _, id := range ids {
		if storing.Err() != nil {
			break // a shared store that is this slow: its leases fail the rest
		}
		m.failStopped(storing, id)
	}
	d.ended.Store(true)
	d.stop(ErrShutdown)
	m.store.EndStreams(ErrShutdown)
}

// storeWait bounds how long a drain past its deadline spends storing the
// tasks it fails, so that the process exits in time even when a shared
// store is slow or gone; the leases of the tasks it could not store run
// out, and another replica fails them.
const storeWait = 2 * time.Second

// failStopped ends a task whose run outlived the drain. A task that
// finished meanwhile is left as it is.
func (m *Manager) failStopped(ctx context.Context, taskID string) {
	msg := a2a.Message{Parts: []a2a.Part{a2a.TextPart(StoppedText)}}
	_ = m.update(ctx, taskID, func(rec *Record, tx Tx) error {
		if err := checkTransition(rec, a2a.TaskStateFailed); err != nil {
			return err
		}
		m.apply(rec, tx, a2a.TaskStatus{State: a2a.TaskStateFailed, Message: &msg}, m.now())
		return nil
	}) // a shared store that cannot be reached logs it; its leases then fail the task
}

// hurryDrain makes a Drain under way stop waiting for its runs, and waits
// for it to end.
func (m *Manager) hurryDrain() {
	if !m.drain.started.Load() {
		return
	}
	m.drain.hurryOnce.Do(func() { close(m.drain.hurry) })
	// Waits for the drain under way, or runs it, without waiting.
	m.drain.once.Do(func() { m.runDrain(context.Background()) })
}

// FinalStatus is what a stream that Drain ended (Err ErrShutdown) tells its
// client last: the final status update of its task when the task has
// ended. The drain stored that status before ending the stream, but with a
// shared store its event, which travels through the store, may not have
// arrived. Nil while the task is live (it waits for input, or runs on
// another replica): the client then subscribes again.
func (m *Manager) FinalStatus(sub *Subscription) *a2a.StreamResponse {
	rec, err := m.store.Get(context.Background(), sub.taskID)
	if err != nil || !rec.Task.Status.State.Terminal() {
		return nil
	}
	return &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{
		TaskID: rec.Task.ID, ContextID: rec.Task.ContextID, Status: rec.Task.Status, Final: true}}
}
