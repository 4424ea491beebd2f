package mapping

// How a run ends: the Outcome it assembles, and the failures it can end in.

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/expr-lang/expr/file"
)

// failure is a run that went wrong: the state it leaves the task in, what
// the caller is told (after "Skill <id> ") and what the log is told, and
// whether the agent itself is at fault rather than the service.
type failure struct {
	state      a2a.TaskState
	stage      string
	public     string
	err        error
	agentFault bool
}

// MetadataFaultKey marks, in the metadata of the message a run ends with,
// a failure of the agent's own (value FaultAgent): the skill could not
// run as written, whatever the service would have answered. The message
// of a failure the service caused (it answered an error, could not be
// reached, its job failed) carries no mark.
const (
	MetadataFaultKey = "fault"
	FaultAgent       = "agent"
)

// AgentFault reports whether msg, the message a failed run ended with,
// says the agent itself failed: an expression that failed at run time,
// credentials it could not apply, a result it could not keep, or a panic.
// MCP reports such a run as a protocol error, and others as the tool's.
func AgentFault(msg *a2a.Message) bool {
	return msg != nil && msg.Metadata[MetadataFaultKey] == FaultAgent
}

func (sk *Skill) fail(call *Call, f failure) Outcome {
	text := fmt.Sprintf("Skill %q %s", sk.ID, f.public)
	msg := agentMessage(call, []a2a.Part{a2a.TextPart(text)})
	if f.agentFault {
		msg.Metadata = map[string]any{MetadataFaultKey: FaultAgent}
	}
	return Outcome{State: f.state, Message: msg, Err: &RunError{Skill: sk.ID, Stage: f.stage, Err: f.err}}
}

func responseFailure(err error) failure {
	return failure{state: a2a.TaskStateFailed, stage: "response", public: "could not read the service's answer" + exprDetail(err) + ".",
		err: err, agentFault: true}
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

func failed(f failure) *failure { return &f }

// finish assembles an outcome. A skill that returns a message puts all of
// a completed run into it.
func (sk *Skill) finish(call *Call, state a2a.TaskState, text string, arts []a2a.Artifact) Outcome {
	if sk.ReturnsMessage && state == a2a.TaskStateCompleted {
		n := len(arts)
		if text != "" {
			n++
		}
		parts := make([]a2a.Part, 0, n)
		if text != "" {
			parts = append(parts, a2a.TextPart(text))
		}
		for i := range arts {
			parts = append(parts, arts[i].Parts...)
		}
		if len(parts) == 0 {
			parts = append(parts, a2a.TextPart("Done."))
		}
		return Outcome{State: state, Message: agentMessage(call, parts)}
	}
	out := Outcome{State: state, Artifacts: arts}
	if text != "" {
		out.Message = agentMessage(call, []a2a.Part{a2a.TextPart(text)})
	}
	return out
}

// agentMessage is a message of the agent in the call's task. It has no id
// yet: the task manager gives every message and artifact its id, from the
// one id source the server is configured with.
func agentMessage(call *Call, parts []a2a.Part) *a2a.Message {
	return &a2a.Message{ContextID: call.ContextID, TaskID: call.TaskID,
		Role: a2a.RoleAgent, Parts: parts}
}
