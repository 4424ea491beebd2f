package mapping

// Running a skill: the variables known before any call, gathering
// arguments, and each upstream call in turn.

import (
	"context"
	"fmt"
	"net/http"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/upstreamauth"
	"github.com/expr-lang/expr/vm"
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
	vars := varsPool.Get().(*exprVars)
	stage := "request"
	defer func() {
		if r := recover(); r != nil {
			out = sk.fail(&call, failure{state: a2a.TaskStateFailed, stage: stage,
				public: "failed unexpectedly.", err: fmt.Errorf("panic: %v", r), agentFault: true})
		}
		*vars = exprVars{}
		varsPool.Put(vars)
		sk.set.vms.Put(m)
	}()

	sk.bindRequest(vars, &call)
	args, problems := sk.gatherArgs(&call, vars)
	if len(problems) > 0 {
		return sk.askOutcome(&call, problems)
	}
	vars.Args = args
	if sk.ExchangesTokens() {
		if call.Caller.Token == "" {
			return sk.fail(&call, failure{state: a2a.TaskStateFailed, stage: "request",
				public: "acts on behalf of its caller, who presented no bearer token the agent validated, so the request was not sent.",
				err:    upstreamauth.ErrNoSubject})
		}
		ctx = upstreamauth.WithSubject(ctx, upstreamauth.Subject{Token: call.Caller.Token, Expires: call.Caller.TokenExpires})
	}
	callCtx, cancel := withLimit(ctx, sk.runLimit)
	defer cancel()
	for i := 0; ; i++ { // a loaded skill has at least one step; the last one returns
		st := &sk.steps[i]
		stage = "request"
		req, err := st.request.newRequest(callCtx, sk.set.up, m, vars)
		if err != nil {
			return sk.fail(&call, requestFailure(err))
		}
		if len(sk.ForwardHeaders) > 0 {
			forward(req, sk.ForwardHeaders, call.Headers)
		}
		if k := st.request.idempotencyKey; k != nil {
			if err := k.set(req, m, vars, &call, st.name); err != nil {
				return sk.fail(&call, requestFailure(err))
			}
		}
		if i == 0 && progress != nil && sk.working != nil {
			if text, err := sk.working.text(m, vars); err == nil && text != "" {
				progress.Working(agentMessage(&call, []a2a.Part{a2a.TextPart(text)}))
			}
		}
		stage = "upstream"
		last := i == len(sk.steps)-1
		resp, body, streaming, f := sk.exchange(ctx, callCtx, m, vars, &call, st, req, last, progress)
		if f != nil {
			return sk.fail(&call, *f)
		}
		stage = "response"
		if streaming {
			return sk.streamOutcome(ctx, callCtx, m, vars, &call, resp, progress)
		}
		if last {
			return sk.mapResponse(m, vars, &call, st, resp, body)
		}
		if out, done := sk.stepOutcome(m, vars, &call, st, resp, body); done {
			return out
		}
	}
}

// exchange sends a step's request and returns the answer to map: for a
// request that starts a polled job, the job's. The last step's answer that
// the skill's stream section reads comes back with its body unread
// (streaming), for the caller to read and close.
func (sk *Skill) exchange(ctx, callCtx context.Context, m *vm.VM, vars *exprVars, call *Call, st *step, req *http.Request,
	last bool, progress Progress) (resp *http.Response, body []byte, streaming bool, f *failure) {
	var keepOpen func(*http.Response) bool
	var check *streamCheck // only for a skill that streams: a run without costs nothing
	if last && sk.stream != nil {
		check = &streamCheck{sk: sk, m: m, vars: vars}
		keepOpen = check.keepOpen
	}
	// callCtx, with what newRequest said of the request: may it be resent
	sendCtx := req.Context()
	if p := st.request.poll; p != nil { // the run's deadline leaves room for the job; the call has timeout
		if p.cancel != nil {
			// A job being started is not abandoned halfway: a run canceled
			// meanwhile waits for the job's address, to cancel it
			// (awaitJob), rather than leave a job nobody follows.
			sendCtx = context.WithoutCancel(sendCtx)
		}
		var cancel context.CancelFunc
		sendCtx, cancel = withLimit(sendCtx, sk.callLimit)
		defer cancel()
		req = req.WithContext(sendCtx)
	}
	resp, body, f = sk.send(ctx, sendCtx, req, st.request.retry, keepOpen)
	switch {
	case check != nil && check.err != nil:
		resp.Body.Close()
		return nil, nil, false, failed(responseFailure(check.err))
	case check != nil && check.streaming:
		return resp, nil, true, nil
	case f == nil && st.request.poll != nil:
		resp, body, f = sk.awaitJob(ctx, callCtx, m, vars, call, st.request.poll, req, resp, body, progress)
	}
	return resp, body, false, f
}

// streamCheck asks the stream section whether an answer is a stream.
type streamCheck struct {
	sk        *Skill
	m         *vm.VM
	vars      *exprVars
	streaming bool
	err       error // stream.when failed
}

func (c *streamCheck) keepOpen(resp *http.Response) bool {
	c.streaming, c.err = c.sk.stream.accepts(c.sk, c.m, c.vars, resp)
	return c.streaming || c.err != nil
}

// bindRequest fills the variables known before the upstream call from call.
func (sk *Skill) bindRequest(vars *exprVars, call *Call) {
	vars.Config = sk.config
	vars.Task = taskVars{ID: call.TaskID, ContextID: call.ContextID}
	vars.Caller = callerVars{Subject: call.Caller.Subject, Scopes: call.Caller.Scopes, Claims: call.Caller.Claims}
	bindMessage(vars, call.Message, sk.needs)
}
