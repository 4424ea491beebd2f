// Package redisstore keeps A2A tasks in Redis, so that any number of
// replicas of the agent act as one: a task started on one replica can be
// read, listed, streamed, canceled and continued on any other, and outlives
// a restart of them all.
//
// Each change is one atomic step in Redis (a Lua script; see scripts.go):
// an insert checks every bound (tasks, bytes, each quota's share) and
// evicts terminal tasks, oldest first, as the memory store does; an update
// is optimistic: the callback runs on the record as last read (or as this
// replica last wrote it, so that the blocking SendMessage path costs one
// round trip to start a task and one to finish it), and the script writes
// the result only if nobody wrote the task since; otherwise the record is
// read again and the callback runs again, as the tasks.Store contract
// allows.
//
// Events travel by Pub/Sub with a sequence number, rather than as Redis
// Streams: every replica keeps one subscription to the store's channel
// (one connection, whatever the number of open streams), and an event is
// numbered by the script that commits its change, in the task's own order.
// A stream opened on any replica subscribes first, then reads the task,
// then takes only the events numbered past what it read: nothing is lost
// between the snapshot and the first event, and nothing is repeated.
// Pub/Sub delivers nothing to a replica whose connection dropped; such a
// replica ends its open streams with an error that asks the client to
// subscribe again (as a slow consumer is told), and the client then gets
// the task as it is.
package redisstore

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// Options configure a Store.
type Options struct {
	// Client is the connection to Redis (a single server, Sentinel or
	// Cluster). The Store does not close it.
	Client redis.UniversalClient
	// Prefix starts every key (default "a2a"), so that several agents can
	// share one Redis.
	Prefix string
	// Limits are the bounds the store keeps, across replicas: every
	// replica must be given the same.
	Limits tasks.Limits
	// MaxTaskBytes is the Manager's tasks.Options.MaxTaskBytes (0 for its
	// default, DefaultMaxTaskBytes), which a store cannot learn from
	// Limits: a record read from Redis that says it holds more is not
	// believed, and a task whose fields would take more than twice that in
	// Redis (its JSON is larger than its estimated size, but not by so
	// much) is neither written nor read.
	MaxTaskBytes int64
	// Logger reports faults, once each rather than per request.
	Logger *zap.Logger
	// Timeout bounds how long a change waits for Redis's answer (default
	// 3s), its turn among the changes other requests send at the same
	// time included. The client's own timeouts should be the same.
	Timeout time.Duration
}

// Store is a tasks.Store on Redis, and a tasks.ReadyChecker, for one
// Manager (whose updates of a task take turns). It is safe for concurrent
// use.
type Store struct {
	client  redis.UniversalClient
	scripts *pipeline // runs the inserts and updates, batched
	replica string    // this replica's id, in the ends it announces
	prefix  string    // what every key starts with: see keyPrefix
	channel string
	limits  tasks.Limits
	log     *zap.Logger
	bus     *tasks.Bus
	// maxTaskBytes is Options.MaxTaskBytes, at most Limits.MaxBytes;
	// maxStored what a task's fields may take in Redis (storedSize).
	maxTaskBytes int64
	maxStored    int

	mu    sync.Mutex
	onEnd []func(taskID string, state a2a.TaskState)
	// written holds the records this replica wrote last, by id, so that
	// its next update of the task needs no read.
	written   map[string]cached
	cachedB   int64             // the Bytes of the records in written
	watching  map[string]*watch // tasks this replica streams, as counted in Redis (the task's w)
	lastSweep time.Time
	reported  map[string]time.Time // when each thing found corrupt was logged last (see report)
	failing   atomic.Bool          // Redis did not answer the last call
	writes    atomic.Uint64
	settler   settler // inserts whose outcome is unknown (see settle.go)

	// The last PING that Ready sent: when, and how it went.
	pingMu  sync.Mutex
	pingAt  time.Time
	pingErr error

	// live is closed while the event subscription is up, and replaced by
	// an open one while it is down (under mu).
	live   chan struct{}
	events *redis.PubSub
	stop   context.CancelFunc
	closed chan struct{}
}

// A Store is both, whatever changes: readiness probes that lost the
// check of Redis would not say so.
var (
	_ tasks.Store        = (*Store)(nil)
	_ tasks.ReadyChecker = (*Store)(nil)
)

type cached struct {
	rec       tasks.Record
	version   string
	watched   bool // another replica streamed the task, when last read or written
	pushBytes int  // the length of its push configs' stored form
}

// Store.written holds at most maxCached records and maxCachedBytes of
// them (as their Bytes count); a larger task is read back instead.
const (
	maxCached      = 4096
	maxCachedBytes = 32 << 20
)

