package taskstest

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// recordingPusher keeps what a Manager hands to its pusher.
type recordingPusher struct {
	mu      sync.Mutex
	notices []pushed
}

type pushed struct {
	task    a2a.Task
	configs []tasks.PushConfig
	events  []a2a.StreamResponse
}

func (p *recordingPusher) Push(task *a2a.Task, configs []tasks.PushConfig, events []a2a.StreamResponse) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notices = append(p.notices, pushed{*task, append([]tasks.PushConfig(nil), configs...), append([]a2a.StreamResponse(nil), events...)})
}

func (p *recordingPusher) taken() []pushed {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.notices
	p.notices = nil
	return out
}

func (s *suite) TestPushConfigs(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{MaxPushConfigs: 2})
	task := mustCreate(t, m, "alice", userMsg("hello"))
	set := func(owner string, c tasks.PushConfig) (tasks.PushConfig, error) {
		return m.SetPushConfig(owner, task.ID, c)
	}

	a, err := set("alice", tasks.PushConfig{URL: "https://a.test/hook", Token: "t", AuthScheme: "Bearer", AuthCredentials: "secret", Version: a2a.V10})
	if err != nil || a.ID == "" {
		t.Fatalf("set: %+v, %v", a, err)
	}
	b, err := set("alice", tasks.PushConfig{ID: "b", URL: "https://b.test/hook", Version: a2a.V03})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := set("alice", tasks.PushConfig{ID: "c", URL: "https://c.test/"}); a2aCode(err) != a2a.CodeInvalidParams {
		t.Errorf("a third config, past the limit of 2: %v", err)
	}
	// The same id replaces.
	b.URL = "https://b.test/other"
	if _, err := set("alice", b); err != nil {
		t.Fatalf("replace: %v", err)
	}
	got, err := m.PushConfigs("alice", task.ID)
	if err != nil || !reflect.DeepEqual(got, []tasks.PushConfig{a, b}) {
		t.Fatalf("configs = %+v, %v; want %+v", got, err, []tasks.PushConfig{a, b})
	}
	if c, err := m.PushConfig("alice", task.ID, "b"); err != nil || c != b {
		t.Errorf("get b = %+v, %v", c, err)
	}
	if c, err := m.PushConfig("alice", task.ID, ""); err != nil || c != a {
		t.Errorf("get the first = %+v, %v", c, err)
	}
	if _, err := m.PushConfig("alice", task.ID, "nope"); a2aCode(err) != a2a.CodeTaskNotFound {
		t.Errorf("unknown config: %v", err)
	}

	// Another owner sees nothing and changes nothing.
	if _, err := m.PushConfigs("bob", task.ID); a2aCode(err) != a2a.CodeTaskNotFound {
		t.Errorf("bob lists: %v", err)
	}
	if _, err := set("bob", tasks.PushConfig{URL: "https://evil.test/"}); a2aCode(err) != a2a.CodeTaskNotFound {
		t.Errorf("bob sets: %v", err)
	}
	if err := m.DeletePushConfig("bob", task.ID, a.ID); a2aCode(err) != a2a.CodeTaskNotFound {
		t.Errorf("bob deletes: %v", err)
	}

	// Delete is idempotent.
	for range 2 {
		if err := m.DeletePushConfig("alice", task.ID, a.ID); err != nil {
			t.Fatalf("delete: %v", err)
		}
	}
	if got, _ := m.PushConfigs("alice", task.ID); !reflect.DeepEqual(got, []tasks.PushConfig{b}) {
		t.Errorf("after delete: %+v", got)
	}
}

