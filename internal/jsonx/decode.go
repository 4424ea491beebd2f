package jsonx

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Decoder reads documents into a struct T in one pass that is also the
// strict check (Check): the document is held to the rules, its members to
// those known, while T is filled. T's members are matched by their exact
// names; anything else is as encoding/json decodes it, so that T's fields
// are what json.Unmarshal would give whenever Decode succeeds (FuzzDecoder
// holds the two to that). Strings, booleans, json.RawMessage, structs and
// pointers to them are filled directly; a field of any other type is given
// to json.Unmarshal with its value.
type Decoder[T any] struct {
	known *Members
	rules Rules
	plan  *plan
}

// NewDecoder returns a decoder into T, which holds documents to rules and
// to the members known (nil: T's own, MembersOf[T]). known may name more
// than T does: a member T keeps as json.RawMessage can still be checked
// member by member. It panics when T is not a struct, or when rules name
// proto field names, which it does not decode.
func NewDecoder[T any](known *Members, rules Rules) *Decoder[T] {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct || rules.ProtoNames {
		panic("jsonx: a Decoder reads JSON names into a struct, not into " + t.String())
	}
	own := typeMembers(t, map[reflect.Type]*Members{})
	if known == nil {
		known = own
	}
	if !includes(known, own) {
		panic("jsonx: the members a Decoder into " + t.String() + " holds documents to leave some of its own out")
	}
	return &Decoder[T]{known: known, rules: rules, plan: planOf(t, map[reflect.Type]*plan{})}
}

// includes reports whether known names every member own does, and at
// every level: a look-alike of a member T reads would otherwise pass.
func includes(known, own *Members) bool {
	return includesAll(known, own, map[*Members]bool{})
}

// includesAll is includes, own's members in compared already compared.
func includesAll(known, own *Members, compared map[*Members]bool) bool {
	switch {
	case compared[own]:
		return true
	case own == nil:
		return true
	case known == nil:
		return false
	case own.each != nil:
		return known.each != nil && includesAll(known.each, own.each, compared)
	}
	compared[own] = true
	for i, name := range own.names {
		j := known.index([]byte(name))
		if j < 0 || !includesAll(known.values[j], own.values[i], compared) {
			return false
		}
	}
	return true
}

// Decode fills v from body. The error is a *Violation when body breaks the
// rules (a document that is not JSON too, when it nests deeper than
// MaxDepth: the reader behind this one may recurse once per level), and
// otherwise says that body is no JSON, or that a value does not fit its
// field; v is then partly filled.
func (d *Decoder[T]) Decode(body []byte, v *T) error {
	if !Valid(body) {
		if !NestsWithin(body, d.rules.MaxDepth) {
			return &Violation{0, fmt.Sprintf("nests deeper than %d levels", d.rules.MaxDepth)}
		}
		return errNotJSON
	}
	c := checker{body: body, rules: d.rules, utf8: utf8.Valid(body)}
	if err := c.value(d.known, d.plan, reflect.ValueOf(v).Elem()); err != nil {
		return err
	}
	return c.misfit
}

var errNotJSON = fmt.Errorf("jsonx: not one JSON value")

// plan is how a Decoder fills a value of one type.
type plan struct {
	kind   planKind
	fields []fieldPlan // a struct's
	elem   *plan       // a pointer's
}

type planKind uint8

const (
	planOther   planKind = iota // json.Unmarshal fills it
	planString                  // a string kind
	planBool                    // a bool kind
	planRaw                     // json.RawMessage
	planStruct                  // a struct, member by member
	planPointer                 // a pointer: nil for null, else its target
)

type fieldPlan struct {
	name  string
	index int
	plan  *plan
}

// planOf is how to fill a value of type t; planned holds the plans of the
// structs being planned, which a field may point to again.
func planOf(t reflect.Type, planned map[reflect.Type]*plan) *plan {
	switch {
	case t == reflect.TypeFor[json.RawMessage]():
		return &plan{kind: planRaw}
	case reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType):
		return &plan{kind: planOther}
	}
	switch t.Kind() {
	case reflect.String:
		return &plan{kind: planString}
	case reflect.Bool:
		return &plan{kind: planBool}
	case reflect.Pointer:
		return &plan{kind: planPointer, elem: planOf(t.Elem(), planned)}
	case reflect.Struct:
		if p := planned[t]; p != nil {
			return p
		}
		p := &plan{kind: planStruct}
		planned[t] = p
		for f := range t.Fields() {
			name, ok := memberName(t, f)
			if !ok {
				continue
			}
			if strings.Contains(f.Tag.Get("json"), ",string") {
				panic("jsonx: a Decoder does not read " + t.String() + "." + f.Name + " as a string")
			}
			p.fields = append(p.fields, fieldPlan{name: name, index: f.Index[0], plan: planOf(f.Type, planned)})
		}
		return p
	}
	return &plan{kind: planOther}
}

// field returns the index in p.fields of the member named name exactly,
// or -1.
func (p *plan) field(name []byte) int {
	for i := range p.fields {
		if p.fields[i].name == string(name) {
			return i
		}
	}
	return -1
}

// fill checks the value at c.pos, as value does, and fills dst with it
// as encoding/json would: null leaves dst as it is, unless dst is a
// pointer (nil) or a json.RawMessage ("null").
func (c *checker) fill(known *Members, p *plan, dst reflect.Value) *Violation {
	start := c.pos
	first := c.body[start]
	switch {
	case p.kind == planPointer && first != 'n':
		if dst.IsNil() {
			dst.Set(reflect.New(dst.Type().Elem()))
		}
		return c.value(known, p.elem, dst.Elem())
	case p.kind == planStruct && first == '{':
		return c.object(known, p, dst)
	case p.kind == planString && first == '"':
		s, err := c.str()
		if err == nil {
			dst.SetString(string(s))
		}
		return err
	}
	if err := c.value(known, nil, reflect.Value{}); err != nil {
		return err
	}
	raw := c.body[start:c.pos]
	switch {
	case p.kind == planRaw:
		dst.SetBytes(bytes.Clone(raw))
	case p.kind == planOther:
		if err := json.Unmarshal(raw, dst.Addr().Interface()); err != nil {
			c.doesNotFit(start, err)
		}
	case first == 'n':
		if p.kind == planPointer {
			dst.SetZero()
		}
	case p.kind == planBool && (first == 't' || first == 'f'):
		dst.SetBool(first == 't')
	default:
		c.doesNotFit(start, fmt.Errorf("%s is no %s", raw, dst.Type()))
	}
	return nil
}

// doesNotFit notes the first value, at offset, that does not fit its
// field. The walk goes on: a later member may still break the rules.
func (c *checker) doesNotFit(offset int, err error) {
	if c.misfit == nil {
		c.misfit = fmt.Errorf("jsonx: the value at offset %d: %w", offset, err)
	}
}