// layout is the version of the key layout (scripts.go). A change that code
// of another version would misread gives every key a new name, so that the
// replicas of two versions (during a rolling upgrade) never touch each
// other's keys: an agent upgraded across it starts from an empty store.
const layout = "v3"

// keyPrefix starts every key of a store: its hash tag, "{prefix}", so that
// on Redis Cluster all its keys share a slot, then the layout's version.
func keyPrefix(prefix string) string { return "{" + prefix + "}:" + layout }

// DefaultTimeout is Options.Timeout's default, and the redis block's.
const DefaultTimeout = 3 * time.Second

// DefaultMaxTaskBytes is Options.MaxTaskBytes's default: the Manager's.
const DefaultMaxTaskBytes = 16 << 20

// New returns a Store and starts its event subscription in the background:
// nothing here waits on the network.
func New(opts Options) (*Store, error) {
	if opts.Client == nil {
		return nil, errors.New("tasks/redis: no Redis client")
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = "a2a"
	}
	if strings.ContainsAny(prefix, "{}") {
		return nil, fmt.Errorf("tasks/redis: key prefix %q must not contain { or }", prefix)
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	l := opts.Limits
	// No task holds more than the store may: the Manager's bound may be
	// lower still (it is at most MaxLiveBytesPerOwner), never higher.
	maxTaskBytes := min(cmp.Or(opts.MaxTaskBytes, DefaultMaxTaskBytes), l.MaxBytes)
	if maxTaskBytes <= 0 {
		return nil, errors.New("tasks/redis: the limits on bytes must be positive")
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Store{
		client:       opts.Client,
		replica:      strconv.FormatUint(rand.Uint64(), 36),
		prefix:       keyPrefix(prefix),
		limits:       l,
		maxTaskBytes: maxTaskBytes,
		maxStored:    int(min(2*maxTaskBytes, math.MaxInt32)), // a Redis string holds at most 512 MB
		log:          log,
		bus:          tasks.NewBus(l.StreamBuffer),
		written:      make(map[string]cached),
		watching:     make(map[string]*watch),
		reported:     make(map[string]time.Time),
		live:         make(chan struct{}),
		stop:         stop,
		closed:       make(chan struct{}),
	}
	s.channel = s.prefix + ":events"
	clientLive, clientBytes := l.ClientBounds()
	anonLive, anonBytes := l.AnonymousBounds()
	window, _ := l.Resends()
	s.scripts = newPipeline(opts.Client, cmp.Or(opts.Timeout, DefaultTimeout), pipelinesInFlight, s.recounted, s.prefix+":stats",
		s.prefix, maxTaskBytes, l.MaxTasks, l.MaxLivePerOwner, l.MaxLiveBytesPerOwner, l.MaxBytes, s.channel, s.replica,
		clientLive, clientBytes, anonLive, anonBytes, window.Milliseconds())
	s.settler.init(ctx)
	s.bus.OnIdle(s.unwatch)
	s.events = s.client.Subscribe(ctx) // no channel yet: nothing goes to the network here
	go s.listen(ctx)
	return s, nil
}

// Close stops the event subscription and the settling of failed inserts.
// Open streams end.
func (s *Store) Close() {
	s.stop()
	_ = s.events.Close() // a Receive under way does not watch its context
	<-s.closed
	s.settler.wait()
	s.scripts.close()
	s.bus.EndAll(tasks.ErrInterrupted)
}

func (s *Store) taskKey(id string) string { return s.prefix + ":t:" + id }

// ownerKey names the index of an owner's tasks: hex, so that any string
// can be a key.
func (s *Store) ownerKey(owner string) string {
	return s.prefix + ":owner:" + hex.EncodeToString([]byte(owner))
}

// score is t as a score of the sorted sets: Unix milliseconds.
func score(t time.Time) int64 { return t.UnixMilli() }

// lease is the score of a lease taken or renewed at now; with no LeaseTTL
// leases never run out.
func (s *Store) lease(now time.Time) any {
	if s.limits.LeaseTTL <= 0 {
		return "+inf"
	}
	return score(now.Add(s.limits.LeaseTTL))
}

// newVersion is the version of a task that a write makes: unique to the
// write, across replicas and retries.
func (s *Store) newVersion() string {
	return s.replica + "." + strconv.FormatUint(s.writes.Add(1), 36)
}

// Renew implements tasks.Store: one command for all of this replica's
// runs, which only moves leases forward, and only of tasks still running.
func (s *Store) Renew(ctx context.Context, now time.Time, ids []string) error {
	if s.limits.LeaseTTL <= 0 {
		return nil
	}
	members := make([]redis.Z, len(ids))
	until := float64(now.Add(s.limits.LeaseTTL).UnixMilli())
	for i, id := range ids {
		members[i] = redis.Z{Score: until, Member: id}
	}
	if err := s.client.ZAddArgs(ctx, s.prefix+":leases", redis.ZAddArgs{XX: true, GT: true, Members: members}).Err(); err != nil {
		return s.failed(ctx, "renew", err)
	}
	return nil
}

// The kinds of change that changeScript makes.
const (
	changeInsert = "i"
	changeUpdate = "u"
	changeSettle = "s"
)

// The state marks of the scripts' lists, as interface values made once.
var (
	markTerminal    any = "t"
	markInterrupted any = "i"
	markRunning     any = "r"
)

func stateMark(st a2a.TaskState) any {
	switch {
	case st.Terminal():
		return markTerminal
	case st.Interrupted():
		return markInterrupted
	}
	return markRunning
}

// unavailable is what a caller is told when Redis cannot be reached. The
// log says so once, until Redis answers again.
func (s *Store) unavailable(op string, err error) error {
	if s.failing.CompareAndSwap(false, true) {
		s.log.Error("the task store in Redis cannot be reached; requests that need it fail until it answers again",
			zap.String("op", op), zap.Error(err))
	}
	e := a2a.InternalError("the task store is unavailable; retry later")
	e.Reason = "UNAVAILABLE"
	return e
}

// failed is what a caller is told when a call to Redis failed: the end of
// its own context as such (a caller that left is no outage), a key of
// another type than the store's as corrupt data, anything else as Redis
// being unavailable.
func (s *Store) failed(ctx context.Context, op string, err error) error {
	if done := ctx.Err(); done != nil && errors.Is(err, done) {
		return fmt.Errorf("tasks/redis: %s: %w", op, err)
	}
	if wrongType(err) {
		return s.corrupt("("+op+")", "a key the store uses holds another type than the store's")
	}
	return s.unavailable(op, err)
}

// reachable notes that Redis answered.
func (s *Store) reachable() {
	if s.failing.CompareAndSwap(true, false) {
		s.log.Info("the task store in Redis answers again")
	}
}

// Insert implements tasks.Store.
func (s *Store) Insert(ctx context.Context, rec tasks.Record) error {
	task, err := encodeTask(&rec.Task)
	if err != nil {
		return fmt.Errorf("tasks/redis: insert task %s: %w", rec.Task.ID, err)
	}
	push, err := encodePush(rec.Push)
	if err != nil {
		task.release()
		return fmt.Errorf("tasks/redis: insert task %s: %w", rec.Task.ID, err)
	}
	if size := s.storedSize(len(task.b), len(push), &rec); size > s.maxStored {
		task.release()
		return tooLarge(size, s.maxStored)
	}
	quota := rec.Quota
	if quota == "" {
		quota = rec.Owner
	}
	version := s.newVersion()
	if err := ctx.Err(); err != nil {
		task.release()
		return fmt.Errorf("tasks/redis: insert task %s: %w", rec.Task.ID, err)
	}
	// Once sent, an insert is waited for (within the store's timeout) even
	// if its caller leaves: a caller told it failed must not find its task
	// stored, holding a place in its owner's quota.
	answer, err := s.scripts.run(context.WithoutCancel(ctx), changeInsert, task,
		rec.Task.ID, rec.Owner, s.ownerKey(rec.Owner), hex.EncodeToString([]byte(quota)),
		rec.Updated.UnixNano(), rec.Bytes, stateMark(rec.Task.Status.State), task.b, score(rec.Updated),
		rec.Quota, s.lease(rec.Updated), push, version, s.messageKey(&rec))
	if err != nil {
		if mayRunLater(err) {
			s.settleLater(&rec, version)
		}
		return s.failed(ctx, "insert", err)
	}
	s.reachable()
	res, _ := answer[0].(string)
	if err := s.refusal(res); err != nil {
		return err
	}
	switch res {
	case "dup":
		return fmt.Errorf("tasks/redis: insert task %s: id already stored", rec.Task.ID)
	case "resent", "dropped":
		first, _ := answer[1].(string)
		return &tasks.Resent{TaskID: first, Dropped: res == "dropped"}
	}
	s.remember(cached{rec: rec, version: version, pushBytes: len(push)})
	return nil
}

// refusal turns a script's answer into the error every store gives in the
// same case; nil for any other answer.
func (s *Store) refusal(res string) error {
	var short tasks.Shortage
	switch res {
	case "quota-tasks":
		short = tasks.OwnerTasks
	case "quota-bytes":
		short = tasks.OwnerBytes
	case "full-tasks":
		short = tasks.StoreTasks
	case "full-bytes":
		short = tasks.StoreBytes
	case "client-tasks":
		short = tasks.ClientTasks
	case "client-bytes":
		short = tasks.ClientBytes
	case "anon-tasks":
		short = tasks.AnonymousTasks
	case "anon-bytes":
		short = tasks.AnonymousBytes
	default:
		return nil
	}
	return s.limits.Refusal(short)
}

// messageKey is the script's form of tasks.MessageKey: the key's first 16
// bytes (128 bits: no two messages meet by chance), as raw bytes, which
// take less of Redis's memory than hex; "" for a task no message can make
// again, and for every task when messages are not remembered.
func (s *Store) messageKey(rec *tasks.Record) string {
	if _, on := s.limits.Resends(); !on {
		return ""
	}
	key, ok := tasks.MessageKey(rec)
	if !ok {
		return ""
	}
	return string(key[:16])
}

func (s *Store) remember(c cached) {
	rec := c.rec
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop(rec.Task.ID)
	if rec.Task.Status.State.Terminal() || rec.Bytes > maxCachedBytes/64 {
		return
	}
	for id := range s.written { // map order is random
		if len(s.written) < maxCached && s.cachedB+rec.Bytes <= maxCachedBytes {
			break
		}
		s.drop(id)
	}
	s.written[rec.Task.ID] = c
	s.cachedB += rec.Bytes
}

// drop forgets a written record. s.mu must be held.
func (s *Store) drop(id string) {
	if c, ok := s.written[id]; ok {
		s.cachedB -= c.rec.Bytes
		delete(s.written, id)
	}
}

func (s *Store) recall(id string) (cached, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.written[id]
	return c, ok
}

func (s *Store) forget(id string) {
	s.mu.Lock()
	s.drop(id)
	s.mu.Unlock()
}

// Get implements tasks.Store.
func (s *Store) Get(ctx context.Context, id string) (tasks.Record, error) {
	c, _, err := s.load(ctx, id)
	return c.rec, err
}

// load reads a task: the record, its version, whether a replica streams
// it, and how many events it had. A record that cannot be believed is an
// error that says it is corrupt (see corrupt.go).
func (s *Store) load(ctx context.Context, id string) (cached, uint64, error) {
	key := s.taskKey(id)
	answer, err := readScript.Run(ctx, s.client, []string{key}, s.maxStored+storedSlack).Result()
	if err != nil {
		return cached{}, 0, s.failed(ctx, "get", err)
	}
	s.reachable()
	c, seq, err := s.parseRecord(id, answer)
	if why, ok := err.(corruptRecord); ok {
		return cached{}, 0, s.corrupt(key, string(why))
	}
	return c, seq, err
}

// An encodedTask is a task's stored form, in a buffer that goes back to
// taskBuffers once the script that carried it has run.
type encodedTask struct {
	b []byte
	// history is encodeTask's copy of the task's history, kept (emptied)
	// for the next task.
	history []a2a.Message
}

var taskBuffers = sync.Pool{New: func() any { return new(encodedTask) }}

// maxPooledTask bounds the buffers kept for reuse: a rare large task
// should not pin its buffer.
const maxPooledTask = 64 << 10

// maxPooledHistory is the longest history copy kept with a buffer.
const maxPooledHistory = 64

// encodeTask is t's stored form: 1.0 ProtoJSON, less the ids of the
// messages in its history where they are the task's own, as the Manager
// stamps them (about a hundred bytes a message: a small task's JSON then
// fits a smaller allocation in Redis); ownIDs gives them back as the task
// is read. This build reads the full form too; a replica of an earlier
// build reads this one, but answers those messages without the two ids
// (optional in 1.0) until it is upgraded.
func encodeTask(t *a2a.Task) (*encodedTask, error) {
	e := taskBuffers.Get().(*encodedTask)
	stored := *t
	stored.History = append(e.history[:0], t.History...)
	for i := range stored.History {
		m := &stored.History[i]
		if m.TaskID == t.ID {
			m.TaskID = ""
		}
		if m.ContextID == t.ContextID {
			m.ContextID = ""
		}
	}
	b, err := a2a.AppendTask(e.b[:0], a2a.V10, &stored)
	clear(stored.History) // the pool keeps no part of a task
	e.history = stored.History[:0]
	if err != nil {
		e.release()
		return nil, err
	}
	e.b = b
	return e, nil
}

// release gives e's buffer back to the pool; nil is released already.
func (e *encodedTask) release() {
	if e != nil && cap(e.b) <= maxPooledTask {
		if cap(e.history) > maxPooledHistory {
			e.history = nil
		}
		taskBuffers.Put(e)
	}
}

// pushUnchanged tells the update script that a change left the task's push
// configs as they were: nothing to encode, nothing to write.
const pushUnchanged = "="

// samePush reports whether a callback left the push configs as they were:
// a holder replaces the slice to change them, never writes into it.
func samePush(a, b []tasks.PushConfig) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// encodePush is the stored form of a task's push configs: JSON, or "" for
// none.
func encodePush(configs []tasks.PushConfig) (string, error) {
	if len(configs) == 0 {
		return "", nil
	}
	b, err := json.Marshal(configs)
	if err != nil {
		return "", fmt.Errorf("push configs: %w", err)
	}
	return string(b), nil
}

// maxAttempts bounds the retries of an update that keeps meeting other
// replicas' writes.
const maxAttempts = 16

// Update implements tasks.Store. It takes no lock: the Manager makes the
// updates of a task one at a time, so that they do not starve each other
// with conflicts; one that meets a write made meanwhile (another replica's,
// or this one's Sweep) retries on the record as written.
func (s *Store) Update(ctx context.Context, id string, fn func(rec *tasks.Record, tx tasks.Tx) error) error {
	return s.update(ctx, id, fn, false)
}

// update is Update. A change apart (Sweep's, which may run while the
// Manager changes the task) starts from the record this replica wrote last
// with its slices full, so that what it adds goes to arrays of its own,
// not into the room the Manager's change, started from the same record,
// grows into.
func (s *Store) update(ctx context.Context, id string, fn func(rec *tasks.Record, tx tasks.Tx) error, apart bool) error {
	c, known := s.recall(id)
	if known && apart {
		c.rec = clipped(c.rec)
	}
	var refused error // the store's answer to a Take that did not fit
	// Events are encoded and sent only when a replica streams the task:
	// this one, or another as Redis said when the task was last read or
	// written here (or as the script then says, when that changed).
	s.mu.Lock()
	watchedHere := s.watching[id] != nil
	s.mu.Unlock()
	told := false // the script answered "watched"
	for attempt := range maxAttempts {
		if !known {
			var err error
			if c, _, err = s.load(ctx, id); err != nil {
				return err
			}
		}
		watched := watchedHere || c.watched || told
		rec := c.rec
		tx := &redisTx{rec: &rec, refused: refused, listening: watched}
		if err := fn(&rec, tx); err != nil {
			if known && refused == nil {
				known = false // judged on what this replica wrote last: read the task and judge again
				continue
			}
			return err
		}
		push, pushBytes := pushUnchanged, c.pushBytes
		var err error
		if !samePush(rec.Push, c.rec.Push) {
			if push, err = encodePush(rec.Push); err != nil {
				return fmt.Errorf("tasks/redis: update task %s: %w", id, err)
			}
			pushBytes = len(push)
		}
		events, payloads := eventsUnbuilt, []any(nil)
		if watched {
			events = len(tx.events)
			for i := range tx.events {
				payload, err := a2a.AppendEvent(nil, &tx.events[i])
				if err != nil {
					return fmt.Errorf("tasks/redis: update task %s: %w", id, err)
				}
				payloads = append(payloads, payload)
			}
		}
		task, err := encodeTask(&rec.Task) // encoded last: run gives its buffer back
		if err != nil {
			return fmt.Errorf("tasks/redis: update task %s: %w", id, err)
		}
		if size := s.storedSize(len(task.b), pushBytes, &rec); size > s.maxStored &&
			(refused == nil || size > s.maxStored+storedSlack/2) {
			task.release()
			if refused != nil {
				return tooLarge(size, s.maxStored)
			}
			// Refused as a Take that does not fit: the callback runs again
			// and (a run's outcome) fails the task, adding little but the
			// message that says so, which is then written.
			refused, known = tooLarge(size, s.maxStored), true
			continue
		}
		version := s.newVersion()
		args := append([]any{id, c.version, rec.Updated.UnixNano(), stateMark(rec.Task.Status.State), task.b,
			rec.Bytes - c.rec.Bytes, score(rec.Updated), int(rec.Task.Status.State), s.lease(rec.Updated),
			push, events, version}, payloads...)
		res, err := s.scripts.run(ctx, changeUpdate, task, args...)
		if err != nil {
			return s.failed(ctx, "update", err)
		}
		s.reachable()
		switch answer, _ := res[0].(string); answer {
		case "ok":
			var watchers int64
			if len(res) == 3 {
				watchers, _ = res[2].(int64)
			}
			s.remember(cached{rec: rec, version: version, watched: watchers > 0, pushBytes: pushBytes})
			if state := rec.Task.Status.State; state.Terminal() && !c.rec.Task.Status.State.Terminal() {
				s.ended(id, state) // the other replicas hear it on the channel
			}
			return nil
		case "watched":
			told, known = true, true // the same record, its events built and sent this time
		case "missing":
			s.forget(id)
			return a2a.TaskNotFound(id)
		case "conflict":
			known = false
			// Another replica wrote the task: give it a moment, at random,
			// so that two replicas do not keep meeting.
			pause := time.NewTimer(time.Duration(rand.IntN(attempt+1)+1) * time.Millisecond)
			select {
			case <-pause.C:
			case <-ctx.Done():
				pause.Stop()
				return fmt.Errorf("tasks/redis: update task %s: %w", id, ctx.Err())
			}
		default:
			if refused = s.refusal(answer); refused == nil {
				return fmt.Errorf("tasks/redis: update task %s: unexpected answer %q", id, answer)
			}
			known = true // the same record, now with the refusal
		}
	}
	return fmt.Errorf("tasks/redis: update task %s: other replicas kept changing it", id)
}

// clipped is rec with its history, its artifacts and their parts at full
// capacity: appending to any of them copies it.
func clipped(rec tasks.Record) tasks.Record {
	rec.Task.History = slices.Clip(rec.Task.History)
	if arts := rec.Task.Artifacts; len(arts) > 0 {
		rec.Task.Artifacts = slices.Clip(slices.Clone(arts))
		for i := range rec.Task.Artifacts {
			rec.Task.Artifacts[i].Parts = slices.Clip(rec.Task.Artifacts[i].Parts)
		}
	}
	return rec
}

// redisTx collects an update's events and counts the bytes it takes into
// the record; the script checks them against the budgets, and when they do
// not fit the callback runs again with refused set, as the store's answer
// to its Take.
type redisTx struct {
	rec       *tasks.Record
	refused   error
	listening bool
	events    []a2a.StreamResponse
}

// eventsUnbuilt tells the update script that the callback built no events,
// since nobody streamed the task as far as this replica knew: the script
// answers "watched" if a replica does, and the callback runs again with
// Listening true.
const eventsUnbuilt = -1

func (t *redisTx) Take(delta int64) error {
	if delta > 0 && t.refused != nil {
		return t.refused
	}
	t.rec.Bytes += delta
	return nil
}

// Listening says whether a replica streams the task, as far as this one
// knows; the update script corrects a guess that was wrong.
func (t *redisTx) Listening() bool { return t.listening }

func (t *redisTx) Publish(ev a2a.StreamResponse) { t.events = append(t.events, ev) }

// Scan implements tasks.Store.
func (s *Store) Scan(ctx context.Context, owner string, fn func(records iter.Seq[*tasks.Record])) error {
	index := s.ownerKey(owner)
	ids, err := s.client.SMembers(ctx, index).Result()
	if err != nil {
		return s.failed(ctx, "scan", err)
	}
	cmds := make([]*redis.Cmd, len(ids))
	limit := s.maxStored + storedSlack
	if _, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			read := readScript.EvalSha
			if i == 0 {
				read = readScript.Eval // loads it, should Redis not hold it
			}
			cmds[i] = read(ctx, p, []string{s.taskKey(id)}, limit)
		}
		return nil
	}); err != nil {
		return s.failed(ctx, "scan", err)
	}
	records := make([]tasks.Record, 0, len(ids))
	var lost []any // ids whose hash was removed outside the store
	for i, cmd := range cmds {
		c, _, err := s.parseRecord(ids[i], cmd.Val())
		switch why, corrupt := err.(corruptRecord); {
		case corrupt:
			_ = s.corrupt(s.taskKey(ids[i]), string(why)) // skipped: the others are listed
		case err != nil:
			// Dropped since the index was read, or removed outside the
			// store (a drop takes the id out of the index with its hash).
			lost = append(lost, ids[i])
		case c.rec.Owner != owner:
			_ = s.corrupt(s.taskKey(ids[i]), "it is in the index of another owner than its own (o)")
		default:
			records = append(records, c.rec)
		}
	}
	if len(lost) > 0 {
		s.client.SRem(ctx, index, lost...) // best effort: the next Scan tries again
	}
	fn(func(yield func(*tasks.Record) bool) {
		for i := range records {
			if !yield(&records[i]) {
				return
			}
		}
	})
	return nil
}

