package mapping

// Loading a skill's arguments and from_text sections.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

var argKeys = []string{"type", "required", "description", "enum", "default", "media_types", "pattern", "min_length",
	"max_length", "format", "minimum", "maximum", "exclusive_minimum", "exclusive_maximum", "items", "min_items",
	"max_items", "properties", "style", "explode"}

// The bounds of a published argument schema, so that a card or a tools
// list stays a size clients read.
const (
	// MaxArgumentDepth is how deep arguments nest: an argument, its items or
	// properties, theirs, and so on.
	MaxArgumentDepth = 8
	// MaxArgumentSchemaBytes is the size of a skill's argument schema as JSON.
	MaxArgumentSchemaBytes = 64 << 10
)

// arguments reads a skill's arguments section.
func (l *loader) arguments(n *yaml.Node) []argument {
	return l.argumentMap(n, "arguments", 1)
}

// argumentMap reads a mapping of names to argument specs: a skill's
// arguments (depth 1) or an object's properties.
func (l *loader) argumentMap(n *yaml.Node, key string, depth int) []argument {
	var out []argument
	l.entries(n, key, func(k, v *yaml.Node) {
		akey := key + "." + k.Value
		if !argName.MatchString(k.Value) {
			l.errorf(k, akey, "%q is not a valid argument name: use letters, digits and '_', not starting with a digit", k.Value)
			return
		}
		if a, ok := l.argument(k.Value, v, akey, depth); ok {
			out = append(out, a)
		}
	})
	return out
}

// argument reads one argument spec, the short form (name: type) or the
// long one; depth is 1 for a skill's argument, more for one nested in it.
func (l *loader) argument(name string, v *yaml.Node, key string, depth int) (argument, bool) {
	a := argument{name: name, typ: argString}
	if depth > MaxArgumentDepth {
		l.errorf(v, key, "nests more than %d levels deep, the limit of a published argument schema", MaxArgumentDepth)
		return a, false
	}
	if v.Kind == yaml.ScalarNode { // the short form: name: type
		return a, l.argType(v, key, &a)
	}
	nodes := map[string]*yaml.Node{}
	l.fields(v, key, argKeys, func(field string, fv *yaml.Node) {
		switch field {
		case "type":
			l.argType(fv, key+".type", &a)
		case "required":
			a.required = l.boolean(fv, key+".required")
		case "description":
			a.description, _ = l.scalar(fv, key+".description")
		case "media_types":
			a.mediaTypes = l.stringList(fv, key+".media_types")
		default:
			nodes[field] = fv
		}
	})
	if v.Kind != yaml.MappingNode || a.typ == 0 {
		return a, false
	}
	if depth > 1 {
		for _, field := range []string{"default", "style", "explode"} {
			if nodes[field] != nil {
				l.errorf(nodes[field], key+"."+field, "is only for a skill's own arguments, not for one nested in another")
			}
		}
		if a.typ == argFile {
			l.errorf(v, key+".type", "file is only for a skill's own arguments, not for one nested in another")
		}
	}
	l.argRules(nodes, key, depth, &a)
	if n := nodes["enum"]; n != nil {
		a.enum, a.enumTitles = l.enum(n, key+".enum", &a)
	}
	if depth == 1 {
		l.paramEncoding(nodes, key, &a)
		if n := nodes["default"]; n != nil {
			a.def = l.defaultValue(n, key+".default", &a)
		}
	}
	if len(a.mediaTypes) > 0 && a.typ != argFile {
		l.errorf(v, key+".media_types", "is only for arguments of type file")
	}
	return a, true
}

// argType reads a type, or a list of them (a union), into a.
func (l *loader) argType(n *yaml.Node, key string, a *argument) bool {
	const known = "types: string, integer, number, boolean, object, array, file"
	if n.Kind != yaml.SequenceNode {
		s, ok := l.scalar(n, key)
		if !ok {
			a.typ = 0
			return false
		}
		t, ok := parseArgType(s)
		if !ok {
			l.errorf(n, key, "unknown type %q (%s)", s, known)
		}
		a.typ = t
		return ok
	}
	var types []argType
	for i, name := range l.stringList(n, key) {
		t, ok := parseArgType(name)
		switch {
		case !ok:
			l.errorf(n.Content[i], key, "unknown type %q (%s)", name, known)
		case t == argFile:
			l.errorf(n.Content[i], key, "a file cannot be one of several types")
		case slices.Contains(types, t):
			l.errorf(n.Content[i], key, "lists %s twice", name)
		default:
			types = append(types, t)
			continue
		}
		a.typ = 0
		return false
	}
	if len(types) < 2 {
		l.errorf(n, key, "a list of types needs at least two (or write the one type)")
		a.typ = 0
		return false
	}
	a.typ, a.types = types[0], types
	return true
}

// hasType reports whether a value of a may be of type t.
func (a *argument) hasType(t argType) bool {
	return a.typ == t || slices.Contains(a.types, t)
}

