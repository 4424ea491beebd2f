package mapping

// Arguments: a skill's declared schema, reading it from the YAML, and
// gathering the values of a call from its messages' data parts, text and
// file parts.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"gopkg.in/yaml.v3"
)

// argType is a declared argument's type.
type argType uint8

const (
	argString argType = iota + 1
	argInteger
	argNumber
	argBoolean
	argObject
	argArray
	argFile
)

var argTypeNames = [...]string{argString: "string", argInteger: "integer", argNumber: "number",
	argBoolean: "boolean", argObject: "object", argArray: "array", argFile: "file"}

func (t argType) String() string { return argTypeNames[t] }

func parseArgType(s string) (argType, bool) {
	for t, name := range argTypeNames {
		if name != "" && name == s {
			return argType(t), true
		}
	}
	return 0, false
}

// argument is one declared argument.
type argument struct {
	name        string
	typ         argType
	required    bool
	description string
	enum        []any // values of typ
	def         any   // the default, a value of typ; nil for none
	mediaTypes  []string
}

// argSchema is how a skill gets its arguments.
type argSchema struct {
	// args are the declared arguments in file order; none when the skill
	// only has text patterns (then every data key is an argument).
	args     []argument
	declared bool
	patterns []*regexp.Regexp
	hasFiles bool
}

func (s *argSchema) find(name string) *argument {
	for i := range s.args {
		if s.args[i].name == name {
			return &s.args[i]
		}
	}
	return nil
}

var argName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var argKeys = []string{"type", "required", "description", "enum", "default", "media_types"}

// arguments reads a skill's arguments section.
func (l *loader) arguments(n *yaml.Node) []argument {
	var out []argument
	l.entries(n, "arguments", func(k, v *yaml.Node) {
		key := "arguments." + k.Value
		if !argName.MatchString(k.Value) {
			l.errorf(k, key, "%q is not a valid argument name: use letters, digits and '_', not starting with a digit", k.Value)
			return
		}
		a := argument{name: k.Value, typ: argString}
		if v.Kind == yaml.ScalarNode { // the short form: name: type
			s, _ := l.scalar(v, key)
			t, ok := parseArgType(s)
			if !ok {
				l.errorf(v, key, "unknown type %q (types: string, integer, number, boolean, object, array, file)", s)
				return
			}
			a.typ = t
			out = append(out, a)
			return
		}
		var enumNode, defNode *yaml.Node
		l.fields(v, key, argKeys, func(name string, fv *yaml.Node) {
			switch name {
			case "type":
				if s, ok := l.scalar(fv, key+".type"); ok {
					t, known := parseArgType(s)
					if !known {
						l.errorf(fv, key+".type", "unknown type %q (types: string, integer, number, boolean, object, array, file)", s)
					}
					a.typ = t
				}
			case "required":
				a.required = l.boolean(fv, key+".required")
			case "description":
				a.description, _ = l.scalar(fv, key+".description")
			case "enum":
				enumNode = fv
			case "default":
				defNode = fv
			case "media_types":
				a.mediaTypes = l.stringList(fv, key+".media_types")
			}
		})
		if v.Kind != yaml.MappingNode || a.typ == 0 {
			return
		}
		if enumNode != nil {
			a.enum = l.enum(enumNode, key+".enum", a.typ)
		}
		if defNode != nil {
			a.def = l.defaultValue(defNode, key+".default", &a)
		}
		if len(a.mediaTypes) > 0 && a.typ != argFile {
			l.errorf(v, key+".media_types", "is only for arguments of type file")
		}
		out = append(out, a)
	})
	return out
}

func (l *loader) boolean(n *yaml.Node, key string) bool {
	s, ok := l.scalar(n, key)
	if !ok {
		return false
	}
	if n.ShortTag() != "!!bool" {
		l.errorf(n, key, "must be true or false, not %q", s)
		return false
	}
	return s == "true" || s == "True" || s == "TRUE"
}

func (l *loader) enum(n *yaml.Node, key string, t argType) []any {
	if t != argString && t != argInteger && t != argNumber {
		l.errorf(n, key, "is only for arguments of type string, integer or number")
		return nil
	}
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		l.errorf(n, key, "must be a list of at least one value")
		return nil
	}
	out := make([]any, 0, len(n.Content))
	for i, item := range n.Content {
		v, ok := l.typedConstant(resolve(item), fmt.Sprintf("%s[%d]", key, i), t)
		if ok {
			out = append(out, v)
		}
	}
	return out
}

