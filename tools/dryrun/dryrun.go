// Package dryrun shows what a skills file would do with one A2A message —
// the skill chosen and why, the arguments, the exact upstream requests and
// the A2A answer — with the upstream's answers taken from samples, so that
// nothing goes to the network unless asked (caddy a2a-dry-run).
//
// The message is served by a real server.Handler, built from the loaded
// skills as the a2a handler builds it, so the answer the report shows is
// the server's own: the same admission, selection, task lifecycle and
// encoding. Only the upstream is the dry run's (a transport that records
// each request and answers it from the samples), and so are the ids and the
// clock, which make the answer the same for the same input. The MCP view
// (Input.MCP) is the MCP binding's, served on the same handler: the tool
// as its tools/list lists it, and its result of the task the one run
// ended in.
package dryrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/agent"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/server/mcp"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// Input is what a dry run works from.
type Input struct {
	// Sample is the message, as the server would decode it.
	Sample *SampleMessage
	// Responses answer the upstream calls in order, a retry counting as a
	// call. When they run out the run stops at the call that has none,
	// and the report shows the requests made so far.
	Responses []SampleResponse
	// Live sends the calls to the upstream for real, through
	// mapping.Options.Transport when it is set, else through the
	// upstream's own kind of transport. Responses must then be empty.
	Live bool
	// MCP adds the MCP view of the skill to the report: its tool, and the
	// tools/call result the run would answer.
	MCP bool
}

// Report is what a dry run found. Write renders it as text.
type Report struct {
	Sample *SampleMessage
	// Skill is the skill selection chooses; nil when it chooses none.
	Skill  *mapping.Skill
	Reason mapping.SelectReason
	// Predicates are the match predicates tried, in file order, when the
	// message names no skill and the file has more than one.
	Predicates []mapping.PredicateResult
	// Selection says why no skill was chosen.
	Selection *mapping.SelectionError
	// Refusal is the protocol error the server answered instead of
	// running anything (a message not from the user, output modes the
	// skill cannot produce, …); nil when it ran the skill.
	Refusal *a2a.Error
	// Arguments are the values gathered from the message, and Problems
	// the arguments missing or unusable (the run asks for them instead of
	// calling the upstream).
	Arguments map[string]any
	Problems  []mapping.ArgumentProblem
	// Exchanges are the upstream calls, in order; credential values are
	// masked.
	Exchanges []*Exchange
	// Progress holds the agent's intermediate messages (working).
	Progress []*a2a.Message
	// Stopped says the sample responses ran out: Outcome and Result are
	// not known.
	Stopped bool
	// UnusedResponses counts the sample responses no call took.
	UnusedResponses int
	// Outcome is how the run ended, as the answer tells it; nil when
	// Stopped or Refusal.
	Outcome *Outcome
	// Result is the JSON-RPC answer of the server, indented, in the
	// sample's version; nil when Stopped.
	Result []byte
	// MCPTool is the skill's MCP tool, and MCPResult the tools/call
	// result of the run, both indented JSON, when Input.MCP asks for them;
	// MCPResult is nil when Stopped or Refusal, MCPTool when no skill was
	// chosen.
	MCPTool, MCPResult []byte
}

