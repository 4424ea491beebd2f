package mapping

// Sending an upstream request: retries with backoff, and reading the body
// within its limit.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/upstreamauth"
)

// send sends req, and sends it again as its retry policy allows: after a
// transport error or a status the policy names, waiting longer each time,
// never past the skill's deadline. It returns the answer with its body
// read, or why there is none; an answer keepOpen (when set) says yes to
// keeps its body unread, for the caller to read and close.
func (sk *Skill) send(parent, callCtx context.Context, req *http.Request, p *retryPolicy, keepOpen func(*http.Response) bool) (*http.Response, []byte, *failure) {
	attempts := 1
	if p != nil {
		attempts = p.attempts
	}
	for attempt := 1; ; attempt++ {
		resp, err := sk.transport.RoundTrip(req)
		retry := attempt < attempts && callCtx.Err() == nil &&
			(err != nil || slices.Contains(p.statuses, resp.StatusCode))
		if retry {
			wait := p.wait(attempt, resp)
			if dl, ok := callCtx.Deadline(); !ok || time.Until(dl) > wait {
				if resp != nil {
					discard(resp)
				}
				if !sleep(callCtx, wait) {
					f := sk.transportFailure(parent, callCtx, context.Cause(callCtx))
					return nil, nil, &f
				}
				req = rewind(req)
				continue
			}
		}
		if err != nil {
			f := sk.transportFailure(parent, callCtx, err)
			return nil, nil, &f
		}
		if keepOpen != nil && keepOpen(resp) {
			return resp, nil, nil
		}
		body, err := readBody(resp, sk.MaxResponseBytes)
		if err != nil {
			f := sk.bodyFailure(parent, callCtx, err)
			return nil, nil, &f
		}
		return resp, body, nil
	}
}

// wait is the pause before attempt+1: backoff doubled after each attempt,
// or the answer's Retry-After, at most maxBackoff.
func (p *retryPolicy) wait(attempt int, resp *http.Response) time.Duration {
	d := p.backoff << (attempt - 1)
	if d <= 0 || d > p.maxBackoff {
		d = p.maxBackoff
	}
	if after, ok := retryAfter(resp); ok {
		d = min(after, p.maxBackoff)
	}
	return d
}

// retryAfter is the wait an answer's Retry-After header asks for, given in
// seconds or as an HTTP date; ok is false when there is none.
func retryAfter(resp *http.Response) (d time.Duration, ok bool) {
	if resp == nil {
		return 0, false
	}
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return time.Duration(min(secs, math.MaxInt32)) * time.Second, true // no overflow
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// discard reads a little of an unwanted body, so the connection can be
// kept, and closes it.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// rewind is req ready to be sent again, with a fresh body.
func rewind(req *http.Request) *http.Request {
	r := req.Clone(req.Context())
	if req.GetBody != nil {
		r.Body, _ = req.GetBody() // bytes.Reader bodies: never fails
	}
	return r
}

// bodyFailure is a body that could not be read: too large, or cut short.
func (sk *Skill) bodyFailure(parent, callCtx context.Context, err error) failure {
	if errors.Is(err, errTooLarge) {
		return failure{state: a2a.TaskStateFailed, stage: "upstream",
			public: fmt.Sprintf("failed: the service's answer is larger than the limit of %s.", formatBytes(sk.MaxResponseBytes)),
			err:    fmt.Errorf("response body: %w (%d bytes)", err, sk.MaxResponseBytes)}
	}
	return sk.transportFailure(parent, callCtx, err)
}

// transportFailure tells a canceled run from a slow service and from one
// that cannot be reached. The upstream's address stays in the log.
func (sk *Skill) transportFailure(parent, callCtx context.Context, err error) failure {
	f := failure{state: a2a.TaskStateFailed, stage: "upstream", err: err}
	var limit *timeLimit
	var noToken *upstreamauth.Error
	switch {
	case errors.Is(parent.Err(), context.Canceled):
		f.state, f.public = a2a.TaskStateCanceled, "was canceled."
		f.err = fmt.Errorf("%w (cause: %v)", err, context.Cause(parent))
	case parent.Err() != nil:
		f.public = "timed out: the service did not answer in time."
	case errors.As(context.Cause(callCtx), &limit): // nil while callCtx runs
		f.public = fmt.Sprintf("timed out: the service did not answer within %s.", limit.d)
	case errors.As(err, &noToken): // fails closed, as a credential header does
		f.stage, f.public = "request", "could not get a token for the service, so the request was not sent."
	default:
		var nerr net.Error
		if errors.As(err, &nerr) && nerr.Timeout() {
			f.public = "timed out: the service did not answer in time."
		} else {
			f.public = "failed: the service is unavailable."
		}
	}
	return f
}

var errTooLarge = errors.New("larger than the limit")

// timeLimit is why a context made by withLimit ended: its limit passed. A
// call's context may end by its own limit (timeout) or by the run's (which
// has room for polled jobs), and the caller is told which.
type timeLimit struct{ d time.Duration }

func (e *timeLimit) Error() string { return fmt.Sprintf("the time limit of %s passed", e.d) }

func (e *timeLimit) Unwrap() error { return context.DeadlineExceeded }

// withLimit is ctx with limit's deadline from now, and limit its cause.
func withLimit(ctx context.Context, limit *timeLimit) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, limit.d, limit)
}

// readBody reads at most limit bytes of a body, and closes it.
func readBody(resp *http.Response, limit int64) ([]byte, error) {
	defer resp.Body.Close()
	if resp.ContentLength > limit {
		return nil, errTooLarge
	}
	size := int64(512)
	if resp.ContentLength >= 0 {
		size = resp.ContentLength + 1 // room for the read that sees EOF
	}
	buf := make([]byte, 0, min(size, limit+1))
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		room := min(cap(buf), int(limit)+1)
		n, err := resp.Body.Read(buf[len(buf):room])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, errTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// formatBytes writes a size the way the YAML would: 10 MiB, 512 KiB, 100 bytes.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
