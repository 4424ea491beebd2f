package openapi

// Reading schemas: a JSON Schema (OpenAPI's dialect) boiled down to what a
// skill's argument can say.

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// schema is what the generator reads of a schema.
type schema struct {
	typ         string // "" when the schema gives none
	format      string
	description string
	enum        []any
	def         any
	hasDef      bool
	example     any
	hasExample  bool
	readOnly    bool
	minimum     *float64
	maximum     *float64
	items       *yaml.Node
	props       []property // an object's properties, in order (allOf merged)
	required    []string
}

type property struct {
	name string
	node *yaml.Node
}

// maxDepth bounds allOf nesting.
const maxDepth = 16

// schema reads n (after its $ref) and merges its allOf members.
func (d *document) schema(n *yaml.Node, depth int) (schema, error) {
	var s schema
	if n == nil {
		return s, nil
	}
	if depth > maxDepth {
		return s, fmt.Errorf("schemas nested too deep (a loop of allOf?)")
	}
	n, err := d.deref(n)
	if err != nil {
		return s, err
	}
	s.typ = schemaType(get(n, "type"))
	s.format = scalar(get(n, "format"))
	s.description = strings.TrimSpace(scalar(get(n, "description")))
	s.readOnly = scalar(get(n, "readOnly")) == "true"
	s.minimum, s.maximum = number(get(n, "minimum")), number(get(n, "maximum"))
	s.items = get(n, "items")
	if e := get(n, "enum"); e != nil && e.Kind == yaml.SequenceNode {
		for _, item := range e.Content {
			if v, ok := value(item); ok && v != nil {
				s.enum = append(s.enum, v)
			}
		}
	}
	if c := get(n, "const"); c != nil && s.enum == nil {
		if v, ok := value(c); ok && v != nil {
			s.enum = []any{v}
		}
	}
	if v := get(n, "default"); v != nil {
		s.def, s.hasDef = value(v)
	}
	s.example, s.hasExample = exampleOf(n)
	if props := get(n, "properties"); props != nil && props.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(props.Content); i += 2 {
			s.props = setProperty(s.props, property{name: props.Content[i].Value, node: props.Content[i+1]})
		}
	}
	if req := get(n, "required"); req != nil && req.Kind == yaml.SequenceNode {
		for _, r := range req.Content {
			s.required = append(s.required, r.Value)
		}
	}
	if all := get(n, "allOf"); all != nil && all.Kind == yaml.SequenceNode {
		for _, member := range all.Content {
			m, err := d.schema(member, depth+1)
			if err != nil {
				return s, err
			}
			s.merge(m)
		}
	}
	if s.typ == "" {
		s.typ = d.alternativesType(n, depth)
	}
	if s.typ == "" {
		switch {
		case len(s.props) > 0:
			s.typ = "object"
		case s.items != nil:
			s.typ = "array"
		case len(s.enum) > 0:
			s.typ = typeOfValue(s.enum[0])
		}
	}
	return s, nil
}

// merge adds an allOf member: its properties and required names, and what
// the schema itself leaves unsaid.
func (s *schema) merge(m schema) {
	for _, p := range m.props {
		s.props = setProperty(s.props, p)
	}
	s.required = append(s.required, m.required...)
	if s.typ == "" {
		s.typ = m.typ
	}
	if s.format == "" {
		s.format = m.format
	}
	if s.description == "" {
		s.description = m.description
	}
	if s.enum == nil {
		s.enum = m.enum
	}
	if !s.hasDef {
		s.def, s.hasDef = m.def, m.hasDef
	}
	if !s.hasExample {
		s.example, s.hasExample = m.example, m.hasExample
	}
	if s.items == nil {
		s.items = m.items
	}
	if s.minimum == nil {
		s.minimum = m.minimum
	}
	if s.maximum == nil {
		s.maximum = m.maximum
	}
	s.readOnly = s.readOnly || m.readOnly
}

func setProperty(props []property, p property) []property {
	for i := range props {
		if props[i].name == p.name {
			props[i] = p
			return props
		}
	}
	return append(props, p)
}

// alternativesType is the type every alternative of a oneOf or anyOf has,
// or "".
func (d *document) alternativesType(n *yaml.Node, depth int) string {
	for _, key := range []string{"oneOf", "anyOf"} {
		alts := get(n, key)
		if alts == nil || alts.Kind != yaml.SequenceNode || len(alts.Content) == 0 {
			continue
		}
		typ := ""
		for _, alt := range alts.Content {
			a, err := d.schema(alt, depth+1)
			if err != nil || a.typ == "" || (typ != "" && a.typ != typ) {
				return ""
			}
			typ = a.typ
		}
		return typ
	}
	return ""
}

// schemaType reads "type": a name, or (3.1) a list whose first entry that
// is not "null".
func schemaType(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	if n.Kind == yaml.SequenceNode {
		for _, t := range n.Content {
			if t.Value != "null" {
				return t.Value
			}
		}
		return ""
	}
	return n.Value
}

func number(n *yaml.Node) *float64 {
	if n == nil || n.Kind != yaml.ScalarNode {
		return nil
	}
	f, err := strconv.ParseFloat(n.Value, 64)
	if err != nil {
		return nil
	}
	return &f
}

// value decodes a YAML value to JSON-like Go values.
func value(n *yaml.Node) (any, bool) {
	var v any
	if err := resolveAlias(n).Decode(&v); err != nil {
		return nil, false
	}
	return v, jsonable(v)
}

// jsonable reports whether v has only string mapping keys.
func jsonable(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			if !jsonable(x) {
				return false
			}
		}
	case []any:
		for _, x := range v {
			if !jsonable(x) {
				return false
			}
		}
	case map[any]any:
		return false
	}
	return true
}

// exampleOf reads an example: "example", or the first of "examples" (a
// list in a 3.1 schema, a map of Example Objects in a parameter).
func exampleOf(n *yaml.Node) (any, bool) {
	if e := get(n, "example"); e != nil {
		return value(e)
	}
	switch ex := get(n, "examples"); {
	case ex == nil:
	case ex.Kind == yaml.SequenceNode && len(ex.Content) > 0:
		return value(ex.Content[0])
	case ex.Kind == yaml.MappingNode && len(ex.Content) > 1:
		if v := get(ex.Content[1], "value"); v != nil {
			return value(v)
		}
	}
	return nil, false
}

func typeOfValue(v any) string {
	switch v := v.(type) {
	case string:
		return "string"
	case int:
		return "integer"
	case float64:
		if v == math.Trunc(v) {
			return "integer"
		}
		return "number"
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return ""
}

// fits reports whether v is a value of the argument type typ.
func fits(v any, typ string) bool {
	switch typ {
	case "string":
		_, ok := v.(string)
		return ok
	case "integer":
		switch v := v.(type) {
		case int:
			return true
		case float64:
			return v == math.Trunc(v)
		}
	case "number":
		switch v.(type) {
		case int, float64:
			return true
		}
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	}
	return false
}

// bounds describes minimum and maximum: "1 to 50", "at least 1".
func (s *schema) bounds() string {
	f := func(p *float64) string { return strconv.FormatFloat(*p, 'f', -1, 64) }
	switch {
	case s.minimum != nil && s.maximum != nil:
		return f(s.minimum) + " to " + f(s.maximum)
	case s.minimum != nil:
		return "at least " + f(s.minimum)
	case s.maximum != nil:
		return "at most " + f(s.maximum)
	}
	return ""
}
