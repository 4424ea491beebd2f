package mapping

// Loading a skill's arguments and from_text sections.

import (
	"fmt"
	"regexp"
	"slices"

	"gopkg.in/yaml.v3"
)

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
			a.enum, a.enumTitles = l.enum(enumNode, key+".enum", a.typ)
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

// enum reads an enum: its values, each a constant or {value, title} (a
// titled value, which a client may show by its title), and their titles
// (nil when none has one).
func (l *loader) enum(n *yaml.Node, key string, t argType) (values []any, titles []string) {
	if t != argString && t != argInteger && t != argNumber {
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
		if v, ok := l.typedConstant(valueNode, itemKey, t); ok {
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
