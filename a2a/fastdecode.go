package a2a

import (
	"encoding/json"
	"strconv"
)

// A 1.0 request in its common shape (a SendMessage, or a method naming a
// task) is read by hand into the same wire structs encoding/json fills, in
// one pass without reflection: decoding was a tenth of a SendMessage's
// CPU. The reader runs only on a body checkJSON has passed (valid JSON, UTF-8,
// no member named twice or in another case, bounded nesting) and not
// renamed, and gives up on anything outside that shape (a known member of
// another type than its field's, null where a field is not free-form JSON,
// an escaped member name, a number that is no int32 where one is wanted, a
// long digit run in a part's data): encoding/json then decodes the body, and alone says what is wrong.
// FuzzFastDecode holds the two to the same structs.

// fastReader reads a document already known to be valid JSON.
type fastReader struct {
	b   []byte
	pos int
}

func (r *fastReader) skipSpace() { r.pos = afterSpace(r.b, r.pos) }

// next returns the first byte of the value at r.pos, after any space.
func (r *fastReader) next() byte {
	r.skipSpace()
	return r.b[r.pos]
}

// rawString returns the string token at r.pos, quotes included, and
// whether it holds escapes.
func (r *fastReader) rawString() (raw []byte, escaped bool) {
	start := r.pos
	r.pos, escaped = stringEnd(r.b, start)
	return r.b[start:r.pos], escaped
}

// str reads a string value as encoding/json does; false when the value is
// not a string.
func (r *fastReader) str() (string, bool) { return r.strOf(nil) }

// strOf is str, returning the one of known that the string equals without
// allocating it.
func (r *fastReader) strOf(known []string) (string, bool) {
	if r.next() != '"' {
		return "", false
	}
	raw, escaped := r.rawString()
	if escaped {
		var s string
		return s, json.Unmarshal(raw, &s) == nil
	}
	content := raw[1 : len(raw)-1]
	for _, k := range known {
		if string(content) == k {
			return k, true
		}
	}
	return string(content), true
}

// The strings a 1.0 request's envelope and message spell alike every time.
var (
	jsonrpcVersions = []string{"2.0"}
	methodNames10   = func() (names []string) {
		for _, n := range methodNames {
			names = append(names, n[V10])
		}
		return names
	}()
	roleNames10 = roleNames[V10][:]
)

// skip passes over the value at r.pos.
func (r *fastReader) skip() {
	depth := 0
	for {
		switch r.next() {
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
			return
		}
	}
}

// object reads the object at r.pos, calling member with each member's name
// (unescaped names give up) and r at its value, which member must read; it
// stops at the first false.
func (r *fastReader) object(member func(name []byte) bool) bool {
	if r.next() != '{' {
		return false
	}
	r.pos++
	for {
		switch r.next() {
		case '}':
			r.pos++
			return true
		case ',':
			r.pos++
			r.skipSpace()
		}
		raw, escaped := r.rawString()
		if escaped {
			return false
		}
		r.skipSpace()
		r.pos++ // :
		if !member(raw[1 : len(raw)-1]) {
			return false
		}
	}
}

