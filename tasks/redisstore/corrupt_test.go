package redisstore_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/internal/redistest"
	"github.com/caddy-a2a/caddy-a2a/tasks"
	"github.com/caddy-a2a/caddy-a2a/tasks/redisstore"
)

// observedReplica is a replica under prefix whose store logs to the logs
// it returns (errors only).
func observedReplica(t *testing.T, srv *redistest.Server, prefix string, opts tasks.Options) (*tasks.Manager, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.ErrorLevel)
	return replicaLogging(t, srv.Addr(), prefix, opts, zap.New(core)), logs
}

// startLive starts n live tasks of owner, and returns their ids.
func startLive(t *testing.T, m *tasks.Manager, owner string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		run, err := m.Start(owner, userMsg(fmt.Sprint("task ", i)), tasks.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = run.Task.ID
	}
	return ids
}

// listed is the ids of the tasks owner lists.
func listed(t *testing.T, m *tasks.Manager, owner string) []string {
	t.Helper()
	list, err := m.List(owner, nil)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	ids := make([]string, len(list.Tasks))
	for i := range list.Tasks {
		ids[i] = list.Tasks[i].ID
	}
	return ids
}

// wantCorrupt fails t unless err says that the stored data is corrupt: an
// internal error with reason DATA_LOSS, not UNAVAILABLE (retrying does not
// help).
func wantCorrupt(t *testing.T, what string, err error) {
	t.Helper()
	var e *a2a.Error
	if !errors.As(err, &e) || e.Code != a2a.CodeInternalError || e.Reason != "DATA_LOSS" {
		t.Errorf("%s: %v, want an internal error with reason DATA_LOSS", what, err)
	}
}

