package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
	"github.com/caddy-a2a/caddy-a2a/internal/redistest"
	"github.com/caddy-a2a/caddy-a2a/tasks"
	"github.com/caddy-a2a/caddy-a2a/tasks/redisstore"
)

// replicaFor is a replica with the default options, its keys under "bench".
func replicaFor(tb testing.TB, srv *redistest.Server) *tasks.Manager {
	return replicaWith(tb, srv, "bench", tasks.Options{})
}

// replica is one agent's task manager on the shared Redis.
func replica(t *testing.T, srv *redistest.Server, opts tasks.Options) *tasks.Manager {
	return replicaWith(t, srv, "test", opts)
}

func replicaWith(t testing.TB, srv *redistest.Server, prefix string, opts tasks.Options) *tasks.Manager {
	t.Helper()
	return replicaAt(t, srv.Addr(), prefix, opts)
}

// replicaAt is a replica whose connections go to addr: Redis, or a proxy
// in front of it. Its keys' bookkeeping is checked once it closes.
func replicaAt(t testing.TB, addr, prefix string, opts tasks.Options) *tasks.Manager {
	t.Helper()
	return replicaLogging(t, addr, prefix, opts, nil)
}

// replicaLogging is replicaAt whose store logs to log.
func replicaLogging(t testing.TB, addr, prefix string, opts tasks.Options, log *zap.Logger) *tasks.Manager {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: 1, // as the Caddyfile's redis block makes it
		Dialer: redisstore.Dialer(time.Second)})
	t.Cleanup(func() { client.Close() })
	store, err := redisstore.New(redisstore.Options{Client: client, Prefix: prefix, Limits: opts.StoreLimits(),
		MaxTaskBytes: opts.MaxTaskBytes, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	t.Cleanup(func() { checkBookkeeping(t, client, prefix) }) // after the Manager's Close
	opts.Store = store
	opts.SweepInterval = -1
	m := tasks.NewManager(opts)
	t.Cleanup(m.Close)
	return m
}

// userMsg is a new user message (an id of its own: the same message sent
// again makes no second task).
func userMsg(text string) a2a.Message {
	return a2a.Message{MessageID: fmt.Sprint("m-", messageIDs.Add(1)), Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(text)}}
}

var messageIDs atomic.Int64

func agentMsg(text string) *a2a.Message {
	return &a2a.Message{Parts: []a2a.Part{a2a.TextPart(text)}}
}