// array reads the array at r.pos, calling elem with r at each element,
// which elem must read; it stops at the first false.
func (r *fastReader) array(elem func() bool) bool {
	if r.next() != '[' {
		return false
	}
	r.pos++
	for {
		switch r.next() {
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

// strings reads an array of strings; [] gives an empty slice, as
// encoding/json does.
func (r *fastReader) strings() ([]string, bool) {
	out := []string{}
	ok := r.array(func() bool {
		s, ok := r.str()
		out = append(out, s)
		return ok
	})
	return out, ok
}

// any reads a value as encoding/json reads it into an interface: objects
// as map[string]any, arrays as []any, numbers as float64.
func (r *fastReader) any() (any, bool) {
	switch r.next() {
	case '{':
		return r.anyObject()
	case '[':
		out := make([]any, 0)
		ok := r.array(func() bool {
			v, ok := r.any()
			out = append(out, v)
			return ok
		})
		return out, ok
	case '"':
		return r.str()
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
	start := r.pos
	r.skip()
	f, err := strconv.ParseFloat(string(r.b[start:r.pos]), 64)
	return f, err == nil
}

func (r *fastReader) anyObject() (map[string]any, bool) {
	out := make(map[string]any)
	ok := r.object(func(name []byte) bool {
		v, ok := r.any()
		out[string(name)] = v
		return ok
	})
	return out, ok
}

// metadata reads a free-form object member; null gives up.
func (r *fastReader) metadata() (map[string]any, bool) {
	if r.next() != '{' {
		return nil, false
	}
	return r.anyObject()
}

// fastDecodeRequest10 reads a 1.0 JSON-RPC request into env.
func fastDecodeRequest10(body []byte, env *envelope[params10]) bool {
	r := &fastReader{b: body}
	return r.object(func(name []byte) bool {
		var ok bool
		switch string(name) {
		case "jsonrpc":
			env.JSONRPC, ok = r.strOf(jsonrpcVersions)
		case "id":
			r.skipSpace()
			start := r.pos
			r.skip()
			env.ID = append(json.RawMessage(nil), r.b[start:r.pos]...)
			ok = true
		case "method":
			env.Method, ok = r.strOf(methodNames10)
		case "params":
			env.Params = new(params10)
			ok = r.params10(env.Params)
		default:
			r.skip()
			ok = true
		}
		return ok
	})
}

// fastDecodeParams10 reads 1.0 params (an HTTP+JSON body) into w.
func fastDecodeParams10(body []byte, w *params10) bool {
	r := &fastReader{b: body}
	return r.params10(w)
}

func (r *fastReader) params10(w *params10) bool {
	return r.object(func(name []byte) bool {
		var ok bool
		switch string(name) {
		case "message":
			w.Message = new(wireMessage[part10])
			ok = r.message10(w.Message)
		case "configuration":
			w.Configuration = new(sendConfiguration10)
			ok = r.configuration10(w.Configuration)
		case "metadata":
			w.Metadata, ok = r.metadata()
		case "tenant":
			w.Tenant, ok = r.str()
		case "id":
			w.ID, ok = r.str()
		case "taskId":
			w.TaskID, ok = r.str()
		case "contextId":
			w.ContextID, ok = r.str()
		case "historyLength":
			w.HistoryLength, ok = r.int32Pointer()
		case "pageSize":
			w.PageSize, ok = r.int32Pointer()
		case "status", "pageToken", "statusTimestampAfter", "includeArtifacts", "url", "token", "authentication":
			return false // not read here: encoding/json reads them
		default:
			r.skip()
			ok = true
		}
		return ok
	})
}

func (r *fastReader) configuration10(c *sendConfiguration10) bool {
	return r.object(func(name []byte) bool {
		switch string(name) {
		case "acceptedOutputModes":
			var ok bool
			c.AcceptedOutputModes, ok = r.strings()
			return ok
		case "returnImmediately":
			switch r.next() {
			case 't':
				c.ReturnImmediately = true
				r.pos += len("true")
			case 'f':
				r.pos += len("false")
			default:
				return false
			}
			return true
		case "historyLength":
			var ok bool
			c.HistoryLength, ok = r.int32Pointer()
			return ok
		case "taskPushNotificationConfig":
			return false
		}
		r.skip()
		return true
	})
}

func (r *fastReader) message10(m *wireMessage[part10]) bool {
	return r.object(func(name []byte) bool {
		var ok bool
		switch string(name) {
		case "kind":
			m.Kind, ok = r.str()
		case "messageId":
			m.MessageID, ok = r.str()
		case "contextId":
			m.ContextID, ok = r.str()
		case "taskId":
			m.TaskID, ok = r.str()
		case "role":
			m.Role, ok = r.strOf(roleNames10)
		case "parts":
			m.Parts = []part10{}
			ok = r.array(func() bool {
				m.Parts = append(m.Parts, part10{})
				return r.part10(&m.Parts[len(m.Parts)-1])
			})
		case "metadata":
			m.Metadata, ok = r.metadata()
		case "extensions":
			m.Extensions, ok = r.strings()
		case "referenceTaskIds":
			m.ReferenceTaskIDs, ok = r.strings()
		default:
			r.skip()
			ok = true
		}
		return ok
	})
}

func (r *fastReader) part10(p *part10) bool {
	return r.object(func(name []byte) bool {
		var ok bool
		switch string(name) {
		case "text":
			p.Text, ok = r.strPointer()
		case "raw":
			p.Raw, ok = r.strPointer()
		case "url":
			p.URL, ok = r.strPointer()
		case "data":
			start := r.pos
			p.Data.set = true
			p.Data.v, ok = r.any()
			// Integers of 16 digits or more are UnmarshalKeepingIntegers's.
			ok = ok && !hasLongDigitRun(r.b[start:r.pos])
		case "metadata":
			p.Metadata, ok = r.metadata()
		case "filename":
			p.Filename, ok = r.str()
		case "mediaType":
			p.MediaType, ok = r.str()
		default:
			r.skip()
			ok = true
		}
		return ok
	})
}

// int32Pointer reads an integer as encoding/json reads it into an *int32;
// false for anything else (null, a fraction, an exponent, out of range),
// which encoding/json then refuses or reads itself.
func (r *fastReader) int32Pointer() (*int32, bool) {
	if c := r.next(); c != '-' && (c < '0' || c > '9') {
		return nil, false
	}
	start := r.pos
	r.skip()
	n, err := strconv.ParseInt(string(r.b[start:r.pos]), 10, 32)
	if err != nil {
		return nil, false
	}
	v := int32(n)
	return &v, true
}

func (r *fastReader) strPointer() (*string, bool) {
	s, ok := r.str()
	return &s, ok
}
