package redisstore_test

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/internal/redistest"
	"github.com/caddy-a2a/caddy-a2a/tasks"
	"github.com/caddy-a2a/caddy-a2a/tasks/redisstore"
)

// checkBookkeeping fails t when the keys of the store with the given prefix
// (as in Options.Prefix) disagree with each other: every script must leave
// the counters, the lists, the indexes and the quotas as the task hashes
// say they are (the key layout is described at the top of scripts.go).
// It reads all the keys in one script, so it may run while the store is in
// use: each script's change is atomic, and so is the snapshot.
func checkBookkeeping(t testing.TB, client redis.UniversalClient, prefix string) {
	t.Helper()
	keys, err := readKeys(client, redisstore.KeyPrefix(prefix))
	if err != nil {
		t.Errorf("bookkeeping of %s: %v", prefix, err)
		return
	}
	for _, problem := range keys.problems() {
		t.Errorf("bookkeeping of %s: %s", prefix, problem)
	}
}

// snapshotScript answers every key under a prefix (ARGV[1]; KEYS[1], one
// of them, routes the script on Cluster) as {key, type, contents}: a
// hash's fields and values, a sorted set's members and scores, a set's
// members (each with an empty value).
var snapshotScript = redis.NewScript(`
local out = {}
for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':*')) do
	local ty = redis.call('TYPE', k)['ok']
	local v = {}
	if ty == 'hash' then v = redis.call('HGETALL', k)
	elseif ty == 'zset' then v = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
	elseif ty == 'set' then
		for _, m in ipairs(redis.call('SMEMBERS', k)) do table.insert(v, m) table.insert(v, '') end
	end
	table.insert(out, {k, ty, v})
end
return out
`)

// storeKeys is a store's keys as one snapshot read them, by kind.
type storeKeys struct {
	prefix string
	tasks  map[string]map[string]string // by task id: the task hash
	stats  map[string]string            // the counters and the quotas' fields
	owners map[string]map[string]string // by key: the owner index's members
	lists  map[string]map[string]string // "running", "interrupted", "terminal", "leases"
	// messages finds a task by the key of the message that made it.
	messages map[string]string
	// gone are the sorted sets of the messages remembered of dropped
	// tasks: "a" and "o" by kind, "h:<holder>" by holder, "top:a" and
	// "top:o" the holders.
	gone  map[string]map[string]string
	other []string // keys the layout does not have
}

func readKeys(client redis.UniversalClient, prefix string) (*storeKeys, error) {
	// Not a test's context: the check runs in its cleanup, when that is done.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := snapshotScript.Run(ctx, client, []string{prefix + ":stats"}, prefix).Slice()
	if err != nil {
		return nil, fmt.Errorf("reading the keys: %w", err)
	}
	k := &storeKeys{prefix: prefix, tasks: map[string]map[string]string{}, stats: map[string]string{},
		owners: map[string]map[string]string{}, lists: map[string]map[string]string{}, messages: map[string]string{},
		gone: map[string]map[string]string{}}
	for _, entry := range res {
		e, _ := entry.([]any)
		if len(e) != 3 {
			return nil, fmt.Errorf("unexpected snapshot entry %v", entry)
		}
		key, _ := e[0].(string)
		kind, _ := e[1].(string)
		flat, _ := e[2].([]any)
		contents := make(map[string]string, len(flat)/2)
		for i := 0; i+1 < len(flat); i += 2 {
			contents[fmt.Sprint(flat[i])] = fmt.Sprint(flat[i+1])
		}
		name := strings.TrimPrefix(key, prefix+":")
		switch {
		case kind == "hash" && strings.HasPrefix(name, "t:"):
			k.tasks[strings.TrimPrefix(name, "t:")] = contents
		case kind == "hash" && name == "stats":
			k.stats = contents
		case kind == "hash" && name == "messages":
			k.messages = contents
		case kind == "set" && strings.HasPrefix(name, "owner:"):
			k.owners[key] = contents
		case kind == "zset" && (slices.Contains(ageLists, name) || isLeases(name)):
			k.lists[name] = contents
		case kind == "zset" && strings.HasPrefix(name, "gone:"):
			k.gone[strings.TrimPrefix(name, "gone:")] = contents
		default:
			k.other = append(k.other, key+" ("+kind+")")
		}
	}
	return k, nil
}

// ageLists are the sorted sets of the tasks in each state, by their mark.
var ageLists = []string{"running", "interrupted", "terminal"}

var listOfMark = map[string]string{"r": "running", "i": "interrupted", "t": "terminal"}

// isLeases tells the key (after the prefix) of the leases. Leases are one
// sorted set of the running tasks; if they become one set per replica,
// this and checkLeases are what changes.
func isLeases(name string) bool { return name == "leases" }