// argRules reads the rules among an argument's keys.
func (l *loader) argRules(nodes map[string]*yaml.Node, key string, depth int, a *argument) {
	r := argRules{}
	given := false
	forType := func(field string, types ...argType) *yaml.Node {
		n := nodes[field]
		if n == nil {
			return nil
		}
		if !slices.ContainsFunc(types, a.hasType) {
			names := make([]string, len(types))
			for i, t := range types {
				names[i] = t.String()
			}
			l.errorf(n, key+"."+field, "is only for arguments of type %s", strings.Join(names, " or "))
			return nil
		}
		given = true
		return n
	}
	if n := forType("pattern", argString); n != nil {
		if src, ok := l.scalar(n, key+".pattern"); ok {
			re, err := l.regexp(src)
			if err != nil {
				l.errorf(n, key+".pattern", "is not a Go (RE2) regular expression: %v (lookahead, lookbehind and backreferences are not supported)", err)
			}
			r.pattern = re
		}
	}
	r.minLength = l.count(forType("min_length", argString), key+".min_length")
	r.maxLength = l.count(forType("max_length", argString), key+".max_length")
	l.countOrder(nodes["max_length"], key, "min_length", "max_length", r.minLength, r.maxLength)
	if n := forType("format", argString); n != nil {
		r.format, _ = l.scalar(n, key+".format")
	}
	r.minimum = l.bound(nodes, key, "minimum", "exclusive_minimum", forType)
	r.maximum = l.bound(nodes, key, "maximum", "exclusive_maximum", forType)
	if r.minimum != nil && r.maximum != nil && (r.minimum.value > r.maximum.value ||
		r.minimum.value == r.maximum.value && (r.minimum.exclusive || r.maximum.exclusive)) {
		l.errorf(cmp.Or(nodes["maximum"], nodes["exclusive_maximum"]), key, "leaves no number between its minimum and its maximum")
	}
	r.minItems = l.count(forType("min_items", argArray), key+".min_items")
	r.maxItems = l.count(forType("max_items", argArray), key+".max_items")
	l.countOrder(nodes["max_items"], key, "min_items", "max_items", r.minItems, r.maxItems)
	if n := forType("items", argArray); n != nil {
		if items, ok := l.argument("items", n, key+".items", depth+1); ok {
			if items.required {
				l.errorf(n, key+".items.required", "is for an object's properties, not for an array's items")
			}
			r.items = &items
		}
	}
	if n := forType("properties", argObject); n != nil {
		r.properties = l.argumentMap(n, key+".properties", depth+1)
	}
	if given {
		a.rules = &r
	}
}

// count reads a count of characters or items: an integer from 0.
func (l *loader) count(n *yaml.Node, key string) *int {
	if n == nil {
		return nil
	}
	s, ok := l.scalar(n, key)
	if !ok {
		return nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		l.errorf(n, key, "must be an integer from 0, not %q", s)
		return nil
	}
	return &v
}

func (l *loader) countOrder(at *yaml.Node, key, minKey, maxKey string, least, most *int) {
	if least != nil && most != nil && *least > *most {
		l.errorf(at, key+"."+maxKey, "is %d, less than %s (%d)", *most, minKey, *least)
	}
}

// bound reads a minimum or a maximum, inclusive or exclusive (one of the
// two).
func (l *loader) bound(nodes map[string]*yaml.Node, key, inclusive, exclusive string,
	forType func(string, ...argType) *yaml.Node) *bound {
	in, ex := forType(inclusive, argInteger, argNumber), forType(exclusive, argInteger, argNumber)
	n, b := in, &bound{}
	switch {
	case in != nil && ex != nil:
		l.errorf(ex, key+"."+exclusive, "give %s or %s, not both", inclusive, exclusive)
		return nil
	case in == nil && ex == nil:
		return nil
	case ex != nil:
		n, b.exclusive = ex, true
	}
	field := key + "." + inclusive
	if b.exclusive {
		field = key + "." + exclusive
	}
	s, ok := l.scalar(n, field)
	if !ok {
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if tag := n.ShortTag(); err != nil || (tag != "!!int" && tag != "!!float") || math.IsNaN(f) || math.IsInf(f, 0) {
		l.errorf(n, field, "must be a number, not %q", s)
		return nil
	}
	b.value = f
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		b.integer = &i
	}
	return b
}

// enum reads an enum: its values, each a constant or {value, title} (a
// titled value, which a client may show by its title), and their titles
// (nil when none has one).
func (l *loader) enum(n *yaml.Node, key string, a *argument) (values []any, titles []string) {
	if a.hasType(argBoolean) || a.hasType(argObject) || a.hasType(argArray) || a.hasType(argFile) {
		l.errorf(n, key, "is only for arguments of type string, integer or number")
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		l.errorf(n, key, "must be a list of at least one value")
		return nil, nil
	}
	values, titles = make([]any, 0, len(n.Content)), make([]string, 0, len(n.Content))
	titled := false
	for i, item := range n.Content {
		itemKey := fmt.Sprintf("%s[%d]", key, i)
		valueNode, title := resolve(item), ""
		if valueNode.Kind == yaml.MappingNode {
			valueNode = nil
			l.fields(item, itemKey, []string{"value", "title"}, func(name string, v *yaml.Node) {
				if name == "value" {
					valueNode = resolve(v)
				} else {
					title, _ = l.scalar(v, itemKey+".title")
				}
			})
			if valueNode == nil {
				l.errorf(item, itemKey+".value", "is required")
				continue
			}
			titled = true
		}
		if v, ok := l.typedConstant(valueNode, itemKey, a); ok {
			values, titles = append(values, v), append(titles, title)
		}
	}
	if !titled {
		titles = nil
	}
	return values, titles
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
	v, ok := l.typedConstant(n, key, a)
	if !ok {
		return nil
	}
	return v
}

// typedConstant decodes a YAML value as a value of a, which must keep a's
// rules (and its enum, once read).
func (l *loader) typedConstant(n *yaml.Node, key string, a *argument) (any, bool) {
	var raw any
	if err := n.Decode(&raw); err != nil {
		l.errorf(n, key, "%v", err)
		return nil, false
	}
	if bad := nonStringKey(raw); bad != "" {
		l.errorf(n, key, "mapping keys must be strings (found %s)", bad)
		return nil, false
	}
	v, problem := convertData(raw, a)
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
		re, err := l.regexp(src)
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
