package mapping

// Reading typed values, expressions and templates from YAML nodes.

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
	"gopkg.in/yaml.v3"
)

func line(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch n.ShortTag() {
	case "!!null":
		return "empty"
	case "!!str":
		return "a string"
	case "!!int", "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	}
	return strings.TrimPrefix(n.ShortTag(), "!!")
}

func join(key, name string) string {
	if key == "" {
		return name
	}
	return key + "." + name
}

// fields walks a mapping with a fixed set of keys, refusing unknown and
// repeated keys.
func (l *loader) fields(n *yaml.Node, key string, known []string, fn func(name string, v *yaml.Node)) {
	l.entries(n, key, func(k, v *yaml.Node) {
		if !slices.Contains(known, k.Value) {
			l.errorf(k, join(key, k.Value), "unknown key (known keys: %s)", strings.Join(known, ", "))
			return
		}
		fn(k.Value, v)
	})
}

// entries walks a mapping whose keys are names, refusing repeated keys.
func (l *loader) entries(n *yaml.Node, key string, fn func(k, v *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		l.errorf(n, key, "must be a mapping, not %s", describe(n))
		return
	}
	seen := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			l.errorf(k, key, "keys must be names, not %s", describe(k))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			l.errorf(k, join(key, k.Value), "repeated key (first at line %d)", first)
			continue
		}
		seen[k.Value] = k.Line
		fn(k, v)
	}
}

// scalar returns a scalar's text; lists, mappings and empty values are
// mistakes.
func (l *loader) scalar(n *yaml.Node, key string) (string, bool) {
	switch {
	case n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle != 0:
		l.errorf(n, key, `is a YAML mapping: quote a value that starts with "{", e.g. "{args.id}"`)
	case n.Kind != yaml.ScalarNode:
		l.errorf(n, key, "must be a single value, not %s", describe(n))
	case n.ShortTag() == "!!null":
		l.errorf(n, key, "is empty")
	default:
		return n.Value, true
	}
	return "", false
}

func (l *loader) stringList(n *yaml.Node, key string) []string {
	if n.Kind != yaml.SequenceNode {
		l.errorf(n, key, "must be a list, not %s", describe(n))
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		if s, ok := l.scalar(resolve(item), fmt.Sprintf("%s[%d]", key, i)); ok {
			out = append(out, s)
		}
	}
	return out
}

func (l *loader) duration(n *yaml.Node, key string) time.Duration {
	s, ok := l.scalar(n, key)
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		l.errorf(n, key, "must be a positive duration such as 30s or 1m30s, not %q", s)
		return 0
	}
	return d
}

var sizeUnits = map[string]int64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}

var sizePattern = regexp.MustCompile(`^([0-9]+)\s*([A-Za-z]*)$`)

func (l *loader) size(n *yaml.Node, key string) int64 {
	s, ok := l.scalar(n, key)
	if !ok {
		return 0
	}
	if m := sizePattern.FindStringSubmatch(strings.TrimSpace(s)); m != nil {
		unit, known := sizeUnits[strings.ToLower(m[2])]
		v, err := strconv.ParseInt(m[1], 10, 64)
		if known && err == nil && v > 0 && v <= (1<<62)/unit {
			return v * unit
		}
	}
	l.errorf(n, key, "must be a positive size such as 1048576, 512KiB or 10MiB, not %q", s)
	return 0
}

func (l *loader) positiveInt(n *yaml.Node, key string) int {
	s, ok := l.scalar(n, key)
	if !ok {
		return 0
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		l.errorf(n, key, "must be a positive integer, not %q", s)
		return 0
	}
	return v
}

// constants decodes a config mapping into plain values.
func (l *loader) constants(n *yaml.Node, key string) map[string]any {
	out := map[string]any{}
	l.entries(n, key, func(k, v *yaml.Node) {
		var val any
		if err := v.Decode(&val); err != nil {
			l.errorf(v, join(key, k.Value), "%v", err)
			return
		}
		if bad := nonStringKey(val); bad != "" {
			l.errorf(v, join(key, k.Value), "mapping keys must be strings (found %s)", bad)
			return
		}
		out[k.Value] = val
	})
	return out
}