func (k *storeKeys) problems() []string {
	var p []string
	add := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	for _, key := range k.other {
		add("a key the layout does not have: %s", key)
	}

	// The counters.
	var sum int64
	for id, f := range k.tasks {
		for _, field := range []string{"t", "o", "ok", "qh", "u", "b", "v", "s", "st", "r", "m"} {
			if _, ok := f[field]; !ok {
				add("task %s has no field %s", id, field)
			}
		}
		sum += num(f["b"])
		// The watchers: w counts the replicas marked w:<replica>.
		marks := 0
		for field := range f {
			if strings.HasPrefix(field, "w:") {
				marks++
			}
		}
		if num(f["w"]) != int64(marks) {
			add("task %s counts %s watchers, but %d replicas are marked", id, f["w"], marks)
		}
	}
	if count := num(k.stats["count"]); count != int64(len(k.tasks)) {
		add("stats count %d, but %d task hashes", count, len(k.tasks))
	}
	if bytes := num(k.stats["bytes"]); bytes != sum {
		add("stats bytes %d, but the tasks' b fields sum to %d", bytes, sum)
	}

	// The age lists: each task in the one of its state, scored by its
	// update time in milliseconds, and nothing else.
	for id, f := range k.tasks {
		list, ok := listOfMark[f["st"]]
		if !ok {
			add("task %s has state mark %q", id, f["st"])
			continue
		}
		if score, ok := k.lists[list][id]; !ok {
			add("task %s (st %s) is not in %s", id, f["st"], list)
		} else if want := num(f["u"]) / 1e6; num(score) != want {
			add("task %s is scored %s in %s, want its update time %d", id, score, list, want)
		}
	}
	for _, list := range ageLists {
		for id := range k.lists[list] {
			if f, ok := k.tasks[id]; !ok {
				add("%s holds %s, which has no hash", list, id)
			} else if listOfMark[f["st"]] != list {
				add("%s holds %s, whose st is %s", list, id, f["st"])
			}
		}
	}
	p = append(p, k.checkLeases()...)

	// The messages: each task made by a message is found by its key, and
	// nothing else is.
	for id, f := range k.tasks {
		if m := f["m"]; m != "" && k.messages[m] != id {
			add("task %s has message key %x, which finds %q", id, m, k.messages[m])
		}
	}
	for m, id := range k.messages {
		if strings.HasPrefix(id, "\x00") {
			continue // remembered of a dropped task: checkGone
		}
		if f, ok := k.tasks[id]; !ok || f["m"] != m {
			add("message key %x finds task %s, which has no hash or another key", m, id)
		}
	}
	p = append(p, k.checkGone()...)

	// The owner indexes: each holds exactly its owner's tasks.
	owned := map[string][]string{} // by index key, from the hashes
	for id, f := range k.tasks {
		if want := k.ownerKey(f["o"]); f["ok"] != want {
			add("task %s of owner %q names the index %s, want %s", id, f["o"], f["ok"], want)
		}
		owned[f["ok"]] = append(owned[f["ok"]], id)
	}
	for _, key := range sortedKeys(owned, k.owners) {
		got := slices.Sorted(maps.Keys(k.owners[key]))
		if want := slices.Sorted(slices.Values(owned[key])); !slices.Equal(got, want) {
			add("owner index %s holds %v, but its tasks are %v", key, got, want)
		}
	}

	// The quotas: the fields l:<qh> and b:<qh> of stats are the count and
	// the bytes of its tasks that are not terminal; a quota with none has
	// no fields.
	type usage struct{ live, bytes int64 }
	used := map[string]usage{}
	for id, f := range k.tasks {
		if want := hex.EncodeToString([]byte(cmp.Or(f["q"], f["o"]))); f["qh"] != want {
			add("task %s of owner %q, quota %q names the quota %s, want %s", id, f["o"], f["q"], f["qh"], want)
		}
		if f["st"] != "t" {
			u := used[f["qh"]]
			used[f["qh"]] = usage{u.live + 1, u.bytes + num(f["b"])}
			if f["o"] == "" { // anonymous callers share one quota besides their own
				a := used["anon"]
				used["anon"] = usage{a.live + 1, a.bytes + num(f["b"])}
			}
		}
	}
	quotas := map[string]usage{}
	for field, v := range k.stats {
		if qh, ok := strings.CutPrefix(field, "l:"); ok {
			u := quotas[qh]
			quotas[qh] = usage{num(v), u.bytes}
		} else if qh, ok := strings.CutPrefix(field, "b:"); ok {
			u := quotas[qh]
			quotas[qh] = usage{u.live, num(v)}
		} else if field != "count" && field != "bytes" {
			add("stats has a field the layout does not have: %s", field)
		}
	}
	for _, qh := range sortedKeys(used, quotas) {
		_, live := k.stats["l:"+qh]
		_, bytes := k.stats["b:"+qh]
		if got, want := quotas[qh], used[qh]; got != want || live != (want.live > 0) || bytes != live {
			add("quota %s holds live %d, bytes %d (fields there: %v, %v); its live tasks are %d of %d bytes",
				qh, got.live, got.bytes, live, bytes, want.live, want.bytes)
		}
	}
	return p
}

