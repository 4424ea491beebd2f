package redisstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// An insert whose answer never came (Redis did not answer within the
// timeout, or the connection broke) may still be made: Redis runs what it
// was sent once it can, and go-redis may send it again. Its caller was
// told that whether the task was stored is not known, and runs nothing; a
// task stored so would stay working, its lease running out unrenewed, and
// the message sent again would wait for it and then be told that whether
// its work was done is unknown. So this replica settles the insert once
// Redis answers again: the task ends as never started (tasks.NeverStarted),
// in one step that stores the ended task in its place if the insert has
// not run yet (so that it never does), and otherwise ends it, publishing
// its end to whoever waits for it, and forgets its message, so that the
// message sent again runs.

// settler holds the inserts this replica has yet to settle, and settles
// them, one goroutine at a time, until Redis answers.
type settler struct {
	ctx     context.Context // ends when the store closes
	mu      sync.Mutex
	pending []unsettled
	running sync.WaitGroup
	busy    bool // a goroutine settles pending
	full    bool // pending was full, since it was last logged
}

// unsettled is an insert to settle: the task as it ends, and the version
// the insert would have written.
type unsettled struct {
	ended    tasks.Record
	inserted string
}

// maxUnsettled bounds the inserts a replica holds to settle, a few hundred
// bytes each: past it an insert is left to its lease.
const maxUnsettled = 4096

// Pauses between the attempts to settle: growing, as Run.Finish's retries.
const (
	firstSettleRetry = 50 * time.Millisecond
	maxSettleRetry   = 2 * time.Second
)

func (q *settler) init(ctx context.Context) { q.ctx = ctx }

// wait waits for the goroutine settling the inserts, once the store's
// context ended.
func (q *settler) wait() { q.running.Wait() }

// settleLater has the insert of rec, with version inserted, settled once
// Redis answers.
func (s *Store) settleLater(rec *tasks.Record, inserted string) {
	q := &s.settler
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) >= maxUnsettled {
		if !q.full {
			q.full = true
			s.log.Warn("too many inserts to settle: a task stored by one of them is failed by the lease sweep",
				zap.Int("pending", len(q.pending)))
		}
		return
	}
	q.pending = append(q.pending, unsettled{ended: tasks.NeverStarted(rec, rec.Updated), inserted: inserted})
	if !q.busy {
		q.busy = true
		q.running.Add(1)
		go s.settleAll()
	}
}

// settleAll settles the pending inserts until none is left, pausing while
// Redis does not answer, or until the store closes.
func (s *Store) settleAll() {
	q := &s.settler
	defer q.running.Done()
	pause := firstSettleRetry
	for {
		q.mu.Lock()
		if len(q.pending) == 0 || q.ctx.Err() != nil {
			q.busy = false
			q.mu.Unlock()
			return
		}
		next := q.pending[0]
		q.mu.Unlock()
		err := s.settle(next)
		if q.ctx.Err() != nil {
			continue // closed: the loop ends
		}
		if err == nil || !unreachable(err) {
			if err != nil {
				s.log.Error("settling an insert whose outcome was unknown failed", zap.String("task", next.ended.Task.ID), zap.Error(err))
			}
			q.mu.Lock()
			q.pending, q.full = q.pending[1:], false
			q.mu.Unlock()
			pause = firstSettleRetry
			continue
		}
		timer := time.NewTimer(pause)
		select {
		case <-timer.C:
		case <-q.ctx.Done():
			timer.Stop()
		}
		pause = min(2*pause, maxSettleRetry)
	}
}

// settle makes one settlement (see changeScript).
func (s *Store) settle(u unsettled) error {
	rec := &u.ended
	task, err := encodeTask(&rec.Task)
	if err != nil {
		return fmt.Errorf("tasks/redis: settle task %s: %w", rec.Task.ID, err)
	}
	event, err := a2a.AppendEvent(nil, &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{
		TaskID: rec.Task.ID, ContextID: rec.Task.ContextID, Status: rec.Task.Status, Final: true}})
	if err != nil {
		task.release()
		return fmt.Errorf("tasks/redis: settle task %s: %w", rec.Task.ID, err)
	}
	quota := rec.Quota
	if quota == "" {
		quota = rec.Owner
	}
	answer, err := s.scripts.run(s.settler.ctx, changeSettle, task, rec.Task.ID, u.inserted, rec.Owner, s.ownerKey(rec.Owner),
		hex.EncodeToString([]byte(quota)), rec.Quota, rec.Updated.UnixNano(), rec.Bytes, task.b, score(rec.Updated),
		s.newVersion(), event)
	if err != nil {
		return s.failed(s.settler.ctx, "settle", err)
	}
	s.reachable()
	switch res, _ := answer[0].(string); res {
	case "ok", "changed":
		s.log.Info("an insert whose outcome was unknown is settled: its task, if stored, ended as never started",
			zap.String("task", rec.Task.ID), zap.Bool("changed_since", res == "changed"))
	default:
		s.log.Warn("an insert whose outcome was unknown cannot be settled: the store is full of live tasks; a task it stored is failed by the lease sweep",
			zap.String("task", rec.Task.ID), zap.String("refusal", res))
	}
	return nil
}

// mayRunLater reports whether a change whose script failed with err may
// yet be made: it was sent, and Redis neither answered (its refusals fail
// the batch before anything is written) nor was never reached.
func mayRunLater(err error) bool {
	var refused redis.Error
	var op *net.OpError
	return !errors.As(err, &refused) && !(errors.As(err, &op) && op.Op == "dial") &&
		!errors.Is(err, errClosed) && !errors.Is(err, context.Canceled)
}

// unreachable reports whether err says Redis could not be reached.
func unreachable(err error) bool {
	var e *a2a.Error
	return errors.As(err, &e) && e.Reason == "UNAVAILABLE"
}
