package redisstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A pipeline sends the scripts that concurrent requests run to Redis
// together: whatever queued while the last batch was on the wire goes in
// the next one, as one write and one read, so that a busy replica spends
// one pair of system calls (and Redis one) on many scripts rather than on
// each. A quiet replica sends each script at once, alone. The order of two
// scripts in one batch is of no matter: a replica runs one change of a
// task at a time (Store.lock), and an insert returns before its task can
// change.
//
// A caller waits at most wait for its answer, its turn in a batch included,
// so that a slow Redis (and the queue it makes grow) fails each caller
// within the redis block's timeout; the script itself, once sent, is
// bounded by the client's own timeouts. A caller that gave up is told so,
// although Redis may yet run its script, as with any command that times
// out.
type pipeline struct {
	client redis.UniversalClient
	wait   time.Duration
	queue  chan *scriptCall
	done   sync.WaitGroup

	mu     sync.RWMutex // held to queue, so that close sees every call queued
	closed bool
	stop   chan struct{}
}

// A scriptCall is one script queued to run; done receives once its answer
// is in cmd. Calls are reused, each with its timer.
type scriptCall struct {
	script *redis.Script
	keys   []string
	args   []any
	buf    *encodedTask // in args: given back once the script is sent or dropped
	cmd    *redis.Cmd
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
	// maxBatch bounds one batch, so that one write stays small.
	maxBatch = 64
	// queueDepth is how many scripts may wait for a batch; a caller beyond
	// it waits for room.
	queueDepth = 4 * maxBatch
)

func newPipeline(client redis.UniversalClient, wait time.Duration) *pipeline {
	p := &pipeline{client: client, wait: wait, queue: make(chan *scriptCall, queueDepth), stop: make(chan struct{})}
	p.done.Add(pipelinesInFlight)
	for range pipelinesInFlight {
		go p.send()
	}
	return p
}

// close stops the pipeline once the scripts queued so far have run.
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

// run runs script in the next batch and returns its answer, or gives up
// when ctx ends or the pipeline's wait passes. buf (nil, or the task in
// args) goes back to its pool once Redis no longer needs it.
func (p *pipeline) run(ctx context.Context, script *redis.Script, keys []string, buf *encodedTask, args ...any) (any, error) {
	if err := ctx.Err(); err != nil {
		buf.release()
		return nil, err
	}
	c := callPool.Get().(*scriptCall)
	c.script, c.keys, c.args, c.buf = script, keys, args, buf
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
	val, err := c.cmd.Result()
	c.reuse()
	return val, err
}

// reuse gives a call that is done with, and its buffer, back to their
// pools.
func (c *scriptCall) reuse() {
	c.buf.release()
	c.script, c.keys, c.args, c.buf, c.cmd = nil, nil, nil, nil, nil
	c.settled.Store(false)
	callPool.Put(c)
}

// send runs batches until the pipeline stops, and then what is left.
func (p *pipeline) send() {
	defer p.done.Done()
	batch := make([]*scriptCall, 0, maxBatch)
	for {
		var first *scriptCall
		select {
		case first = <-p.queue:
		case <-p.stop:
			select {
			case first = <-p.queue:
			default:
				return
			}
		}
		batch = append(batch[:0], first)
	fill:
		for len(batch) < maxBatch {
			select {
			case c := <-p.queue:
				batch = append(batch, c)
			default:
				break fill
			}
		}
		p.exec(batch)
	}
}

// exec runs one batch, but not the calls whose callers gave up waiting.
// A script Redis does not hold (it restarted, or SCRIPT FLUSH) is loaded by
// running it once more alone.
func (p *pipeline) exec(batch []*scriptCall) {
	ctx := context.Background() // each command is bounded by the client's timeouts
	kept := batch[:0]
	for _, c := range batch {
		if c.settled.Load() {
			c.buf.release() // its caller left, and nothing reuses c
			continue
		}
		kept = append(kept, c)
	}
	switch len(kept) {
	case 0:
		return
	case 1:
		c := kept[0]
		c.cmd = c.script.Run(ctx, p.client, c.keys, c.args...)
	default:
		pipe := p.client.Pipeline()
		for _, c := range kept {
			c.cmd = c.script.EvalSha(ctx, pipe, c.keys, c.args...)
		}
		_, _ = pipe.Exec(ctx) // each command holds its own error
		for _, c := range kept {
			if err := c.cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
				c.cmd = c.script.Run(ctx, p.client, c.keys, c.args...)
			}
		}
	}
	for _, c := range kept {
		if c.settled.CompareAndSwap(false, true) {
			c.done <- struct{}{}
		} else {
			c.buf.release() // its caller left while the batch ran
		}
	}
}