// watch is this replica's count of a task's streams in Redis: ready is
// closed once the count is there, or failed to get there (err).
type watch struct {
	ready chan struct{}
	err   error
}

// subscribeWait bounds how long a new stream waits for the event
// subscription to be up (after a start, or while Redis comes back).
const subscribeWait = 5 * time.Second

// Subscribe implements tasks.Store. A stream opens only while this replica
// receives events: otherwise it could miss some.
func (s *Store) Subscribe(ctx context.Context, id string) (tasks.Record, *tasks.Subscription, error) {
	s.mu.Lock()
	live := s.live
	s.mu.Unlock()
	wait := time.NewTimer(subscribeWait)
	defer wait.Stop()
	select {
	case <-live:
	case <-wait.C:
		return tasks.Record{}, nil, s.failed(ctx, "subscribe", errors.New("the event subscription is not up"))
	case <-ctx.Done():
		return tasks.Record{}, nil, s.failed(ctx, "subscribe", ctx.Err())
	}
	s.mu.Lock() // with unwatch: the count in Redis follows whether a stream is open here
	sub := s.bus.SubscribeHeld(id)
	w := s.watching[id]
	first := w == nil
	if first {
		w = &watch{ready: make(chan struct{})}
		s.watching[id] = w
	}
	s.mu.Unlock()
	if first {
		// Watched before the read: every change after it sends its events.
		if w.err = watchScript.Run(ctx, s.client, []string{s.taskKey(id)}, 1, s.replica).Err(); w.err != nil {
			s.mu.Lock() // not counted in Redis: nothing for unwatch to take back
			if s.watching[id] == w {
				delete(s.watching, id)
			}
			s.mu.Unlock()
		}
		close(w.ready)
	} else {
		// A stream opened here before: its count must be in Redis before
		// this one reads the task, or a change in between would be missed.
		select {
		case <-w.ready:
		case <-ctx.Done():
			sub.Close()
			return tasks.Record{}, nil, s.failed(ctx, "subscribe", ctx.Err())
		}
	}
	if w.err != nil {
		sub.Close()
		return tasks.Record{}, nil, s.failed(ctx, "subscribe", w.err)
	}
	c, seq, err := s.load(ctx, id)
	if err != nil {
		sub.Close()
		return tasks.Record{}, nil, err
	}
	sub.Release(seq)
	return c.rec, sub, nil
}

