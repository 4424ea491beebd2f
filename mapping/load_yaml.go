package mapping

// The loader, which collects every mistake as a ConfigError, and reading
// typed values from YAML nodes: mappings with known keys, scalars, lists,
// durations, sizes and constants.

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// ConfigError is one mistake in a skills file.
type ConfigError struct {
	File  string
	Line  int    // 0 when the mistake has no line
	Skill string // the skill's id; "" outside the skills
	Key   string // the dotted key, e.g. "request.path"
	Msg   string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Skill != "" {
		fmt.Fprintf(&b, "skill %q: ", e.Skill)
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// loader walks the YAML tree, collecting every mistake.
type loader struct {
	file string
	opts *Options
	errs []error
	c    compiler
	// schema is the declared arguments of the skill being read; nil when
	// it declares none.
	schema *argSchema
	// skill and prefix say where in the file the walk is, for messages.
	skill, prefix string
	// matchNeeds is what the skills' match predicates read.
	matchNeeds usage
	// patterns are the regular expressions compiled so far, by source:
	// a generated file repeats an API's few patterns in many skills.
	patterns map[string]*regexp.Regexp
}

// regexp compiles src once per file; a Regexp is safe to share.
func (l *loader) regexp(src string) (*regexp.Regexp, error) {
	if re, ok := l.patterns[src]; ok {
		return re, nil
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, err
	}
	if l.patterns == nil {
		l.patterns = map[string]*regexp.Regexp{}
	}
	l.patterns[src] = re
	return re, nil
}

func (l *loader) errorf(n *yaml.Node, key, format string, args ...any) {
	l.errorAt(line(n), key, fmt.Sprintf(format, args...))
}

func (l *loader) errorAt(ln int, key, msg string) {
	l.errs = append(l.errs, &ConfigError{File: l.file, Line: ln, Skill: l.skill, Key: l.prefix + key, Msg: msg})
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (l *loader) yamlError(err error) {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		l.errorAt(n, "", m[2])
		return
	}
	l.errorAt(0, "", err.Error())
}

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
