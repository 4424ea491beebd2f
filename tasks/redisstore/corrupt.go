package redisstore

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// What the store reads from Redis is checked before it is believed, since
// anything that can write to Redis (an operator's command, a restore of
// another version's backup, a bug elsewhere) can leave there what the
// scripts never would. A task record that cannot be believed is skipped
// by Scan and refused by Get as corrupt: an internal error that retrying
// does not cure, not UNAVAILABLE; the key is left as it is, for an
// operator, and logged (rate-limited), naming the key and what is wrong
// with it, never what it holds. Counters that cannot be true are recounted
// by the scripts (see scripts.go).

// The fields of a task's hash that readScript answers, in this order.
const (
	fieldTask     = iota // t
	fieldOwner           // o
	fieldQuota           // q
	fieldIndex           // ok
	fieldUpdated         // u
	fieldBytes           // b
	fieldVersion         // v
	fieldEvents          // s
	fieldWatchers        // w, absent while no replica streams the task
	fieldPush            // p, absent when the task has no push configs
	readFields
)

var fieldNames = [readFields]string{"t", "o", "q", "ok", "u", "b", "v", "s", "w", "p"}

// storedSlack is what a read accepts beyond Store.maxStored: the fields
// that hold numbers, and what a change refused for its size may still add
// (the message that fails the task).
const storedSlack = 64 << 10

// storedSize is what a task's fields that grow take in Redis, as readScript
// measures them: the task and push configs encoded, the owner, its index's
// key and the quota.
func (s *Store) storedSize(task, push int, rec *tasks.Record) int {
	return task + push + len(rec.Owner) + len(s.prefix) + len(":owner:") + 2*len(rec.Owner) + len(rec.Quota)
}

// tooLarge refuses a change that would make a task take size bytes in
// Redis, over limit: its encoded form is larger than its estimated size
// (base64 for binary parts, escapes for some characters), but not by so
// much.
func tooLarge(size, limit int) *a2a.Error {
	return a2a.InvalidParams("params.message", fmt.Sprintf(
		"the task would take %d bytes in the task store, over its limit of %d (twice max_task_bytes); send less data (fewer or smaller parts)",
		size, limit))
}

// corruptRecord says why a record read from Redis cannot be believed.
type corruptRecord string

func (c corruptRecord) Error() string { return string(c) }

// parseRecord is the record of task id as readScript answered it, with how
// many events the task had: a2a.TaskNotFound when it is not stored, a
// corruptRecord when it cannot be believed.
func (s *Store) parseRecord(id string, answer any) (cached, uint64, error) {
	f, _ := answer.([]any)
	switch len(f) {
	case 0:
		return cached{}, 0, a2a.TaskNotFound(id)
	case readFields:
	default:
		why := "an unexpected answer"
		if len(f) == 2 {
			why, _ = f[1].(string)
		}
		return cached{}, 0, corruptRecord(why)
	}
	var v [readFields]string
	for i, x := range f {
		str, ok := x.(string)
		if !ok && i != fieldWatchers && i != fieldPush {
			return cached{}, 0, corruptRecord("it has no field " + fieldNames[i])
		}
		v[i] = str
	}
	updated, err := strconv.ParseInt(v[fieldUpdated], 10, 64)
	if err != nil {
		return cached{}, 0, corruptRecord("its update time (u) is not a number")
	}
	bytes, err := strconv.ParseInt(v[fieldBytes], 10, 64)
	switch {
	case err != nil || bytes < 0:
		return cached{}, 0, corruptRecord("its size (b) is not a count")
	case bytes > s.maxTaskBytes:
		return cached{}, 0, corruptRecord(fmt.Sprintf("its size (b) is %d bytes, over the %d a task may hold", bytes, s.maxTaskBytes))
	}
	seq, err := strconv.ParseUint(v[fieldEvents], 10, 64)
	if err != nil {
		return cached{}, 0, corruptRecord("its event count (s) is not a count")
	}
	var watchers uint64
	if v[fieldWatchers] != "" {
		if watchers, err = strconv.ParseUint(v[fieldWatchers], 10, 64); err != nil {
			return cached{}, 0, corruptRecord("its watcher count (w) is not a count")
		}
	}
	if v[fieldIndex] != s.ownerKey(v[fieldOwner]) {
		return cached{}, 0, corruptRecord("its owner (o) is not the one whose index it names (ok)")
	}
	task, err := a2a.UnmarshalTask(a2a.V10, []byte(v[fieldTask]))
	if err != nil { // its text may quote the content
		return cached{}, 0, corruptRecord("its task (t) does not decode")
	}
	if task.ID != id {
		return cached{}, 0, corruptRecord("its task (t) is another task")
	}
	ownIDs(task)
	rec := tasks.Record{Owner: v[fieldOwner], Quota: v[fieldQuota], Task: *task, Updated: time.Unix(0, updated).UTC(), Bytes: bytes}
	if p := v[fieldPush]; p != "" {
		if err := json.Unmarshal([]byte(p), &rec.Push); err != nil {
			return cached{}, 0, corruptRecord("its push configs (p) do not decode")
		}
	}
	return cached{rec: rec, version: v[fieldVersion], watched: watchers > 0, pushBytes: len(v[fieldPush])}, seq, nil
}

// corrupt is what a caller is told when key holds what the store cannot
// believe (why): an internal error that retrying does not cure. The log
// says so (see report).
func (s *Store) corrupt(key, why string) error {
	s.report(key, "a key of the task store in Redis holds what the store cannot believe: it is skipped, or refused as corrupt, and left as it is for an operator (delete it, or restore it from a backup)",
		zap.String("key", key), zap.String("why", why))
	e := a2a.InternalError("the task store holds a corrupt record; the agent's operator is told")
	e.Reason = "DATA_LOSS"
	return e
}

// wrongType reports whether err is Redis's answer to a command on a key of
// another type than the store's.
func wrongType(err error) bool { return strings.Contains(err.Error(), "WRONGTYPE") }

// recounted logs that a script found the counters wrong (why) and rebuilt
// them.
func (s *Store) recounted(why string) {
	key := s.prefix + ":stats"
	s.report(key, "the task store's counters in Redis could not be true; a script recounted them from its lists and task hashes",
		zap.String("key", key), zap.String("why", why))
}

// A thing found wrong in Redis (a key, named by report's what) is logged
// at most once per reportEvery while it stays wrong; the store remembers
// at most maxReported of them, and logs no new one while it remembers as
// many from the last reportEvery.
const (
	reportEvery = 10 * time.Minute
	maxReported = 256
)

// report logs msg at error level, unless what was logged within the last
// reportEvery.
func (s *Store) report(what, msg string, fields ...zap.Field) {
	now := time.Now()
	s.mu.Lock()
	at, seen := s.reported[what]
	due := !seen || now.Sub(at) >= reportEvery
	if due && !seen && len(s.reported) >= maxReported {
		for k, at := range s.reported {
			if now.Sub(at) >= reportEvery {
				delete(s.reported, k)
			}
		}
		due = len(s.reported) < maxReported
	}
	if due {
		s.reported[what] = now
	}
	s.mu.Unlock()
	if due {
		s.log.Error(msg, fields...)
	}
}

// ownIDs gives the messages in t's history the task's ids where encodeTask
// left them out.
func ownIDs(t *a2a.Task) {
	for i := range t.History {
		m := &t.History[i]
		m.TaskID = cmp.Or(m.TaskID, t.ID)
		m.ContextID = cmp.Or(m.ContextID, t.ContextID)
	}
}
