package mapping

// Templates: text with {expression} holes, split at load and rendered at
// run time, and the error of a value the caller's input makes unusable.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/expr-lang/expr/vm"
)

// template is text with {expression} holes, compiled.
type template struct {
	parts []tplPart
	// null marks a template whose optional {env.NAME?} placeholder was
	// unset: its value is null wherever it is used.
	null bool
}

// tplPart is a literal (prog == nil) or a hole.
type tplPart struct {
	lit  string
	prog *vm.Program
	src  string // the hole's expression, for messages
}

// piece is one piece of a template's source: a literal, or a hole with its
// byte offset in the source.
type piece struct {
	text   string
	hole   bool
	offset int
}

// splitTemplate cuts src into literals and {holes}. "{{" and "}}" outside
// holes are literal braces. A hole ends at the brace that balances its
// opening one, ignoring braces inside string literals, so holes may hold
// map literals. It returns the offset of a syntax error.
func splitTemplate(src string) ([]piece, int, error) {
	var out []piece
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, piece{text: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '{' && strings.HasPrefix(src[i:], "{{"), c == '}' && strings.HasPrefix(src[i:], "}}"):
			lit.WriteByte(c)
			i += 2
		case c == '}':
			return nil, i, errors.New(`unmatched "}" (write "}}" for a literal brace)`)
		case c == '{':
			end, err := holeEnd(src, i)
			if err != nil {
				return nil, i, err
			}
			text := src[i+1 : end]
			if strings.TrimSpace(text) == "" {
				return nil, i, errors.New(`empty "{}" (write "{{}}" for literal braces)`)
			}
			flush()
			out = append(out, piece{text: text, hole: true, offset: i + 1})
			i = end + 1
		default:
			lit.WriteByte(c)
			i++
		}
	}
	flush()
	return out, 0, nil
}

// holeEnd finds the brace that closes the hole opened at src[start].
func holeEnd(src string, start int) (int, error) {
	depth := 0
	for i := start; i < len(src); i++ {
		switch c := src[i]; c {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i, nil
			}
		case '"', '\'', '`':
			j := i + 1
			for ; j < len(src) && src[j] != c; j++ {
				if src[j] == '\\' && c != '`' {
					j++
				}
			}
			if j >= len(src) {
				return 0, errors.New("unterminated string in a {} hole")
			}
			i = j
		}
	}
	return 0, errors.New(`unclosed "{"`)
}

var envPlaceholder = regexp.MustCompile(`^env\.([A-Za-z_][A-Za-z0-9_]*)(\?)?$`)

// envRef recognizes a hole that is an {env.NAME} or {env.NAME?} placeholder.
func envRef(hole string) (name string, optional, ok bool) {
	m := envPlaceholder.FindStringSubmatch(strings.TrimSpace(hole))
	if m == nil {
		return "", false, false
	}
	return m[1], m[2] == "?", true
}

// constant returns the template's text when it has no holes.
func (t *template) constant() (string, bool) {
	switch {
	case t.null:
		return "", false
	case len(t.parts) == 0:
		return "", true
	case len(t.parts) == 1 && t.parts[0].prog == nil:
		return t.parts[0].lit, true
	}
	return "", false
}

// value evaluates a template that feeds the upstream request. A template
// that is one hole keeps the hole's type (a list, a number, null); in a
// longer text, a null hole makes the whole value null, and a list or a map
// is an error.
func (t *template) value(m *vm.VM, vars *exprVars) (any, error) {
	if t.null {
		return nil, nil
	}
	if len(t.parts) == 1 {
		p := &t.parts[0]
		if p.prog == nil {
			return p.lit, nil
		}
		return m.Run(p.prog, vars)
	}
	var b []byte
	for i := range t.parts {
		p := &t.parts[i]
		if p.prog == nil {
			b = append(b, p.lit...)
			continue
		}
		v, err := m.Run(p.prog, vars)
		if err != nil {
			return nil, err
		}
		if v == nil {
			return nil, nil
		}
		var ok bool
		if b, ok = appendScalar(b, v); !ok {
			return nil, &inputError{fmt.Sprintf("{%s} is a %s, which cannot be part of a text", p.src, kindName(v))}
		}
	}
	return string(b), nil
}

// text renders a template meant for people: null renders as nothing, lists
// and maps as JSON.
func (t *template) text(m *vm.VM, vars *exprVars) (string, error) {
	if s, ok := t.constant(); ok || t.null {
		return s, nil
	}
	var b []byte
	for i := range t.parts {
		p := &t.parts[i]
		if p.prog == nil {
			b = append(b, p.lit...)
			continue
		}
		v, err := m.Run(p.prog, vars)
		if err != nil {
			return "", err
		}
		if v == nil {
			continue
		}
		var ok bool
		if b, ok = appendScalar(b, v); !ok {
			j, err := json.Marshal(v)
			if err != nil {
				return "", fmt.Errorf("{%s}: %w", p.src, err)
			}
			b = append(b, j...)
		}
	}
	return string(b), nil
}

// appendScalar appends a string, number or boolean as text.
func appendScalar(b []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case string:
		return append(b, v...), true
	case bool:
		return strconv.AppendBool(b, v), true
	case int:
		return strconv.AppendInt(b, int64(v), 10), true
	case int64:
		return strconv.AppendInt(b, v, 10), true
	case int32:
		return strconv.AppendInt(b, int64(v), 10), true
	case int16:
		return strconv.AppendInt(b, int64(v), 10), true
	case int8:
		return strconv.AppendInt(b, int64(v), 10), true
	case uint:
		return strconv.AppendUint(b, uint64(v), 10), true
	case uint64:
		return strconv.AppendUint(b, v, 10), true
	case uint32:
		return strconv.AppendUint(b, uint64(v), 10), true
	case uint16:
		return strconv.AppendUint(b, uint64(v), 10), true
	case uint8:
		return strconv.AppendUint(b, uint64(v), 10), true
	case float64:
		return appendFloat(b, v), true
	case float32:
		return appendFloat(b, float64(v)), true
	case json.Number:
		return append(b, v...), true
	}
	return b, false
}

// appendFloat writes JSON numbers the way people write them: 42, not 4.2e+01.
func appendFloat(b []byte, f float64) []byte {
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// scalarString formats a scalar; ok is false for lists, maps and the rest.
func scalarString(v any) (string, bool) {
	if s, ok := v.(string); ok {
		return s, true
	}
	var buf [32]byte
	b, ok := appendScalar(buf[:0], v)
	return string(b), ok
}

// kindName names a value's kind in messages meant for people.
func kindName(v any) string {
	switch reflect.ValueOf(v).Kind() {
	case reflect.Slice, reflect.Array:
		return "list"
	case reflect.Map, reflect.Struct:
		return "map"
	case reflect.Invalid:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// isList reports whether v is a list: a slice of anything but bytes,
// which are one value.
func isList(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() != reflect.Uint8
}

// forEach calls fn with each element of a list, or with v itself.
func forEach(v any, fn func(any) error) error {
	switch l := v.(type) {
	case []any:
		for _, x := range l {
			if err := fn(x); err != nil {
				return err
			}
		}
		return nil
	case []string:
		for _, x := range l {
			if err := fn(x); err != nil {
				return err
			}
		}
		return nil
	}
	if isList(v) {
		rv := reflect.ValueOf(v)
		for i := 0; i < rv.Len(); i++ {
			if err := fn(rv.Index(i).Interface()); err != nil {
				return err
			}
		}
		return nil
	}
	return fn(v)
}

// inputError is a request that the caller's input makes impossible or
// unsafe. Its text is meant for the caller.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }
