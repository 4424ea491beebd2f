package mapping

// The input-required prompt: the arguments a call cannot go on without,
// and the agent message that asks for them in words and as JSON Schema.

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// argProblem is an argument a call cannot go on without.
type argProblem struct {
	arg *argument
	// why is "" for a missing argument, else what is wrong with its value.
	why string
}

// inputSchemaKey marks, in a part's metadata, the data part of an
// input-required message that lists the arguments asked for.
const inputSchemaKey = "input_schema"

// askOutcome is the input-required outcome that asks for arguments:
// what is missing or wrong, in words and as a JSON Schema data part.
func (sk *Skill) askOutcome(call *Call, problems []argProblem) Outcome {
	return sk.askFor(call, askText(fmt.Sprintf("Skill %q", sk.ID), problems), problems)
}

// askText says what is missing or wrong, subject first ("Skill x" or
// "It"), and how to answer.
func askText(subject string, problems []argProblem) string {
	var missing, invalid []string
	args := make([]*argument, len(problems))
	for i, p := range problems {
		args[i] = p.arg
		if p.why == "" {
			missing = append(missing, describeArg(p.arg))
		} else {
			invalid = append(invalid, p.arg.name+": it "+p.why)
		}
	}
	var b strings.Builder
	b.WriteString(subject)
	if len(missing) > 0 {
		fmt.Fprintf(&b, " needs the argument%s %s.", plural(len(missing)), strings.Join(missing, "; "))
	}
	if len(invalid) > 0 {
		if len(missing) > 0 {
			b.WriteString(" It")
		}
		fmt.Fprintf(&b, " cannot use the argument %s.", strings.Join(invalid, "; "))
	}
	b.WriteString(replyHint(args))
	return b.String()
}

// askFor is an input-required outcome with text and, when there are
// problems, a data part with the JSON Schema of the arguments asked for.
func (sk *Skill) askFor(call *Call, text string, problems []argProblem) Outcome {
	parts := []a2a.Part{a2a.TextPart(text)}
	if len(problems) > 0 {
		args := make([]*argument, len(problems))
		names := make([]string, len(problems))
		for i, p := range problems {
			args[i], names[i] = p.arg, p.arg.name
		}
		schema := a2a.DataPart(objectSchema(args, names))
		schema.Metadata = map[string]any{inputSchemaKey: true}
		parts = append(parts, schema)
	}
	return Outcome{State: a2a.TaskStateInputRequired, Message: agentMessage(call, parts)}
}

func describeArg(a *argument) string {
	if a.typ == 0 {
		return a.name
	}
	var b strings.Builder
	b.WriteString(a.name)
	b.WriteString(" (")
	if a.types != nil {
		b.WriteString(strings.Join(a.typeNames(), " or "))
	} else {
		b.WriteString(a.typ.String())
	}
	if len(a.enum) > 0 {
		b.WriteString(", one of ")
		for i, v := range a.enum {
			if i > 0 {
				b.WriteString(", ")
			}
			s, _ := scalarString(v)
			b.WriteString(s)
		}
	}
	b.WriteByte(')')
	if a.description != "" {
		b.WriteString(": ")
		b.WriteString(strings.TrimSuffix(a.description, "."))
	}
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// replyHint says how to answer on the task, as A2A does: data naming
// every argument, or the first one as text. It begins with replyHintStart.
func replyHint(args []*argument) string {
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = a.name
	}
	var b strings.Builder
	b.WriteString(replyHintStart + " with data such as " + ArgumentsExample(names))
	if len(args) > 0 && args[0].typ != argFile {
		if len(args) == 1 {
			b.WriteString(", or with the value as text")
		} else {
			fmt.Fprintf(&b, ", or with the value of %s as text", args[0].name)
		}
	}
	b.WriteByte('.')
	return b.String()
}

const replyHintStart = " Reply on this task"

// ArgumentsExample is an object naming the arguments, their values
// elided: {"city": …, "days": …}.
func ArgumentsExample(names []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, name := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q: …", name)
	}
	b.WriteByte('}')
	return b.String()
}

// AskedInput is what an input-required message asks for, for a binding
// that says how to answer in its own terms: its text without the last
// sentence askText writes, which says how to answer on the task (A2A's
// way), and the names of the arguments it asks for, in the order the text
// names them (none for a question in words).
func AskedInput(msg *a2a.Message) (what string, names []string) {
	if msg == nil {
		return "", nil
	}
	var texts []string
	for _, p := range msg.Parts {
		if p.Kind == a2a.PartText {
			texts = append(texts, p.Text)
		}
	}
	what = strings.Join(texts, "\n")
	if i := strings.LastIndex(what, replyHintStart); i >= 0 {
		what = what[:i]
	}
	return what, askedIn(msg)
}

// fieldProblems are the arguments a 4xx answer's field errors point at.
// With declared arguments, only those count; the upstream's messages are
// shown only with error_detail.
func (sk *Skill) fieldProblems(body []byte, mediaType string) []argProblem {
	var out []argProblem
	for _, f := range fieldErrors(body, mediaType) {
		a := sk.argument(f.name)
		if a == nil || slices.ContainsFunc(out, func(p argProblem) bool { return p.arg.name == f.name }) {
			continue
		}
		p := argProblem{arg: a}
		if sk.errorDetail {
			p.why = problemText(f.msg)
		}
		out = append(out, p)
	}
	return out
}

// argument is the declared argument name, or, when the skill declares
// none, an untyped one; nil for a name the schema does not declare.
func (sk *Skill) argument(name string) *argument {
	if sk.schema != nil && sk.schema.declared {
		return sk.schema.find(name)
	}
	if !argName.MatchString(name) {
		return nil
	}
	return &argument{name: name}
}

// problemText makes an upstream's message fit "the argument x: it ...".
func problemText(msg string) string {
	msg = strings.TrimSuffix(oneLine(msg), ".")
	if msg == "" {
		return ""
	}
	first, _, _ := strings.Cut(msg, " ")
	switch strings.ToLower(first) {
	case "is", "must", "should", "has", "was", "cannot", "can't", "needs", "does":
		return msg
	}
	return "was refused: " + msg
}

// askedProblems reads the value of a rule's ask: a list of argument names,
// a map of name to problem, or one name.
func (sk *Skill) askedProblems(v any) ([]argProblem, error) {
	var out []argProblem
	add := func(name, why string) {
		if a := sk.argument(name); a != nil && !slices.ContainsFunc(out, func(p argProblem) bool { return p.arg.name == name }) {
			out = append(out, argProblem{arg: a, why: problemText(why)})
		}
	}
	switch v := v.(type) {
	case nil:
	case string:
		add(v, "")
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			add(k, messageOf(v[k]))
		}
	default:
		err := forEach(v, func(x any) error {
			s, ok := x.(string)
			if !ok {
				return fmt.Errorf("a list of argument names holds a %s", kindName(x))
			}
			add(s, "")
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
