package a2a

import (
	"strconv"
	"strings"
)

// protoNames10 rewrites the member names of a 1.0 request that are proto
// field names (history_length) into their JSON names (historyLength).
// Protocol 1.0 speaks ProtoJSON, whose parsers accept both spellings, and so
// must the agent; it is called only for the rare body that uses them, so
// that the decoder's path stays one name per member. Free-form values
// (metadata, a part's data) are copied as they are: their names are the
// sender's. A member given in both spellings is refused, as ProtoJSON
// parsers refuse it. body has passed checkJSON.
func protoNames10(body []byte) ([]byte, *Error) {
	r := nameRewriter{jsonChecker: jsonChecker{body: body}, out: make([]byte, 0, len(body))}
	if err := r.value(false); err != nil {
		return nil, err
	}
	return r.out, nil
}

// nameRewriter copies a document into out, renaming members on the way.
type nameRewriter struct {
	jsonChecker // walks body
	out         []byte
}

func (r *nameRewriter) value(free bool) *Error {
	r.skipSpace()
	if !free {
		switch r.body[r.pos] {
		case '{':
			return r.object()
		case '[':
			return r.array()
		}
	}
	start := r.pos
	if err := r.jsonChecker.value(nil); err != nil {
		return err
	}
	r.out = append(r.out, r.body[start:r.pos]...)
	return nil
}

func (r *nameRewriter) object() *Error {
	start := r.pos + 1
	r.pos++
	r.out = append(r.out, '{')
	var names []string
	for {
		r.skipSpace()
		switch r.body[r.pos] {
		case '}':
			r.pos++
			r.out = append(r.out, '}')
			return nil
		case ',':
			r.pos++
			r.skipSpace()
		}
		raw, err := r.str()
		if err != nil {
			return err
		}
		name := jsonName(string(raw))
		for _, prev := range names {
			if prev == name {
				return r.invalidAt(start, "names the member "+strconv.Quote(name)+
					" twice (ProtoJSON takes the proto field name and the JSON name as one member)")
			}
		}
		if len(names) > 0 {
			r.out = append(r.out, ',')
		}
		names = append(names, name)
		r.out = append(appendString(r.out, name), ':')
		r.skipSpace()
		r.pos++ // :
		if err := r.value(freeForm(raw)); err != nil {
			return err
		}
	}
}

func (r *nameRewriter) array() *Error {
	r.pos++
	r.out = append(r.out, '[')
	for first := true; ; first = false {
		r.skipSpace()
		switch r.body[r.pos] {
		case ']':
			r.pos++
			r.out = append(r.out, ']')
			return nil
		case ',':
			r.pos++
		}
		if !first {
			r.out = append(r.out, ',')
		}
		if err := r.value(false); err != nil {
			return err
		}
	}
}

// freeForm reports whether a member's value is free-form JSON in every
// message of the protocol (a google.protobuf.Struct or Value in 1.0),
// whose member names are the sender's own.
func freeForm(name []byte) bool {
	return string(name) == "metadata" || string(name) == "data"
}

// protoName is the proto field name whose JSON name is name: an
// underscore before each capital, which is lower-cased.
func protoName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			b.WriteByte('_')
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// jsonName is the JSON name protoc gives a proto field name: underscores
// dropped, the letter after each one upper-cased.
func jsonName(field string) string {
	if strings.IndexByte(field, '_') < 0 {
		return field
	}
	b := make([]byte, 0, len(field))
	upper := false
	for i := 0; i < len(field); i++ {
		c := field[i]
		switch {
		case c == '_':
			upper = true
			continue
		case upper && 'a' <= c && c <= 'z':
			c -= 'a' - 'A'
		}
		upper = false
		b = append(b, c)
	}
	return string(b)
}
