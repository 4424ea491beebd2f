// Package mapping turns a skills YAML file into runnable skills: it parses
// and checks the file, compiles every expr expression once against one typed
// environment, selects the skill a message is for, builds and sends the
// upstream HTTP request, and maps the upstream response to an Outcome.
//
// The YAML language is documented in README.md next to this file.
package mapping

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/expr-lang/expr/vm"
)

// DefaultMaxExpressionNodes bounds the size of each expression when
// Options.MaxExpressionNodes is zero.
const DefaultMaxExpressionNodes = 1000

// Defaults for the upstream section.
const (
	DefaultTimeout             = 30 * time.Second
	DefaultMaxResponseBytes    = 10 << 20
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
	// Transport, when set, carries every upstream request instead of the
	// upstream's own keep-alive transport: for embedding and benchmarks.
	Transport http.RoundTripper
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
	// vms holds *vm.VM: a VM is not safe for concurrent use, so each run
	// borrows one for all of its expressions.
	vms sync.Pool
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

// MetadataSkillKey is the message metadata key that names a skill.
const MetadataSkillKey = "skill"

// Select picks the skill msg is for: the one its metadata names under
// "skill", or the only skill there is.
func (s *Skills) Select(msg *a2a.Message) (*Skill, *SelectionError) {
	if msg != nil {
		if v, ok := msg.Metadata[MetadataSkillKey]; ok {
			id, isString := v.(string)
			if sk := s.byID[id]; isString && sk != nil {
				return sk, nil
			}
			return nil, s.selectionError(fmt.Sprint(v), true)
		}
	}
	if len(s.skills) == 1 {
		return s.skills[0], nil
	}
	return nil, s.selectionError("", false)
}

func (s *Skills) selectionError(requested string, named bool) *SelectionError {
	ids := make([]string, len(s.skills))
	for i, sk := range s.skills {
		ids[i] = sk.ID
	}
	return &SelectionError{Requested: requested, Named: named, Skills: ids}
}

// SelectionError says that a message does not name one of the skills.
type SelectionError struct {
	// Requested is what metadata.skill held (formatted), when Named.
	Requested string
	// Named reports whether the message named a skill at all.
	Named bool
	// Skills are the ids of every skill, in file order.
	Skills []string
}

func (e *SelectionError) Error() string {
	var b strings.Builder
	if e.Named {
		fmt.Fprintf(&b, "there is no skill %q; ", e.Requested)
	} else {
		b.WriteString("the message does not say which skill it is for; ")
	}
	fmt.Fprintf(&b, "the skills are: %s. Name one in the message metadata, e.g. \"metadata\": {%q: %q}",
		strings.Join(e.Skills, ", "), MetadataSkillKey, e.Skills[0])
	return b.String()
}

// Skill is one skill of the file: its card metadata, and the compiled
// request and response mapping Run uses.
type Skill struct {
	ID          string
	Name        string
	Description string
	Tags        []string
	Examples    []string
	InputModes  []string
	OutputModes []string
	// Timeout bounds one run's upstream call, body included.
	Timeout time.Duration
	// ReturnsMessage says the skill answers with a Message, not a Task.
	ReturnsMessage bool
	// MaxResponseBytes caps the upstream response body.
	MaxResponseBytes int64

	set     *Skills
	config  map[string]any
	working *template // working_message, or nil
	request request
	rules   []rule
	needs   usage // which lazily built parts of the environment expressions read
}

// AgentSkill is the skill as the Agent Card lists it.
func (sk *Skill) AgentSkill() a2a.AgentSkill {
	return a2a.AgentSkill{
		ID: sk.ID, Name: sk.Name, Description: sk.Description, Tags: sk.Tags, Examples: sk.Examples,
		InputModes: sk.InputModes, OutputModes: sk.OutputModes,
	}
}

// Call is what a run gets to work with.
type Call struct {
	Message *a2a.Message
	// History is the task's earlier messages, oldest first.
	History   []a2a.Message
	TaskID    string
	ContextID string
	Caller    Caller
}

// Caller is the authenticated identity; zero for an anonymous caller.
type Caller struct {
	Subject string
	Scopes  []string
	Claims  map[string]any
}

// Outcome is where a run leaves the task.
type Outcome struct {
	State a2a.TaskState
	// Message is the agent's message: the status message of a task, or the
	// whole answer of a skill that returns a message (then it also carries
	// the artifacts' parts and Artifacts is empty).
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
	Working(msg *a2a.Message)
	Artifact(a a2a.Artifact)
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

// upstream is the service every skill of a file calls.
type upstream struct {
	scheme, host string
	// basePath and baseRawPath are the url's path without its trailing
	// slash, decoded and as written.
	basePath, baseRawPath string
	transport             http.RoundTripper
}

func (s *Skills) getVM() *vm.VM {
	if v, ok := s.vms.Get().(*vm.VM); ok {
		return v
	}
	return &vm.VM{}
}
