package taskstest

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// clock is a fake clock that moves only when told to.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newManager returns a Manager on a fake clock with no janitor unless opts
// asks for one, closed when the test ends. Its store is opts.Store, or a
// new one from the factory within opts' limits.
func (s *suite) newManager(t testing.TB, opts tasks.Options) (*tasks.Manager, *clock) {
	t.Helper()
	c := newClock()
	if opts.Now == nil {
		opts.Now = c.Now
	}
	if opts.SweepInterval == 0 {
		opts.SweepInterval = -1
	}
	if opts.Store == nil {
		opts.Store = s.newStore(t, opts.StoreLimits())
	}
	m := tasks.NewManager(opts)
	t.Cleanup(m.Close)
	return m, c
}

var msgSeq struct {
	sync.Mutex
	n int
}

func userMsg(text string) a2a.Message {
	msgSeq.Lock()
	msgSeq.n++
	n := msgSeq.n
	msgSeq.Unlock()
	return a2a.Message{
		MessageID: "msg-" + strconv.Itoa(n),
		Role:      a2a.RoleUser,
		Parts:     []a2a.Part{a2a.TextPart(text)},
	}
}

func agentMsg(text string) *a2a.Message {
	m := userMsg(text)
	m.Role = a2a.RoleAgent
	return &m
}

// mustStart starts a task for msg, or the follow-up of the task it names.
func mustStart(t testing.TB, m *tasks.Manager, owner string, msg a2a.Message) *tasks.Run {
	t.Helper()
	run, err := m.Start(owner, msg, tasks.StartOptions{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return run
}

// mustCreate starts a new task and returns it, working.
func mustCreate(t testing.TB, m *tasks.Manager, owner string, msg a2a.Message) *a2a.Task {
	t.Helper()
	return mustStart(t, m, owner, msg).Task
}

// create starts a new task for msg.
func create(m *tasks.Manager, owner string, msg a2a.Message) (*a2a.Task, error) {
	run, err := m.Start(owner, msg, tasks.StartOptions{})
	if err != nil {
		return nil, err
	}
	return run.Task, nil
}

// followUp continues the interrupted task taskID with msg.
func followUp(m *tasks.Manager, owner, taskID string, msg a2a.Message) (*a2a.Task, error) {
	msg.TaskID = taskID
	return create(m, owner, msg)
}

func mustSetStatus(t testing.TB, m *tasks.Manager, id string, st a2a.TaskStatus) *a2a.Task {
	t.Helper()
	task, err := m.SetStatus(id, st)
	if err != nil {
		t.Fatalf("SetStatus(%s): %v", st.State, err)
	}
	return task
}

func mustGet(t testing.TB, m *tasks.Manager, owner, id string) *a2a.Task {
	t.Helper()
	task, err := m.Get(owner, id, nil)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return task
}

// a2aCode returns err's protocol error code, or 0 when err is not an
// *a2a.Error.
func a2aCode(err error) int {
	var e *a2a.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

func ptr[T any](v T) *T { return &v }

// recv returns the next event of sub, failing the test if none comes.
func recv(t testing.TB, sub *tasks.Subscription) a2a.StreamResponse {
	t.Helper()
	select {
	case ev, ok := <-sub.Events():
		if !ok {
			t.Fatalf("subscription closed (Err %v), want an event", sub.Err())
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return a2a.StreamResponse{}
}

// drain reads sub's events until its channel closes, and tells how many
// there were; closed is false when it stayed open for 10s. (A store may
// deliver events after the update that published them has returned.)
func drain(sub *tasks.Subscription) (n int, closed bool) {
	evs, closed := readAll(sub)
	return len(evs), closed
}

// readAll reads sub's events until its channel closes; closed is false
// when it stayed open for 10s, so that a store that never ends a stream
// fails a test instead of hanging it.
func readAll(sub *tasks.Subscription) (evs []a2a.StreamResponse, closed bool) {
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-sub.Events():
			if !ok {
				return evs, true
			}
			evs = append(evs, ev)
		case <-timeout:
			return evs, false
		}
	}
}