// A task that has ended takes push configs as one that runs does, in
// every terminal state: they are read, listed and deleted, bounded in
// number, and their bytes count in the store's budget like the task's
// own; the pusher is handed nothing, since the task changes no more.
func (s *suite) TestPushConfigsOnEndedTasks(t *testing.T) {
	opts := tasks.Options{MaxPushConfigs: 2}
	store := s.newStore(t, opts.StoreLimits())
	opts.Store = store
	m, _ := s.newManager(t, opts)
	p := new(recordingPusher)
	m.SetPusher(p)
	end := map[a2a.TaskState]func(id string) error{
		a2a.TaskStateCanceled: func(id string) error { _, err := m.Cancel("alice", id); return err },
	}
	for _, state := range []a2a.TaskState{a2a.TaskStateCompleted, a2a.TaskStateFailed, a2a.TaskStateCanceled, a2a.TaskStateRejected} {
		t.Run(state.String(), func(t *testing.T) {
			task := mustCreate(t, m, "alice", userMsg("hello"))
			if fn := end[state]; fn != nil {
				if err := fn(task.ID); err != nil {
					t.Fatal(err)
				}
			} else {
				mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: state})
			}
			before := storedBytes(t, store, "alice")
			url := "https://a.test/" + strings.Repeat("x", 1000)
			a, err := m.SetPushConfig("alice", task.ID, tasks.PushConfig{URL: url, Version: a2a.V10})
			if err != nil || a.ID == "" {
				t.Fatalf("set on a %s task: %+v, %v", state, a, err)
			}
			if grown := storedBytes(t, store, "alice") - before; grown < int64(len(url)) {
				t.Errorf("the task's bytes grew by %d for a config of a %d-byte URL", grown, len(url))
			}
			b, err := m.SetPushConfig("alice", task.ID, tasks.PushConfig{ID: "b", URL: "https://b.test/", Version: a2a.V03})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.SetPushConfig("alice", task.ID, tasks.PushConfig{URL: "https://c.test/"}); a2aCode(err) != a2a.CodeInvalidParams {
				t.Errorf("a third config, past the limit of 2: %v", err)
			}
			if c, err := m.PushConfig("alice", task.ID, a.ID); err != nil || c != a {
				t.Errorf("get = %+v, %v; want %+v", c, err, a)
			}
			if got, err := m.PushConfigs("alice", task.ID); err != nil || !reflect.DeepEqual(got, []tasks.PushConfig{a, b}) {
				t.Errorf("list = %+v, %v", got, err)
			}
			for _, id := range []string{a.ID, b.ID} {
				if err := m.DeletePushConfig("alice", task.ID, id); err != nil {
					t.Fatalf("delete %s: %v", id, err)
				}
			}
			if got, err := m.PushConfigs("alice", task.ID); err != nil || len(got) != 0 {
				t.Errorf("after deleting both: %+v, %v", got, err)
			}
			if after := storedBytes(t, store, "alice"); after != before {
				t.Errorf("after deleting both configs the task holds %d bytes, %d before", after, before)
			}
			if got := mustGet(t, m, "alice", task.ID).Status.State; got != state {
				t.Errorf("the task is %s, want %s still", got, state)
			}
			if got := p.taken(); len(got) != 0 {
				t.Errorf("notices for the configs of an ended task: %+v", got)
			}
		})
	}
}