// checkGone: each message remembered of a dropped task is, scored by the
// end of its window, either waiting to be filed (gone:new) or filed in the
// sets of its kind and its holder; its task is not stored, and the holders
// are counted as they hold. The sets hold nothing else.
func (k *storeKeys) checkGone() []string {
	var p []string
	add := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	filed := map[string]int{} // by holder
	for m, v := range k.messages {
		rest, ok := strings.CutPrefix(v, "\x00")
		if !ok {
			continue
		}
		fields := strings.SplitN(rest, " ", 3)
		if len(fields) != 3 || fields[1] == "" || (fields[1][0] != 'a' && fields[1][0] != 'o') {
			add("message key %x holds %q, which is neither a task nor a remembered message", m, v)
			continue
		}
		ends, holder, id := fields[0], fields[1], fields[2]
		if _, stored := k.tasks[id]; stored {
			add("message key %x is remembered of task %s, which is stored", m, id)
		}
		member := m + holder
		switch kind := holder[:1]; {
		case k.gone["new"][member] == ends && k.gone[kind][member] == "":
		case k.gone["new"][member] == "" && k.gone[kind][member] == ends && k.gone["h:"+holder][m] == ends:
			filed[holder]++
		default:
			add("message key %x ends at %s, but gone:new scores it %q, gone:%s %q, its holder's set %q",
				m, ends, k.gone["new"][member], kind, k.gone[kind][member], k.gone["h:"+holder][m])
		}
	}
	for name, set := range k.gone {
		switch {
		case name == "new" || name == "a" || name == "o":
			for member, ends := range set {
				if len(member) <= 16 || !strings.HasPrefix(k.messages[member[:16]], "\x00"+ends+" "+member[16:]+" ") {
					add("gone:%s holds %x, which messages does not remember so", name, member)
				}
			}
		case name == "top:a" || name == "top:o":
			for holder, n := range set {
				if num(n) != int64(filed[holder]) || num(n) != int64(len(k.gone["h:"+holder])) || holder[:1] != name[4:] {
					add("gone:%s counts %s for %s, which holds %d filed (its set %d)", name, n, holder, filed[holder], len(k.gone["h:"+holder]))
				}
			}
		case strings.HasPrefix(name, "h:") && len(name) > len("h:"):
			holder := strings.TrimPrefix(name, "h:")
			if _, counted := k.gone["top:"+holder[:1]][holder]; !counted || len(set) != filed[holder] {
				add("gone:%s holds %d, but %d are filed for it (counted: %v)", name, len(set), filed[holder], counted)
			}
		default:
			add("a key the layout does not have: gone:%s", name)
		}
	}
	return p
}

// checkLeases: the leases hold exactly the running tasks.
func (k *storeKeys) checkLeases() []string {
	var p []string
	leases := k.lists["leases"]
	for id, f := range k.tasks {
		if _, leased := leases[id]; leased != (f["st"] == "r") {
			p = append(p, fmt.Sprintf("task %s (st %s) is in the leases: %v", id, f["st"], leased))
		}
	}
	for id := range leases {
		if _, ok := k.tasks[id]; !ok {
			p = append(p, fmt.Sprintf("the leases hold %s, which has no hash", id))
		}
	}
	return p
}

// ownerKey is the key of an owner's index, as the store names it.
func (k *storeKeys) ownerKey(owner string) string {
	return k.prefix + ":owner:" + hex.EncodeToString([]byte(owner))
}

// sortedKeys are the keys of a and b together, sorted.
func sortedKeys[A, B any](a map[string]A, b map[string]B) []string {
	return slices.Compact(slices.Sorted(func(yield func(string) bool) {
		for key := range a {
			if !yield(key) {
				return
			}
		}
		for key := range b {
			if !yield(key) {
				return
			}
		}
	}))
}

