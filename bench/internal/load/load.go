// Package load is the benchmark's closed-loop load generator: a fixed number
// of keep-alive HTTP/1.1 connections, each sending its next request as soon
// as the previous answer is read, for a fixed time or a fixed number of
// requests, checking every answer and recording its latency.
package load

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Target is one contender's endpoint and the request it is sent.
type Target struct {
	// Addr is host:port.
	Addr string
	// Request is a complete HTTP/1.1 request (see NewRequest).
	Request []byte
	// Expect lists byte strings that every good answer's body holds; an
	// answer that is not 200 or lacks one of them is an error.
	Expect [][]byte
	// Prepare, when set, changes a connection's own copy of Request, in
	// place and keeping its length, before each send (an A2A message gets
	// an id of its own).
	Prepare func(req []byte)
	// Open, when set, replaces Request for a protocol other than HTTP/1.1
	// (gRPC): each connection opens a client of its own, whose call makes
	// one request and checks its answer, and close ends it.
	Open func() (call func(context.Context) error, close func(), err error)
}

// NewRequest builds a complete HTTP/1.1 request. header holds name, value
// pairs.
func NewRequest(method, addr, path string, body []byte, header ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, addr)
	for i := 0; i+1 < len(header); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", header[i], header[i+1])
	}
	if body != nil || method == "POST" {
		b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n")
	}
	b.WriteString("\r\n")
	b.Write(body)
	return b.Bytes()
}

// Options bound one run. It stops at Duration or after Count requests,
// whichever comes first; at least one must be set.
type Options struct {
	Conns    int
	Duration time.Duration
	Count    int64
	// Rate, when set, makes the run open-loop: requests are due at this
	// many per second in all, spread evenly over the connections, and a
	// request sent late counts its latency from when it was due (no
	// coordinated omission). Zero is closed-loop: each connection sends
	// its next request as soon as it has the previous answer.
	Rate float64
}

// Result is what one run measured.
type Result struct {
	// OK counts good answers, Errors failed or wrong ones.
	OK, Errors int64
	// Elapsed runs from the moment every connection was open to the moment
	// the last answer was read.
	Elapsed time.Duration
	// Latency holds the good answers' latencies.
	Latency *Histogram
	// FirstError describes one error, when there were any.
	FirstError string
}

// Merge adds o to r, as if the two runs had been one.
func (r *Result) Merge(o *Result) {
	r.OK += o.OK
	r.Errors += o.Errors
	r.Elapsed += o.Elapsed
	if r.Latency == nil {
		r.Latency = new(Histogram)
	}
	r.Latency.Merge(o.Latency)
	if r.FirstError == "" {
		r.FirstError = o.FirstError
	}
}

// Throughput is good answers per second.
func (r *Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.OK) / r.Elapsed.Seconds()
}

// Run drives t with o.Conns connections until o's bound (or ctx's end).
// Connections are opened before the clock starts; one that fails later is
// counted as an error and opened again.
func Run(ctx context.Context, t Target, o Options) (*Result, error) {
	if o.Conns < 1 || (o.Duration <= 0 && o.Count <= 0) {
		return nil, fmt.Errorf("load: need at least one connection and a duration or a count, got %+v", o)
	}
	conns := make([]client, o.Conns)
	for i := range conns {
		c, err := t.dial()
		if err != nil {
			for _, c := range conns[:i] {
				c.close()
			}
			return nil, fmt.Errorf("load: connecting to %s: %w", t.Addr, err)
		}
		conns[i] = c
	}

	var (
		issued  atomic.Int64
		wg      sync.WaitGroup
		mu      sync.Mutex
		total   = &Result{Latency: new(Histogram)}
		start   = time.Now()
		endTime = start.Add(o.Duration)
	)
	var interval time.Duration
	if o.Rate > 0 {
		interval = time.Duration(float64(o.Conns) / o.Rate * float64(time.Second))
	}
	for i, c := range conns {
		wg.Go(func() {
			w := worker{t: t, c: c, h: new(Histogram)}
			due := start.Add(interval * time.Duration(i) / time.Duration(o.Conns))
			for ctx.Err() == nil {
				if o.Duration > 0 && !time.Now().Before(endTime) {
					break
				}
				if o.Count > 0 && issued.Add(1) > o.Count {
					break
				}
				if interval == 0 {
					w.one(ctx, time.Time{})
					continue
				}
				if wait := time.Until(due); wait > 0 {
					time.Sleep(wait)
					w.one(ctx, time.Time{}) // on time: timer slack is not the contender's
				} else {
					w.one(ctx, due)
				}
				due = due.Add(interval)
			}
			w.c.close()
			mu.Lock()
			total.OK += w.ok
			total.Errors += w.errors
			total.Latency.Merge(w.h)
			if total.FirstError == "" {
				total.FirstError = w.firstErr
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	total.Elapsed = time.Since(start)
	return total, nil
}

// client is one connection of a run: an HTTP/1.1 conn, or a client that
// Target.Open made.
type client interface {
	// do makes one request and checks its answer.
	do(ctx context.Context, t *Target) error
	// broken reports whether the connection must be opened again.
	broken() bool
	close()
}

func (t *Target) dial() (client, error) {
	if t.Open == nil {
		return dial(t.Addr)
	}
	call, closeFn, err := t.Open()
	if err != nil {
		return nil, err
	}
	return &opened{call: call, closeFn: closeFn}, nil
}

// opened is a client of Target.Open.
type opened struct {
	call    func(context.Context) error
	closeFn func()
}

func (o *opened) do(ctx context.Context, _ *Target) error { return o.call(ctx) }
func (o *opened) broken() bool                            { return false }
func (o *opened) close()                                  { o.closeFn() }

// do sends t's request on c and checks the answer.
func (c *conn) do(_ context.Context, t *Target) error {
	req := t.Request
	if t.Prepare != nil {
		if c.req == nil {
			c.req = bytes.Clone(t.Request)
		}
		req = c.req
		t.Prepare(req)
	}
	status, body, keep, err := c.roundTrip(req)
	if err != nil {
		c.close()
		return err
	}
	if !keep {
		c.close()
	}
	if status != 200 {
		return fmt.Errorf("HTTP %d: %s", status, snippet(body))
	}
	for _, e := range t.Expect {
		if !bytes.Contains(body, e) {
			return fmt.Errorf("answer lacks %q: %s", e, snippet(body))
		}
	}
	return nil
}

func (c *conn) broken() bool { return c.c == nil }

type worker struct {
	t          Target
	c          client
	h          *Histogram
	ok, errors int64
	firstErr   string
}

// one sends one request. Its latency counts from since, or from when it is
// sent when since is zero.
func (w *worker) one(ctx context.Context, since time.Time) {
	if w.c.broken() {
		c, err := w.t.dial()
		if err != nil {
			w.fail(fmt.Sprintf("connecting: %v", err))
			time.Sleep(10 * time.Millisecond) // do not spin on a contender that is down
			return
		}
		w.c = c
	}
	start := time.Now()
	if !since.IsZero() {
		start = since
	}
	err := w.c.do(ctx, &w.t)
	elapsed := time.Since(start)
	if err != nil {
		w.fail(err.Error())
		return
	}
	w.ok++
	w.h.Record(elapsed)
}

func (w *worker) fail(msg string) {
	w.errors++
	if w.firstErr == "" {
		w.firstErr = msg
	}
}

func snippet(b []byte) string {
	const n = 300
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