// unwatch is told by the bus that a task lost its last stream here; if it
// still has none, Redis's count of the replicas that watch it goes down.
func (s *Store) unwatch(id string) {
	s.mu.Lock()
	gone := s.watching[id] != nil && !s.bus.Active(id)
	if gone {
		delete(s.watching, id)
	}
	s.mu.Unlock()
	if !gone {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), subscribeWait)
	defer cancel()
	// A count left too high only sends events nobody reads.
	if err := watchScript.Run(ctx, s.client, []string{s.taskKey(id)}, -1, s.replica).Err(); err != nil {
		s.log.Debug("lowering a task's watch count in Redis failed", zap.String("task", id), zap.Error(err))
	}
}

// sweepEvery bounds how often one replica sweeps: a new task asks for a
// sweep, and Redis should not be asked for each.
const sweepEvery = time.Second

// Sweep implements tasks.Store.
func (s *Store) Sweep(ctx context.Context, now time.Time, expire func(rec *tasks.Record, tx tasks.Tx, why tasks.Expiry)) error {
	s.mu.Lock()
	due := now.Sub(s.lastSweep) >= sweepEvery || now.Before(s.lastSweep)
	if due {
		s.lastSweep = now
	}
	s.mu.Unlock()
	if !due {
		return nil
	}
	const batch = 256
	maxKeys, maxAnonKeys := s.limits.ResendKeyBounds()
	dropped, err := dropOldScript.Run(ctx, s.client, []string{s.prefix + ":terminal"},
		s.prefix, s.maxTaskBytes, score(now.Add(-s.limits.MaxAge)), batch, score(now), maxKeys, maxAnonKeys).Slice()
	if err != nil {
		return s.failed(ctx, "sweep", err)
	}
	if len(dropped) == 2 {
		why, _ := dropped[1].(string)
		s.recounted(why)
	}
	for _, age := range []struct {
		list   string
		cutoff time.Time
		why    tasks.Expiry
	}{
		{s.prefix + ":running", now.Add(-s.limits.MaxAge), tasks.ExpiredAge},
		{s.prefix + ":interrupted", now.Add(-s.limits.MaxInputWait), tasks.ExpiredInputWait},
		{s.prefix + ":leases", now, tasks.ExpiredLease},
	} {
		ids, err := s.client.ZRangeByScore(ctx, age.list, &redis.ZRangeBy{
			Min: "-inf", Max: "(" + strconv.FormatInt(score(age.cutoff), 10), Count: batch}).Result()
		if err != nil {
			return s.failed(ctx, "sweep", err)
		}
		for _, id := range ids {
			err := s.update(ctx, id, func(rec *tasks.Record, tx tasks.Tx) error {
				state := rec.Task.Status.State
				switch {
				case state.Terminal():
					return errStillFresh // another replica got there first
				case age.why == tasks.ExpiredLease && state != a2a.TaskStateWorking:
					return errStillFresh // interrupted since: nobody runs it
				case age.why != tasks.ExpiredLease && !rec.Updated.Before(age.cutoff):
					return errStillFresh
				}
				expire(rec, tx, age.why)
				return nil
			}, true)
			if err != nil && !errors.Is(err, errStillFresh) {
				// A task gone meanwhile is skipped; Redis gone ends the sweep.
				var e *a2a.Error
				if !errors.As(err, &e) || e.Reason == "UNAVAILABLE" {
					return err
				}
			}
		}
	}
	return nil
}

