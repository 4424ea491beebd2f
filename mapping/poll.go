package mapping

// Following a job that an upstream answer starts (202 Accepted and a
// Location): polling it until it is done, fails or takes too long,
// reporting its progress, and canceling it when the task is.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/expr-lang/expr/vm"
)

// job is a job being polled.
type job struct {
	url    *url.URL
	header http.Header // the starting request's, without its body's and its idempotency key
	up     *upstream
}

// awaitJob follows the job that answer (to req) starts, if it starts one,
// and returns the answer to map: the last poll's once done, or the result
// link's. The expression variables' response is the answer being looked at
// (an answer that starts no job is left to the mapping to bind, once).
func (sk *Skill) awaitJob(ctx, callCtx context.Context, m *vm.VM, vars *exprVars, call *Call, p *pollRule,
	req *http.Request, resp *http.Response, body []byte, progress Progress) (*http.Response, []byte, *failure) {
	if p.starts == nil && resp.StatusCode != http.StatusAccepted {
		return resp, body, nil
	}
	sk.bindAnswer(vars, resp, body)
	if p.starts != nil {
		v, err := m.Run(p.starts, vars)
		if err != nil {
			return nil, nil, failed(responseFailure(fmt.Errorf("poll.when: %w", err)))
		}
		if starts, _ := v.(bool); !starts {
			return resp, body, nil
		}
	}
	header := req.Header.Clone()
	header.Del("Content-Type")
	header.Del(idempotencyHeader) // the key is the starting request's: the job's calls are others
	jobURL, f := sk.jobLink(m, vars, p, p.url, req.URL, resp.Header.Get("Location"), "poll.url")
	if f != nil {
		return nil, nil, f
	}
	j := &job{url: jobURL, header: header, up: sk.set.up}
	jobCtx, cancel := context.WithTimeout(callCtx, p.maxWait)
	defer cancel()
	next := p.interval
	wait := max(next, retryAfterOf(resp))
	var said string
	var unread *noNews // why the last poll, if it failed, told nothing of the job
	for {
		if !sleep(jobCtx, wait) {
			return nil, nil, sk.abandonJob(ctx, m, vars, p, j, sk.jobStopped(ctx, p, context.Cause(jobCtx), unread))
		}
		resp, body, nn, f := sk.pollJob(ctx, jobCtx, p, j)
		if f != nil {
			if jobCtx.Err() != nil {
				return nil, nil, sk.abandonJob(ctx, m, vars, p, j, sk.jobStopped(ctx, p, f.err, unread))
			}
			f.err = fmt.Errorf("poll: %w", f.err)
			return nil, nil, sk.abandonJob(ctx, m, vars, p, j, *f)
		}
		next = min(time.Duration(float64(next)*p.backoff), p.maxInterval)
		wait = max(next, retryAfterOf(resp))
		if unread = nn; unread != nil {
			continue // no news: the job may be fine, and is polled again
		}
		sk.bindAnswer(vars, resp, body)
		switch state, err := p.state(m, vars, resp); {
		case err != nil:
			return nil, nil, sk.abandonJob(ctx, m, vars, p, j, responseFailure(err))
		case state == a2a.TaskStateFailed:
			return nil, nil, failed(sk.jobFailure(resp, body))
		case state == a2a.TaskStateCompleted:
			if p.result == nil {
				return resp, body, nil
			}
			return sk.fetchResult(ctx, callCtx, m, vars, p, j)
		}
		if p.message != nil && progress != nil {
			text, err := p.message.text(m, vars)
			if err != nil {
				return nil, nil, sk.abandonJob(ctx, m, vars, p, j, responseFailure(fmt.Errorf("poll.message: %w", err)))
			}
			if text != "" && text != said {
				said = text
				progress.Working(agentMessage(call, []a2a.Part{a2a.TextPart(text)}))
			}
		}
	}
}

// noNews is why a poll told nothing of the job.
type noNews struct {
	public string // for the caller: "the service answered HTTP 503 Service Unavailable"
	err    error
}