// do runs commands on Redis, failing t on the first error.
func do(t *testing.T, client redis.UniversalClient, cmds ...[]any) {
	t.Helper()
	for _, cmd := range cmds {
		if err := client.Do(t.Context(), cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
}

// aside keeps a copy of key (DUMP) and restores it when the test ends, so
// that the bookkeeping check then finds the store as its scripts left it.
func aside(t *testing.T, client redis.UniversalClient, key string) {
	t.Helper()
	dump, err := client.Dump(t.Context(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // before the bookkeeping checks, registered earlier
		if err := client.RestoreReplace(context.Background(), key, 0, dump).Err(); err != nil {
			t.Errorf("restoring %s: %v", key, err)
		}
	})
}

// One corrupt task record (a key of the wrong type, a hash missing a
// field, a field that does not decode, a record over max_task_bytes, one
// that names another task or owner) does not fail its owner's listing: it
// is skipped, and logged once, naming its key but none of its content.
// Reading that task answers that the stored record is corrupt: an internal
// error, not "unavailable, retry later".
func TestCorruptRecordIsSkipped(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	for i, c := range []struct {
		name string
		// corrupt is the commands that break the record at key; other is
		// the key of another task of the same owner.
		corrupt func(key, other string) [][]any
	}{
		{"a string", func(key, _ string) [][]any { return [][]any{{"DEL", key}, {"SET", key, "secret content"}} }},
		{"a list", func(key, _ string) [][]any { return [][]any{{"DEL", key}, {"RPUSH", key, "secret content"}} }},
		{"no task", func(key, _ string) [][]any { return [][]any{{"HDEL", key, "t"}} }},
		{"no owner", func(key, _ string) [][]any { return [][]any{{"HDEL", key, "o"}} }},
		{"no version", func(key, _ string) [][]any { return [][]any{{"HDEL", key, "v"}} }},
		{"task not JSON", func(key, _ string) [][]any { return [][]any{{"HSET", key, "t", `{"id":"secret content`}} }},
		{"task not a task", func(key, _ string) [][]any { return [][]any{{"HSET", key, "t", `["secret content"]`}} }},
		{"push configs not JSON", func(key, _ string) [][]any { return [][]any{{"HSET", key, "p", `[{"url":"secret content`}} }},
		{"bytes not a number", func(key, _ string) [][]any { return [][]any{{"HSET", key, "b", "secret content"}} }},
		{"bytes negative", func(key, _ string) [][]any { return [][]any{{"HSET", key, "b", -5}} }},
		{"bytes over max_task_bytes", func(key, _ string) [][]any { return [][]any{{"HSET", key, "b", 16<<20 + 1}} }},
		{"updated not a number", func(key, _ string) [][]any { return [][]any{{"HSET", key, "u", "secret content"}} }},
		{"events negative", func(key, _ string) [][]any { return [][]any{{"HSET", key, "s", -1}} }},
		{"another task", func(key, other string) [][]any {
			return [][]any{{"EVAL", "return redis.call('HSET', KEYS[1], 't', redis.call('HGET', KEYS[2], 't'))", 2, key, other}}
		}},
		{"another owner", func(key, _ string) [][]any { return [][]any{{"HSET", key, "o", "bob"}} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			prefix := fmt.Sprint("corrupt", i)
			m, logs := observedReplica(t, srv, prefix, tasks.Options{})
			// Another replica, which has no copy of what it wrote last.
			other := replicaWith(t, srv, prefix, tasks.Options{})
			ids := startLive(t, m, "alice", 3)
			key := redisstore.KeyPrefix(prefix) + ":t:" + ids[1]
			aside(t, client, key)
			do(t, client, c.corrupt(key, redisstore.KeyPrefix(prefix)+":t:"+ids[0])...)

			for range 2 {
				got := listed(t, m, "alice")
				if want := []string{ids[0], ids[2]}; len(got) != 2 || !slices.Contains(got, want[0]) || !slices.Contains(got, want[1]) {
					t.Errorf("List answers %v, want the good tasks %v", got, want)
				}
			}
			_, err := m.Get("alice", ids[1], nil)
			wantCorrupt(t, "Get of the corrupt task", err)
			if _, err := m.Get("bob", ids[1], nil); err == nil {
				t.Error("another owner read the corrupt task")
			}
			_, err = other.Cancel("alice", ids[1])
			wantCorrupt(t, "Cancel of the corrupt task", err)
			if _, err := m.Get("alice", ids[0], nil); err != nil {
				t.Errorf("Get of a good task: %v", err)
			}

			named := 0
			for _, entry := range logs.All() {
				text := entry.Message + fmt.Sprint(entry.ContextMap())
				if strings.Contains(text, "secret") {
					t.Errorf("the log shows the record's content: %s", text)
				}
				if strings.Contains(text, key) {
					named++
				}
			}
			if named != 1 {
				t.Errorf("%d log lines name the corrupt key, want 1: %v", named, logs.All())
			}
		})
	}
}

// netOutput is how many bytes Redis has sent its clients so far.
func netOutput(t *testing.T, client redis.UniversalClient) int64 {
	t.Helper()
	info, err := client.Info(t.Context(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_net_output_bytes:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("INFO stats has no total_net_output_bytes")
	return 0
}

// A task of 60 MB in Redis, well over max_task_bytes (16 MiB by default),
// is not answered whole, nor read into the replica's memory: its size is
// checked in Redis, in the round trip that would read it.
func TestTaskOverTheLimitIsNotRead(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	m, _ := observedReplica(t, srv, "test", tasks.Options{})
	ids := startLive(t, m, "alice", 2)
	key := redisstore.KeyPrefix("test") + ":t:" + ids[1]
	aside(t, client, key)
	got, err := m.Get("alice", ids[1], nil)
	if err != nil {
		t.Fatal(err)
	}
	got.History[0].Parts = []a2a.Part{a2a.TextPart(strings.Repeat("x", 60_000_000))}
	huge, err := a2a.AppendTask(nil, a2a.V10, got)
	if err != nil {
		t.Fatal(err)
	}
	do(t, client, []any{"HSET", key, "t", huge})
	huge = nil

	before := netOutput(t, client)
	_, err = m.Get("alice", ids[1], nil)
	wantCorrupt(t, "Get of a 60 MB task", err)
	if got := listed(t, m, "alice"); len(got) != 1 || got[0] != ids[0] {
		t.Errorf("List answers %v, want the other task alone", got)
	}
	if sent := netOutput(t, client) - before; sent > 1<<20 {
		t.Errorf("Redis sent %d bytes to answer a Get and a List of a 60 MB task, want it not sent", sent)
	}
}

// statsKey is the key of the counters of the store under prefix.
func statsKey(prefix string) string { return redisstore.KeyPrefix(prefix) + ":stats" }

// quotaField is the field of stats that counts owner's live tasks ("l") or
// their bytes ("b").
func quotaField(kind, owner string) string { return kind + ":" + hex.EncodeToString([]byte(owner)) }

// Counters that cannot be true (the stats hash of the wrong type, a count
// negative, not a number, or below the tasks the lists hold, bytes or a
// quota's counts negative or more than its tasks could hold) are not
// believed: the change that reads them recounts them from the lists and
// the task hashes first, says so in the log, and then keeps every bound
// (max_tasks, max_bytes, the quotas) as it should. The bookkeeping check
// (at cleanup) then finds them right.
func TestImpossibleCountersAreRecounted(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	// perTask is the bytes of one task as startLive makes it.
	var perTask int64
	{
		m := replicaWith(t, srv, "probe", tasks.Options{})
		startLive(t, m, "alice", 1)
		n, err := client.HGet(t.Context(), statsKey("probe"), "bytes").Int64()
		if err != nil {
			t.Fatal(err)
		}
		perTask = n
	}
	threeAndAHalf := 3*perTask + perTask/2
	for i, c := range []struct {
		name  string
		opts  tasks.Options
		ended int // tasks of alice started and completed first
		live  int // then started and left running
		// set is the fields of stats to set (or a command to run, when
		// it starts with a command's name).
		set []any
		// refused is whether the next task alice starts must be refused
		// (by the bound the broken counter hid), or must be stored.
		refused bool
	}{
		{"stats a string", tasks.Options{}, 0, 1, []any{"SET", "a string"}, false},
		{"stats a list", tasks.Options{}, 0, 1, []any{"RPUSH", "a list"}, false},
		{"count far below", tasks.Options{MaxTasks: 3, MaxLivePerOwner: 10}, 0, 3, []any{"count", -100000000}, true},
		{"count not a number", tasks.Options{MaxTasks: 3, MaxLivePerOwner: 10}, 0, 3, []any{"count", "many"}, true},
		{"count below the lists", tasks.Options{MaxTasks: 3, MaxLivePerOwner: 10}, 0, 3, []any{"count", 1}, true},
		{"count fractional", tasks.Options{MaxTasks: 3, MaxLivePerOwner: 10}, 0, 3, []any{"count", "1.5"}, true},
		{"bytes negative", tasks.Options{MaxBytes: threeAndAHalf, MaxLiveBytesPerOwner: 10 * perTask}, 0, 3,
			[]any{"bytes", -100000000}, true},
		{"bytes far above", tasks.Options{}, 3, 1, []any{"bytes", 1_000_000_000_000_000}, false},
		{"quota live negative", tasks.Options{MaxLivePerOwner: 3}, 0, 3, []any{quotaField("l", "alice"), -100000000}, true},
		{"quota live above count", tasks.Options{MaxLivePerOwner: 3}, 0, 2, []any{quotaField("l", "alice"), 50}, false},
		{"quota bytes negative", tasks.Options{MaxLiveBytesPerOwner: threeAndAHalf}, 0, 3,
			[]any{quotaField("b", "alice"), -100000000}, true},
		{"quota bytes above its tasks", tasks.Options{MaxLiveBytesPerOwner: threeAndAHalf}, 0, 1,
			[]any{quotaField("b", "alice"), 1_000_000_000_000}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			prefix := fmt.Sprint("counters", i)
			m, logs := observedReplica(t, srv, prefix, c.opts)
			for _, id := range startLive(t, m, "alice", c.ended) {
				if _, err := m.SetStatus(id, a2a.TaskStatus{State: a2a.TaskStateCompleted}); err != nil {
					t.Fatal(err)
				}
			}
			startLive(t, m, "alice", c.live)
			stats := statsKey(prefix)
			switch cmd, _ := c.set[0].(string); cmd {
			case "SET", "RPUSH":
				do(t, client, []any{"DEL", stats}, []any{cmd, stats, c.set[1]})
			default:
				do(t, client, append([]any{"HSET", stats}, c.set...))
			}

			_, err := m.Start("alice", userMsg("one more"), tasks.StartOptions{})
			var e *a2a.Error
			switch refused := errors.As(err, &e) && e.Reason == "RESOURCE_EXHAUSTED"; {
			case c.refused && !refused:
				t.Errorf("a task past the bound the broken counter hid: %v, want it refused", err)
			case !c.refused && err != nil:
				t.Errorf("a task within every bound: %v, want it stored", err)
			}
			if got, want := len(listed(t, m, "alice")), c.ended+c.live+btoi(!c.refused); got != want {
				t.Errorf("alice lists %d tasks, want %d: none evicted", got, want)
			}
			if logs.FilterMessageSnippet("recounted").FilterField(zap.String("key", stats)).Len() != 1 {
				t.Errorf("the log does not say once that the counters were recounted: %v", logs.All())
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A task is stored only while its fields take at most twice max_task_bytes
// in Redis, so that every task stored can be read back: a message that
// would make it larger (here text of control characters, each stored as
// six, \u0001, but counted as one) is refused, and a run's outcome that
// would fails the task instead, as an outcome over max_task_bytes does.
func TestStoredFormIsBounded(t *testing.T) {
	srv := redistest.Start(t)
	m := replica(t, srv, tasks.Options{MaxTaskBytes: 64 << 10})
	escaped := strings.Repeat("\x01", 30_000) // 30 kB in memory, 180 kB stored

	_, err := m.Start("alice", userMsg(escaped), tasks.StartOptions{})
	var e *a2a.Error
	if !errors.As(err, &e) || e.Code != a2a.CodeInvalidParams || !strings.Contains(e.Description, "task store") {
		t.Errorf("a message stored as 180 kB: %v, want InvalidParams", err)
	}

	run, err := m.Start("alice", userMsg("hi"), tasks.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done, err := run.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted},
		[]a2a.Artifact{{Name: "big", Parts: []a2a.Part{a2a.TextPart(escaped)}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Get("alice", run.Task.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range []*a2a.Task{done, got} {
		if task.Status.State != a2a.TaskStateFailed || len(task.Artifacts) != 0 ||
			!strings.Contains(task.Status.Message.Parts[0].Text, "too large") {
			t.Errorf("an outcome stored as 180 kB: %s %+v, want the task failed, saying why", task.Status.State, task.Status.Message)
		}
	}
}

// A terminal task whose key holds another type than a hash is dropped by
// the eviction that picks it, as a task would be, and the counters are
// recounted: the insert that made room goes through.
func TestEvictionDropsACorruptTask(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	m, logs := observedReplica(t, srv, "test", tasks.Options{MaxTasks: 3, MaxLivePerOwner: 3})
	ids := startLive(t, m, "alice", 3)
	for _, id := range ids {
		if _, err := m.SetStatus(id, a2a.TaskStatus{State: a2a.TaskStateCompleted}); err != nil {
			t.Fatal(err)
		}
	}
	// The task eviction picks first: the oldest, ties by id.
	first, err := client.ZRange(t.Context(), redisstore.KeyPrefix("test")+":terminal", 0, 0).Result()
	if err != nil || len(first) != 1 {
		t.Fatalf("the terminal list: %v, %v", first, err)
	}
	oldest := redisstore.KeyPrefix("test") + ":t:" + first[0]
	do(t, client, []any{"DEL", oldest}, []any{"SET", oldest, "secret content"})
	if _, err := m.Start("alice", userMsg("one more"), tasks.StartOptions{}); err != nil {
		t.Fatalf("a task that makes room by evicting a corrupt one: %v", err)
	}
	if n, err := client.Exists(t.Context(), oldest).Result(); err != nil || n != 0 {
		t.Errorf("the corrupt key is still there (%v)", err)
	}
	if logs.FilterMessageSnippet("recounted").Len() != 1 {
		t.Errorf("the log does not say that the counters were recounted: %v", logs.All())
	}
	// The listing takes its id out of alice's index: the bookkeeping check
	// (at cleanup) then finds every key right.
	if got := listed(t, m, "alice"); len(got) != 3 {
		t.Errorf("alice lists %v, want the 3 tasks left", got)
	}
}

// A key of another type where the store keeps an owner's index or its
// counters is corrupt data, said so, not Redis unavailable.
func TestKeyOfAnotherTypeIsCorrupt(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	store := newStore(t, redisstore.Options{Client: client, Limits: tasks.Options{}.StoreLimits()})
	m := tasks.NewManager(tasks.Options{Store: store, SweepInterval: -1})
	t.Cleanup(m.Close)
	startLive(t, m, "alice", 1)
	index := redisstore.KeyPrefix("test") + ":owner:" + hex.EncodeToString([]byte("alice"))
	aside(t, client, index)
	do(t, client, []any{"DEL", index}, []any{"SET", index, "secret content"})
	_, err := m.List("alice", nil)
	wantCorrupt(t, "List with an index of another type", err)

	stats := statsKey("test")
	do(t, client, []any{"HSET", stats, "count", -5})
	_, err = store.Len(t.Context())
	wantCorrupt(t, "Len with a negative count", err)
	startLive(t, m, "bob", 1) // recounts
	if n, err := store.Len(t.Context()); err != nil || n != 2 {
		t.Errorf("Len once recounted: %d, %v; want 2", n, err)
	}
}

// A change of a task whose hash lost its version field, made by the
// replica that wrote it last (and so reads nothing first), is not taken
// for a change of a task that is gone: the record is read, and found
// corrupt.
func TestChangeOfARecordWithoutVersion(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	m, _ := observedReplica(t, srv, "test", tasks.Options{})
	ids := startLive(t, m, "alice", 2)
	key := redisstore.KeyPrefix("test") + ":t:" + ids[1]
	aside(t, client, key)
	do(t, client, []any{"HDEL", key, "v"})
	_, err := m.Cancel("alice", ids[1])
	wantCorrupt(t, "Cancel of a task with no version", err)
	if got := listed(t, m, "alice"); len(got) != 1 || got[0] != ids[0] {
		t.Errorf("List answers %v, want the other task alone", got)
	}
}