var errStillFresh = errors.New("tasks/redis: the task changed since the sweep read it")

// ended runs the OnEnd hooks for a task that became terminal.
func (s *Store) ended(id string, state a2a.TaskState) {
	s.forget(id)
	s.mu.Lock()
	hooks := s.onEnd
	s.mu.Unlock()
	for _, fn := range hooks {
		fn(id, state)
	}
}

// OnEnd implements tasks.Store.
func (s *Store) OnEnd(fn func(taskID string, state a2a.TaskState)) {
	s.mu.Lock()
	s.onEnd = append(s.onEnd, fn)
	s.mu.Unlock()
}

// OpenStreams implements tasks.Store.
func (s *Store) OpenStreams() int { return s.bus.Open() }

// Len is how many tasks Redis holds under the prefix, for all replicas:
// the count the scripts keep.
func (s *Store) Len(ctx context.Context) (int, error) {
	count, err := s.client.HGet(ctx, s.prefix+":stats", "count").Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, s.failed(ctx, "counting the tasks", err)
	}
	s.reachable()
	n, err := strconv.Atoi(count)
	if err != nil || n < 0 {
		return 0, s.corrupt(s.prefix+":stats", "count is not a count; the next change recounts it")
	}
	return n, nil
}

// readyFor is how long one PING answers Ready: readiness probes, however
// many and however often, cost Redis at most one PING a second.
const readyFor = time.Second

