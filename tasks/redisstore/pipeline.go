package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A pipeline sends the changes (inserts and updates) that concurrent
// requests make to Redis together: whatever queued while the last batch was
// on the wire goes in the next one, one run of changeScript, so that a busy
// replica spends one command, one pair of system calls and one script's
// start in Redis on many changes rather than on each. A quiet replica sends
// each change at once, alone. The order of two changes in one batch is of
// no matter: a replica runs one change of a task at a time (Store.lock),
// and an insert returns before its task can change.
//
// A caller waits at most wait for its answer, its turn in a batch included,
// so that a slow Redis (and the queue it makes grow) fails each caller
// within the redis block's timeout; the batch itself, once sent, is
// bounded by the client's own timeouts. A caller that gave up is told so,
// although Redis may yet make its change, as with any command that times
// out.
type pipeline struct {
	client    redis.UniversalClient
	key       []string // the key that routes the script (on Cluster)
	fixed     []any    // changeScript's arguments before the changes
	wait      time.Duration
	recounted func(why string) // told when a batch recounted the counters
	queue     chan *scriptCall
	done      sync.WaitGroup

	mu     sync.RWMutex // held to queue, so that close sees every call queued
	closed bool
	stop   chan struct{}
}

// A scriptCall is one change queued to be made; done receives once its
// answer is in answer and err. Calls are reused, each with its timer.
type scriptCall struct {
	kind   string // "i" (insert) or "u" (update), as changeScript reads it
	args   []any
	size   int          // the bytes of its strings in args
	buf    *encodedTask // in args: given back once the change is sent or dropped
	answer []any
	err    error
	done   chan struct{}
	timer  *time.Timer
	// settled is set once, by the batch that answers the call or by the
	// caller that gives up waiting: whichever comes first owns it.
	settled atomic.Bool
}

const (
	// pipelinesInFlight is how many batches may be on the wire at once:
	// two keep Redis busy while the last batch's answers are handed out.
	pipelinesInFlight = 2
	// maxBatch bounds one batch, so that one script run stays short, and
	// maxBatchBytes the tasks and events it carries (a larger change goes
	// alone), so that one command stays small: a task may take 16 MiB.
	maxBatch      = 64
	maxBatchBytes = 1 << 20
	// queueDepth is how many changes may wait for a batch; a caller beyond
	// it waits for room.
	queueDepth = 4 * maxBatch
)

// newPipeline starts a pipeline that runs changeScript with the given
// key and arguments before the changes, inFlight batches at a time.
func newPipeline(client redis.UniversalClient, wait time.Duration, inFlight int, recounted func(why string),
	key string, fixed ...any) *pipeline {
	p := &pipeline{client: client, key: []string{key}, fixed: fixed, wait: wait, recounted: recounted,
		queue: make(chan *scriptCall, queueDepth), stop: make(chan struct{})}
	p.done.Add(inFlight)
	for range inFlight {
		go p.send()
	}
	return p
}

// close stops the pipeline once the changes queued so far are made.
func (p *pipeline) close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.stop)
	}
	p.mu.Unlock()
	p.done.Wait()
}

var (
	errClosed = errors.New("tasks/redis: the store is closed")
	errWait   = errors.New("tasks/redis: no answer from Redis within the timeout")
)

var callPool = sync.Pool{New: func() any {
	c := &scriptCall{done: make(chan struct{}, 1), timer: time.NewTimer(time.Hour)}
	c.timer.Stop()
	return c
}}

