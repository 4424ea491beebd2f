package taskstest

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// The Manager makes its Updates of one task one at a time, whatever makes
// them (a run's progress, its artifacts, push configs set and deleted), and
// with no pusher set too: a store counts on it to need no lock of its own
// (see tasks.Store).
func (s *suite) TestUpdatesOfOneTaskTakeTurns(t *testing.T) {
	store := newTurnWatch(s.newStore(t, tasks.Options{}.StoreLimits()))
	m, _ := s.newManager(t, tasks.Options{Store: store})
	task := mustCreate(t, m, "alice", userMsg("start"))
	cfg := tasks.PushConfig{URL: "https://a.test/hook", Version: a2a.V10}

	const writers, changes = 4, 24
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range changes {
				var err error
				switch i % 3 {
				case 0:
					_, err = m.SetStatus(task.ID, a2a.TaskStatus{State: a2a.TaskStateWorking, Message: agentMsg(fmt.Sprintf("%d-%d", w, i))})
				case 1:
					err = m.AddArtifact(task.ID, a2a.Artifact{Parts: []a2a.Part{a2a.TextPart("part")}})
				case 2:
					var c tasks.PushConfig
					if c, err = m.SetPushConfig("alice", task.ID, cfg); err == nil {
						err = m.DeletePushConfig("alice", task.ID, c.ID)
					}
				}
				if err != nil {
					t.Errorf("writer %d, change %d: %v", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if _, err := m.Cancel("alice", task.ID); err != nil {
		t.Fatal(err)
	}
	if n := store.overlaps(); n > 0 {
		t.Errorf("%d Updates of one task began while another was under way; want each in its turn", n)
	}
}

// turnWatch is a store that counts the Updates of a task that begin while
// another Update of it is under way. It yields before and after each, so
// that another change of the task would begin then, or be handed to the
// pusher first, were the Manager to let it.
type turnWatch struct {
	tasks.Store
	mu       sync.Mutex
	updating map[string]int // Updates under way, by task
	overlap  int
}

func newTurnWatch(store tasks.Store) *turnWatch {
	return &turnWatch{Store: store, updating: make(map[string]int)}
}

func (s *turnWatch) Update(ctx context.Context, id string, fn func(rec *tasks.Record, tx tasks.Tx) error) error {
	s.mu.Lock()
	s.updating[id]++
	if s.updating[id] > 1 {
		s.overlap++
	}
	s.mu.Unlock()
	runtime.Gosched()
	err := s.Store.Update(ctx, id, fn)
	s.mu.Lock()
	s.updating[id]--
	s.mu.Unlock()
	runtime.Gosched()
	return err
}

func (s *turnWatch) overlaps() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overlap
}

// With a pusher set, changes that writers make to one task at once reach
// it in the order the task holds them: the status messages of the notices
// are the task's history, in its order.
func (s *suite) TestPushOrderOfConcurrentChanges(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{Store: newTurnWatch(s.newStore(t, tasks.Options{}.StoreLimits()))})
	p := new(recordingPusher)
	m.SetPusher(p)
	cfg := tasks.PushConfig{URL: "https://a.test/hook", Version: a2a.V10}
	run, err := m.Start("alice", userMsg("start"), tasks.StartOptions{Push: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	p.taken() // the task as started

	const writers, changes = 4, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range changes {
				st := a2a.TaskStatus{State: a2a.TaskStateWorking, Message: agentMsg(fmt.Sprintf("%d-%d", w, i))}
				if _, err := m.SetStatus(run.Task.ID, st); err != nil {
					t.Errorf("writer %d, change %d: %v", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()

	var pushed, history []string
	for _, n := range p.taken() {
		pushed = append(pushed, n.task.Status.Message.Parts[0].Text)
	}
	for _, msg := range mustGet(t, m, "alice", run.Task.ID).History[1:] {
		history = append(history, msg.Parts[0].Text)
	}
	if len(history) != writers*changes || !slices.Equal(pushed, history) {
		t.Errorf("the notices' status messages:\n%v\nwant the task's history, in its order:\n%v", pushed, history)
	}
}