func nonStringKey(v any) string {
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			if bad := nonStringKey(x); bad != "" {
				return bad
			}
		}
	case map[any]any:
		for k := range v {
			return fmt.Sprint(k)
		}
	case []any:
		for _, x := range v {
			if bad := nonStringKey(x); bad != "" {
				return bad
			}
		}
	}
	return ""
}

// exprLine is the file line of line ln (1-based) of a scalar's text.
func exprLine(n *yaml.Node, ln int) int {
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return n.Line + ln // a block scalar's text starts below its indicator
	}
	return n.Line + ln - 1
}

// exprError reports an expression that does not compile, at its line.
func (l *loader) exprError(n *yaml.Node, key string, lineInText int, err error) {
	ln := lineInText
	var fe *file.Error
	if errors.As(err, &fe) && fe.Line > 0 {
		ln += fe.Line - 1
	}
	l.errorAt(exprLine(n, ln), key, err.Error())
}

// expression compiles a scalar holding one expression.
func (l *loader) expression(n *yaml.Node, key string, ph phase, asBool bool) *vm.Program {
	src, ok := l.scalar(n, key)
	if !ok {
		return nil
	}
	prog, err := l.c.compile(src, ph, asBool)
	if err != nil {
		l.exprError(n, key, 1, err)
		return nil
	}
	return prog
}

// tplOpts says what a template may hold.
type tplOpts struct {
	env    bool // {env.NAME} placeholders
	phase  phase
	header bool // literal text must be a valid header value
}

// template compiles a scalar holding a template.
func (l *loader) template(n *yaml.Node, key string, o tplOpts) *template {
	src, ok := l.scalar(n, key)
	if !ok {
		return nil
	}
	pieces, off, err := splitTemplate(src)
	if err != nil {
		l.errorAt(exprLine(n, 1+strings.Count(src[:off], "\n")), key, err.Error())
		return nil
	}
	t := &template{}
	bad := false
	for _, p := range pieces {
		if !p.hole {
			t.addLiteral(p.text)
			continue
		}
		holeLine := 1 + strings.Count(src[:p.offset], "\n")
		if name, optional, isEnv := envRef(p.text); isEnv {
			val, ok := l.envValue(n, key, name, optional, o)
			switch {
			case !ok:
				bad = true
			case val == nil:
				t.null = true
			default:
				t.addLiteral(*val)
			}
			continue
		}
		prog, err := l.c.compile(p.text, o.phase, false)
		if err != nil {
			l.exprError(n, key, holeLine, err)
			bad = true
			continue
		}
		t.parts = append(t.parts, tplPart{prog: prog, src: strings.TrimSpace(p.text)})
	}
	if o.header {
		for _, p := range t.parts {
			if p.prog == nil && !validHeaderValue(p.lit) {
				l.errorf(n, key, "holds a line break or a control character")
				bad = true
				break
			}
		}
	}
	if bad {
		return nil
	}
	return t
}

func (t *template) addLiteral(s string) {
	if k := len(t.parts); k > 0 && t.parts[k-1].prog == nil {
		t.parts[k-1].lit += s
		return
	}
	t.parts = append(t.parts, tplPart{lit: s})
}

// envValue resolves a placeholder once, at load: nil for an unset optional
// variable. Messages never show a variable's value.
func (l *loader) envValue(n *yaml.Node, key, name string, optional bool, o tplOpts) (*string, bool) {
	if !o.env {
		l.errorf(n, key, "{env.%s}: environment placeholders are allowed only in upstream.url and in header and query values", name)
		return nil, false
	}
	val, set := l.opts.lookupEnv(name)
	if !set || val == "" {
		if optional {
			return nil, true
		}
		l.errorf(n, key, "environment variable %s is not set (write {env.%s?} if the value may be left out)", name, name)
		return nil, false
	}
	if o.header && !validHeaderValue(val) {
		l.errorf(n, key, "environment variable %s holds a line break or a control character", name)
		return nil, false
	}
	return &val, true
}
