package mapping

// Loading one skill: its id first, then its arguments (every expression
// is checked against them), its plain fields, match, and its calls.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"gopkg.in/yaml.v3"
)

var skillIDPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

var skillKeys = []string{"id", "name", "description", "tags", "examples", "input_modes", "output_modes",
	"match", "arguments", "from_text", "timeout", "max_response_bytes", "max_file_bytes", "returns", "config",
	"working_message", "request", "steps", "response", "client_errors", "error_detail", "security",
	"forward_headers", "extended", "stream", "mcp"}

// readSkill reads skills[i]: nil when it has a mistake, each one reported.
func (l *loader) readSkill(i int, n *yaml.Node, up upstreamConfig, global map[string]any) *Skill {
	l.skill, l.prefix = "", fmt.Sprintf("skills[%d].", i)
	defer func() { l.skill, l.prefix = "", "" }()
	if n.Kind != yaml.MappingNode {
		l.errorf(n, "", "a skill must be a mapping, not %s", describe(n))
		return nil
	}
	sk := &Skill{Timeout: up.timeout, MaxResponseBytes: up.maxBytes, MaxFileBytes: up.maxFile, config: global,
		clientErrors: a2a.TaskStateFailed}
	hasID := l.skillID(n, sk)
	startErrs := len(l.errs)
	l.c.needs = up.needs
	// The arguments come first: every expression is checked against them.
	l.c.args, l.schema = nil, nil
	defer func() { l.c.args, l.schema = nil, nil }()
	l.skillArguments(n, sk)
	sec := l.skillFields(n, sk, global)
	if sec.match != nil { // compiled after config, which a predicate may read
		l.skillMatch(sec.match, sk)
	}
	if !hasID {
		l.errorf(n, "id", "is required")
	}
	if sk.Name == "" {
		sk.Name = sk.ID
	}
	if !sec.described {
		l.errorf(n, "description", "is required: it tells clients what the skill does")
	}
	l.skillCalls(n, sec, up, sk)
	sk.needs = l.c.needs
	run := sk.Timeout
	for i := range sk.steps {
		if p := sk.steps[i].request.poll; p != nil {
			run += p.maxWait + sk.Timeout
		}
	}
	sk.runLimit, sk.callLimit = &timeLimit{run}, &timeLimit{sk.Timeout}
	if sk.ID == "" || len(l.errs) > startErrs {
		return nil
	}
	return sk
}

// skillID reads the id before anything else, so that every later message
// names the skill; it reports whether the skill has an id key at all.
func (l *loader) skillID(n *yaml.Node, sk *Skill) bool {
	hasID := false
	for j := 0; j+1 < len(n.Content); j += 2 {
		if n.Content[j].Value != "id" {
			continue
		}
		hasID = true
		if id, ok := l.scalar(resolve(n.Content[j+1]), "id"); ok {
			if !skillIDPattern.MatchString(id) {
				l.errorf(n.Content[j+1], "id", "%q is not a valid skill id: use letters, digits, '_', '-' and '.'", id)
			} else {
				sk.ID = id
				l.skill, l.prefix = id, ""
			}
		}
	}
	return hasID
}

// skillArguments reads arguments and from_text, and tells the compiler
// which argument names expressions may read.
func (l *loader) skillArguments(n *yaml.Node, sk *Skill) {
	var textNode *yaml.Node
	for j := 0; j+1 < len(n.Content); j += 2 {
		switch v := resolve(n.Content[j+1]); n.Content[j].Value {
		case "arguments":
			if sk.schema == nil {
				sk.schema = &argSchema{declared: true}
				sk.schema.args = l.arguments(v)
				l.schema = sk.schema
				if b, err := json.Marshal(sk.ArgumentSchema()); err == nil && len(b) > MaxArgumentSchemaBytes {
					l.errorf(v, "arguments", "its JSON Schema is %d bytes, more than the %d a skill may publish: shorten its descriptions or enums",
						len(b), MaxArgumentSchemaBytes)
				}
				l.c.args = make(map[string]bool, len(sk.schema.args))
				for _, a := range sk.schema.args {
					l.c.args[a.name] = true
					sk.schema.hasFiles = sk.schema.hasFiles || a.typ == argFile
				}
			}
		case "from_text":
			textNode = v
		}
	}
	if textNode != nil {
		if sk.schema == nil {
			sk.schema = &argSchema{}
		}
		l.textPatterns(textNode, sk.schema)
	}
}

// skillSections are the sections of a skill read once its plain fields
// are, in the order their checks need.
type skillSections struct {
	match, request, steps, response, forward, stream, returns *yaml.Node
	described                                                 bool // description was given
}

