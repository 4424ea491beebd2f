package mapping

// Gathering a call's arguments from the task's user messages: data
// parts, text patterns, file parts and plain-text answers to a question.

import (
	"strings"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// collector gathers the arguments of a call.
type collector struct {
	schema   *argSchema
	values   map[string]any
	problems map[string]string // invalid values, by argument name
}

// gatherArgs reads the arguments from the call's user messages, oldest
// first, later values winning; within a message, data parts win over text.
// It returns the problems that stop the call, in declared order.
func (sk *Skill) gatherArgs(call *Call, vars *exprVars) (map[string]any, []argProblem) {
	s := sk.schema
	if s == nil {
		if len(call.History) < 2 {
			return vars.Message.Data, nil // the fast path: one message, no schema
		}
		merged := map[string]any{}
		eachUserMessage(call, func(m *a2a.Message, _ []string) {
			for k, v := range mergeData(m.Parts) {
				merged[k] = v
			}
		})
		return merged, nil
	}
	c := collector{schema: s, values: make(map[string]any, len(s.args))}
	eachUserMessage(call, c.message)
	var problems []argProblem
	for i := range s.args {
		a := &s.args[i]
		if why, bad := c.problems[a.name]; bad {
			problems = append(problems, argProblem{arg: a, why: why})
			continue
		}
		if _, ok := c.values[a.name]; ok {
			continue
		}
		switch {
		case a.def != nil:
			c.values[a.name] = a.def
		case a.required:
			problems = append(problems, argProblem{arg: a})
		}
	}
	return c.values, problems
}

// eachUserMessage calls fn with each user message of the call, oldest
// first, and the arguments the agent message just before it asked for.
// History holds the task's messages with the current one last; the current
// message is added when History does not end with it.
func eachUserMessage(call *Call, fn func(m *a2a.Message, asked []string)) {
	var asked []string
	last := ""
	seen := false
	for i := range call.History {
		m := &call.History[i]
		if m.Role == a2a.RoleAgent {
			asked = askedIn(m)
			continue
		}
		fn(m, asked)
		asked, last, seen = nil, m.MessageID, true
	}
	if call.Message != nil && (!seen || call.Message.MessageID != last) {
		fn(call.Message, asked)
	}
}

// message takes the arguments one message gives.
func (c *collector) message(m *a2a.Message, asked []string) {
	s := c.schema
	matched := false
	if len(s.patterns) > 0 {
		if text := joinText(m.Parts); text != "" {
			matched = c.text(text)
		}
	}
	given := map[string]bool{}
	if s.hasFiles {
		c.files(m.Parts, given)
	}
	for k, v := range mergeData(m.Parts) {
		if v == nil {
			continue
		}
		a := s.find(k)
		if a == nil {
			if !s.declared {
				c.set(k, v, "")
			}
			continue
		}
		given[k] = true
		x, problem := convertData(v, a)
		c.set(k, x, problem)
	}
	// A follow-up that answers the agent's question in plain words: its
	// whole text is the value of the first argument asked for.
	if matched || len(asked) == 0 {
		return
	}
	a := s.find(asked[0])
	if a == nil || a.typ == argFile || given[a.name] {
		return
	}
	if text := strings.TrimSpace(joinText(m.Parts)); text != "" {
		x, problem := convertText(text, a)
		c.set(a.name, x, problem)
	}
}

func (c *collector) set(name string, v any, problem string) {
	if problem != "" {
		if c.problems == nil {
			c.problems = map[string]string{}
		}
		c.problems[name] = problem
		delete(c.values, name)
		return
	}
	c.values[name] = v
	delete(c.problems, name)
}

// text applies the first pattern that matches; it reports whether one did.
func (c *collector) text(text string) bool {
	for _, re := range c.schema.patterns {
		m := re.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		for i, name := range re.SubexpNames() {
			v := strings.TrimSpace(m[i])
			if name == "" || v == "" {
				continue
			}
			if !c.schema.declared {
				c.set(name, v, "")
				continue
			}
			x, problem := convertText(v, c.schema.find(name))
			c.set(name, x, problem)
		}
		return true
	}
	return false
}

// files gives each file argument, in declared order, the first file part
// not yet taken whose media type it accepts.
func (c *collector) files(parts []a2a.Part, given map[string]bool) {
	taken := make([]bool, len(parts))
	for i := range c.schema.args {
		a := &c.schema.args[i]
		if a.typ != argFile {
			continue
		}
		for j := range parts {
			p := &parts[j]
			if taken[j] || (p.Kind != a2a.PartRaw && p.Kind != a2a.PartURL) || !acceptsMedia(a.mediaTypes, p.MediaType) {
				continue
			}
			taken[j] = true
			given[a.name] = true
			c.set(a.name, fileValue(p), "")
			break
		}
	}
}

// fileValue is a file argument's value: a map with name, media_type, and
// bytes or url.
func fileValue(p *a2a.Part) map[string]any {
	f := map[string]any{"name": p.Filename, "media_type": p.MediaType}
	if p.Kind == a2a.PartRaw {
		f["bytes"] = p.Raw
	} else {
		f["url"] = p.URL
	}
	return f
}

// askedIn returns the arguments an agent message asked for: the required
// list of its input schema part.
func askedIn(m *a2a.Message) []string {
	for i := range m.Parts {
		p := &m.Parts[i]
		if p.Kind != a2a.PartData || p.Metadata[inputSchemaKey] != true {
			continue
		}
		obj := dataObject(p.Data)
		switch req := obj["required"].(type) {
		case []string:
			return req
		case []any:
			out := make([]string, 0, len(req))
			for _, r := range req {
				if s, ok := r.(string); ok {
					out = append(out, s)
				}
			}
			return out
		}
	}
	return nil
}
