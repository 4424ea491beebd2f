package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/internal/redistest"
	"github.com/caddy-a2a/caddy-a2a/tasks"
	"github.com/caddy-a2a/caddy-a2a/tasks/redisstore"
)

// scriptRuns counts the scripts Redis has run (EVALSHA) so far.
func scriptRuns(t *testing.T, srv *redistest.Server) int64 {
	t.Helper()
	stats, err := srv.Client(t).Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, rest, found := strings.Cut(stats, "cmdstat_evalsha:calls=")
	if !found {
		return 0
	}
	n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
	return n
}

// newStore is a store with the given options (Client set) under the
// prefix "test" that sends one batch at a time (see queueBehindHeldBatch),
// closed when the test ends; its bookkeeping is checked then.
func newStore(t *testing.T, opts redisstore.Options) *redisstore.Store {
	t.Helper()
	opts.Prefix = "test"
	store, err := redisstore.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	redisstore.OneBatchInFlight(store)
	t.Cleanup(store.Close)
	t.Cleanup(func() { checkBookkeeping(t, opts.Client, "test") })
	return store
}

// wantUnavailable fails t unless err is the store's UNAVAILABLE.
func wantUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	var e *a2a.Error
	if !errors.As(err, &e) || e.Reason != "UNAVAILABLE" {
		t.Errorf("%s: %v, want UNAVAILABLE", what, err)
	}
}

// A change that fails in Redis (here its task's key holds a string, as an
// operator's mistake could leave it) answers its own error, which says
// the store's data is corrupt: the changes sent with it in one script are
// made, and counted, all the same.
func TestFailedChangeLeavesItsBatchAlone(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	store := newStore(t, redisstore.Options{Client: client, Limits: tasks.Options{}.StoreLimits()})
	ids := make([]string, 16)
	for i := range ids {
		ids[i] = "t" + strconv.Itoa(i)
		now := time.Now()
		if err := store.Insert(t.Context(), tasks.Record{Owner: "alice", Updated: now, Task: a2a.Task{ID: ids[i], ContextID: "c",
			Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: now}}}); err != nil {
			t.Fatal(err)
		}
	}
	broken := redisstore.KeyPrefix("test") + ":t:" + ids[len(ids)-1]
	for _, cmd := range [][]any{{"RENAME", broken, broken + ":aside"}, {"SET", broken, "not a hash"}} {
		if err := client.Do(t.Context(), cmd...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	before := scriptRuns(t, srv)
	errs := queueBehindHeldBatch(t, client, store, len(ids), func(i int) error {
		return store.Update(t.Context(), ids[i], func(rec *tasks.Record, _ tasks.Tx) error {
			rec.Task.Status.State = a2a.TaskStateCompleted
			return nil
		})
	}, nil)
	for i, err := range errs[:len(errs)-1] {
		if err != nil {
			t.Errorf("task %d, sent with a change that fails: %v", i, err)
		}
	}
	wantCorrupt(t, "the change of a task whose key is no hash", errs[len(errs)-1])
	if got := scriptRuns(t, srv) - before; got != 2 {
		t.Errorf("%d changes took %d scripts; want 2 batches", len(ids), got)
	}
	// The bookkeeping check (at cleanup) then finds the task as it was.
	for _, cmd := range [][]any{{"DEL", broken}, {"RENAME", broken + ":aside", broken}} {
		if err := client.Do(t.Context(), cmd...).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// queueBehindHeldBatch makes n changes, change(0) to change(n-1), through
// a store that sends one batch at a time (newStore's), so that the first
// is a batch that a paused Redis holds and the others queue behind it, in
// order, and returns their errors once Redis made them all. The others
// then go in as few batches as the pipeline's bounds let. queued (if not
// nil) runs once they wait, before Redis goes on.
func queueBehindHeldBatch(t *testing.T, client redis.UniversalClient, store *redisstore.Store, n int,
	change func(i int) error, queued func()) []error {
	t.Helper()
	if err := client.Do(t.Context(), "CLIENT", "PAUSE", 10000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Do(context.Background(), "CLIENT", "UNPAUSE") })
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = change(i) })
		if i == 0 {
			waitFor(t, "a batch held by Redis", func() bool { return blockedClients(t, client) == 1 })
		} else {
			waitFor(t, "a change queued", func() bool { return redisstore.QueuedChanges(store) == i })
		}
	}
	if queued != nil {
		queued()
	}
	if err := client.Do(t.Context(), "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	return errs
}

