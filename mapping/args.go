package mapping

// Declared arguments: their types, and converting a value (from a data
// part, the text or the YAML) to a declared type.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
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

// argument is one declared argument, or one nested in another (an
// array's items, an object's properties).
type argument struct {
	name string
	typ  argType // the only type, or a union's first
	// types are a union's types in declared order (type: [object,
	// string]); nil for an argument of one type.
	types       []argType
	required    bool
	description string
	enum        []any // values of typ
	// enumTitles are the enum's values' display titles, by index ("" for
	// a value without one); nil when none has one (SEP-1330's titled enum).
	enumTitles []string
	def        any // the default, a value of typ; nil for none
	mediaTypes []string
	// rules are what a value must keep beyond its type and enum; nil for
	// none, so that an argument without them costs nothing more.
	rules *argRules
	// encoding is how a query or a form body sends the value.
	encoding paramEncoding
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

// convertData checks a JSON value against a declared argument; it returns
// the value converted (a JSON number becomes an int for an integer
// argument; the values nested in an array or an object are checked, and
// kept as they came) or what is wrong with it, naming the nested value
// that breaks a rule.
func convertData(v any, a *argument) (any, string) {
	out, where, what := a.conform(v, a.name)
	return out, problemAt(a.name, where, what)
}

// conform converts v to the first of a's types it fits and checks a's enum
// and rules, its nested values' too; path names v in messages
// (address.city, tags[2]). It returns v converted (not the values nested
// in it), or where the problem is and what it is.
func (a *argument) conform(v any, path string) (out any, where, what string) {
	if a.typ == argFile {
		out, what = fileFromData(v)
		return out, path, what
	}
	out, t := firstType(a, v, dataAs)
	if out == nil {
		return nil, path, fmt.Sprintf("must be %s, not %s", a.typesArticle(), describeValue(v))
	}
	return a.check(out, t, path)
}

// firstType reads v as the first of a's types that as reads it (its one
// type, or a union's in declared order): the value and its type, or nil.
func firstType[V any](a *argument, v V, as func(V, argType) any) (any, argType) {
	if a.types == nil {
		return as(v, a.typ), a.typ
	}
	for _, t := range a.types {
		if out := as(v, t); out != nil {
			return out, t
		}
	}
	return nil, 0
}

// dataAs is v as a value of type t, or nil when it is not one.
func dataAs(v any, t argType) any {
	switch t {
	case argString:
		if s, ok := v.(string); ok {
			return s
		}
	case argInteger:
		if n, ok := v.(json.Number); ok { // beyond 2^53: exact while it fits an int
			if i, err := n.Int64(); err == nil {
				return int(i)
			}
		} else if f, ok := toFloat(v); ok && f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
			return int(f)
		}
	case argNumber:
		if f, ok := toFloat(v); ok {
			return f
		}
	case argBoolean:
		if b, ok := v.(bool); ok {
			return b
		}
	case argObject:
		if m, ok := v.(map[string]any); ok {
			return m
		}
	case argArray:
		if isList(v) {
			return v
		}
	}
	return nil
}

// check applies a's enum and rules to v, a value of a's type t.
func (a *argument) check(v any, t argType, path string) (any, string, string) {
	if len(a.enum) > 0 && !slices.Contains(a.enum, v) {
		return nil, path, enumProblem(v, a)
	}
	if a.rules != nil {
		if where, what := a.rules.check(v, t, path); what != "" {
			return nil, where, what
		}
	}
	return v, "", ""
}

// problemAt says what is wrong with the argument name, where is the value
// that breaks a rule: the argument's own value, or one nested in it.
func problemAt(name, where, what string) string {
	switch {
	case what == "" || where == name:
		return what
	case what == isRequired:
		return "lacks " + where + ", which is required"
	}
	return "holds " + where + ", which " + what
}

// isRequired is what a missing required property breaks.
const isRequired = "is required"

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

// convertText reads a value of a's type from text: of a union's types,
// the first, in declared order, that reads it.
func convertText(s string, a *argument) (any, string) {
	out, t := firstType(a, s, textAs)
	if out == nil {
		return nil, fmt.Sprintf("must be %s, not %q", a.typesArticle(), shorten(s))
	}
	_, where, what := a.check(out, t, a.name)
	if what != "" {
		return nil, problemAt(a.name, where, what)
	}
	return out, ""
}

// textAs reads text as a value of type t, or nil when it is not one.
func textAs(s string, t argType) any {
	switch t {
	case argString:
		return s
	case argInteger:
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return int(i)
		}
	case argNumber:
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f
		}
	case argBoolean:
		switch strings.ToLower(s) {
		case "true", "yes", "y", "on", "1":
			return true
		case "false", "no", "n", "off", "0":
			return false
		}
	case argObject, argArray:
		var v any
		if json.Unmarshal([]byte(s), &v) == nil {
			return dataAs(v, t)
		}
	}
	return nil
}

func enumProblem(v any, a *argument) string {
	vals := make([]string, len(a.enum))
	for i, x := range a.enum {
		vals[i], _ = scalarString(x)
	}
	got, _ := scalarString(v)
	return fmt.Sprintf("must be one of %s, not %q", strings.Join(vals, ", "), shorten(got))
}

// typesArticle names a's type, or its union's types: "an object or a string".
func (a *argument) typesArticle() string {
	if a.types == nil {
		return article(a.typ)
	}
	names := make([]string, len(a.types))
	for i, t := range a.types {
		names[i] = article(t)
	}
	return strings.Join(names, " or ")
}

// typeNames are a union's type names, in declared order; nil for an
// argument of one type.
func (a *argument) typeNames() []string {
	if a.types == nil {
		return nil
	}
	names := make([]string, len(a.types))
	for i, t := range a.types {
		names[i] = t.String()
	}
	return names
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
