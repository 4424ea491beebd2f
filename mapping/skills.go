// Package mapping turns a skills YAML file into runnable skills: it parses
// and checks the file, compiles every expr expression once against one typed
// set of variables, selects the skill a message is for, builds and sends the
// upstream HTTP request, and maps the upstream response to an Outcome.
//
// The YAML language is documented in README.md next to this file.
package mapping

import (
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/expr-lang/expr/vm"
)

// DefaultMaxExpressionNodes bounds the size of each expression when
// Options.MaxExpressionNodes is zero.
const DefaultMaxExpressionNodes = 1000

// DefaultMaxExpressionMemory is expr's own default memory budget, used when
// Options.MaxExpressionMemory is zero.
const DefaultMaxExpressionMemory = 1_000_000

// Defaults for the upstream section.
const (
	DefaultTimeout             = 30 * time.Second
	DefaultMaxResponseBytes    = 10 << 20
	DefaultMaxFileBytes        = 1 << 20
	DefaultMaxIdleConnsPerHost = 1024
)

// Options tunes loading.
type Options struct {
	// UpstreamURL overrides the YAML's upstream url when set.
	UpstreamURL string
	// LookupEnv resolves {env.NAME} placeholders at load time; nil means
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// MaxExpressionNodes bounds every expression's syntax tree; zero means
	// DefaultMaxExpressionNodes.
	MaxExpressionNodes uint
	// MaxExpressionMemory bounds what one evaluation of an expression may
	// allocate, in expr's units (about one per list element, map entry or
	// byte of a repeated string); zero means DefaultMaxExpressionMemory.
	MaxExpressionMemory uint
	// Transport, when set, carries every upstream request instead of the
	// upstream's own keep-alive transport: for embedding and benchmarks.
	Transport http.RoundTripper
	// WrapTransport, when set, is called once per skill at load with the
	// skill's id and the upstream's transport; the skill sends through
	// what it returns. Every attempt of every upstream call passes there
	// with its run's context, so a wrapper can time and count calls by
	// skill and carry a trace to the upstream, at no cost per request for
	// knowing the skill.
	WrapTransport func(skill string, rt http.RoundTripper) http.RoundTripper
	// TokenTransport, when set, carries the requests to upstream.oauth2's
	// token endpoint instead of the token client's own transport: for the
	// dry run, which answers them itself.
	TokenTransport http.RoundTripper
	// CheckSecurity, when set, checks each skill's security requirements
	// against the schemes the agent declares; its error is reported at the
	// skill's security key. Without it, only their form is checked.
	CheckSecurity func([]a2a.SecurityRequirement) error
}

func (o *Options) lookupEnv(name string) (string, bool) {
	if o.LookupEnv != nil {
		return o.LookupEnv(name)
	}
	return os.LookupEnv(name)
}

// Skills is a loaded skills file: its skills and the upstream they call.
// It is safe for concurrent use.
type Skills struct {
	skills []*Skill
	byID   map[string]*Skill
	up     *upstream
	// matching are the skills with a match predicate, in file order, and
	// matchNeeds what their predicates read.
	matching   []*Skill
	matchNeeds usage
	// vms holds *vm.VM: a VM is not safe for concurrent use, so each run
	// borrows one for all of its expressions.
	vms sync.Pool
	// memoryBudget bounds what one expression may allocate at run time.
	memoryBudget uint
}

// All returns the skills in file order. The slice must not be modified.
func (s *Skills) All() []*Skill { return s.skills }

// ByID returns the skill with the given id, or nil.
func (s *Skills) ByID(id string) *Skill { return s.byID[id] }

// Close releases idle upstream connections.
func (s *Skills) Close() {
	if t, ok := s.up.transport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
}

