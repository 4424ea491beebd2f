package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
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

// checkJSON reads body once, before it is decoded, and refuses what
// encoding/json would accept but the agent must not: nesting deeper than
// MaxJSONDepth, an object that names a member twice (encoding/json would
// merge the two, so a parser in front of the agent that keeps the last one
// would see another request than the agent runs), integers beyond 2^53
// that a float64 would silently round, and strings that are not UTF-8.
// Syntax errors are left to the decoder, which describes them better; a
// body that is not valid JSON yields nil here. protoNames reports a member
// name with an underscore outside free-form values (see protoNames10).
func checkJSON(body []byte) (protoNames bool, err *Error) {
	return checkDocument(jsonChecker{body: body})
}

// checkParams is checkJSON for a body that is the params themselves (the
// HTTP+JSON binding's): every problem is an invalid parameter.
func checkParams(body []byte) (protoNames bool, err *Error) {
	return checkDocument(jsonChecker{body: body, params: true})
}

func checkDocument(c jsonChecker) (protoNames bool, err *Error) {
	if !json.Valid(c.body) {
		return false, nil
	}
	err = c.value()
	return c.protoNames, err
}

// jsonChecker walks a document already known to be valid JSON, so that it
// only has to tell tokens apart, never to reject bad syntax. It keeps no
// path: an error finds its path from its offset (pathAt), so that valid
// documents cost no allocation.
type jsonChecker struct {
	body  []byte
	pos   int
	depth int
	// free counts the free-form values (metadata, data) c is within.
	free       int
	protoNames bool
	// params says that body is the params, not a JSON-RPC envelope.
	params bool
}

func (c *jsonChecker) skipSpace() {
	for c.pos < len(c.body) {
		switch c.body[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *jsonChecker) value() *Error {
	c.skipSpace()
	switch c.body[c.pos] {
	case '{':
		return c.object()
	case '[':
		return c.array()
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

func (c *jsonChecker) object() *Error {
	if err := c.open(); err != nil {
		return err
	}
	start := c.pos
	var seen [16][]byte // most objects have fewer members: no allocation
	names := seen[:0]   // this object's member names, unescaped
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
		for _, prev := range names {
			if bytes.Equal(prev, name) {
				return c.invalidAt(start, "names the member "+strconv.Quote(string(name))+" twice")
			}
		}
		names = append(names, name)
		free := c.free > 0 || freeForm(name)
		if !free && bytes.IndexByte(name, '_') >= 0 {
			c.protoNames = true
		}
		c.skipSpace()
		c.pos++ // :
		if free {
			c.free++
		}
		if err := c.value(); err != nil {
			return err
		}
		if free {
			c.free--
		}
	}
}

// freeForm reports whether a member's value is free-form JSON in every
// message of the protocol (a google.protobuf.Struct or Value in 1.0),
// whose member names are the sender's own.
func freeForm(name []byte) bool {
	return string(name) == "metadata" || string(name) == "data"
}

func (c *jsonChecker) array() *Error {
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
		if err := c.value(); err != nil {
			return err
		}
	}
}

// str reads a string and returns its content, unescaped only when it has
// escapes (then it allocates).
func (c *jsonChecker) str() ([]byte, *Error) {
	start := c.pos
	c.pos++ // "
	escaped := false
	for {
		switch c.body[c.pos] {
		case '\\':
			escaped = true
			c.pos += 2
			continue
		case '"':
			c.pos++
			raw := c.body[start:c.pos]
			if !utf8.Valid(raw) {
				return nil, c.invalidAt(c.pos, "holds a string that is not valid UTF-8")
			}
			if !escaped {
				return raw[1 : len(raw)-1], nil
			}
			var s string
			_ = json.Unmarshal(raw, &s) // valid JSON: cannot fail
			return []byte(s), nil
		}
		c.pos++
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

// invalidAt reports a problem with the value whose first token ends at
// offset: InvalidParams naming the member within params, InvalidRequest
// when it lies in the envelope.
func (c *jsonChecker) invalidAt(offset int, what string) *Error {
	path := pathAt(c.body, int64(offset))
	if c.params || path == "params" || strings.HasPrefix(path, "params.") {
		return InvalidParams(path, what)
	}
	if path == "" {
		return InvalidRequest("the request " + what)
	}
	return InvalidRequest(path + " " + what)
}