// Changes with large tasks are sent a few at a time, so that one command
// to Redis stays within a megabyte or so: a task may take 16 MiB.
func TestLargeChangesSplitTheBatch(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	store := newStore(t, redisstore.Options{Client: client, Limits: tasks.Options{}.StoreLimits()})
	large := strings.Repeat("x", 600<<10) // two do not fit one batch
	before := scriptRuns(t, srv)
	const n = 8
	errs := queueBehindHeldBatch(t, client, store, n, func(i int) error {
		now := time.Now()
		return store.Insert(t.Context(), tasks.Record{Owner: "alice", Updated: now, Bytes: int64(len(large)),
			Task: a2a.Task{ID: "t" + strconv.Itoa(i), ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: now},
				History: []a2a.Message{userMsg(large)}}})
	}, nil)
	for i, err := range errs {
		if err != nil {
			t.Errorf("insert %d: %v", i, err)
		}
	}
	if got := scriptRuns(t, srv) - before; got != n {
		t.Errorf("%d inserts of 600 KiB took %d scripts; want one each", n, got)
	}
}

// blockedClients is how many of Redis's clients wait, here for the end of
// a CLIENT PAUSE.
func blockedClients(t *testing.T, client redis.UniversalClient) int {
	t.Helper()
	info, err := client.Info(t.Context(), "clients").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(info, "blocked_clients:")
	n, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0]))
	return n
}

// waitFor waits until cond holds, which another process or goroutine
// brings about, and fails t if it does not within 10 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after 10s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling: nothing to wait on
	}
}

// A refusal of Redis's own, here a replica's READONLY (as after a
// failover), fails the whole script, so that go-redis sees it as Redis's
// error and the log says what it was; nothing is written, and the store
// works again once Redis takes writes.
func TestServerRefusalFailsTheBatch(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2, MaxRetries: 1})
	t.Cleanup(func() { client.Close() })
	core, logs := observer.New(zapcore.ErrorLevel)
	store := newStore(t, redisstore.Options{Client: client, Limits: tasks.Options{}.StoreLimits(), Logger: zap.New(core)})
	m := tasks.NewManager(tasks.Options{Store: store, SweepInterval: -1})
	t.Cleanup(m.Close)

	// A replica of a master it cannot reach keeps its data and refuses writes.
	if err := srv.Client(t).Do(t.Context(), "REPLICAOF", "127.0.0.1", "1").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Client(t).Do(context.Background(), "REPLICAOF", "NO", "ONE") })
	_, err := m.Start("alice", userMsg("refused"), tasks.StartOptions{})
	wantUnavailable(t, "an insert into a read-only replica", err)
	var logged error
	for _, entry := range logs.All() {
		for _, f := range entry.Context {
			if e, ok := f.Interface.(error); ok && f.Key == "error" {
				logged = e
			}
		}
	}
	var redisErr redis.Error
	if !errors.As(logged, &redisErr) || !strings.HasPrefix(logged.Error(), "READONLY") {
		t.Errorf("logged %v; want Redis's READONLY, as go-redis sees it", logged)
	}

	if err := srv.Client(t).Do(t.Context(), "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Start("alice", userMsg("taken"), tasks.StartOptions{}); err != nil {
		t.Errorf("an insert once Redis takes writes again: %v", err)
	}
	if n, err := store.Len(t.Context()); err != nil || n != 1 {
		t.Errorf("the store holds %d tasks (%v), want the one taken", n, err)
	}
}

// Redis's own refusals are told from a change's failure in each shape a
// version of Redis raises them with: 6.2's string that names the script's
// line and keeps the reply's "-" and line end, 7.0's plain string, and
// 7.2's table.
func TestRefusalShapes(t *testing.T) {
	client := redistest.Start(t).Client(t)
	probe := redis.NewScript(redisstore.Prelude + `
local raised = ARGV[2]
if ARGV[3] == 'table' then raised = {err = ARGV[2]} end
return refusal(errorText(raised)) or ''`)
	const readOnly = "READONLY You can't write against a read only replica."
	for _, c := range []struct{ raised, shape, want string }{
		{"@user_script: 164: -" + readOnly + "\r\n", "string", readOnly},
		{readOnly, "string", readOnly},
		{"OOM command not allowed when used memory > 'maxmemory'.", "table", "OOM command not allowed when used memory > 'maxmemory'."},
		{"@user_script: 12: -WRONGTYPE Operation against a key holding the wrong kind of value\r\n", "string", ""},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", "table", ""},
		{"user_script:40: attempt to perform arithmetic on a nil value", "string", ""},
	} {
		got, err := probe.Run(t.Context(), client, []string{"x"}, "x", c.raised, c.shape).Text()
		if err != nil || got != c.want {
			t.Errorf("refusal(%q as a %s) = %q, %v; want %q", c.raised, c.shape, got, err, c.want)
		}
	}
}
