package openapi

// Reading schemas: a JSON Schema (OpenAPI's dialect) boiled down to what a
// skill's argument can say.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// schema is what the generator reads of a schema.
type schema struct {
	typ string // "" when the schema gives none; the first of types
	// types are a union's types (a type list, or a oneOf or anyOf of
	// several types), in order; nil for one type.
	types []string
	// null is a schema of the type null alone, which a union leaves out.
	null        bool
	format      string
	pattern     string
	description string
	enum        []any
	def         any
	hasDef      bool
	example     any
	hasExample  bool
	readOnly    bool
	minimum     *float64
	maximum     *float64
	// exclusiveMin and exclusiveMax leave the bound itself out.
	exclusiveMin, exclusiveMax bool
	minLength, maxLength       *int
	minItems, maxItems         *int
	items                      *yaml.Node
	props                      []property // an object's properties, in order (allOf merged)
	required                   []string
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
	types := schemaTypes(get(n, "type"))
	if len(types) > 0 {
		s.typ = types[0]
		if len(types) > 1 {
			s.types = types
		}
	}
	s.null = get(n, "type") != nil && len(types) == 0
	s.format = scalar(get(n, "format"))
	s.pattern = scalar(get(n, "pattern"))
	s.description = strings.TrimSpace(scalar(get(n, "description")))
	s.readOnly = scalar(get(n, "readOnly")) == "true"
	s.minimum, s.exclusiveMin = bound(n, "minimum", "exclusiveMinimum")
	s.maximum, s.exclusiveMax = bound(n, "maximum", "exclusiveMaximum")
	s.minLength, s.maxLength = count(get(n, "minLength")), count(get(n, "maxLength"))
	s.minItems, s.maxItems = count(get(n, "minItems")), count(get(n, "maxItems"))
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
		d.alternatives(n, depth, &s)
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
	if s.types == nil && s.typ == m.typ {
		s.types = m.types
	}
	if s.format == "" {
		s.format = m.format
	}
	if s.pattern == "" {
		s.pattern = m.pattern
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
		s.minimum, s.exclusiveMin = m.minimum, m.exclusiveMin
	}
	if s.maximum == nil {
		s.maximum, s.exclusiveMax = m.maximum, m.exclusiveMax
	}
	s.minLength, s.maxLength = cmp.Or(s.minLength, m.minLength), cmp.Or(s.maxLength, m.maxLength)
	s.minItems, s.maxItems = cmp.Or(s.minItems, m.minItems), cmp.Or(s.maxItems, m.maxItems)
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

// alternatives reads a oneOf or anyOf into s: its members' types, in
// order, each once (a union when several), and the rules of each type that
// only one member has (rules apply to a value of their own type; a union
// of objects stays a plain object). An enum is kept when every member
// has one.
func (d *document) alternatives(n *yaml.Node, depth int, s *schema) {
	for _, key := range []string{"oneOf", "anyOf"} {
		alts := get(n, key)
		if alts == nil || alts.Kind != yaml.SequenceNode || len(alts.Content) == 0 {
			continue
		}
		var members []schema
		var types []string
		for _, alt := range alts.Content {
			a, err := d.schema(alt, depth+1)
			if a.null {
				continue
			}
			if err != nil || a.typ == "" {
				return // a member of any type, or unread: no type to say
			}
			members = append(members, a)
			for _, t := range a.typeList() {
				if !slices.Contains(types, t) {
					types = append(types, t)
				}
			}
		}
		if len(types) == 0 {
			return
		}
		s.typ = types[0]
		if len(types) > 1 {
			s.types = types
		}
		for _, t := range types {
			var of []schema
			for _, m := range members {
				if slices.Contains(m.typeList(), t) {
					of = append(of, m)
				}
			}
			if len(of) == 1 && of[0].types == nil {
				s.mergeRules(of[0])
			}
		}
		if s.enum == nil && !slices.ContainsFunc(members, func(m schema) bool { return m.enum == nil }) {
			for _, m := range members {
				s.enum = append(s.enum, m.enum...)
			}
		}
		return
	}
}

// typeList is the schema's types: its union's, or its one type.
func (s *schema) typeList() []string {
	if s.types != nil {
		return s.types
	}
	return []string{s.typ}
}

// mergeRules adds what a union's member of one type says of a value of
// that type: its properties, items and rules (the schema's own win).
func (s *schema) mergeRules(m schema) {
	switch m.typ {
	case "string":
		s.format, s.pattern = cmp.Or(s.format, m.format), cmp.Or(s.pattern, m.pattern)
		s.minLength, s.maxLength = cmp.Or(s.minLength, m.minLength), cmp.Or(s.maxLength, m.maxLength)
	case "integer", "number":
		if s.minimum == nil {
			s.minimum, s.exclusiveMin = m.minimum, m.exclusiveMin
		}
		if s.maximum == nil {
			s.maximum, s.exclusiveMax = m.maximum, m.exclusiveMax
		}
	case "array":
		if s.items == nil {
			s.items = m.items
		}
		s.minItems, s.maxItems = cmp.Or(s.minItems, m.minItems), cmp.Or(s.maxItems, m.maxItems)
	case "object":
		for _, p := range m.props {
			s.props = setProperty(s.props, p)
		}
		s.required = append(s.required, m.required...)
	}
	if s.types == nil { // one type: the member is the schema
		if s.description == "" {
			s.description = m.description
		}
		if !s.hasDef {
			s.def, s.hasDef = m.def, m.hasDef
		}
		if !s.hasExample {
			s.example, s.hasExample = m.example, m.hasExample
		}
	}
}

// schemaTypes reads "type": a name, or (3.1) a list, "null" left out.
func schemaTypes(n *yaml.Node) []string {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		if n.Value == "" || n.Value == "null" {
			return nil
		}
		return []string{n.Value}
	}
	var out []string
	for _, t := range n.Content {
		if t.Value != "null" && t.Value != "" && !slices.Contains(out, t.Value) {
			out = append(out, t.Value)
		}
	}
	return out
}

// bound reads a minimum or a maximum: inclusive, or exclusive as 3.0
// says it (exclusiveMinimum: true beside minimum) or 3.1 (the bound is
// exclusiveMinimum's value).
func bound(n *yaml.Node, inclusive, exclusive string) (*float64, bool) {
	ex := get(n, exclusive)
	if v := number(ex); v != nil && ex.Tag != "!!bool" {
		return v, true
	}
	return number(get(n, inclusive)), scalar(ex) == "true"
}

// count reads a length or a number of items: an integer from 0.
func count(n *yaml.Node) *int {
	v, err := strconv.Atoi(scalar(n))
	if err != nil || v < 0 {
		return nil
	}
	return &v
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