// pollJob sends one poll. An answer with a status of the poll's retry, or
// none at all (the connection refused, reset or cut short before the
// poll's timeout), after the retries, is the service's trouble and says
// nothing of the job: nn says why, and resp (if any) is only read for its
// Retry-After. Other failures (an answer too large, a poll past its
// timeout, the job's or the run's time over) are f.
func (sk *Skill) pollJob(ctx, jobCtx context.Context, p *pollRule, j *job) (resp *http.Response, body []byte, nn *noNews, f *failure) {
	pollCtx, cancel := withLimit(jobCtx, sk.callLimit)
	defer cancel()
	resp, body, f = sk.send(ctx, pollCtx, j.get(pollCtx, j.url), p.retry, nil)
	switch {
	case f != nil && (pollCtx.Err() != nil || errors.Is(f.err, errTooLarge)):
		return nil, nil, nil, f
	case f != nil:
		return nil, nil, &noNews{public: "the service is unavailable", err: f.err}, nil
	case slices.Contains(p.retry.statuses, resp.StatusCode):
		return resp, nil, &noNews{public: serviceAnswered(resp.StatusCode),
			err: fmt.Errorf("the job's URL answered HTTP %d", resp.StatusCode)}, nil
	}
	return resp, body, nil, nil
}

// retryAfterOf is the answer's Retry-After, or zero.
func retryAfterOf(resp *http.Response) time.Duration {
	d, _ := retryAfter(resp)
	return d
}

// state says where a poll's answer leaves the job: failed, completed
// (done), or working.
func (p *pollRule) state(m *vm.VM, vars *exprVars, resp *http.Response) (a2a.TaskState, error) {
	if p.failed != nil {
		v, err := m.Run(p.failed, vars)
		if err != nil {
			return 0, fmt.Errorf("poll.failed: %w", err)
		}
		if b, _ := v.(bool); b {
			return a2a.TaskStateFailed, nil
		}
	}
	done := resp.StatusCode != http.StatusAccepted
	if p.done != nil {
		v, err := m.Run(p.done, vars)
		if err != nil {
			return 0, fmt.Errorf("poll.done: %w", err)
		}
		done, _ = v.(bool)
	}
	if done {
		return a2a.TaskStateCompleted, nil
	}
	return a2a.TaskStateWorking, nil
}

// bindAnswer binds an answer as response.
func (sk *Skill) bindAnswer(vars *exprVars, resp *http.Response, body []byte) {
	vars.Response = responseVars{}
	sk.bindResponse(vars, resp, body, mediaTypeOf(resp.Header.Get("Content-Type")))
}

// get is a GET of u with the job's headers.
func (j *job) get(ctx context.Context, u *url.URL) *http.Request {
	return j.request(ctx, http.MethodGet, u)
}

// request is a call of u with the job's headers, which may be sent twice
// when its method is idempotent.
func (j *job) request(ctx context.Context, method string, u *url.URL) *http.Request {
	return (&http.Request{Method: method, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: j.header, Host: u.Host}).WithContext(j.up.resendable(ctx, slices.Contains(idempotent, method)))
}

