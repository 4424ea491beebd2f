package redisstore

import (
	"context"
	"errors"
	"strings"
	"sync"

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
// A script runs to its end once queued, bounded by the client's own
// timeouts (the redis block's timeout), as a lone command would: a caller
// whose context ends meanwhile still waits for the answer, so that what it
// is told is what Redis did.
type pipeline struct {
	client redis.UniversalClient
	queue  chan *scriptCall
	done   sync.WaitGroup

	mu     sync.RWMutex // held to queue, so that close sees every call queued
	closed bool
	stop   chan struct{}
}

// A scriptCall is one script queued to run, and its answer once done is
// closed.
type scriptCall struct {
	script *redis.Script
	keys   []string
	args   []any
	cmd    *redis.Cmd
	done   chan struct{}
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

func newPipeline(client redis.UniversalClient) *pipeline {
	p := &pipeline{client: client, queue: make(chan *scriptCall, queueDepth), stop: make(chan struct{})}
	p.done.Add(pipelinesInFlight)
	for range pipelinesInFlight {
		go p.send()
	}
	return p
}

// close stops the pipeline once the scripts queued so far have run.
func (p *pipeline) close() {
	p.mu.Lock()
	p.closed = true
	close(p.stop)
	p.mu.Unlock()
	p.done.Wait()
}

var errClosed = errors.New("tasks/redis: the store is closed")

var callPool = sync.Pool{New: func() any { return &scriptCall{done: make(chan struct{}, 1)} }}

// run runs script in the next batch and returns its answer; a context
// that has ended already runs nothing.
func (p *pipeline) run(ctx context.Context, script *redis.Script, keys []string, args ...any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := callPool.Get().(*scriptCall)
	c.script, c.keys, c.args = script, keys, args
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		callPool.Put(c)
		return nil, errClosed
	}
	p.queue <- c
	p.mu.RUnlock()
	<-c.done
	val, err := c.cmd.Result()
	*c = scriptCall{done: c.done}
	callPool.Put(c)
	return val, err
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

// exec runs one batch. A script Redis does not hold (it restarted, or
// SCRIPT FLUSH) is loaded by running it once more alone.
func (p *pipeline) exec(batch []*scriptCall) {
	ctx := context.Background() // each command is bounded by the client's timeouts
	if len(batch) == 1 {
		c := batch[0]
		c.cmd = c.script.Run(ctx, p.client, c.keys, c.args...)
		c.done <- struct{}{}
		return
	}
	pipe := p.client.Pipeline()
	for _, c := range batch {
		c.cmd = c.script.EvalSha(ctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx) // each command holds its own error
	for _, c := range batch {
		if err := c.cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			c.cmd = c.script.Run(ctx, p.client, c.keys, c.args...)
		}
		c.done <- struct{}{}
	}
}
