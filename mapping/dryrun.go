package mapping

// The dry run: what a skills file would do with one message — the skill
// chosen and why, the arguments, the exact upstream requests and the A2A
// answer — with the upstream's answers taken from samples, so that nothing
// goes to the network unless asked.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// DryRunInput is what a dry run works from.
type DryRunInput struct {
	// Sample is the message, as the server would decode it.
	Sample *SampleMessage
	// Responses answer the upstream calls in order, a retry counting as a
	// call. When they run out the run stops at the call that has none,
	// and the report shows the requests made so far.
	Responses []SampleResponse
	// Live sends the calls to the upstream for real, through
	// Options.Transport when it is set, else a transport of the dry run's
	// own. Responses must then be empty.
	Live bool
}

// Placeholders for what the server would generate: the dry run's answer is
// the same for the same input.
const (
	DryRunTaskID    = "dry-run-task"
	DryRunContextID = "dry-run-context"
)

// Report is what a dry run found. Write renders it as text.
type Report struct {
	Sample *SampleMessage
	// Skill is the skill chosen; nil when none was.
	Skill  *Skill
	Reason SelectReason
	// Predicates are the match predicates tried, in file order, when the
	// message names no skill and the file has more than one.
	Predicates []PredicateResult
	// Selection says why no skill was chosen.
	Selection *SelectionError
	// Refusal is the protocol error the server would answer before running
	// anything (a message not from the user, output modes the skill cannot
	// produce); nil when it would run the skill.
	Refusal *a2a.Error
	// Arguments are the values gathered from the message, and Problems
	// the arguments missing or unusable (the run asks for them instead of
	// calling the upstream), by name.
	Arguments map[string]any
	Problems  []ArgumentProblem
	// Exchanges are the upstream calls, in order; credential values are
	// masked.
	Exchanges []*Exchange
	// Progress holds the intermediate updates (working messages).
	Progress []*a2a.Message
	// Stopped says the sample responses ran out: Outcome and Result are
	// not known.
	Stopped bool
	// UnusedResponses counts the sample responses no call took.
	UnusedResponses int
	// Outcome is where the run left the task; nil when Stopped or Refusal.
	Outcome *Outcome
	// Result is the JSON-RPC answer the server would send, indented, in
	// the sample's version; nil when Stopped.
	Result []byte

	argOrder []string
}

// PredicateResult is one match predicate tried on the message.
type PredicateResult struct {
	Skill  string
	Source string // the predicate as written
	Holds  bool
	Err    error // it failed at run time (and so does not hold)
}

// ArgumentProblem is an argument a call cannot go on without.
type ArgumentProblem struct {
	Name string
	// Why is "" for a missing argument, else what is wrong with its value.
	Why string
}

// Exchange is one upstream call: the request as sent, and what came back.
type Exchange struct {
	Method string
	URL    string
	// Header holds the request's headers, credential values masked.
	Header http.Header
	Body   []byte
	// Response is the answer; nil when there was none.
	Response *RecordedResponse
	// Err is why a live call got no answer.
	Err error
}

// RecordedResponse is an upstream answer as the run saw it.
type RecordedResponse struct {
	Status int
	Header http.Header
	// Body is the body as far as the run read it.
	Body []byte
	// Source names the sample it came from; "" for a live answer.
	Source string
}