// Deleting a push config gives its bytes back: with the owner's share
// full, a config deleted from one task makes room for one as large on
// another.
func (s *suite) TestPushConfigBytesGivenBack(t *testing.T) {
	const kb = 1 << 10
	opts := tasks.Options{MaxLiveBytesPerOwner: 16 * kb, MaxTaskBytes: 12 * kb}
	m, _ := s.newManager(t, opts)
	first, second := mustCreate(t, m, "alice", userMsg("first")), mustCreate(t, m, "alice", userMsg("second"))
	large := tasks.PushConfig{URL: "https://a.test/" + strings.Repeat("x", 8*kb), Version: a2a.V10}

	c, err := m.SetPushConfig("alice", first.ID, large)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.SetPushConfig("alice", second.ID, large); !refused(err, opts.StoreLimits(), tasks.OwnerBytes) {
		t.Fatalf("a second large config past the owner's share: err = %#v, want %#v", err, opts.StoreLimits().Refusal(tasks.OwnerBytes))
	}
	if err := m.DeletePushConfig("alice", first.ID, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.SetPushConfig("alice", second.ID, large); err != nil {
		t.Errorf("the deleted config's bytes were not given back: %v", err)
	}
}

func (s *suite) TestPushNotices(t *testing.T) {
	m, clk := s.newManager(t, tasks.Options{})
	p := new(recordingPusher)
	m.SetPusher(p)
	cfg := tasks.PushConfig{URL: "https://a.test/hook", Version: a2a.V10}

	// A config given with the message: the task first, then each change.
	run, err := m.Start("alice", userMsg("hi"), tasks.StartOptions{Push: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Working(&a2a.Message{Parts: []a2a.Part{a2a.TextPart("on it")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Finish(a2a.TaskStatus{State: a2a.TaskStateInputRequired}, []a2a.Artifact{{Parts: []a2a.Part{a2a.TextPart("half")}}}); err != nil {
		t.Fatal(err)
	}
	got := p.taken()
	if len(got) != 3 {
		t.Fatalf("%d notices, want 3: %+v", len(got), got)
	}
	if got[0].events[0].Task == nil || got[0].configs[0].ID == "" || got[0].configs[0].URL != cfg.URL {
		t.Errorf("first notice: %+v", got[0])
	}
	if ev := got[1].events; len(ev) != 1 || ev[0].StatusUpdate == nil || ev[0].StatusUpdate.Status.State != a2a.TaskStateWorking {
		t.Errorf("working notice: %+v", ev)
	}
	if ev := got[2].events; len(ev) != 2 || ev[0].ArtifactUpdate == nil || ev[1].StatusUpdate == nil ||
		got[2].task.Status.State != a2a.TaskStateInputRequired || len(got[2].task.Artifacts) != 1 {
		t.Errorf("finish notice: %+v", got[2])
	}

	// A task without configs is not handed over; a config set later is.
	plain := mustCreate(t, m, "alice", userMsg("plain"))
	mustSetStatus(t, m, plain.ID, a2a.TaskStatus{State: a2a.TaskStateWorking})
	if got := p.taken(); len(got) != 0 {
		t.Errorf("notices of a task without configs: %+v", got)
	}
	if _, err := m.SetPushConfig("alice", plain.ID, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Cancel("alice", plain.ID); err != nil {
		t.Fatal(err)
	}
	if got := p.taken(); len(got) != 1 || got[0].task.Status.State != a2a.TaskStateCanceled {
		t.Errorf("cancel notice: %+v", got)
	}

	// Expiry is a change too.
	if _, err := m.SetPushConfig("alice", run.Task.ID, cfg); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour + time.Minute)
	mustCreate(t, m, "alice", userMsg("sweeps")) // a new task sweeps
	if got := p.taken(); len(got) != 1 || got[0].task.ID != run.Task.ID || got[0].task.Status.State != a2a.TaskStateFailed {
		t.Errorf("expiry notice: %+v", got)
	}

	// A config unloaded after its successor was loaded leaves the
	// successor's pusher in place.
	successor := new(recordingPusher)
	m.SetPusher(successor)
	m.ClearPusher(p)
	other := mustCreate(t, m, "alice", userMsg("reloaded"))
	if _, err := m.SetPushConfig("alice", other.ID, cfg); err != nil {
		t.Fatal(err)
	}
	mustSetStatus(t, m, other.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted})
	if got := successor.taken(); len(got) != 1 || len(p.taken()) != 0 {
		t.Errorf("after a reload: the successor got %+v", got)
	}

	// Cleared, nothing more is handed over.
	m.ClearPusher(successor)
	task := mustCreate(t, m, "alice", userMsg("later"))
	if _, err := m.SetPushConfig("alice", task.ID, cfg); err != nil {
		t.Fatal(err)
	}
	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted})
	if got := p.taken(); len(got) != 0 {
		t.Errorf("notices after ClearPusher: %+v", got)
	}
}

// An expiry is pushed once, by the replica that made it. Two replicas
// sweep the same task past MaxAge; the first to call expire is held until
// the other has expired the task and the first has heard of the end (it
// runs the task, so the end stops its run): the store then drops the
// first one's attempt, and that replica pushes nothing. A store that
// replicas cannot share has the two Managers sweep it in turn.
func (s *suite) TestPushExpiryOnce(t *testing.T) {
	opts := tasks.Options{MaxAge: time.Hour}
	stores := s.newReplicas(t, opts.StoreLimits(), 2)
	first := &interleavedSweep{Store: stores[0]}
	clk := newClock()
	replica := func(store tasks.Store) (*tasks.Manager, *recordingPusher) {
		o := opts
		o.Store, o.Now = store, clk.Now
		m, _ := s.newManager(t, o)
		p := new(recordingPusher)
		m.SetPusher(p)
		return m, p
	}
	a, pushedA := replica(first)
	b, pushedB := replica(stores[1])

	cfg := tasks.PushConfig{URL: "https://a.test/hook", Version: a2a.V10}
	// Subscribed, as a streaming call is: so this replica hears the store's
	// events, ends included, from the start.
	run, err := a.Start("alice", userMsg("slow"), tasks.StartOptions{Push: &cfg, Subscribe: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(run.Subscription.Close)
	pushedA.taken() // the task as started
	clk.Advance(time.Hour + time.Minute)
	if stores[0] != stores[1] {
		first.meanwhile = func() {
			if _, err := create(b, "bob", userMsg("sweeps")); err != nil {
				t.Errorf("the other replica's Start: %v", err)
			}
			select {
			case <-run.Context().Done():
			case <-time.After(10 * time.Second):
				t.Error("the run did not hear of its task's end within 10s")
			}
		}
	}
	mustCreate(t, a, "alice", userMsg("sweeps"))
	mustCreate(t, b, "bob", userMsg("sweeps too"))

	got := append(pushedA.taken(), pushedB.taken()...)
	if len(got) != 1 || got[0].task.ID != run.Task.ID || got[0].task.Status.State != a2a.TaskStateFailed {
		var seen []string
		for _, n := range got {
			seen = append(seen, fmt.Sprintf("%s %s (status message %s)", n.task.ID, n.task.Status.State, n.task.Status.Message.MessageID))
		}
		t.Errorf("notices %v, want the expiry of %s once", seen, run.Task.ID)
	}
	if st := mustGet(t, a, "alice", run.Task.ID).Status.State; st != a2a.TaskStateFailed {
		t.Errorf("the task is %s, want failed", st)
	}
}

// interleavedSweep is a store whose Sweep, after its first call of
// expire, runs meanwhile (when set): what another replica does while this
// one's attempt is under way.
type interleavedSweep struct {
	tasks.Store
	once      sync.Once
	meanwhile func()
}

func (s *interleavedSweep) Sweep(ctx context.Context, now time.Time, expire func(*tasks.Record, tasks.Tx, tasks.Expiry)) error {
	return s.Store.Sweep(ctx, now, func(rec *tasks.Record, tx tasks.Tx, why tasks.Expiry) {
		expire(rec, tx, why)
		if s.meanwhile != nil {
			s.once.Do(s.meanwhile)
		}
	})
}
