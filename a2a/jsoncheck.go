package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits every request body is held to before it is decoded, the same in
// every version.
const (
	// MaxJSONDepth bounds how deeply a request's JSON may nest. Go's
	// encoding/json stops at 10,000 and Python's parser at 1,000: an agent
	// that stored deeper values would answer with JSON its clients cannot
	// read back.
	MaxJSONDepth = 64
	// MaxParts bounds the parts of one message.
	MaxParts = 256
)

// maxExactInteger is the largest integer a float64 (what a JSON number
// decodes to) holds exactly: 2^53.
const maxExactInteger = 1 << 53

// checkJSON reads body once, before it is decoded as a JSON-RPC request in
// version v, and refuses what encoding/json would accept but the agent
// must not: nesting deeper than MaxJSONDepth, an object that names a member
// twice (encoding/json would merge the two, so a parser in front of the
// agent that keeps the last one would see another request than the agent
// runs), a member the decoder would take for a known one though it is not
// spelled as one (METHOD for method: a case-sensitive parser in front of
// the agent would not; see member), integers beyond 2^53 that a float64
// would silently round, and strings that are not UTF-8. Syntax errors are
// left to the decoder, which describes them better; a body that is not
// valid JSON yields nil here, and valid false. renamed reports a known
// member given by its proto field name (history_length), which
// protoNames10 renames before decoding; only 1.0 reads those.
func checkJSON(v Version, body []byte) (renamed, valid bool, err *Error) {
	return checkDocument(jsonChecker{body: body, protoNames: v == V10}, requestMembers[v])
}

// checkParams is checkJSON for an HTTP+JSON body, whose root has the
// members known (paramsMembers, paramsMembersProto03): every problem is an
// invalid parameter. Every form reads proto field names there (a2av0
// sends 0.3 members in snake_case).
func checkParams(known *Members, body []byte) (renamed, valid bool, err *Error) {
	return checkDocument(jsonChecker{body: body, params: true, protoNames: true}, known)
}

// CheckMembers holds body, a JSON-RPC request of another protocol's
// binding whose objects have the members known, to what every A2A body is
// held to but the bound on integers: no object names a member twice, none
// names a look-alike of a known member, no string is anything but UTF-8,
// nothing nests deeper than MaxJSONDepth. Integers beyond 2^53 pass: such
// a binding's reader keeps them exact (UnmarshalKeepingIntegers); other
// numbers must be within a float64's range, as it reads them so. Every
// problem is InvalidRequest, saying where it lies, since A2A's params codes
// do not describe another protocol's params. A body that is not valid JSON
// passes, unless it nests too deep: its decoder describes the error better,
// and a decoder that recurses once per level must not meet the nesting.
func CheckMembers(body []byte, known *Members) *Error {
	_, valid, err := checkDocument(jsonChecker{body: body, request: true, exactIntegers: true}, known)
	if !valid && !NestsWithin(body, MaxJSONDepth) {
		return InvalidRequest(fmt.Sprintf("the request nests deeper than %d levels", MaxJSONDepth))
	}
	return err
}

// checkDocument checks c's body, whose root has the members known.
func checkDocument(c jsonChecker, known *Members) (renamed, valid bool, err *Error) {
	if !ValidJSON(c.body) {
		return false, false, nil
	}
	// Outside its strings valid JSON is ASCII: one pass over the whole body
	// answers for every string, unless some string is not UTF-8, which the
	// walk then finds and names.
	c.utf8 = utf8.Valid(c.body)
	err = c.value(known)
	return c.renamed, true, err
}

// jsonChecker walks a document already known to be valid JSON, so that it
// only has to tell tokens apart, never to reject bad syntax. It keeps no
// path: an error finds its path from its offset (pathAt), so that valid
// documents cost no allocation.
type jsonChecker struct {
	body  []byte
	pos   int
	depth int
	// protoNames says that a known member may be named by its proto field
	// name; renamed that one is.
	protoNames, renamed bool
	// params says that body is the params, not a JSON-RPC envelope;
	// request that every problem is the request's, wherever it lies.
	params, request bool
	// exactIntegers says that the body's reader keeps integers exact and
	// reads other numbers as float64 (UnmarshalKeepingIntegers): integers
	// beyond 2^53 pass, other numbers must be within a float64's range.
	exactIntegers bool
	// utf8 says that every string of body is known to be UTF-8.
	utf8 bool
}

func (c *jsonChecker) skipSpace() { c.pos = afterSpace(c.body, c.pos) }