// DryRun loads the skills file at path with opts and runs in.Sample's
// message through it as the server would, the upstream answered by
// in.Responses (or, with in.Live, by the upstream itself). The error is a
// skills file that does not load, or input that cannot be used; everything
// the server would answer, errors included, is in the Report.
func DryRun(ctx context.Context, path string, opts Options, in DryRunInput) (*Report, error) {
	if in.Sample == nil || in.Sample.Message == nil {
		return nil, fmt.Errorf("mapping: dry run: no message")
	}
	if in.Live && len(in.Responses) > 0 {
		return nil, fmt.Errorf("mapping: dry run: sample responses and a live upstream exclude each other")
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	t := &dryTransport{responses: in.Responses, stop: stop}
	if in.Live {
		t.live = opts.Transport
		if t.live == nil {
			own := newTransport(2)
			defer own.CloseIdleConnections()
			t.live = own
		}
	}
	// Values from the environment are masked wherever they could show:
	// they are typically keys and tokens.
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var secrets []string
	opts.LookupEnv = func(name string) (string, bool) {
		v, ok := lookup(name)
		if ok && len(v) >= minSecretLen {
			secrets = append(secrets, v)
		}
		return v, ok
	}
	opts.Transport = t
	skills, err := Load(path, opts)
	if err != nil {
		return nil, err
	}
	r := &Report{Sample: in.Sample}
	r.run(ctx, skills, t)
	r.UnusedResponses = len(t.responses) - t.next
	r.Exchanges = t.exchanges
	if r.Skill != nil {
		r.mask(r.Skill.credentialHeaders(), secrets)
	}
	return r, nil
}

// minSecretLen is the shortest environment value masked: shorter ones
// (a port, a flag) are not secrets, and masking them would hide too much.
const minSecretLen = 4

func (r *Report) run(ctx context.Context, skills *Skills, t *dryTransport) {
	msg := r.Sample.Message
	if msg.Role != a2a.RoleUser {
		r.refuse(a2a.InvalidParams("params.message.role", "a message sent to an agent must have the user role"))
		return
	}
	sk, reason, selErr := skills.SelectWithReason(msg)
	r.Skill, r.Reason, r.Selection = sk, reason, selErr
	if reason == SelectedByMatch || (reason == NotSelected && !selErr.Named) {
		r.Predicates = skills.tryPredicates(msg)
	}
	if cfg := r.Sample.Configuration; sk != nil && cfg != nil && !sk.CanProduce(cfg.AcceptedOutputModes) {
		r.refuse(a2a.ContentTypeNotSupported(fmt.Sprintf("skill %q produces %s; the request accepts only %s",
			sk.ID, strings.Join(sk.OutputModes, ", "), strings.Join(cfg.AcceptedOutputModes, ", "))))
		return
	}
	taskID, contextID := msg.TaskID, msg.ContextID
	if taskID == "" {
		taskID = DryRunTaskID
	}
	if contextID == "" {
		contextID = DryRunContextID
	}
	// A skill that answers with a message has no task; the answer still
	// belongs to a context.
	user := *msg
	user.ContextID = contextID
	call := Call{Message: &user, ContextID: contextID}
	if sk == nil || !sk.ReturnsMessage {
		user.TaskID = taskID
		call.TaskID, call.History = taskID, []a2a.Message{user}
	}
	var out Outcome
	progress := &dryProgress{}
	if sk == nil {
		out = Outcome{State: a2a.TaskStateRejected,
			Message: &a2a.Message{Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(selErr.Error())}}}
	} else {
		r.gatherArguments(sk, &call)
		out = sk.Run(ctx, call, progress)
		r.Progress = progress.working
		if t.stopped {
			r.Stopped = true
			return
		}
	}
	r.Outcome = &out
	r.answer(sk, &user, &out, progress)
}

// tryPredicates runs every match predicate on msg, for the report.
func (s *Skills) tryPredicates(msg *a2a.Message) []PredicateResult {
	if len(s.matching) == 0 {
		return nil
	}
	m := s.getVM()
	defer s.vms.Put(m)
	vars := &exprVars{}
	bindMessage(vars, msg, s.matchNeeds)
	out := make([]PredicateResult, len(s.matching))
	for i, sk := range s.matching {
		vars.Config = sk.config
		v, err := m.Run(sk.match, vars)
		out[i] = PredicateResult{Skill: sk.ID, Source: strings.TrimSpace(sk.match.Source().String()), Holds: err == nil && v == true, Err: err}
	}
	return out
}

// gatherArguments records the arguments the run will read.
func (r *Report) gatherArguments(sk *Skill, call *Call) {
	vars := &exprVars{}
	sk.bindRequest(vars, call)
	args, problems := sk.gatherArgs(call, vars)
	r.Arguments = args
	for _, p := range problems {
		r.Problems = append(r.Problems, ArgumentProblem{Name: p.arg.name, Why: p.why})
	}
	if sk.schema != nil && sk.schema.declared {
		for i := range sk.schema.args {
			r.argOrder = append(r.argOrder, sk.schema.args[i].name)
		}
	}
}

// credentialHeaders names the headers whose values the report masks: the
// skill's credentials, and those that carry the caller's identity.
func (sk *Skill) credentialHeaders() []string {
	names := []string{"Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie"}
	for i := range sk.steps {
		for _, h := range sk.steps[i].request.credentials {
			if !slices.Contains(names, h) {
				names = append(names, h)
			}
		}
	}
	return names
}

const masked = "***"

// mask hides credential header values and any environment value in the
// recorded requests and responses.
func (r *Report) mask(credentials, secrets []string) {
	hide := func(s string) string {
		for _, secret := range secrets {
			s = strings.ReplaceAll(s, secret, masked)
		}
		return s
	}
	maskHeader := func(h http.Header) {
		for name, values := range h {
			for i, v := range values {
				if slices.Contains(credentials, name) {
					values[i] = maskCredential(v)
				} else {
					values[i] = hide(v)
				}
			}
		}
	}
	for _, x := range r.Exchanges {
		maskHeader(x.Header)
		if q := strings.IndexByte(x.URL, '?'); q >= 0 {
			query := x.URL[q+1:]
			for _, secret := range secrets {
				query = strings.ReplaceAll(query, url.QueryEscape(secret), masked)
			}
			x.URL = x.URL[:q+1] + hide(query)
		}
		if x.Response != nil {
			maskHeader(x.Response.Header)
		}
	}
}

// maskCredential hides a credential's value, keeping an authorization
// scheme ("Bearer ***") so the report still says what kind it is.
func maskCredential(v string) string {
	if scheme, _, ok := strings.Cut(v, " "); ok && scheme != "" && !strings.ContainsAny(scheme, "=:") {
		return scheme + " " + masked
	}
	return masked
}

// refuse records a protocol error the server answers before running.
func (r *Report) refuse(e *a2a.Error) {
	r.Refusal = e
	r.Result = indentJSON(a2a.AppendError(nil, r.Sample.Version, r.requestID(), e))
}