// Ready implements tasks.ReadyChecker: this replica can serve from Redis
// when its event subscription is up, and Redis answered a PING within the
// last second (sent now, bounded by ctx and the client's timeouts, when
// the last one is older).
func (s *Store) Ready(ctx context.Context) error {
	s.mu.Lock()
	live := s.live
	s.mu.Unlock()
	select {
	case <-live:
	default:
		return errors.New("tasks/redis: the event subscription is not up")
	}
	s.pingMu.Lock()
	defer s.pingMu.Unlock()
	if time.Since(s.pingAt) < readyFor {
		return s.pingErr
	}
	s.pingErr = nil
	if err := s.client.Ping(ctx).Err(); err != nil {
		_ = s.unavailable("ping", err)
		s.pingErr = fmt.Errorf("tasks/redis: PING: %w", err)
	} else {
		s.reachable()
	}
	s.pingAt = time.Now()
	return s.pingErr
}

// EndStreams implements tasks.Store.
func (s *Store) EndStreams(cause error) { s.bus.EndAll(cause) }

// listen receives every replica's events until Close. A dropped connection
// ends this replica's open streams (their events may be lost) and is
// logged once until the subscription is back.
func (s *Store) listen(ctx context.Context) {
	defer close(s.closed)
	ps := s.events
	for ps.Subscribe(ctx, s.channel) != nil {
		if ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(retryAfter):
		}
	}
	down := false
	for {
		msg, err := ps.Receive(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if !down {
				down = true
				s.log.Warn("the task store's event subscription in Redis dropped; open streams end and the subscription is retried", zap.Error(err))
				s.mu.Lock()
				select {
				case <-s.live:
					s.live = make(chan struct{})
				default:
				}
				s.mu.Unlock()
				s.bus.EndAll(tasks.ErrInterrupted)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(retryAfter):
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if down {
				s.log.Info("the task store's event subscription in Redis is back")
				down = false
			}
			s.mu.Lock()
			select {
			case <-s.live:
			default:
				close(s.live)
			}
			s.mu.Unlock()
		case *redis.Message:
			s.deliver(m.Payload)
		}
	}
}

// retryAfter paces the retries of a dropped event subscription.
const retryAfter = 500 * time.Millisecond

// deliver hands one event to this replica: to the OnEnd hooks when it ends
// its task, and to the task's local streams.
func (s *Store) deliver(payload string) {
	header, body, ok := strings.Cut(payload, "\n")
	fields := strings.Fields(header)
	if !ok || len(fields) != 3 {
		return
	}
	id, mark := fields[0], fields[2]
	seq, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil {
		return
	}
	if end, isEnd := strings.CutPrefix(mark, "end:"); isEnd {
		state, replica, _ := strings.Cut(end, ":")
		if n, err := strconv.Atoi(state); err == nil && replica != s.replica {
			s.ended(id, a2a.TaskState(n))
		}
		return
	}
	if !s.bus.Active(id) {
		return
	}
	ev, err := a2a.UnmarshalEvent([]byte(body))
	if err != nil {
		s.log.Warn("an event from the task store cannot be read", zap.String("task", id), zap.Error(err))
		return
	}
	s.bus.PublishSeq(id, seq, *ev)
}
