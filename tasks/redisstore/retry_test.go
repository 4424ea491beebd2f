package redisstore_test

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/internal/redistest"
	"github.com/caddy-a2a/caddy-a2a/tasks"
	"github.com/caddy-a2a/caddy-a2a/tasks/redisstore"
)

// answerCutter forwards connections to Redis; once armed, it lets the next
// script through but closes the connection instead of passing on Redis's
// answer, as a failover or a reset connection does after Redis ran it.
type answerCutter struct {
	to    string
	armed atomic.Bool
}

func (p *answerCutter) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *answerCutter) forward(client net.Conn) {
	redisConn, err := net.Dial("tcp", p.to)
	if err != nil {
		client.Close()
		return
	}
	var once sync.Once
	closeBoth := func() { once.Do(func() { client.Close(); redisConn.Close() }) }
	var cut atomic.Bool
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				if bytes.Contains(bytes.ToLower(buf[:n]), []byte("evalsha")) && p.armed.CompareAndSwap(true, false) {
					cut.Store(true)
				}
				redisConn.Write(buf[:n])
			}
			if err != nil {
				closeBoth()
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := redisConn.Read(buf)
		if n > 0 && cut.Load() {
			closeBoth() // Redis ran the script; the client never hears
			return
		}
		if n > 0 {
			client.Write(buf[:n])
		}
		if err != nil {
			closeBoth()
			return
		}
	}
}

// replicaBehindCutter is a replica whose connections to Redis pass through
// an answerCutter, disarmed.
func replicaBehindCutter(t *testing.T, srv *redistest.Server, prefix string) (*tasks.Manager, *answerCutter) {
	t.Helper()
	addr, cutter := cutterFor(t, srv)
	return replicaAt(t, addr, prefix, tasks.Options{}), cutter
}

// cutterFor starts an answerCutter, disarmed, in front of srv, and returns
// its address.
func cutterFor(t *testing.T, srv *redistest.Server) (string, *answerCutter) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	cutter := &answerCutter{to: srv.Addr()}
	go cutter.serve(ln)
	return ln.Addr().String(), cutter
}

// go-redis sends a command again when its answer is lost. A script that
// ran already then finds its own write and answers as the first run did:
// a change is made once, and a new task stored once and reported stored.
func TestLostAnswerChangesOnce(t *testing.T) {
	m, cutter := replicaBehindCutter(t, redistest.Start(t), "cut")

	run, err := m.Start("alice", userMsg("go"), tasks.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Working(agentMsg("step one")); err != nil {
		t.Fatal(err)
	}
	cutter.armed.Store(true)
	if err := run.Working(agentMsg("step two")); err != nil {
		t.Fatalf("a change whose first answer was lost: %v", err)
	}
	task, err := m.Get("alice", run.Task.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(task.History); n != 3 {
		t.Errorf("the history holds %d messages, want the question and two steps", n)
	}

	cutter.armed.Store(true)
	if _, err := m.Start("alice", userMsg("again"), tasks.StartOptions{}); err != nil {
		t.Fatalf("a new task whose first answer was lost: %v", err)
	}
	if list, err := m.List("alice", nil); err != nil || list.TotalSize != 2 {
		t.Errorf("alice lists %v tasks (%v), want 2", list, err)
	}
}

// A replica that stops streaming a task is counted out once, even when its
// script runs twice: the task's other watchers still get its events.
func TestLostAnswerCountsAWatcherOutOnce(t *testing.T) {
	srv := redistest.Start(t)
	leaving, cutter := replicaBehindCutter(t, srv, "test")
	runner := replica(t, srv, tasks.Options{})
	staying := replica(t, srv, tasks.Options{})

	run, err := runner.Start("alice", userMsg("go"), tasks.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, kept, err := staying.Subscribe("alice", run.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	_, gone, err := leaving.Subscribe("alice", run.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	key := redisstore.KeyPrefix("test") + ":t:" + run.Task.ID
	watchers := func() int {
		n, _ := srv.Client(t).HGet(t.Context(), key, "w").Int()
		return n
	}
	if n := watchers(); n != 2 {
		t.Fatalf("%d replicas counted as watching, want 2", n)
	}
	cutter.armed.Store(true)
	gone.Close()
	deadline := time.Now().Add(5 * time.Second)
	for watchers() == 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // observing Redis
	}
	if n := watchers(); n != 1 {
		t.Fatalf("%d replicas counted as watching after one left, want 1", n)
	}
	if err := run.Working(agentMsg("step")); err != nil {
		t.Fatal(err)
	}
	if ev := recv(t, kept); ev.StatusUpdate == nil {
		t.Fatalf("the staying replica got %+v, want the status update", ev)
	}
}

// When go-redis sends a batch again because its answer was lost, every
// change answers as in the first run, also when a later change of the
// batch needed room: an eviction passes over the tasks the batch wrote, so
// that the change that wrote one does not find it gone (and report a task
// it ended as not found) the second time.
func TestLostBatchAnswerKeepsWhatItWrote(t *testing.T) {
	srv := redistest.Start(t)
	addr, cutter := cutterFor(t, srv)
	client := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: 1, Dialer: redisstore.Dialer(time.Second)})
	t.Cleanup(func() { client.Close() })
	store := newStore(t, redisstore.Options{Client: client, Limits: tasks.Options{MaxTasks: 4, MaxLivePerOwner: 4}.StoreLimits()})
	insert := func(id string) error {
		now := time.Now()
		return store.Insert(t.Context(), tasks.Record{Owner: "alice", Updated: now,
			Task: a2a.Task{ID: id, ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: now}}})
	}
	change := func(id string, state a2a.TaskState) error {
		return store.Update(t.Context(), id, func(rec *tasks.Record, _ tasks.Tx) error {
			rec.Task.Status.State, rec.Updated = state, time.Now()
			return nil
		})
	}
	for _, id := range []string{"a", "b", "c", "x"} { // the store full of live tasks
		if err := insert(id); err != nil {
			t.Fatal(err)
		}
	}
	// A change holds the batch on the wire; x's end, then an insert that
	// needs room (x the only terminal task), go in the next batch, whose
	// answer is lost.
	steps := []func() error{
		func() error { return change("a", a2a.TaskStateWorking) },
		func() error { return change("x", a2a.TaskStateCompleted) },
		func() error { return insert("y") },
	}
	errs := queueBehindHeldBatch(t, srv.Client(t), store, len(steps), func(i int) error { return steps[i]() },
		func() { cutter.armed.Store(true) })
	for i, err := range errs[:2] {
		if err != nil {
			t.Errorf("change %d: %v", i, err)
		}
	}
	if errs[2] == nil {
		t.Error("an insert into a store full of live tasks and the task its batch ended: stored, want refused")
	}
	if cutter.armed.Load() {
		t.Error("no batch's answer was cut")
	}
	if rec, err := store.Get(t.Context(), "x"); err != nil || rec.Task.Status.State != a2a.TaskStateCompleted {
		t.Errorf("x: %v, %v; want it completed", rec.Task.Status.State, err)
	}
}