func recv(t *testing.T, sub *tasks.Subscription) a2a.StreamResponse {
	t.Helper()
	select {
	case ev, ok := <-sub.Events():
		if !ok {
			t.Fatalf("the subscription closed (%v), want an event", sub.Err())
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return a2a.StreamResponse{}
}

// Two replicas on one Redis act as one agent: a task started on A is read,
// listed, streamed, continued and canceled on B, and B's cancel stops A's
// run.
func TestReplicasActAsOne(t *testing.T) {
	srv := redistest.Start(t)
	a := replica(t, srv, tasks.Options{})
	b := replica(t, srv, tasks.Options{})

	run, err := a.Start("alice", userMsg("book a table"), tasks.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := run.Task.ID
	got, err := b.Get("alice", id, nil)
	if err != nil || got.Status.State != a2a.TaskStateWorking || len(got.History) != 1 {
		t.Fatalf("B reads the task: %+v, %v", got, err)
	}
	if _, err := b.Get("mallory", id, nil); err == nil {
		t.Error("another owner read the task on B")
	}
	list, err := b.List("alice", nil)
	if err != nil || list.TotalSize != 1 {
		t.Fatalf("B lists %+v, %v", list, err)
	}

	snap, sub, err := b.Subscribe("alice", id)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if snap.Status.State != a2a.TaskStateWorking {
		t.Fatalf("snapshot %s", snap.Status.State)
	}
	if err := run.Working(agentMsg("looking")); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Finish(a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: agentMsg("for how many?")},
		[]a2a.Artifact{{Name: "draft", Parts: []a2a.Part{a2a.TextPart("d")}}}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"working", "artifact", "input-required"} {
		ev := recv(t, sub)
		var got string
		switch {
		case ev.ArtifactUpdate != nil:
			got = "artifact"
		case ev.StatusUpdate != nil:
			got = ev.StatusUpdate.Status.State.String()
		}
		if got != want {
			t.Fatalf("event %d on B = %s, want %s", i, got, want)
		}
	}

	follow := userMsg("four")
	follow.TaskID = id
	run2, err := b.Start("alice", follow, tasks.StartOptions{})
	if err != nil {
		t.Fatalf("the follow-up on B: %v", err)
	}
	if len(run2.Task.History) != 4 || run2.Task.Status.State != a2a.TaskStateWorking {
		t.Fatalf("continued task: %s, %d messages", run2.Task.Status.State, len(run2.Task.History))
	}

	// B runs it now; A cancels: B's run stops.
	if _, err := a.Cancel("alice", id); err != nil {
		t.Fatal(err)
	}
	select {
	case <-run2.Context().Done():
		if !errors.Is(context.Cause(run2.Context()), tasks.ErrCanceled) {
			t.Errorf("cause %v, want ErrCanceled", context.Cause(run2.Context()))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancel on A did not reach the run on B")
	}
	if _, err := run2.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted}, nil); !errors.Is(err, tasks.ErrTerminal) {
		t.Errorf("Finish after the cancel: %v, want ErrTerminal", err)
	}
}

// Redis down: a caller gets -32603 UNAVAILABLE within the client's timeout,
// never a hang; Redis back: the same store works again, streams included,
// without a restart.
func TestRedisDownAndBack(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), DialTimeout: 500 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, MaxRetries: 1,
		Dialer: redisstore.Dialer(500 * time.Millisecond)})
	t.Cleanup(func() { client.Close() })
	opts := tasks.Options{SweepInterval: -1}
	store, err := redisstore.New(redisstore.Options{Client: client, Prefix: "faults", Limits: opts.StoreLimits()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	opts.Store = store
	m := tasks.NewManager(opts)
	t.Cleanup(m.Close)

	srv.Stop(t)
	_, err = m.Start("", userMsg("hello"), tasks.StartOptions{})
	var e *a2a.Error
	if !errors.As(err, &e) || e.Code != a2a.CodeInternalError || e.Reason != "UNAVAILABLE" {
		t.Fatalf("Start while Redis is down: %v, want -32603 UNAVAILABLE", err)
	}
	if _, err := m.Get("", "some-task", nil); !errors.As(err, &e) || e.Reason != "UNAVAILABLE" {
		t.Fatalf("Get while Redis is down: %v, want UNAVAILABLE", err)
	}

	srv.Restart(t)
	var run *tasks.Run
	deadline := time.Now().Add(10 * time.Second)
	for run == nil { // the client reconnects on its own; the first call may still meet the old connection
		if run, err = m.Start("", userMsg("again"), tasks.StartOptions{Subscribe: true}); err != nil && time.Now().After(deadline) {
			t.Fatalf("Start once Redis is back: %v", err)
		}
	}
	defer run.Subscription.Close()
	if _, err := run.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted}, nil); err != nil {
		t.Fatal(err)
	}
	if ev := recv(t, run.Subscription); ev.StatusUpdate == nil || ev.StatusUpdate.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("event after Redis came back: %+v", ev)
	}
}

// clock is a fake clock for both replicas.
type clock struct{ now atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Unix(0, c.now.Load()).UTC() }
func (c *clock) Advance(d time.Duration) { c.now.Add(int64(d)) }