// skillFields reads the fields that need nothing else (card metadata,
// limits, config…) and sets the other sections aside.
func (l *loader) skillFields(n *yaml.Node, sk *Skill, global map[string]any) skillSections {
	var sec skillSections
	l.fields(n, "", skillKeys, func(name string, v *yaml.Node) {
		switch name {
		case "id", "arguments", "from_text": // read before
		case "name":
			sk.Name, _ = l.scalar(v, name)
		case "description":
			sec.described = true
			sk.Description, _ = l.scalar(v, name)
		case "tags":
			sk.Tags = l.stringList(v, name)
		case "examples":
			sk.Examples = l.stringList(v, name)
		case "input_modes":
			sk.InputModes = l.stringList(v, name)
		case "output_modes":
			sk.OutputModes = l.stringList(v, name)
		case "timeout":
			sk.Timeout = l.duration(v, name)
		case "max_response_bytes":
			sk.MaxResponseBytes = l.size(v, name)
		case "max_file_bytes":
			sk.MaxFileBytes = l.size(v, name)
		case "client_errors":
			switch st, _ := l.scalar(v, name); st {
			case "failed", "rejected", "input-required":
				sk.clientErrors = states[st]
			case "":
			default:
				l.errorf(v, name, "must be failed, rejected or input-required, not %q", st)
			}
		case "error_detail":
			sk.errorDetail = l.boolean(v, name)
		case "returns":
			sec.returns = v
			switch s, _ := l.scalar(v, name); s {
			case "task":
			case "message":
				sk.ReturnsMessage = true
			case "":
			default:
				l.errorf(v, name, "must be task or message, not %q", s)
			}
		case "config":
			sk.config = merge(global, l.constants(v, name))
		case "working_message":
			sk.working = l.template(v, name, tplOpts{})
		case "security":
			sk.SecurityRequirements = l.security(v, name)
		case "extended":
			sk.Extended = l.boolean(v, name)
		case "mcp":
			l.skillMCP(v, name, sk)
		case "forward_headers":
			sec.forward = v
			sk.ForwardHeaders = l.forwardHeaders(v, name)
		case "match":
			sec.match = v
		case "request":
			sec.request = v
		case "steps":
			sec.steps = v
		case "response":
			sec.response = v
		case "stream":
			sec.stream = v
		}
	})
	return sec
}

// skillMatch compiles the selection predicate. What it reads is kept apart
// from the skill's needs: selection binds the message before any skill is
// chosen.
func (l *loader) skillMatch(n *yaml.Node, sk *Skill) {
	before := l.c.needs
	l.c.needs = 0
	sk.match = l.expression(n, "match", phaseSelect, true)
	l.matchNeeds |= l.c.needs
	l.c.needs = before
}

// skillCalls reads the upstream calls (request, or steps) and the
// response rules that map the last one's answer.
func (l *loader) skillCalls(n *yaml.Node, sec skillSections, up upstreamConfig, sk *Skill) {
	switch {
	case sec.request != nil && sec.steps != nil:
		l.errorf(sec.steps, "steps", "and request are two ways to say the same: give one")
	case sec.request != nil:
		sk.steps = []step{{request: l.request(sec.request, "request", up)}}
	case sec.steps != nil:
		sk.steps = l.steps(sec.steps, up)
	default:
		l.errorf(n, "request", "is required (or steps, for several calls)")
	}
	if sec.forward != nil {
		l.checkForwarded(sec.forward, sk.ForwardHeaders, sk.steps)
	}
	if up.tokens != nil {
		l.checkOAuth2Headers(sec.forward, cmp.Or(sec.request, sec.steps), sk.ForwardHeaders, sk.steps)
	}
	if sk.ReturnsMessage {
		l.checkRepeatable(sec.returns, sk.steps)
	}
	if sec.response != nil {
		l.c.steps = stepNames(sk.steps)
		sk.rules = l.rules(sec.response, "response")
		l.c.steps = nil
	}
	if sec.stream != nil {
		l.c.steps = stepNames(sk.steps)
		sk.stream = l.stream(sec.stream, "stream", sk.MaxResponseBytes)
		l.c.steps = nil
		if k := len(sk.steps); k > 0 && sk.steps[k-1].request.poll != nil {
			l.errorf(sec.stream, "stream", "cannot read the answer of a polled request: a job's answer is read whole")
		}
	}
}

// checkRepeatable refuses a skill that answers with a message and sends a
// request that may not be sent twice: no task keeps what it did, so a
// message sent again (a client that timed out) runs it again.
func (l *loader) checkRepeatable(returns *yaml.Node, steps []step) {
	for i := range steps {
		if r := &steps[i].request; !r.safeToRepeat() {
			l.errorf(returns, "returns", "message keeps no task, so the same message sent again runs the skill again, "+
				"and its %s (%s) may be applied twice: answer with a task (returns: task), which a message sent again "+
				"finds, or say idempotent: true on the request if sending it twice does no harm", r.method, stepLabel(steps, i))
		}
	}
}

// stepLabel names step i in messages: "the request", or the step's name.
func stepLabel(steps []step, i int) string {
	if len(steps) == 1 && steps[i].name == "" {
		return "the request"
	}
	return fmt.Sprintf("step %q", steps[i].name)
}

func merge(global, local map[string]any) map[string]any {
	if len(global) == 0 {
		return local
	}
	out := make(map[string]any, len(global)+len(local))
	for k, v := range global {
		out[k] = v
	}
	for k, v := range local {
		out[k] = v
	}
	return out
}
