package jsonx

import (
	"encoding/json"
	"strconv"
)

// Reader reads a document already known to be valid JSON (Valid), in one
// pass without reflection, as encoding/json reads it. Its methods read the
// value at the reader's offset and say false when that value is not of the
// kind asked for, the offset then being anywhere: a reader that gives up
// leaves the document to encoding/json, which alone says what is wrong.
// On a document that is not valid JSON its methods may panic.
type Reader struct {
	b   []byte
	pos int
}

// NewReader reads b, valid JSON, from its start.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Offset is where the reader is in its document: past the value it read last.
func (r *Reader) Offset() int { return r.pos }

func (r *Reader) skipSpace() { r.pos = afterSpace(r.b, r.pos) }

// Next returns the first byte of the value at the reader's offset, after
// any space, without reading the value.
func (r *Reader) Next() byte {
	r.skipSpace()
	return r.b[r.pos]
}

// rawString returns the string token at r.pos, quotes included, and
// whether it holds escapes.
func (r *Reader) rawString() (raw []byte, escaped bool) {
	start := r.pos
	r.pos, escaped = stringEnd(r.b, start)
	return r.b[start:r.pos], escaped
}

// Str reads a string value as encoding/json does; false when the value is
// not a string.
func (r *Reader) Str() (string, bool) { return r.StrOf(nil) }

// StrOf is Str, returning the one of known that the string equals without
// allocating it.
func (r *Reader) StrOf(known []string) (string, bool) {
	if r.Next() != '"' {
		return "", false
	}
	raw, escaped := r.rawString()
	if escaped {
		return unescape(raw), true
	}
	content := raw[1 : len(raw)-1]
	for _, k := range known {
		if string(content) == k {
			return k, true
		}
	}
	return string(content), true
}

// unescape is the content of raw, a valid string token with escapes.
func unescape(raw []byte) string {
	var s string
	_ = json.Unmarshal(raw, &s) // a valid string token: cannot fail
	return s
}

// Skip passes over the value at the reader's offset and returns it as it
// is written.
func (r *Reader) Skip() []byte {
	r.skipSpace()
	start := r.pos
	depth := 0
	for {
		switch r.Next() {
		case '"':
			r.rawString()
		case '{', '[':
			depth++
			r.pos++
		case '}', ']':
			depth--
			r.pos++
		case ',', ':':
			r.pos++
			continue
		default: // a number or a literal
			for r.pos < len(r.b) {
				c := r.b[r.pos]
				if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
					break
				}
				r.pos++
			}
		}
		if depth == 0 {
			return r.b[start:r.pos]
		}
	}
}

// Object reads the object at the reader's offset, calling member with each
// member's name, unescaped, and the reader at its value, which member must
// read; it stops at the first false.
func (r *Reader) Object(member func(name []byte) bool) bool {
	if r.Next() != '{' {
		return false
	}
	r.pos++
	for {
		switch r.Next() {
		case '}':
			r.pos++
			return true
		case ',':
			r.pos++
			r.skipSpace()
		}
		raw, escaped := r.rawString()
		name := raw[1 : len(raw)-1]
		if escaped {
			name = []byte(unescape(raw))
		}
		r.skipSpace()
		r.pos++ // :
		if !member(name) {
			return false
		}
	}
}

// Array reads the array at the reader's offset, calling elem with the
// reader at each element, which elem must read; it stops at the first
// false.
func (r *Reader) Array(elem func() bool) bool {
	if r.Next() != '[' {
		return false
	}
	r.pos++
	for {
		switch r.Next() {
		case ']':
			r.pos++
			return true
		case ',':
			r.pos++
		}
		if !elem() {
			return false
		}
	}
}

// Strings reads an array of strings; [] gives an empty slice, as
// encoding/json does.
func (r *Reader) Strings() ([]string, bool) {
	out := []string{}
	ok := r.Array(func() bool {
		s, ok := r.Str()
		out = append(out, s)
		return ok
	})
	return out, ok
}

// Any reads a value as encoding/json reads it into an interface: objects
// as map[string]any, arrays as []any, numbers as float64 (false for one
// beyond a float64's range, which encoding/json refuses).
func (r *Reader) Any() (any, bool) {
	switch r.Next() {
	case '{':
		return r.AnyObject()
	case '[':
		out := make([]any, 0)
		ok := r.Array(func() bool {
			v, ok := r.Any()
			out = append(out, v)
			return ok
		})
		return out, ok
	case '"':
		return r.Str()
	case 't':
		r.pos += len("true")
		return true, true
	case 'f':
		r.pos += len("false")
		return false, true
	case 'n':
		r.pos += len("null")
		return nil, true
	}
	f, err := strconv.ParseFloat(string(r.Skip()), 64)
	return f, err == nil
}

// AnyObject is Any for an object; false for any other value, null
// included.
func (r *Reader) AnyObject() (map[string]any, bool) {
	if r.Next() != '{' {
		return nil, false
	}
	out := make(map[string]any)
	ok := r.Object(func(name []byte) bool {
		v, ok := r.Any()
		out[string(name)] = v
		return ok
	})
	return out, ok
}