func (l *loader) defaultValue(n *yaml.Node, key string, a *argument) any {
	switch {
	case a.required:
		l.errorf(n, key, "a required argument has no default: drop one of the two")
		return nil
	case a.typ == argFile:
		l.errorf(n, key, "an argument of type file has no default")
		return nil
	}
	v, ok := l.typedConstant(n, key, a.typ)
	if !ok {
		return nil
	}
	if len(a.enum) > 0 && !slices.Contains(a.enum, v) {
		l.errorf(n, key, "is not one of the enum's values")
		return nil
	}
	return v
}

// typedConstant decodes a YAML value as a value of type t.
func (l *loader) typedConstant(n *yaml.Node, key string, t argType) (any, bool) {
	var raw any
	if err := n.Decode(&raw); err != nil {
		l.errorf(n, key, "%v", err)
		return nil, false
	}
	if bad := nonStringKey(raw); bad != "" {
		l.errorf(n, key, "mapping keys must be strings (found %s)", bad)
		return nil, false
	}
	v, problem := convertData(raw, &argument{typ: t})
	if problem != "" {
		l.errorf(n, key, "%s", problem)
		return nil, false
	}
	return v, true
}

// textPatterns reads from_text: one regular expression or a list.
func (l *loader) textPatterns(n *yaml.Node, schema *argSchema) {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	for i, item := range items {
		item = resolve(item)
		key := "from_text"
		if n.Kind == yaml.SequenceNode {
			key = fmt.Sprintf("from_text[%d]", i)
		}
		src, ok := l.scalar(item, key)
		if !ok {
			continue
		}
		re, err := regexp.Compile(src)
		if err != nil {
			l.errorf(item, key, "is not a valid regular expression: %v", err)
			continue
		}
		named := 0
		for _, name := range re.SubexpNames() {
			if name == "" {
				continue
			}
			named++
			if !schema.declared {
				continue
			}
			switch a := schema.find(name); {
			case a == nil:
				l.errorf(item, key, "the group (?P<%s>…) is not a declared argument", name)
			case a.typ == argFile:
				l.errorf(item, key, "the group (?P<%s>…) names a file argument, which text cannot give", name)
			}
		}
		if named == 0 {
			l.errorf(item, key, "has no named group such as (?P<city>.+): nothing to take from the text")
			continue
		}
		schema.patterns = append(schema.patterns, re)
	}
}

// argProblem is an argument a call cannot go on without.
type argProblem struct {
	arg *argument
	// why is "" for a missing argument, else what is wrong with its value.
	why string
}

// collector gathers the arguments of a call.
type collector struct {
	schema   *argSchema
	values   map[string]any
	problems map[string]string // invalid values, by argument name
}