// Skill is one skill of the file: its card entry, and the compiled
// request and response mapping Run uses.
//
// The card entry's fields read as the Skill's own: ID, Name, Description,
// Tags, Examples, InputModes, OutputModes, and SecurityRequirements, which
// say who may use the skill beyond the agent-wide requirement (an OR of
// ANDs of scheme names and scopes; empty: anyone the agent admits).
type Skill struct {
	cardEntry
	// Timeout bounds one run: every upstream call, retry and body. A
	// polled job's calls each have Timeout, and the job its max_wait.
	Timeout time.Duration
	// ReturnsMessage says the skill answers with a Message, not a Task.
	ReturnsMessage bool
	// MaxResponseBytes caps the upstream response body.
	MaxResponseBytes int64
	// MaxFileBytes caps a file part sent inline (as bytes) to the client.
	MaxFileBytes int64
	// ForwardHeaders are the caller's request headers (canonical names)
	// passed on to every upstream request of the skill; Call.Headers holds
	// their values. No other header of the caller ever reaches the upstream.
	ForwardHeaders []string
	// Extended says the skill is listed on the extended Agent Card only,
	// the one served to authenticated callers.
	Extended bool

	// mcp overrides the hints an MCP client gets (mcp.go).
	mcp     mcpHints
	set     *Skills
	match   *vm.Program // the selection predicate, or nil
	schema  *argSchema  // nil: the arguments are the messages' data
	config  map[string]any
	working *template   // working_message, or nil
	steps   []step      // the upstream calls, in order; one for a plain request
	rules   []rule      // map the last call's answer
	stream  *streamRule // reads the last call's answer as a stream, or nil
	// clientErrors is the state of a 4xx answer no rule claims.
	clientErrors a2a.TaskState
	// errorDetail lets the upstream's own error text into the messages of
	// answers no rule claims.
	errorDetail bool
	needs       usage // which lazily built variables its expressions read
	// transport sends its upstream requests: the upstream's, or what
	// Options.WrapTransport made of it.
	transport http.RoundTripper
	// runLimit bounds the whole run: Timeout, and for each polled job its
	// max_wait and the fetch of its result; callLimit (Timeout) one call of
	// a polled job. Made at load time: the cause of every run's context.
	runLimit, callLimit *timeLimit
}

// cardEntry is the skill as the Agent Card lists it, under a name of its
// own so that Skill embeds it and keeps its AgentSkill method.
type cardEntry = a2a.AgentSkill

// Call is what a run gets to work with.
type Call struct {
	Message *a2a.Message
	// History is the task's earlier messages, oldest first.
	History   []a2a.Message
	TaskID    string
	ContextID string
	Caller    Caller
	// Headers are the caller's request headers; only those the skill names
	// in ForwardHeaders are read. The server may pass just those.
	Headers http.Header
}

// Caller is the authenticated identity; zero for an anonymous caller.
// Expressions read it as caller.subject, caller.scopes and caller.claims.
type Caller struct {
	Subject string
	Scopes  []string
	Claims  map[string]any
	// Token is the bearer token the agent's security validated, which
	// upstream.oauth2's token exchange trades for the upstream's; "" when
	// the caller presented none. Only a skill that ExchangesTokens reads
	// it, so a server need not pass it to others. Expressions never see it.
	// TokenExpires is when it expires (zero: not known): a token exchanged
	// for it is kept no longer.
	Token        string
	TokenExpires time.Time
}

// ExchangesTokens reports whether the skill's upstream takes a token
// exchanged for the caller's (upstream.oauth2 grant token_exchange): a run
// of it needs Caller.Token.
func (sk *Skill) ExchangesTokens() bool {
	return sk.set.up.tokens != nil && sk.set.up.tokens.OnBehalf()
}

// Outcome is where a run leaves the task.
type Outcome struct {
	State a2a.TaskState
	// Message is the agent's message: the status message of a task, or the
	// whole answer of a skill that returns a message (then it also carries
	// the artifacts' parts and Artifacts is empty). Neither the message nor
	// the artifacts have ids: whoever records them gives them one. An
	// artifact the run streamed through Progress is not repeated here.
	Message   *a2a.Message
	Artifacts []a2a.Artifact
	// Err says why a run did not go as its mapping chose (the upstream was
	// unreachable, too slow or too large, an expression failed, the default
	// mapping met a non-2xx status). It is for the server's log and may
	// hold detail that Message, which the client sees, leaves out.
	Err error
}

// Progress receives intermediate updates of a run; the server implements it.
type Progress interface {
	// Working reports a progress message: the task stays working.
	Working(msg *a2a.Message)
	// Artifact records a chunk of an artifact the run streams. The first
	// chunk (appendParts false) has no id and gets one, which Artifact
	// returns; each later chunk carries it, and its parts are appended.
	// lastChunk marks the last. An error means the chunk was not kept (the
	// task ended meanwhile, or would hold too much), and the run stops.
	Artifact(art a2a.Artifact, appendParts, lastChunk bool) (id string, err error)
}

// RunError is the Outcome.Err of a run that went wrong.
type RunError struct {
	Skill string
	// Stage is where it went wrong: "request", "upstream" or "response".
	Stage string
	Err   error
}

func (e *RunError) Error() string {
	return fmt.Sprintf("mapping: skill %q: %s: %v", e.Skill, e.Stage, e.Err)
}

func (e *RunError) Unwrap() error { return e.Err }

func (s *Skills) getVM() *vm.VM {
	if v, ok := s.vms.Get().(*vm.VM); ok {
		return v
	}
	return &vm.VM{MemoryBudget: s.memoryBudget}
}

// step is one upstream call of a skill.
type step struct {
	name    string // "" for a skill's plain request
	request request
	// rules may end the run after this call; a response no rule claims
	// goes on to the next step when it is 2xx. The last step has none:
	// the skill's response rules map its answer.
	rules []rule
}
