package jsonx

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxExactInteger is the largest integer a float64 (what a JSON number
// decodes to) holds exactly: 2^53.
const maxExactInteger = 1 << 53

// Rules are what Check refuses in a valid document, beyond what every
// document is held to: no object names a member twice (encoding/json would
// merge the two, so a parser in front of the agent that keeps the last one
// would see another request than the agent runs), none names a look-alike
// of a known member (METHOD for method: encoding/json compares names
// ignoring case, a parser in front of the agent would not), no string is
// anything but UTF-8.
type Rules struct {
	// MaxDepth bounds how deeply objects and arrays nest.
	MaxDepth int
	// ProtoNames lets a known member be named by its proto field name
	// (ProtoName: history_length for historyLength), as ProtoJSON parsers
	// do; a name that JSONName would make a look-alike of one is refused.
	ProtoNames bool
	// ExactIntegers says that the document's reader keeps integers exact
	// and reads other numbers as float64 (UnmarshalKeepingIntegers):
	// integers of any size pass, other numbers must be within a float64's
	// range. Without it, integers beyond 2^53, which a float64 would
	// silently round, are refused.
	ExactIntegers bool
}

// Violation is a rule a document breaks.
type Violation struct {
	// Offset is where the first token of the offending value ends:
	// PathAt(document, Offset) names the value.
	Offset int
	// What the value does, as a phrase whose subject is the value:
	// `names the member "id" twice`.
	What string
}

func (v *Violation) Error() string { return fmt.Sprintf("JSON at offset %d %s", v.Offset, v.What) }

// Check reads body once and holds it to rules, its root having the members
// known (nil: none are known). A body that is not valid JSON is not
// checked: valid is false, and syntax errors are left to the decoder, which
// describes them better. protoNamed reports a known member named by its
// proto field name, under rules.ProtoNames. Valid documents cost no
// allocation.
func Check(body []byte, known *Members, rules Rules) (protoNamed, valid bool, err *Violation) {
	if !Valid(body) {
		return false, false, nil
	}
	// Outside its strings valid JSON is ASCII: one pass over the whole body
	// answers for every string, unless some string is not UTF-8, which the
	// walk then finds and names.
	c := checker{body: body, rules: rules, utf8: utf8.Valid(body)}
	err = c.value(known, nil, reflect.Value{})
	return c.protoNamed, true, err
}

// checker walks a document already known to be valid JSON, so that it
// only has to tell tokens apart, never to reject bad syntax. It keeps no
// path: an error finds its path from its offset (PathAt), so that valid
// documents cost no allocation. A Decoder's checker fills a value as it
// walks.
type checker struct {
	body       []byte
	pos        int
	depth      int
	rules      Rules
	protoNamed bool
	// utf8 says that every string of body is known to be UTF-8.
	utf8 bool
	// misfit is the first value that did not fit where a Decoder puts it.
	misfit error
}

func (c *checker) skipSpace() { c.pos = afterSpace(c.body, c.pos) }

// value checks the value at c.pos. known is the members the decoder reads
// by name when the value is an object (or an array of such objects), nil
// when it reads none: a scalar, free-form JSON, an unknown member. p, when
// not nil, is how to fill dst with the value.
func (c *checker) value(known *Members, p *plan, dst reflect.Value) *Violation {
	c.skipSpace()
	if p != nil {
		return c.fill(known, p, dst)
	}
	switch c.body[c.pos] {
	case '{':
		return c.object(known, nil, dst)
	case '[':
		return c.array(known)
	case '"':
		_, err := c.str()
		return err
	case 't':
		c.pos += len("true")
	case 'f':
		c.pos += len("false")
	case 'n':
		c.pos += len("null")
	default:
		return c.number()
	}
	return nil
}

// open enters the object or array at c.pos, within the rules' depth.
func (c *checker) open() *Violation {
	c.pos++
	if c.depth++; c.depth > c.rules.MaxDepth {
		return &Violation{c.pos, fmt.Sprintf("nests deeper than %d levels", c.rules.MaxDepth)}
	}
	return nil
}

func (c *checker) object(known *Members, p *plan, dst reflect.Value) *Violation {
	if err := c.open(); err != nil {
		return err
	}
	start := c.pos
	var seen [16][]byte // most objects have fewer members: no allocation
	names := seen[:0]   // this object's member names, unescaped
	// many holds the names once there are more than seen holds, so that
	// a large object costs a lookup per member, not a pass over the others.
	var many map[string]struct{}
	for {
		c.skipSpace()
		switch c.body[c.pos] {
		case '}':
			c.pos++
			c.depth--
			return nil
		case ',':
			c.pos++
			c.skipSpace()
		}
		name, err := c.str()
		if err != nil {
			return err
		}
		twice := false
		if many == nil {
			twice = slices.ContainsFunc(names, func(prev []byte) bool { return bytes.Equal(prev, name) })
			if names = append(names, name); len(names) > len(seen) {
				many = make(map[string]struct{}, 2*len(names))
				for _, n := range names {
					many[string(n)] = struct{}{}
				}
			}
		} else {
			_, twice = many[string(name)]
			many[string(name)] = struct{}{}
		}
		if twice {
			return &Violation{start, "names the member " + strconv.Quote(string(name)) + " twice"}
		}
		c.skipSpace()
		c.pos++ // :
		c.skipSpace()
		var value *Members
		if known != nil {
			if value, err = c.member(known, name); err != nil {
				return err
			}
		}
		var fieldPlan *plan
		var field reflect.Value
		if p != nil {
			if i := p.field(name); i >= 0 {
				fieldPlan, field = p.fields[i].plan, dst.Field(p.fields[i].index)
			}
		}
		if err := c.value(value, fieldPlan, field); err != nil {
			return err
		}
	}
}

// member finds what the decoder makes of the member name of an object
// whose members are known, the member's value being at c.pos: the members
// of that value, or nil when it is not an object read by member name or
// the member is unknown (the decoder ignores it). A name that is not a
// known member's, nor its proto field name when c reads those, but that
// the decoder would take for it is refused: one that differs only in case
// (encoding/json compares names by Unicode simple folding: "ſ" is "s", "K"
// is "k"), or that JSONName would rename into it ("method_").
func (c *checker) member(known *Members, name []byte) (*Members, *Violation) {
	if known.each != nil { // a map's: any name
		return known.each, nil
	}
	if i := known.index(name); i >= 0 {
		return known.values[i], nil
	}
	if c.rules.ProtoNames && bytes.IndexByte(name, '_') >= 0 {
		for i, p := range known.protoNames {
			if p == string(name) {
				c.protoNamed = true
				return known.values[i], nil
			}
		}
		renamed := JSONName(string(name))
		for i, k := range known.names {
			if strings.EqualFold(renamed, k) {
				return nil, &Violation{c.pos + 1, "is neither " + strconv.Quote(k) + " nor its proto field name " +
					strconv.Quote(known.protoNames[i]) + ": member names are matched exactly"}
			}
		}
		return nil, nil
	}
	for _, k := range known.names {
		if bytes.EqualFold(name, []byte(k)) {
			return nil, &Violation{c.pos + 1, "differs from " + strconv.Quote(k) +
				" only in case: member names are matched exactly"}
		}
	}
	return nil, nil
}

func (c *checker) array(known *Members) *Violation {
	if err := c.open(); err != nil {
		return err
	}
	for {
		c.skipSpace()
		switch c.body[c.pos] {
		case ']':
			c.pos++
			c.depth--
			return nil
		case ',':
			c.pos++
		}
		if err := c.value(known, nil, reflect.Value{}); err != nil {
			return err
		}
	}
}

// Members is what a decoder knows of an object it reads into a struct:
// the JSON names of its members and, for each, the members of its value
// (nil when that is not such an object: a scalar, free-form JSON). It is
// read off the structs themselves (MembersOf), so that Check knows exactly
// the names encoding/json compares with.
type Members struct {
	names []string
	// protoNames are the proto field names of names (message_id for
	// messageId), which ProtoJSON reads as well.
	protoNames []string
	values     []*Members
	// each is, for an object read into a map, the members of every
	// member's value, whatever its name.
	each *Members
}

// MembersOf reads the members of struct T as encoding/json reads them:
// those of its fields (by their json tags), of the structs those hold
// (through pointers, slices and map values), and so on down. A type that
// decodes itself (json.Unmarshaler) holds no members read by name. It
// panics on an embedded field, whose members it does not read.
func MembersOf[T any]() *Members {
	return typeMembers(reflect.TypeFor[T](), map[reflect.Type]*Members{})
}

// typeMembers reads the members of a struct t, or of the elements of a
// slice, the target of a pointer or the values of a map; read holds those
// of the structs being read, which a field may hold again.
func typeMembers(t reflect.Type, read map[reflect.Type]*Members) *Members {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		if reflect.PointerTo(t).Implements(unmarshalerType) {
			return nil
		}
		t = t.Elem()
	}
	if t.Kind() == reflect.Map && !reflect.PointerTo(t).Implements(unmarshalerType) {
		if each := typeMembers(t.Elem(), read); each != nil {
			return &Members{each: each}
		}
		return nil
	}
	if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	if m := read[t]; m != nil {
		return m
	}
	m := &Members{}
	read[t] = m
	for f := range t.Fields() {
		name, ok := memberName(t, f)
		if !ok {
			continue
		}
		m.names = append(m.names, name)
		m.protoNames = append(m.protoNames, ProtoName(name))
		m.values = append(m.values, typeMembers(f.Type, read))
	}
	return m
}

