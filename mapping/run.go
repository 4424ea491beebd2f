package mapping

// Running a skill: gathering arguments, each upstream call in turn, and
// the failures a run can end in.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/expr-lang/expr/file"
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
				public: "failed unexpectedly.", err: fmt.Errorf("panic: %v", r)})
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
	callCtx, cancel := withLimit(ctx, sk.runTimeout)
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
	sendCtx := callCtx
	if st.request.poll != nil { // the run's deadline leaves room for the job; the call has timeout
		var cancel context.CancelFunc
		sendCtx, cancel = withLimit(callCtx, sk.Timeout)
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
	return failure{state: a2a.TaskStateFailed, stage: "request", public: "could not build its request" + exprDetail(err) + ".", err: err}
}

func responseFailure(err error) failure {
	return failure{state: a2a.TaskStateFailed, stage: "response", public: "could not read the service's answer" + exprDetail(err) + ".", err: err}
}

// exprDetail tells the caller, after ": ", why an expression failed at run
// time: where (the rule and field), expr's message and the expression, on
// one line, so that a skill's author sees the mistake in the task itself.
// Values in the message are elided (quoted text, and what stands in
// parentheses unless it is a position, a type or a length): they may come
// from the service's answer or the skill's config; so are the string
// literals of the expression. Other failures add
// nothing (their detail, which may name the upstream, is for the log).
func exprDetail(err error) string {
	var fe *file.Error
	if !errors.As(err, &fe) {
		return ""
	}
	detail, _, _ := strings.Cut(err.Error(), "\n")
	detail = quotedText.ReplaceAllString(detail, `"…"`)
	detail = parenthesized.ReplaceAllStringFunc(detail, func(p string) string {
		if keptInParens.MatchString(p[1 : len(p)-1]) {
			return p
		}
		return "(…)"
	})
	if src, ok := strings.CutPrefix(fe.Snippet, "\n | "); ok {
		src, _, _ = strings.Cut(src, "\n")
		// The expression's own literals are elided too: the caller sees
		// where it failed, not what the skill's author wrote in it.
		detail += " in " + literalText.ReplaceAllString(quotedText.ReplaceAllString(src, `"…"`), `'…'`)
	}
	if r := []rune(detail); len(r) > maxExprDetail {
		detail = string(r[:maxExprDetail]) + "…"
	}
	return ": " + detail
}

// maxExprDetail bounds, in characters, what exprDetail adds to a message.
const maxExprDetail = 300

var (
	quotedText    = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	literalText   = regexp.MustCompile(`'(?:[^'\\]|\\.)*'`)
	parenthesized = regexp.MustCompile(`\([^()]*\)`)
	keptInParens  = regexp.MustCompile(`^(\d+:\d+|array length is \d+|(type )?(<nil>|bool|u?int\d*|float\d*|string|\[\].*|map\[.*|interface \{\}|time\.\w+))$`)
)