// Outcome is how a run ended.
type Outcome struct {
	// State is the task's; TaskStateUnspecified when the skill answered
	// with a message, which has no state.
	State a2a.TaskState
	// Message is the task's status message, or the skill's answer.
	Message   *a2a.Message
	Artifacts []a2a.Artifact
	// Logged are the errors the server logged about the run: the detail
	// its answer leaves out.
	Logged []string
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

// Run loads the skills file at path with opts and serves in.Sample's
// message through the server as the a2a handler would, the upstream
// answered by in.Responses (or, with in.Live, by the upstream itself). The
// error is a skills file that does not load, or input that cannot be used;
// everything the server answers, errors included, is in the Report.
func Run(ctx context.Context, path string, opts mapping.Options, in Input) (*Report, error) {
	if in.Sample == nil || in.Sample.Message == nil {
		return nil, errors.New("dryrun: no message")
	}
	if in.Live && len(in.Responses) > 0 {
		return nil, errors.New("dryrun: sample responses and a live upstream exclude each other")
	}
	t := &recorder{responses: in.Responses}
	if in.Live {
		t.live = opts.Transport
		if t.live == nil {
			own := mapping.NewUpstreamTransport(2)
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
	if !in.Live {
		opts.TokenTransport = standInTokens{}
	}
	d, err := newDryAgent(path, opts, in)
	if err != nil {
		return nil, err
	}
	defer d.close()
	r := &Report{Sample: in.Sample}
	r.explain(d.Skills)
	if err := r.serve(ctx, d, t, in.MCP); err != nil {
		return nil, err
	}
	r.UnusedResponses = len(t.responses) - t.next
	r.Exchanges = t.exchanges
	if r.Skill != nil {
		r.mask(r.Skill.CredentialHeaders(), secrets)
	}
	return r, nil
}

// minSecretLen is the shortest environment value masked: shorter ones
// (a port, a flag) are not secrets, and masking them would hide too much.
const minSecretLen = 4

// explain records which skill selection chooses and why, and the arguments
// a run of it would read, with the code the server runs.
func (r *Report) explain(skills *mapping.Skills) {
	msg := r.Sample.Message
	sk, reason, selErr := skills.SelectWithReason(msg)
	r.Skill, r.Reason, r.Selection = sk, reason, selErr
	if reason == mapping.SelectedByMatch || (reason == mapping.NotSelected && !selErr.Named) {
		r.Predicates = skills.TryPredicates(msg)
	}
	if sk != nil {
		r.Arguments, r.Problems = sk.GatherArguments(mapping.Call{Message: msg})
	}
}

// dryAgent is the agent a dry run serves its sample on: the skills file
// built by the composition root, as the a2a handler builds its agent,
// with a placeholder card, every caller admitted (a skill's security names
// schemes the module's configuration declares, which a skills file alone
// does not have), and its tasks in memory, numbered after the sample's.
type dryAgent struct {
	*agent.Agent
	manager *tasks.Manager
	ids     *idSource
	logged  *observer.ObservedLogs
}

func newDryAgent(path string, opts mapping.Options, in Input) (*dryAgent, error) {
	d := &dryAgent{ids: &idSource{named: in.Sample.Message.TaskID}}
	d.manager = tasks.NewManager(tasks.Options{NewID: d.ids.next, Now: stoppedClock, SweepInterval: -1})
	logs, logged := observer.New(zapcore.WarnLevel)
	d.logged = logged
	cfg := agent.Config{
		SkillsFile: path,
		Skills:     opts,
		Unchecked:  true,
		Card: cardgen.Config{Name: "Dry run", Description: "A dry run of a skills file.",
			Version: "0", URL: "http://dry-run.invalid/"},
		Extended: &agent.ExtendedCard{},
		Server:   server.Config{Auth: admitAll{}, Logger: zap.New(logs)},
		Acquire:  func(s *server.Config) error { s.Tasks = d.manager; return nil },
	}
	if in.MCP {
		cfg.Server.Bindings = []server.NewBinding{mcp.New(mcp.Config{})}
	}
	built, err := agent.New(cfg)
	if err != nil {
		d.manager.Close()
		return nil, err
	}
	d.Agent = built
	return d, nil
}

func (d *dryAgent) close() {
	d.Skills.Close()
	d.manager.Close()
}

// serve sends the sample to d's handler and reads its answer. The request
// differs from the sample only where the dry run cannot follow it: it asks
// for a blocking SendMessage (the report shows the outcome, not a stream),
// and a message that continues a task starts it afresh, under the task's
// id (the dry run has none of the task's history).
func (r *Report) serve(ctx context.Context, d *dryAgent, t *recorder, withMCP bool) error {
	h, manager, ids := d.Handler, d.manager, d.ids
	params := a2a.SendMessageRequest{Message: *r.Sample.Message}
	params.Message.TaskID = ""
	if c := r.Sample.Configuration; c != nil {
		blocking := *c
		blocking.ReturnImmediately = false
		params.Configuration = &blocking
	}
	v := r.Sample.Version
	body, err := a2a.AppendRequest(nil, v, &a2a.Request{ID: r.requestID(), Method: a2a.MethodSendMessage, Params: &params})
	if err != nil {
		return fmt.Errorf("dryrun: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(a2a.VersionParameter, v.String())
	// When the samples run out, the run is canceled as CancelTask would
	// (or, without a task, as a caller hanging up: with a task, that would
	// end the request unanswered while the task ran on), so that no retry
	// waits for an answer that will not come. What the cancellation sends
	// (a job's cancel request) finds the run stopped already.
	stopped := false
	t.stop = func() {
		if stopped {
			return
		}
		stopped = true
		if _, err := manager.Cancel(dryRunCaller.Owner(), ids.taskID()); err != nil {
			cancel()
		}
	}
	answer := httptest.NewRecorder()
	h.ServeHTTP(answer, req)

	resp, err := a2a.DecodeResponse(v, answer.Body.Bytes())
	if err != nil {
		return fmt.Errorf("dryrun: reading the server's answer: %w", err)
	}
	var task *a2a.Task
	if resp.Error == nil && resp.Message == nil {
		// The answer is the task: read it whole (the answer's history may
		// be cut by historyLength) from the store the server answered from.
		if task, err = manager.Get(dryRunCaller.Owner(), ids.taskID(), nil); err != nil {
			return fmt.Errorf("dryrun: reading the task: %w", err)
		}
	}
	r.read(resp, task, d.logged)
	if withMCP && r.Skill != nil {
		if r.MCPTool, err = listedTool(h, r.Skill.ID); err != nil {
			return fmt.Errorf("dryrun: %w", err)
		}
	}
	if t.stopped {
		r.Stopped, r.Outcome = true, nil
		return nil
	}
	r.Result = indentJSON(answer.Body.Bytes())
	if withMCP && r.Refusal == nil {
		// The binding's answer to the run that just ended: a tools/call
		// would run the skill, and call the upstream, once more.
		if r.MCPResult, err = json.MarshalIndent(mcp.Result(r.Skill, task, resp.Message), "", "  "); err != nil {
			return fmt.Errorf("dryrun: the MCP result: %w", err)
		}
	}
	return nil
}

// listedTool is the tool named name as the MCP binding of h lists it to a
// client (tools/list, protocol 2026-07-28), indented.
func listedTool(h http.Handler, name string) ([]byte, error) {
	const version = "2026-07-28"
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` +
		version + `","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req := httptest.NewRequest(http.MethodPost, mcp.DefaultPath, strings.NewReader(body))
	for header, value := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": version, "Mcp-Method": "tools/list"} {
		req.Header.Set(header, value)
	}
	answer := httptest.NewRecorder()
	h.ServeHTTP(answer, req)
	// The answer is one SSE event, its data the JSON-RPC response.
	_, data, _ := bytes.Cut(answer.Body.Bytes(), []byte("data: "))
	data, _, _ = bytes.Cut(data, []byte("\n"))
	var list struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("the MCP tools/list answer (HTTP %d): %w: %.300s", answer.Code, err, answer.Body)
	}
	for _, tool := range list.Result.Tools {
		var named struct{ Name string }
		if json.Unmarshal(tool, &named) == nil && named.Name == name {
			return indentJSON(tool), nil
		}
	}
	return nil, fmt.Errorf("the MCP binding lists no tool %q: %.300s", name, answer.Body)
}

// read takes a refusal or the outcome from the answer, the progress from
// the task, and what the server logged about the run.
func (r *Report) read(resp *a2a.Response, task *a2a.Task, logged *observer.ObservedLogs) {
	if resp.Error != nil {
		r.Refusal = resp.Error
		return
	}
	out := &Outcome{}
	if task != nil {
		out.State, out.Message, out.Artifacts = task.Status.State, task.Status.Message, task.Artifacts
		for i := range task.History {
			m := &task.History[i]
			if m.Role == a2a.RoleAgent && (task.Status.Message == nil || m.MessageID != task.Status.Message.MessageID) {
				r.Progress = append(r.Progress, m)
			}
		}
	} else {
		out.Message = resp.Message
	}
	for _, e := range logged.All() {
		for _, f := range e.Context {
			if err, ok := f.Interface.(error); ok && f.Type == zapcore.ErrorType {
				out.Logged = append(out.Logged, err.Error())
			}
		}
	}
	r.Outcome = out
}

func (r *Report) requestID() json.RawMessage {
	if r.Sample.RequestID != nil {
		return r.Sample.RequestID
	}
	return json.RawMessage("1")
}

// The ids the server would make at random, made predictable.
const (
	dryRunTaskID          = "dry-run-task"
	dryRunContextID       = "dry-run-context"
	dryRunMessageIDPrefix = "dry-run-message-"
	dryRunArtifactPrefix  = "dry-run-artifact-"
)

// idSource gives the task the id the sample names (named), or
// dryRunTaskID, and numbers messages and artifacts. The one request is
// served on the dry run's own goroutine, so it needs no lock.
type idSource struct {
	named               string
	messages, artifacts int
}

func (s *idSource) taskID() string {
	if s.named != "" {
		return s.named
	}
	return dryRunTaskID
}

func (s *idSource) next(kind tasks.IDKind) string {
	switch kind {
	case tasks.TaskID:
		return s.taskID()
	case tasks.ContextID:
		return dryRunContextID
	case tasks.MessageID:
		s.messages++
		return dryRunMessageIDPrefix + strconv.Itoa(s.messages)
	}
	s.artifacts++
	return dryRunArtifactPrefix + strconv.Itoa(s.artifacts)
}

// stoppedClock keeps time out of the answer: a zero timestamp is not
// written, and no task ages.
func stoppedClock() time.Time { return time.Time{} }

// dryRunCaller is who every request of the dry run comes from: no one in
// particular, with no scopes or claims, as an anonymous caller.
var dryRunCaller = &authn.Identity{}

// admitAll admits every request and lets it use every skill: a skill's
// security names schemes the module's configuration declares, which a
// skills file alone does not have, so the dry run does not check it.
type admitAll struct{}

func (admitAll) Authenticate(*http.Request) (*authn.Identity, *authn.Failure) {
	return dryRunCaller, nil
}

// CompileRequirements leaves every skill's requirements unresolved: nil
// admits every caller.
func (admitAll) CompileRequirements([]a2a.SecurityRequirement) (*authn.Requirements, error) {
	return nil, nil
}

func (admitAll) Authorize(*authn.Identity, *authn.Requirements) *authn.Failure { return nil }

// Challenge is never asked for: every caller is authenticated.
func (admitAll) Challenge() *authn.Failure { return nil }

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

func indentJSON(b []byte) []byte {
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return b
	}
	return out.Bytes()
}
