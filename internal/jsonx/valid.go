// Package jsonx holds the hand-written JSON primitives every fast path of
// the agent and every binding uses: a validator (Valid, NestsWithin), a
// reader of valid documents (Reader, UnmarshalKeepingIntegers), the strict
// member check (Check, Members) and a decoder built on it (Decoder), and
// the encoder's primitives (Append*). Each is held to encoding/json by a
// differential fuzz target beside it: they exist to be what encoding/json
// is, without its reflection and in a fraction of its time.
package jsonx

import "bytes"

// maxScanDepth is the nesting encoding/json's scanner accepts.
const maxScanDepth = 10000

// Valid reports whether b is one JSON value, exactly as json.Valid
// does (FuzzValid holds it to that: strings may hold bytes that are not
// UTF-8, nesting stops at 10,000), in a fraction of its time: json.Valid
// steps a state machine through a function call per byte, and every
// request body and every upstream JSON answer is checked so.
func Valid(b []byte) bool {
	v := validator{b: b}
	v.space()
	if !v.value(0) {
		return false
	}
	v.space()
	return v.pos == len(b)
}

type validator struct {
	b   []byte
	pos int
}

func (v *validator) space() { v.pos = afterSpace(v.b, v.pos) }

// afterSpace returns the offset of the first byte from pos on in b that is
// not JSON's white space.
func afterSpace(b []byte, pos int) int {
	for pos < len(b) {
		switch b[pos] {
		case ' ', '\t', '\n', '\r':
			pos++
		default:
			return pos
		}
	}
	return pos
}

// at reports whether the byte at v.pos is c.
func (v *validator) at(c byte) bool { return v.pos < len(v.b) && v.b[v.pos] == c }

func (v *validator) value(depth int) bool {
	if v.pos >= len(v.b) {
		return false
	}
	switch c := v.b[v.pos]; c {
	case '{':
		return v.container(depth+1, '}')
	case '[':
		return v.container(depth+1, ']')
	case '"':
		return v.str()
	case 't':
		return v.literal("true")
	case 'f':
		return v.literal("false")
	case 'n':
		return v.literal("null")
	default:
		return v.number()
	}
}

// container reads the object or array at v.pos, whose members or
// elements end with end.
func (v *validator) container(depth int, end byte) bool {
	if depth > maxScanDepth {
		return false
	}
	v.pos++
	v.space()
	if v.at(end) {
		v.pos++
		return true
	}
	for {
		if end == '}' {
			if !v.at('"') || !v.str() {
				return false
			}
			v.space()
			if !v.at(':') {
				return false
			}
			v.pos++
			v.space()
		}
		if !v.value(depth) {
			return false
		}
		v.space()
		switch {
		case v.at(','):
			v.pos++
			v.space()
		case v.at(end):
			v.pos++
			return true
		default:
			return false
		}
	}
}

func (v *validator) literal(word string) bool {
	if len(v.b)-v.pos < len(word) || string(v.b[v.pos:v.pos+len(word)]) != word {
		return false
	}
	v.pos += len(word)
	return true
}

// str reads a string: no control characters, only JSON's escapes.
func (v *validator) str() bool {
	v.pos++ // "
	for v.pos < len(v.b) {
		c := v.b[v.pos]
		switch {
		case c == '"':
			v.pos++
			return true
		case c < 0x20:
			return false
		case c != '\\':
			v.pos++
			continue
		}
		if v.pos+1 >= len(v.b) {
			return false
		}
		switch v.b[v.pos+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			v.pos += 2
		case 'u':
			if len(v.b)-v.pos < 6 {
				return false
			}
			for _, h := range v.b[v.pos+2 : v.pos+6] {
				if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
					return false
				}
			}
			v.pos += 6
		default:
			return false
		}
	}
	return false
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (v *validator) number() bool {
	if v.at('-') {
		v.pos++
	}
	switch {
	case v.at('0'):
		v.pos++
	case v.pos < len(v.b) && '1' <= v.b[v.pos] && v.b[v.pos] <= '9':
		v.digits()
	default:
		return false
	}
	if v.at('.') {
		v.pos++
		if !v.digits() {
			return false
		}
	}
	if v.at('e') || v.at('E') {
		v.pos++
		if v.at('+') || v.at('-') {
			v.pos++
		}
		if !v.digits() {
			return false
		}
	}
	return true
}

// digits reads one digit or more.
func (v *validator) digits() bool {
	start := v.pos
	for v.pos < len(v.b) && '0' <= v.b[v.pos] && v.b[v.pos] <= '9' {
		v.pos++
	}
	return v.pos > start
}

// NestsWithin reports whether b nests objects and arrays no deeper than
// max, whatever b holds, in one pass without recursion: a body is checked
// so before a parser that recurses once per level reads it. A body that is
// not JSON may pass; the parser then refuses it.
func NestsWithin(b []byte, max int) bool {
	depth := 0
	for pos := 0; pos < len(b); pos++ {
		switch b[pos] {
		case '"':
			if pos = closingQuote(b, pos+1); pos < 0 {
				return true // an unterminated string: no deeper level follows
			}
		case '{', '[':
			if depth++; depth > max {
				return false
			}
		case '}', ']':
			depth--
		}
	}
	return true
}

// closingQuote is the offset of the quote that ends the string whose
// content starts at pos, or -1 when none does.
func closingQuote(b []byte, pos int) int {
	for pos < len(b) {
		i := bytes.IndexAny(b[pos:], `"\`)
		if i < 0 {
			return -1
		}
		if pos += i; b[pos] == '"' {
			return pos
		}
		pos += 2 // the escape and the byte it escapes
	}
	return -1
}