// A replica that dies mid-task leaves it working only until its lease runs
// out; then the next replica to sweep fails it, saying why. A replica that
// lives renews its leases, and its tasks stay working.
func TestLeaseOfADeadReplica(t *testing.T) {
	srv := redistest.Start(t)
	clk := &clock{}
	clk.now.Store(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	opts := tasks.Options{Now: clk.Now, LeaseTTL: 30 * time.Second, MaxAge: time.Hour}
	dead := replica(t, srv, opts)
	alive := replica(t, srv, opts)

	orphan, err := dead.Start("", userMsg("orphan"), tasks.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := alive.Start("", userMsg("kept"), tasks.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// dead says nothing more (as after kill -9); alive renews as it works.
	clk.Advance(20 * time.Second)
	if _, err := alive.Start("", userMsg("tick"), tasks.StartOptions{}); err != nil { // renews, then sweeps
		t.Fatal(err)
	}
	clk.Advance(20 * time.Second) // 40s: orphan's lease ran out, kept's runs to 50s
	if _, err := alive.Start("", userMsg("tick2"), tasks.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := alive.Get("", orphan.Task.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != a2a.TaskStateFailed || got.Status.Message == nil ||
		got.Status.Message.Parts[0].Text != "The agent stopped while this task ran, so whether its work was done is unknown; to try again, send a new message (a new messageId)." {
		t.Errorf("the dead replica's task: %s %+v, want failed saying the agent stopped", got.Status.State, got.Status.Message)
	}
	if got, err := alive.Get("", kept.Task.ID, nil); err != nil || got.Status.State != a2a.TaskStateWorking {
		t.Errorf("the live replica's task: %+v, %v; want still working", got, err)
	}
}

// An upstream's 64-bit id in an artifact is read back from Redis exactly.
func TestIntegersStayExactInRedis(t *testing.T) {
	srv := redistest.Start(t)
	m := replica(t, srv, tasks.Options{})
	run, err := m.Start("", userMsg("id"), tasks.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var data any
	if err := jsonx.UnmarshalKeepingIntegers([]byte(`{"id":12345678901234567890,"n":1.5}`), &data); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted}, []a2a.Artifact{{Parts: []a2a.Part{a2a.DataPart(data)}}}); err != nil {
		t.Fatal(err)
	}
	got, err := m.Get("", run.Task.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := jsonx.AppendValue(nil, got.Artifacts[0].Parts[0].Data)
	if err != nil || string(b) != `{"id":12345678901234567890,"n":1.5}` {
		t.Errorf("read back %s, %v", b, err)
	}
}

// Ready is what a readiness probe asks: one PING answers every probe of a
// second, and a Redis that went away makes it fail.
func TestReady(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2, MaxRetries: 1,
		DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond})
	t.Cleanup(func() { client.Close() })
	store, err := redisstore.New(redisstore.Options{Client: client, Prefix: "ready", Limits: tasks.Options{}.StoreLimits()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	ctx := context.Background()

	// The event subscription comes up in the background.
	deadline := time.Now().Add(10 * time.Second)
	for err = store.Ready(ctx); err != nil; err = store.Ready(ctx) {
		if time.Now().After(deadline) {
			t.Fatalf("Ready with Redis up: %v", err)
		}
	}
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { admin.Close() })
	pings := func() string {
		info, err := admin.Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(info) {
			if strings.HasPrefix(line, "cmdstat_ping:") {
				calls, _, _ := strings.Cut(strings.TrimPrefix(line, "cmdstat_ping:calls="), ",")
				return calls
			}
		}
		return "0"
	}
	before := pings()
	for range 50 {
		if err := store.Ready(ctx); err != nil {
			t.Fatalf("Ready: %v", err)
		}
	}
	if after := pings(); after != before {
		t.Errorf("50 probes within a second sent PINGs: %s before, %s after; want none beyond the first", before, after)
	}

	srv.Stop(t)
	deadline = time.Now().Add(10 * time.Second)
	for store.Ready(ctx) == nil {
		if time.Now().After(deadline) {
			t.Fatal("Ready still nil 10s after Redis stopped")
		}
	}
}

// A change another replica makes to a running task (here a push config)
// does not make it the runner: its cancel still reaches the replica that
// runs the task.
func TestCancelReachesTheRunnerAfterAnotherReplicasChange(t *testing.T) {
	srv := redistest.Start(t)
	a := replica(t, srv, tasks.Options{})
	b := replica(t, srv, tasks.Options{})
	run, err := a.Start("alice", userMsg("book a table"), tasks.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.SetPushConfig("alice", run.Task.ID, tasks.PushConfig{URL: "https://hooks.example/a2a", Version: a2a.V10}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Cancel("alice", run.Task.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-run.Context().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the cancel on B did not stop the run on A after B changed the task")
	}
}

// An id whose task hash was removed outside the store (maxmemory eviction,
// an operator's DEL) is passed over by eviction instead of picked for
// ever.
func TestEvictionPassesOverAMissingTask(t *testing.T) {
	srv := redistest.Start(t)
	m := replica(t, srv, tasks.Options{MaxTasks: 3})
	for range 3 {
		run, err := m.Start("", userMsg("hi"), tasks.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := run.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// The task eviction picks first: the oldest, ties by id.
	oldest, err := srv.Client(t).ZRange(t.Context(), redisstore.KeyPrefix("test")+":terminal", 0, 0).Result()
	if err != nil || len(oldest) != 1 {
		t.Fatalf("the terminal list: %v, %v", oldest, err)
	}
	if err := srv.Client(t).Del(t.Context(), redisstore.KeyPrefix("test")+":t:"+oldest[0]).Err(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := m.Start("", userMsg("one more"), tasks.StartOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a new task on a full store with a missing terminal task: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the insert did not return: eviction kept picking the missing task")
	}
	// Left in the list, the id would be picked again by every eviction
	// (and, when the bytes budget is what is short, for ever).
	if err := srv.Client(t).ZScore(t.Context(), redisstore.KeyPrefix("test")+":terminal", oldest[0]).Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("the missing task is still in the terminal list (%v)", err)
	}
	// It is no longer counted, nor are its bytes (the counters are
	// recounted: the bookkeeping check at cleanup finds them right), and
	// the first listing takes it out of its owner's index.
	if n, err := srv.Client(t).HGet(t.Context(), redisstore.KeyPrefix("test")+":stats", "count").Int(); err != nil || n != 3 {
		t.Errorf("tasks counted = %d, %v; want the 3 stored", n, err)
	}
	if list, err := m.List("", nil); err != nil || len(list.Tasks) != 3 {
		t.Fatalf("List: %v, %v; want 3 tasks", list, err)
	}
	if n, err := srv.Client(t).SCard(t.Context(), redisstore.KeyPrefix("test")+":owner:").Result(); err != nil || n != 3 {
		t.Errorf("the owner's index holds %d ids (%v), want 3", n, err)
	}
}

// Scripts that Redis no longer holds (it restarted without persistence, or
// SCRIPT FLUSH) are loaded again, also when many changes that need them go
// to Redis together in one batch.
func TestScriptsLoadedAgainInABatch(t *testing.T) {
	srv := redistest.Start(t)
	m := replica(t, srv, tasks.Options{})
	lifecycles := func() {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for i := range 64 {
			wg.Go(func() {
				run, err := m.Start("", userMsg(strconv.Itoa(i)), tasks.StartOptions{})
				if err == nil {
					_, err = run.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted, Message: agentMsg("done")}, nil)
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	lifecycles()
	if err := srv.Client(t).ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	lifecycles()
	if n, err := srv.Client(t).HGet(t.Context(), redisstore.KeyPrefix("test")+":stats", "count").Int(); err != nil || n != 128 {
		t.Fatalf("tasks stored = %d, %v; want 128", n, err)
	}
}

// A runner learns from its own writes that another replica streams its
// task: one round trip per change, after the first that found out.
func TestRunnerKnowsItsTaskIsWatchedElsewhere(t *testing.T) {
	srv := redistest.Start(t)
	a := replica(t, srv, tasks.Options{})
	b := replica(t, srv, tasks.Options{})
	run, err := a.Start("alice", userMsg("book a table"), tasks.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, sub, err := b.Subscribe("alice", run.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for i, want := range []int64{2, 1, 1} { // the first finds out it is watched
		before := scriptRuns(t, srv)
		if err := run.Working(agentMsg(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
		if got := scriptRuns(t, srv) - before; got != want {
			t.Errorf("change %d took %d scripts, want %d", i, got, want)
		}
		if ev := recv(t, sub); ev.StatusUpdate == nil {
			t.Fatalf("event %d on B: %+v, want a status update", i, ev)
		}
	}
}

// A Redis too slow to answer fails each change within the store's timeout,
// its wait for a batch included, however many changes queue behind it:
// 3,000 changes sent in batches of 64, two at a time, would otherwise take
// 24 turns of the timeout.
func TestSlowRedisFailsWithinTheTimeout(t *testing.T) {
	srv := redistest.Start(t)
	const timeout = 100 * time.Millisecond
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2, // as the redis block makes it
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, MaxRetries: 1})
	t.Cleanup(func() { client.Close() })
	store, err := redisstore.New(redisstore.Options{Client: client, Prefix: "slow", Timeout: timeout,
		Limits: tasks.Options{}.StoreLimits()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	m := tasks.NewManager(tasks.Options{Store: store, SweepInterval: -1})
	t.Cleanup(m.Close)
	if _, err := m.Start("", userMsg("warm up"), tasks.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	// Redis holds every write for 4s, longer than the test waits.
	if err := srv.Client(t).Do(t.Context(), "CLIENT", "PAUSE", 4000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Client(t).Do(context.Background(), "CLIENT", "UNPAUSE") })
	errs := make(chan error, 3000)
	for i := range cap(errs) {
		go func() {
			_, err := m.Start("", userMsg(strconv.Itoa(i)), tasks.StartOptions{})
			errs <- err
		}()
	}
	deadline := time.After(1500 * time.Millisecond) // well before 24 turns, and Redis's answer
	for range cap(errs) {
		select {
		case err := <-errs:
			var e *a2a.Error
			if !errors.As(err, &e) || e.Reason != "UNAVAILABLE" {
				t.Fatalf("a change while Redis is paused: %v, want UNAVAILABLE", err)
			}
		case <-deadline:
			t.Fatal("changes still waiting for a paused Redis after 1.5s, with a 100ms timeout")
		}
	}
}

// A caller that leaves is no outage: an update whose context ends stops
// waiting for a Redis that does not answer, before the store's timeout,
// and says its context ended (not UNAVAILABLE, nothing logged); an insert
// already sent is waited for, so that a caller told it failed never finds
// its task stored. Closing a store twice is no fault.
func TestCallerThatLeaves(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2, ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { client.Close() })
	core, logs := observer.New(zapcore.InfoLevel)
	store, err := redisstore.New(redisstore.Options{Client: client, Prefix: "ctx", Timeout: 10 * time.Second,
		Limits: tasks.Options{}.StoreLimits(), Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	defer store.Close()
	record := func(id string) tasks.Record {
		now := time.Now()
		return tasks.Record{Owner: "alice", Updated: now,
			Task: a2a.Task{ID: id, ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: now}}}
	}
	if err := store.Insert(t.Context(), record("t1")); err != nil {
		t.Fatal(err)
	}
	pause := func(ms int) {
		t.Helper()
		if err := srv.Client(t).Do(t.Context(), "CLIENT", "PAUSE", ms, "WRITE").Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Client(t).Do(context.Background(), "CLIENT", "UNPAUSE") })
	}

	pause(8000)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	time.AfterFunc(100*time.Millisecond, cancel) // once the change is sent
	go func() {
		done <- store.Update(ctx, "t1", func(rec *tasks.Record, _ tasks.Tx) error {
			rec.Task.Metadata = map[string]any{"note": "left"}
			return nil
		})
	}()
	select {
	case err := <-done:
		var e *a2a.Error
		if !errors.Is(err, context.Canceled) || errors.As(err, &e) {
			t.Errorf("an update whose caller left: %v; want its context's end, not an a2a error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the update still waits for Redis 5s after its context ended")
	}
	if got := logs.FilterLevelExact(zapcore.ErrorLevel).Len(); got != 0 {
		t.Errorf("%d errors logged for a caller that left; want none", got)
	}
	if err := srv.Client(t).Do(t.Context(), "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}

	pause(300)
	ctx, cancel = context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel) // once the insert is sent
	if err := store.Insert(ctx, record("t2")); err != nil {
		// Told it failed: the task must not appear once Redis runs what
		// was sent (the pause ends at 300ms).
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := store.Get(t.Context(), "t2"); err == nil {
				t.Fatal("an insert whose caller left was reported failed, yet its task is stored")
			}
			time.Sleep(20 * time.Millisecond) // observing another process
		}
		return
	}
	if _, err := store.Get(t.Context(), "t2"); err != nil {
		t.Errorf("an insert reported stored: Get %v", err)
	}
}

// Live tasks whose hashes were removed behind the store's back are taken
// out of the lists, the leases and the counters (their bytes and their
// places in their quota too: the counters are recounted) by the sweep
// that meets them, so that they never hide the real tasks' expiry.
func TestSweepForgetsLiveTasksRemovedOutside(t *testing.T) {
	srv := redistest.Start(t)
	clk := &clock{}
	clk.now.Store(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	m := replica(t, srv, tasks.Options{Now: clk.Now, MaxAge: time.Hour})
	client := srv.Client(t)
	for i := range 3 {
		run, err := m.Start("", userMsg(strconv.Itoa(i)), tasks.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := client.Del(t.Context(), redisstore.KeyPrefix("test")+":t:"+run.Task.ID).Err(); err != nil {
			t.Fatal(err)
		}
	}
	real, err := m.Start("", userMsg("real"), tasks.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Hour) // every task past max_age
	if _, err := m.Start("", userMsg("sweeps"), tasks.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := m.Get("", real.Task.ID, nil); err != nil || got.Status.State != a2a.TaskStateFailed {
		t.Errorf("the real task: %+v, %v; want failed at max_age", got, err)
	}
	for key, want := range map[string]int64{redisstore.KeyPrefix("test") + ":running": 1, redisstore.KeyPrefix("test") + ":leases": 1} { // the new task alone
		if n, err := client.ZCard(t.Context(), key).Result(); err != nil || n != want {
			t.Errorf("%s holds %d ids (%v), want %d", key, n, err, want)
		}
	}
	if n, err := client.HGet(t.Context(), redisstore.KeyPrefix("test")+":stats", "count").Int(); err != nil || n != 2 {
		t.Errorf("tasks counted = %d, %v; want the 2 stored", n, err)
	}
	// A listing takes them out of their owner's index: the bookkeeping
	// check (at cleanup) then finds every key right.
	if _, err := m.List("", nil); err != nil {
		t.Fatal(err)
	}
}

// A task's stored form leaves out the ids its history's messages share
// with it, and a replica reads them back; the full form, as replicas that
// store it write it, reads the same.
func TestHistoryStoredWithoutTheTasksOwnIDs(t *testing.T) {
	srv := redistest.Start(t)
	writer, reader := replica(t, srv, tasks.Options{}), replica(t, srv, tasks.Options{})
	run, err := writer.Start("", userMsg("id"), tasks.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted, Message: agentMsg("done")}, nil); err != nil {
		t.Fatal(err)
	}
	key := redisstore.KeyPrefix("test") + ":t:" + run.Task.ID
	stored, err := srv.Client(t).HGet(t.Context(), key, "t").Result()
	if err != nil {
		t.Fatal(err)
	}
	// Once as the task's own, once in the status's message, which keeps its
	// ids: not in the two messages of the history.
	if n := strings.Count(stored, run.Task.ID); n != 2 {
		t.Errorf("the task id is stored %d times, want 2: %s", n, stored)
	}
	got, err := reader.Get("", run.Task.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.History) != 2 {
		t.Fatalf("%d messages in the history, want 2", len(got.History))
	}
	for i, m := range got.History {
		if m.TaskID != got.ID || m.ContextID != got.ContextID {
			t.Errorf("history[%d] has ids %q, %q, want the task's %q, %q", i, m.TaskID, m.ContextID, got.ID, got.ContextID)
		}
	}

	full, err := a2a.AppendTask(nil, a2a.V10, got)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Client(t).HSet(t.Context(), key, "t", full).Err(); err != nil {
		t.Fatal(err)
	}
	again, err := replica(t, srv, tasks.Options{}).Get("", run.Task.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, got) {
		t.Errorf("the full form reads as\n%+v\nwant\n%+v", again, got)
	}
}
