package mapping

// Declared arguments: their types, and converting a value (from a data
// part, the text or the YAML) to a declared type.

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
	// enumTitles are the enum's values' display titles, by index ("" for
	// a value without one); nil when none has one (SEP-1330's titled enum).
	enumTitles []string
	def        any // the default, a value of typ; nil for none
	mediaTypes []string
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
		if n, ok := v.(json.Number); ok { // beyond 2^53: exact while it fits an int
			if i, err := n.Int64(); err == nil {
				out = int(i)
			}
		} else if f, ok := toFloat(v); ok && f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
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