func (r *Report) requestID() json.RawMessage {
	if r.Sample.RequestID != nil {
		return r.Sample.RequestID
	}
	return json.RawMessage("1")
}

// answer builds the SendMessage answer the server would send: the task,
// or the message of a skill that answers with one.
func (r *Report) answer(sk *Skill, user *a2a.Message, out *Outcome, progress *dryProgress) {
	n := 0
	stamp := func(m *a2a.Message) a2a.Message {
		n++
		s := *m
		s.Role = a2a.RoleAgent
		s.MessageID = "dry-run-message-" + strconv.Itoa(n)
		s.TaskID, s.ContextID = user.TaskID, user.ContextID
		return s
	}
	var resp a2a.StreamResponse
	if sk != nil && sk.ReturnsMessage {
		reply := a2a.Message{}
		if out.Message != nil {
			reply = *out.Message
		}
		reply.Parts = slices.Clone(reply.Parts)
		for _, art := range out.Artifacts {
			reply.Parts = append(reply.Parts, art.Parts...)
		}
		reply = stamp(&reply)
		resp.Message = &reply
	} else {
		task := &a2a.Task{ID: user.TaskID, ContextID: user.ContextID, History: []a2a.Message{*user}}
		if sk != nil {
			task.Metadata = map[string]any{MetadataSkillKey: sk.ID}
		}
		for _, w := range progress.working {
			task.History = append(task.History, stamp(w))
		}
		for i, art := range append(slices.Clone(progress.artifacts), out.Artifacts...) {
			art.ArtifactID = "dry-run-artifact-" + strconv.Itoa(i+1)
			task.Artifacts = append(task.Artifacts, art)
		}
		task.Status.State = out.State
		if out.Message != nil {
			task.History = append(task.History, stamp(out.Message))
			task.Status.Message = &task.History[len(task.History)-1]
		}
		resp.Task = task
	}
	b, err := a2a.AppendResult(nil, r.Sample.Version, r.requestID(), &resp)
	if err != nil {
		b = a2a.AppendError(nil, r.Sample.Version, r.requestID(), a2a.InternalError(err.Error()))
	}
	r.Result = indentJSON(b)
}

func indentJSON(b []byte) []byte {
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return b
	}
	return out.Bytes()
}

// dryProgress records a run's intermediate updates.
type dryProgress struct {
	working   []*a2a.Message
	artifacts []a2a.Artifact
}

func (p *dryProgress) Working(msg *a2a.Message) { p.working = append(p.working, msg) }
func (p *dryProgress) Artifact(a a2a.Artifact)  { p.artifacts = append(p.artifacts, a) }

// dryTransport records every request and answers it with the next sample
// response, or sends it to the live upstream. Runs are sequential, so it
// needs no lock.
type dryTransport struct {
	responses []SampleResponse
	next      int
	live      http.RoundTripper
	stop      context.CancelFunc
	stopped   bool
	exchanges []*Exchange
}

// errNoSample stops a run whose sample responses ran out.
var errNoSample = fmt.Errorf("dry run: no sample response left: %w", context.Canceled)

func (t *dryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	x := &Exchange{Method: req.Method, URL: req.URL.String(), Header: req.Header.Clone()}
	if x.Header == nil {
		x.Header = http.Header{}
	}
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		x.Body, err = io.ReadAll(body)
		body.Close()
		if err != nil {
			return nil, err
		}
	}
	t.exchanges = append(t.exchanges, x)
	if t.live != nil {
		resp, err := t.live.RoundTrip(req)
		if err != nil {
			x.Err = err
			return nil, err
		}
		x.Response = &RecordedResponse{Status: resp.StatusCode, Header: resp.Header.Clone()}
		resp.Body = &recordingBody{ReadCloser: resp.Body, rec: x.Response}
		return resp, nil
	}
	if t.next >= len(t.responses) {
		// Cancel the run, so that no retry waits for an answer that will
		// not come.
		t.stopped = true
		t.stop()
		return nil, errNoSample
	}
	s := &t.responses[t.next]
	t.next++
	header := s.Header.Clone()
	if header == nil {
		header = http.Header{}
	}
	x.Response = &RecordedResponse{Status: s.Status, Header: header.Clone(), Body: s.Body, Source: s.Source}
	return &http.Response{
		Status:     strconv.Itoa(s.Status) + " " + http.StatusText(s.Status),
		StatusCode: s.Status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: header, Body: io.NopCloser(bytes.NewReader(s.Body)), ContentLength: int64(len(s.Body)),
		Request: req,
	}, nil
}

// recordingBody keeps what the run reads of a live answer.
type recordingBody struct {
	io.ReadCloser
	rec *RecordedResponse
}

func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.rec.Body = append(b.rec.Body, p[:n]...)
	return n, err
}

// ReadSampleResponses reads the sample response files, in order.
func ReadSampleResponses(paths ...string) ([]SampleResponse, error) {
	var out []SampleResponse
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("mapping: reading a sample response: %w", err)
		}
		rs, err := ParseSampleResponses(p, src)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}