// value checks the value at c.pos. known is the members the decoder reads
// by name when the value is an object (or an array of such objects), nil
// when it reads none: a scalar, free-form JSON, an unknown member.
func (c *jsonChecker) value(known *Members) *Error {
	c.skipSpace()
	switch c.body[c.pos] {
	case '{':
		return c.object(known)
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

// open enters the object or array at c.pos, within MaxJSONDepth.
func (c *jsonChecker) open() *Error {
	c.pos++
	if c.depth++; c.depth > MaxJSONDepth {
		return c.invalidAt(c.pos, fmt.Sprintf("nests deeper than %d levels", MaxJSONDepth))
	}
	return nil
}

func (c *jsonChecker) object(known *Members) *Error {
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
			return c.invalidAt(start, "names the member "+strconv.Quote(string(name))+" twice")
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
		if err := c.value(value); err != nil {
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
// is "k"), or that protoNames10 would rename into it ("method_").
func (c *jsonChecker) member(known *Members, name []byte) (*Members, *Error) {
	if known.each != nil { // a map's: any name
		return known.each, nil
	}
	if i := known.index(name); i >= 0 {
		return known.values[i], nil
	}
	if c.protoNames && bytes.IndexByte(name, '_') >= 0 {
		for i, p := range known.protoNames {
			if p == string(name) {
				c.renamed = true
				return known.values[i], nil
			}
		}
		// What the decoder reads when protoNames10 renames the body.
		renamed := jsonName(string(name))
		for i, k := range known.names {
			if strings.EqualFold(renamed, k) {
				return nil, c.invalidAt(c.pos+1, "is neither "+strconv.Quote(k)+" nor its proto field name "+
					strconv.Quote(known.protoNames[i])+": member names are matched exactly")
			}
		}
		return nil, nil
	}
	for _, k := range known.names {
		if bytes.EqualFold(name, []byte(k)) {
			return nil, c.invalidAt(c.pos+1, "differs from "+strconv.Quote(k)+
				" only in case: member names are matched exactly")
		}
	}
	return nil, nil
}

func (c *jsonChecker) array(known *Members) *Error {
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
		if err := c.value(known); err != nil {
			return err
		}
	}
}

// Members is what the decoder knows of an object it reads into a wire
// struct: the JSON names of its members and, for each, the members of its
// value (nil when that is not such an object: a scalar, free-form JSON).
// It is read off the wire structs themselves (MembersOf), so that the check
// knows exactly the names encoding/json compares with.
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

// The members of every request body, by version: a JSON-RPC request, and
// the params an HTTP+JSON body holds.
var (
	requestMembers       = [...]*Members{V03: MembersOf[envelope[params03]](), V10: MembersOf[envelope[params10]]()}
	paramsMembers        = [...]*Members{V03: MembersOf[params03](), V10: MembersOf[params10]()}
	paramsMembersProto03 = MembersOf[paramsProto03]()
)

// MembersOf reads the members of wire struct T as encoding/json reads
// them, for CheckMembers.
func MembersOf[T any]() *Members { return typeMembers(reflect.TypeFor[T]()) }

// typeMembers reads the members of a wire struct t, or of the elements of
// a slice, the target of a pointer or the values of a map. Any other type,
// and a type that decodes itself (json.Unmarshaler), holds no members read
// by name.
func typeMembers(t reflect.Type) *Members {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		if reflect.PointerTo(t).Implements(unmarshalerType) {
			return nil
		}
		t = t.Elem()
	}
	if t.Kind() == reflect.Map && !reflect.PointerTo(t).Implements(unmarshalerType) {
		if each := typeMembers(t.Elem()); each != nil {
			return &Members{each: each}
		}
		return nil
	}
	if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	m := &Members{}
	for f := range t.Fields() {
		if f.Anonymous {
			panic("a2a: wire struct " + t.String() + " embeds " + f.Name + ", whose members the check does not read")
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m.names = append(m.names, name)
		m.protoNames = append(m.protoNames, protoName(name))
		m.values = append(m.values, typeMembers(f.Type))
	}
	return m
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

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
func (c *jsonChecker) str() ([]byte, *Error) {
	start := c.pos
	var escaped bool
	c.pos, escaped = stringEnd(c.body, c.pos)
	raw := c.body[start:c.pos]
	if !c.utf8 && !utf8.Valid(raw) {
		return nil, c.invalidAt(c.pos, "holds a string that is not valid UTF-8")
	}
	if !escaped {
		return raw[1 : len(raw)-1], nil
	}
	var s string
	_ = json.Unmarshal(raw, &s) // valid JSON: cannot fail
	return []byte(s), nil
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

func (c *jsonChecker) number() *Error {
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
	if c.exactIntegers {
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
	return c.invalidAt(c.pos, fmt.Sprintf(
		"holds the integer %s, beyond 2^53: a JSON number cannot carry it exactly; send it as a string", lit))
}

// withinFloat refuses the number lit, unless an integer, when a float64
// cannot hold it (1e400: a reader would make it infinite). Only one with
// an exponent, or of more than 308 digits, can be out of range.
func (c *jsonChecker) withinFloat(lit []byte, integer bool) *Error {
	if integer || (bytes.IndexAny(lit, "eE") < 0 && len(lit) <= 308) {
		return nil
	}
	if _, err := strconv.ParseFloat(string(lit), 64); err == nil {
		return nil
	}
	return c.invalidAt(c.pos, fmt.Sprintf("holds the number %s, beyond what a 64-bit float holds", lit))
}

// invalidAt reports a problem with the value whose first token ends at
// offset: InvalidParams naming the member within params, InvalidRequest
// when it lies in the envelope or c checks a request of another protocol.
func (c *jsonChecker) invalidAt(offset int, what string) *Error {
	path := pathAt(c.body, int64(offset))
	if !c.request && (c.params || path == "params" || strings.HasPrefix(path, "params.")) {
		return InvalidParams(path, what)
	}
	if path == "" {
		return InvalidRequest("the request " + what)
	}
	return InvalidRequest(path + " " + what)
}