// run makes a change of the given kind in the next batch and returns its
// answer, or gives up when ctx ends or the pipeline's wait passes. buf
// (nil, or the task in args) goes back to its pool once Redis no longer
// needs it.
func (p *pipeline) run(ctx context.Context, kind string, buf *encodedTask, args ...any) ([]any, error) {
	if err := ctx.Err(); err != nil {
		buf.release()
		return nil, err
	}
	c := callPool.Get().(*scriptCall)
	c.kind, c.args, c.buf, c.size = kind, args, buf, 0
	for _, a := range args {
		switch a := a.(type) {
		case []byte:
			c.size += len(a)
		case string:
			c.size += len(a)
		}
	}
	c.timer.Reset(p.wait)
	p.mu.RLock()
	var err error
	if p.closed {
		err = errClosed
	} else {
		select {
		case p.queue <- c:
		case <-c.timer.C:
			err = errWait
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	p.mu.RUnlock()
	if err != nil {
		c.timer.Stop()
		c.reuse()
		return nil, err
	}
	select {
	case <-c.done:
	case <-c.timer.C:
		err = errWait
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		if c.settled.CompareAndSwap(false, true) {
			return nil, err // the batch drops c, or gives its buffer back
		}
		<-c.done // answered meanwhile
	}
	c.timer.Stop()
	answer, err := c.answer, c.err
	c.reuse()
	return answer, err
}

// reuse gives a call that is done with, and its buffer, back to their
// pools.
func (c *scriptCall) reuse() {
	c.buf.release()
	c.args, c.buf, c.answer, c.err = nil, nil, nil, nil
	c.settled.Store(false)
	callPool.Put(c)
}

// send runs batches until the pipeline stops, and then what is left.
func (p *pipeline) send() {
	defer p.done.Done()
	batch := make([]*scriptCall, 0, maxBatch)
	var next *scriptCall // taken from the queue, but too large for the last batch
	for {
		first := next
		if first == nil {
			select {
			case first = <-p.queue:
			case <-p.stop:
				select {
				case first = <-p.queue:
				default:
					return
				}
			}
		}
		batch, next = append(batch[:0], first), nil
		size := first.size
	fill:
		for len(batch) < maxBatch {
			select {
			case c := <-p.queue:
				if size+c.size > maxBatchBytes {
					next = c
					break fill
				}
				batch, size = append(batch, c), size+c.size
			default:
				break fill
			}
		}
		p.exec(batch)
	}
}

// exec runs one batch, but not the calls whose callers gave up waiting.
// Script.Run loads the script when Redis does not hold it (it restarted,
// or SCRIPT FLUSH).
func (p *pipeline) exec(batch []*scriptCall) {
	kept := batch[:0]
	n := len(p.fixed)
	for _, c := range batch {
		if c.settled.Load() {
			c.buf.release() // its caller left, and nothing reuses c
			continue
		}
		kept = append(kept, c)
		n += 2 + len(c.args)
	}
	if len(kept) == 0 {
		return
	}
	args := append(make([]any, 0, n), p.fixed...)
	for _, c := range kept {
		args = append(append(args, c.kind, len(c.args)), c.args...)
	}
	// Each command is bounded by the client's timeouts.
	answers, err := changeScript.Run(context.Background(), p.client, p.key, args...).Slice()
	if n := len(kept); err == nil && len(answers) == n+1 {
		note, _ := answers[n].([]any)
		if len(note) == 2 && note[0] == "recounted" {
			why, _ := note[1].(string)
			p.recounted(why)
			answers = answers[:n]
		}
	}
	if err == nil && len(answers) != len(kept) {
		err = fmt.Errorf("tasks/redis: %d answers to %d changes", len(answers), len(kept))
	}
	for i, c := range kept {
		if c.err = err; err == nil {
			c.answer, c.err = changeAnswer(answers[i])
		}
		if c.settled.CompareAndSwap(false, true) {
			c.done <- struct{}{}
		} else {
			c.buf.release() // its caller left while the batch ran
		}
	}
}

// changeAnswer is one change's answer in a batch's: a list that starts with
// its outcome, or the error that made it fail.
func changeAnswer(v any) ([]any, error) {
	answer, _ := v.([]any)
	if len(answer) == 0 {
		return nil, fmt.Errorf("tasks/redis: unexpected answer %v", v)
	}
	if answer[0] == "error" && len(answer) == 2 {
		return nil, fmt.Errorf("tasks/redis: %v", answer[1])
	}
	return answer, nil
}
