package mapping

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// Run gathers the call's arguments from its messages (History, then
// Message), calls the upstream (each step in turn) and maps the answer to an
// Outcome. A missing or unusable argument stops it before any call with an
// input-required Outcome that asks for it; the next Run on the task, with
// the follow-up message last in History, takes the answer. Run never
// panics: every failure becomes a failed (or rejected, or canceled)
// Outcome whose Err names the skill. Canceling ctx aborts the upstream call.
func (sk *Skill) Run(ctx context.Context, call Call, progress Progress) (out Outcome) {
	m := sk.set.getVM()
	e := envPool.Get().(*env)
	stage := "request"
	defer func() {
		if r := recover(); r != nil {
			out = sk.fail(&call, failure{state: a2a.TaskStateFailed, stage: stage,
				public: "failed unexpectedly.", err: fmt.Errorf("panic: %v", r)})
		}
		*e = env{}
		envPool.Put(e)
		sk.set.vms.Put(m)
	}()

	sk.bindRequest(e, &call)
	args, problems := sk.gatherArgs(&call, e)
	if len(problems) > 0 {
		return sk.askOutcome(&call, problems)
	}
	e.Args = args
	callCtx, cancel := context.WithTimeout(ctx, sk.Timeout)
	defer cancel()
	for i := 0; ; i++ { // a loaded skill has at least one step; the last one returns
		st := &sk.steps[i]
		stage = "request"
		req, err := st.request.newRequest(callCtx, sk.set.up, m, e)
		if err != nil {
			return sk.fail(&call, requestFailure(err))
		}
		if len(sk.ForwardHeaders) > 0 {
			forward(req, sk.ForwardHeaders, call.Headers)
		}
		if i == 0 && progress != nil && sk.working != nil {
			if text, err := sk.working.text(m, e); err == nil && text != "" {
				progress.Working(agentMessage(&call, []a2a.Part{a2a.TextPart(text)}))
			}
		}
		stage = "upstream"
		resp, body, f := sk.send(ctx, callCtx, req, st.request.retry)
		if f != nil {
			return sk.fail(&call, *f)
		}
		stage = "response"
		if i == len(sk.steps)-1 {
			return sk.mapResponse(m, e, &call, st, resp, body)
		}
		if out, done := sk.stepOutcome(m, e, &call, st, resp, body); done {
			return out
		}
	}
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

// failure is a run that went wrong: the state it leaves the task in, what
// the caller is told (after "Skill <id> ") and what the log is told.
type failure struct {
	state  a2a.TaskState
	stage  string
	public string
	err    error
}

func (sk *Skill) fail(call *Call, f failure) Outcome {
	text := fmt.Sprintf("Skill %q %s", sk.ID, f.public)
	return Outcome{State: f.state, Message: agentMessage(call, []a2a.Part{a2a.TextPart(text)}),
		Err: &RunError{Skill: sk.ID, Stage: f.stage, Err: f.err}}
}

func requestFailure(err error) failure {
	var in *inputError
	var cred *credentialError
	switch {
	case errors.As(err, &cred): // first: a credential's own error may be an input error
		return failure{state: a2a.TaskStateFailed, stage: "request",
			public: "could not apply its credentials for the service, so the request was not sent.", err: err}
	case errors.As(err, &in):
		return failure{state: a2a.TaskStateRejected, stage: "request", public: "cannot use this input: " + in.msg + ".", err: err}
	}
	return failure{state: a2a.TaskStateFailed, stage: "request", public: "could not build its request.", err: err}
}

func responseFailure(err error) failure {
	return failure{state: a2a.TaskStateFailed, stage: "response", public: "could not read the service's answer.", err: err}
}

// transportFailure tells a canceled run from a slow service and from one
// that cannot be reached. The upstream's address stays in the log.
func (sk *Skill) transportFailure(parent, callCtx context.Context, err error) failure {
	f := failure{state: a2a.TaskStateFailed, stage: "upstream", err: err}
	switch {
	case errors.Is(parent.Err(), context.Canceled):
		f.state, f.public = a2a.TaskStateCanceled, "was canceled."
		f.err = fmt.Errorf("%w (cause: %v)", err, context.Cause(parent))
	case parent.Err() != nil:
		f.public = "timed out: the service did not answer in time."
	case callCtx.Err() != nil:
		f.public = fmt.Sprintf("timed out: the service did not answer within %s.", sk.Timeout)
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

// newTransport is the one transport of an upstream: keep-alive with a pool
// large enough for many concurrent callers, no proxy from the environment
// (a sidecar talks to its neighbour), no transparent compression (it costs
// CPU on both sides of a loopback), and no redirects, which RoundTrip does
// not follow, so credentials never travel to another host.
func newTransport(maxIdlePerHost int) *http.Transport {
	return &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   maxIdlePerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
}