// memberName is the JSON name of field f of struct t; false for a field
// encoding/json leaves alone.
func memberName(t reflect.Type, f reflect.StructField) (string, bool) {
	if f.Anonymous {
		panic("jsonx: struct " + t.String() + " embeds " + f.Name + ", whose members the check does not read")
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if !f.IsExported() || name == "-" {
		return "", false
	}
	if name == "" {
		name = f.Name
	}
	return name, true
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// index returns the index of the member named name exactly, or -1.
func (m *Members) index(name []byte) int {
	for i, n := range m.names {
		if n == string(name) {
			return i
		}
	}
	return -1
}

// str reads a string and returns its content, unescaped only when it has
// escapes (then it allocates).
func (c *checker) str() ([]byte, *Violation) {
	start := c.pos
	var escaped bool
	c.pos, escaped = stringEnd(c.body, c.pos)
	raw := c.body[start:c.pos]
	if !c.utf8 && !utf8.Valid(raw) {
		return nil, &Violation{c.pos, "holds a string that is not valid UTF-8"}
	}
	if !escaped {
		return raw[1 : len(raw)-1], nil
	}
	return []byte(unescape(raw)), nil
}

// stringEnd is where the string token at start in valid JSON b ends (past
// its closing quote), and whether it holds escapes.
func stringEnd(b []byte, start int) (end int, escaped bool) {
	pos, quote := start+1, -1 // past the opening quote; the next quote not yet looked for
	for {
		// A quote is looked for again only once an escape has taken it,
		// so that a string of escapes costs one pass, not one per escape.
		if quote < pos {
			quote = pos + bytes.IndexByte(b[pos:], '"')
		}
		esc := bytes.IndexByte(b[pos:quote], '\\')
		if esc < 0 {
			return quote + 1, escaped
		}
		escaped = true
		pos += esc + 2
	}
}

func (c *checker) number() *Violation {
	start := c.pos
	integer := true
	for ; c.pos < len(c.body); c.pos++ {
		b := c.body[c.pos]
		if b == '.' || b == 'e' || b == 'E' {
			integer = false
		} else if (b < '0' || b > '9') && b != '-' && b != '+' {
			break
		}
	}
	lit := c.body[start:c.pos]
	if c.rules.ExactIntegers {
		return c.withinFloat(lit, integer)
	}
	digits := len(lit)
	if lit[0] == '-' {
		digits--
	}
	// 2^53 has 16 digits: shorter integers are always exact.
	if !integer || digits < 16 {
		return nil
	}
	n, ok := new(big.Int).SetString(string(lit), 10)
	if ok && n.CmpAbs(big.NewInt(maxExactInteger)) <= 0 {
		return nil
	}
	return &Violation{c.pos, fmt.Sprintf(
		"holds the integer %s, beyond 2^53: a JSON number cannot carry it exactly; send it as a string", lit)}
}

// withinFloat refuses the number lit, unless an integer, when a float64
// cannot hold it (1e400: a reader would make it infinite). Only one with
// an exponent, or of more than 308 digits, can be out of range.
func (c *checker) withinFloat(lit []byte, integer bool) *Violation {
	if integer || (bytes.IndexAny(lit, "eE") < 0 && len(lit) <= 308) {
		return nil
	}
	if _, err := strconv.ParseFloat(string(lit), 64); err == nil {
		return nil
	}
	return &Violation{c.pos, fmt.Sprintf("holds the number %s, beyond what a 64-bit float holds", lit)}
}