// gatherArgs reads the arguments from the call's user messages, oldest
// first, later values winning; within a message, data parts win over text.
// It returns the problems that stop the call, in declared order.
func (sk *Skill) gatherArgs(call *Call, e *env) (map[string]any, []argProblem) {
	s := sk.schema
	if s == nil {
		if len(call.History) < 2 {
			return e.Message.Data, nil // the fast path: one message, no schema
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

// acceptsMedia reports whether a media type is among the accepted ones
// (with wildcards); no accepted types accept everything.
func acceptsMedia(accepted []string, mediaType string) bool {
	if len(accepted) == 0 {
		return true
	}
	for _, a := range accepted {
		if mediaMatch(a, mediaType) {
			return true
		}
	}
	return false
}

// mediaMatch reports whether two media types are compatible: equal, or one
// is a wildcard (*/*, type/*) that covers the other. Parameters and case
// are ignored.
func mediaMatch(a, b string) bool {
	a, b = mediaTypeOf(a), mediaTypeOf(b)
	if a == b || a == "*/*" || b == "*/*" || a == "*" || b == "*" {
		return true
	}
	at, as, _ := strings.Cut(a, "/")
	bt, bs, _ := strings.Cut(b, "/")
	return at == bt && (as == "*" || bs == "*")
}

// convertData checks a JSON value against a declared type; it returns the
// value converted (JSON numbers become int for integer arguments) or what
// is wrong with it.
func convertData(v any, a *argument) (any, string) {
	var out any
	switch a.typ {
	case argString:
		if s, ok := v.(string); ok {
			out = s
		}
	case argInteger:
		if f, ok := toFloat(v); ok && f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
			out = int(f)
		}
	case argNumber:
		if f, ok := toFloat(v); ok {
			out = f
		}
	case argBoolean:
		if b, ok := v.(bool); ok {
			out = b
		}
	case argObject:
		if m, ok := v.(map[string]any); ok {
			out = m
		}
	case argArray:
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() != reflect.Uint8 {
			out = v
		}
	case argFile:
		return fileFromData(v)
	}
	if out == nil {
		return nil, fmt.Sprintf("must be %s, not %s", article(a.typ), describeValue(v))
	}
	return checkEnum(out, a)
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// fileFromData reads a file given in a data part: an object with url or
// bytes (base64), and optionally name and media_type.
func fileFromData(v any) (any, string) {
	const want = `must be a file part, or an object with "url" or "bytes" (base64)`
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, want
	}
	name, _ := obj["name"].(string)
	media, _ := obj["media_type"].(string)
	f := map[string]any{"name": name, "media_type": media}
	switch u, b := obj["url"], obj["bytes"]; {
	case u != nil:
		s, ok := u.(string)
		if !ok || s == "" {
			return nil, want
		}
		f["url"] = s
	case b != nil:
		s, ok := b.(string)
		if !ok {
			return nil, want
		}
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, `has "bytes" that are not valid base64`
		}
		f["bytes"] = raw
	default:
		return nil, want
	}
	return f, ""
}

// convertText reads a value of a's type from text.
func convertText(s string, a *argument) (any, string) {
	var out any
	var ok bool
	switch a.typ {
	case argString:
		out, ok = s, true
	case argInteger:
		i, err := strconv.ParseInt(s, 10, 64)
		out, ok = int(i), err == nil
	case argNumber:
		f, err := strconv.ParseFloat(s, 64)
		out, ok = f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	case argBoolean:
		switch strings.ToLower(s) {
		case "true", "yes", "y", "on", "1":
			out, ok = true, true
		case "false", "no", "n", "off", "0":
			out, ok = false, true
		}
	case argObject, argArray:
		var v any
		if json.Unmarshal([]byte(s), &v) == nil {
			return convertData(v, a)
		}
	}
	if !ok {
		return nil, fmt.Sprintf("must be %s, not %q", article(a.typ), s)
	}
	return checkEnum(out, a)
}

func checkEnum(v any, a *argument) (any, string) {
	if len(a.enum) == 0 || slices.Contains(a.enum, v) {
		return v, ""
	}
	vals := make([]string, len(a.enum))
	for i, x := range a.enum {
		vals[i], _ = scalarString(x)
	}
	got, _ := scalarString(v)
	return nil, fmt.Sprintf("must be one of %s, not %q", strings.Join(vals, ", "), got)
}

func article(t argType) string {
	switch t {
	case argInteger, argObject, argArray:
		return "an " + t.String()
	case argFile:
		return "a file"
	}
	return "a " + t.String()
}

// describeValue names a JSON value's type for messages.
func describeValue(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, int, int64, json.Number:
		if f, _ := toFloat(v); f != math.Trunc(f) {
			return "a fractional number"
		}
		return "a number"
	case map[string]any:
		return "an object"
	case nil:
		return "null"
	}
	return "a " + kindName(v)
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

// inputSchemaKey marks, in a part's metadata, the data part of an
// input-required message that lists the arguments asked for.
const inputSchemaKey = "input_schema"

// jsonSchema describes the argument as JSON Schema.
func (a *argument) jsonSchema() map[string]any {
	if a.typ == 0 { // not declared: any value
		return map[string]any{}
	}
	m := map[string]any{"type": a.typ.String()}
	if a.typ == argFile {
		m["type"] = "object"
		m["format"] = "file"
		m["properties"] = map[string]any{
			"url": map[string]any{"type": "string"}, "bytes": map[string]any{"type": "string", "contentEncoding": "base64"},
			"name": map[string]any{"type": "string"}, "media_type": map[string]any{"type": "string"},
		}
		if len(a.mediaTypes) > 0 {
			m["mediaTypes"] = a.mediaTypes
		}
	}
	if a.description != "" {
		m["description"] = a.description
	}
	if len(a.enum) > 0 {
		m["enum"] = a.enum
	}
	if a.def != nil {
		m["default"] = a.def
	}
	return m
}

// objectSchema is the JSON Schema of an object holding args; required
// lists the names given.
func objectSchema(args []*argument, required []string) map[string]any {
	props := make(map[string]any, len(args))
	for _, a := range args {
		props[a.name] = a.jsonSchema()
	}
	m := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		m["required"] = required
	}
	return m
}

// ArgumentSchema is the JSON Schema of the skill's declared arguments, or
// nil when it declares none.
func (sk *Skill) ArgumentSchema() map[string]any {
	if sk.schema == nil || !sk.schema.declared {
		return nil
	}
	args := make([]*argument, len(sk.schema.args))
	var required []string
	for i := range sk.schema.args {
		args[i] = &sk.schema.args[i]
		if args[i].required {
			required = append(required, args[i].name)
		}
	}
	return objectSchema(args, required)
}

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
	b.WriteString(a.typ.String())
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

// replyHint says how to answer: data naming every argument, or the first
// one as text.
func replyHint(args []*argument) string {
	var b strings.Builder
	b.WriteString(" Reply on this task with data such as {")
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q: …", a.name)
	}
	b.WriteByte('}')
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