func num(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// The check finds each kind of disagreement: a store whose bookkeeping
// drifted does not pass it unseen.
func TestBookkeepingCheck(t *testing.T) {
	client := redistest.Start(t).Client(t)
	for i, c := range []struct {
		name string
		// change is one command that breaks the bookkeeping, given the
		// prefix, a running and a completed task of alice.
		change func(p, running, done string) []any
		want   string
	}{
		{"nothing", nil, ""},
		{"count", func(p, _, _ string) []any { return []any{"HINCRBY", p + ":stats", "count", 1} }, "stats count"},
		{"bytes", func(p, id, _ string) []any { return []any{"HINCRBY", p + ":t:" + id, "b", 1} }, "stats bytes"},
		{"state", func(p, id, _ string) []any { return []any{"HSET", p + ":t:" + id, "st", "i"} }, "is not in interrupted"},
		{"list", func(p, id, _ string) []any { return []any{"ZADD", p + ":terminal", 1, id} }, "terminal holds"},
		{"score", func(p, id, _ string) []any { return []any{"ZADD", p + ":running", 1, id} }, "is scored"},
		{"owner index", func(p, id, _ string) []any { return []any{"SREM", alicesIndex(p), id} }, "owner index"},
		{"owner key", func(p, id, _ string) []any { return []any{"HSET", p + ":t:" + id, "ok", p + ":owner:00"} }, "names the index"},
		{"quota live", func(p, _, _ string) []any { return []any{"HINCRBY", p + ":stats", alicesQuota("l"), 1} }, "quota"},
		{"quota bytes", func(p, _, _ string) []any { return []any{"HINCRBY", p + ":stats", alicesQuota("b"), -1} }, "quota"},
		{"quota gone", func(p, _, _ string) []any { return []any{"HDEL", p + ":stats", alicesQuota("l"), alicesQuota("b")} }, "quota"},
		{"quota kept", func(p, _, _ string) []any { return []any{"HSET", p + ":stats", "l:00", 0, "b:00", 0} }, "quota 00"},
		{"quota bytes kept", func(p, _, _ string) []any { return []any{"HSET", p + ":stats", "b:00", 0} }, "quota 00"},
		{"quota bytes gone", func(p, _, _ string) []any { return []any{"HDEL", p + ":stats", alicesQuota("b")} }, "quota"},
		{"stray counter", func(p, _, _ string) []any { return []any{"HSET", p + ":stats", "x", 1} }, "stats has a field"},
		{"lease gone", func(p, id, _ string) []any { return []any{"ZREM", p + ":leases", id} }, "in the leases: false"},
		{"lease kept", func(p, _, done string) []any { return []any{"ZADD", p + ":leases", 1, done} }, "in the leases: true"},
		{"stray key", func(p, _, _ string) []any { return []any{"SET", p + ":stray", 1} }, "a key the layout does not have"},
		{"watchers", func(p, id, _ string) []any { return []any{"HINCRBY", p + ":t:" + id, "w", 1} }, "watchers"},
		{"message key gone", func(p, id, _ string) []any { return []any{"DEL", p + ":messages"} }, "message key"},
		{"message key kept", func(p, _, _ string) []any { return []any{"HSET", p + ":messages", "x", "gone"} }, "message key"},
		{"remembered key unlisted", func(p, _, done string) []any {
			return []any{"HSET", p + ":messages", "x", "\x001 a " + done}
		}, "message key"},
		{"remembered key stray", func(p, _, _ string) []any { return []any{"ZADD", p + ":gone:o", 1, "y"} }, "gone:o holds"},
	} {
		t.Run(c.name, func(t *testing.T) {
			prefix := fmt.Sprint("check", i)
			store, err := redisstore.New(redisstore.Options{Client: client, Prefix: prefix, Limits: tasks.Options{}.StoreLimits()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(store.Close)
			m := tasks.NewManager(tasks.Options{Store: store, SweepInterval: -1})
			t.Cleanup(m.Close)
			running, err := m.Start("alice", userMsg("running"), tasks.StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			done, err := m.Start("alice", userMsg("done"), tasks.StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := done.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted}, nil); err != nil {
				t.Fatal(err)
			}
			p := redisstore.KeyPrefix(prefix)
			if c.change != nil {
				if err := client.Do(t.Context(), c.change(p, running.Task.ID, done.Task.ID)...).Err(); err != nil {
					t.Fatal(err)
				}
			}
			keys, err := readKeys(client, p)
			if err != nil {
				t.Fatal(err)
			}
			got := keys.problems()
			switch {
			case c.want == "" && len(got) > 0:
				t.Errorf("a consistent store: problems %v", got)
			case c.want != "" && !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, c.want) }):
				t.Errorf("problems %v, want one saying %q", got, c.want)
			}
		})
	}
}

// alicesIndex is the key of alice's owner index.
func alicesIndex(prefix string) string {
	return prefix + ":owner:" + hex.EncodeToString([]byte("alice"))
}

// alicesQuota is the field of stats that counts alice's live tasks ("l")
// or their bytes ("b").
func alicesQuota(kind string) string { return kind + ":" + hex.EncodeToString([]byte("alice")) }