// jobLink is the URL a template (or, without one, the fallback, a
// header's value) gives, resolved against base, on an origin the skill
// may call.
func (sk *Skill) jobLink(m *vm.VM, vars *exprVars, p *pollRule, t *template, base *url.URL, fallback, key string) (*url.URL, *failure) {
	link := fallback
	if t != nil {
		v, err := t.text(m, vars)
		if err != nil {
			return nil, failed(responseFailure(fmt.Errorf("%s: %w", key, err)))
		}
		link = v
	}
	if link == "" {
		return nil, failed(failure{state: a2a.TaskStateFailed, stage: "response",
			public: "failed: the service did not say where to follow its job.",
			err:    fmt.Errorf("%s: the answer gives no URL", key)})
	}
	ref, err := url.Parse(link)
	if err != nil {
		return nil, failed(responseFailure(fmt.Errorf("%s: %w", key, err)))
	}
	u := base.ResolveReference(ref)
	u.Fragment, u.RawFragment = "", ""
	if (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || !sk.mayCall(p, u) {
		return nil, failed(failure{state: a2a.TaskStateFailed, stage: "response",
			public: "failed: the service pointed its job to another address, which this skill may not call.",
			err:    fmt.Errorf("%s: %s is not on the upstream's origin nor in poll.allow_origins", key, u.Redacted())})
	}
	return u, nil
}

// mayCall says whether a job's URL is on the upstream's origin or on one
// the poll section allows.
func (sk *Skill) mayCall(p *pollRule, u *url.URL) bool {
	o := origin(u)
	return o == sk.set.up.origin || slices.Contains(p.origins, o)
}

// fetchResult GETs the result link of a finished job. An answer with a
// status of the poll's retry, after the retries, is the service's trouble,
// never the job's result.
func (sk *Skill) fetchResult(ctx, callCtx context.Context, m *vm.VM, vars *exprVars, p *pollRule, j *job) (*http.Response, []byte, *failure) {
	u, f := sk.jobLink(m, vars, p, p.result, j.url, "", "poll.result")
	if f != nil {
		return nil, nil, f
	}
	resultCtx, cancel := withLimit(callCtx, sk.callLimit)
	defer cancel()
	resp, body, f := sk.send(ctx, resultCtx, j.get(resultCtx, u), p.retry, nil)
	if f == nil && slices.Contains(p.retry.statuses, resp.StatusCode) {
		f = failed(failure{state: a2a.TaskStateFailed, stage: "upstream",
			public: "failed: the result of the service's job could not be fetched: " + serviceAnswered(resp.StatusCode) + ".",
			err:    fmt.Errorf("the result's URL answered HTTP %d", resp.StatusCode)})
	}
	if f != nil {
		f.err = fmt.Errorf("poll.result: %w", f.err)
		return nil, nil, f
	}
	return resp, body, nil
}

// jobFailure is a job its poll answer says has failed.
func (sk *Skill) jobFailure(resp *http.Response, body []byte) failure {
	detail := ""
	if sk.errorDetail {
		if d := errorDetail(body, mediaTypeOf(resp.Header.Get("Content-Type"))); d != "" {
			detail = fmt.Sprintf(" It said: %q.", d)
		}
	}
	return failure{state: a2a.TaskStateFailed, stage: "upstream", public: "failed: the service's job failed." + detail,
		err: fmt.Errorf("poll: the job failed (HTTP %d)", resp.StatusCode)}
}

// jobStopped is why polling stopped before the job ended: the task was
// canceled, or the job ran past max_wait (or the run past its deadline),
// with its status unread if the last poll told nothing of it.
func (sk *Skill) jobStopped(ctx context.Context, p *pollRule, cause error, unread *noNews) failure {
	if ctx.Err() != nil {
		return sk.transportFailure(ctx, ctx, cause)
	}
	f := failure{state: a2a.TaskStateFailed, stage: "upstream",
		public: fmt.Sprintf("failed: the service's job did not finish within %s.", p.maxWait),
		err:    fmt.Errorf("poll: %w", cause)}
	if unread != nil {
		f.public = fmt.Sprintf("failed: the service's job did not finish within %s, and its status could not be read: %s.",
			p.maxWait, unread.public)
		f.err = fmt.Errorf("poll: %w; the job's status could not be read: %w", cause, unread.err)
	}
	return f
}

// abandonJob stops following a job that has not ended, for f: the task was
// canceled, the job ran too long, or a poll failed. The agent will not look
// at the job again, so its cancel call, if any, is sent.
func (sk *Skill) abandonJob(ctx context.Context, m *vm.VM, vars *exprVars, p *pollRule, j *job, f failure) *failure {
	if p.cancel != nil {
		if err := sk.cancelJob(ctx, m, vars, p, j); err != nil {
			f.err = errors.Join(f.err, fmt.Errorf("poll.cancel: %w", err))
		}
	}
	return &f
}

// cancelJob sends the job's cancel call. The run's context may be over, so
// the call has a context and a timeout of its own.
func (sk *Skill) cancelJob(ctx context.Context, m *vm.VM, vars *exprVars, p *pollRule, j *job) error {
	u := j.url
	if p.cancel.url != nil {
		var f *failure
		if u, f = sk.jobLink(m, vars, p, p.cancel.url, j.url, "", "poll.cancel.url"); f != nil {
			return f.err
		}
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cancel.timeout)
	defer cancel()
	req := j.request(cctx, p.cancel.method, u)
	resp, err := sk.transport.RoundTrip(req) // counted and traced like every call of the skill
	if err != nil {
		return err
	}
	discard(resp)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("the service answered HTTP %d", resp.StatusCode)
	}
	return nil
}
