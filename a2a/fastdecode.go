package a2a

import (
	"encoding/json"
	"strconv"

	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// A 1.0 request in its common shape (a SendMessage, or a method naming a
// task) is read by hand (jsonx.Reader) into the same wire structs
// encoding/json fills, in one pass without reflection: decoding was a tenth
// of a SendMessage's CPU. The reader runs only on a body checkJSON has
// passed (valid JSON, UTF-8, no member named twice or in another case,
// bounded nesting) and not renamed, and gives up on anything outside that
// shape (a known member of another type than its field's, null where a
// field is not free-form JSON, a number that is no int32 where one is
// wanted, a long digit run in a part's data): encoding/json then decodes
// the body, and alone says what is wrong. FuzzFastDecode holds the two to
// the same structs.

// fastReader reads a 1.0 request's wire structs from body.
type fastReader struct {
	*jsonx.Reader
	body []byte
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

// fastDecodeRequest10 reads a 1.0 JSON-RPC request into env.
func fastDecodeRequest10(body []byte, env *envelope[params10]) bool {
	r := &fastReader{jsonx.NewReader(body), body}
	return r.Object(func(name []byte) bool {
		var ok bool
		switch string(name) {
		case "jsonrpc":
			env.JSONRPC, ok = r.StrOf(jsonrpcVersions)
		case "id":
			env.ID = append(json.RawMessage(nil), r.Skip()...)
			ok = true
		case "method":
			env.Method, ok = r.StrOf(methodNames10)
		case "params":
			env.Params = new(params10)
			ok = r.params10(env.Params)
		default:
			r.Skip()
			ok = true
		}
		return ok
	})
}

// fastDecodeParams10 reads 1.0 params (an HTTP+JSON body) into w.
func fastDecodeParams10(body []byte, w *params10) bool {
	r := &fastReader{jsonx.NewReader(body), body}
	return r.params10(w)
}

func (r *fastReader) params10(w *params10) bool {
	return r.Object(func(name []byte) bool {
		var ok bool
		switch string(name) {
		case "message":
			w.Message = new(wireMessage[part10])
			ok = r.message10(w.Message)
		case "configuration":
			w.Configuration = new(sendConfiguration10)
			ok = r.configuration10(w.Configuration)
		case "metadata":
			w.Metadata, ok = r.AnyObject()
		case "tenant":
			w.Tenant, ok = r.Str()
		case "id":
			w.ID, ok = r.Str()
		case "taskId":
			w.TaskID, ok = r.Str()
		case "contextId":
			w.ContextID, ok = r.Str()
		case "historyLength":
			w.HistoryLength, ok = r.int32Pointer()
		case "pageSize":
			w.PageSize, ok = r.int32Pointer()
		case "status", "pageToken", "statusTimestampAfter", "includeArtifacts", "url", "token", "authentication":
			return false // not read here: encoding/json reads them
		default:
			r.Skip()
			ok = true
		}
		return ok
	})
}

func (r *fastReader) configuration10(c *sendConfiguration10) bool {
	return r.Object(func(name []byte) bool {
		switch string(name) {
		case "acceptedOutputModes":
			var ok bool
			c.AcceptedOutputModes, ok = r.Strings()
			return ok
		case "returnImmediately":
			switch r.Next() {
			case 't', 'f':
				c.ReturnImmediately = string(r.Skip()) == "true"
				return true
			}
			return false
		case "historyLength":
			var ok bool
			c.HistoryLength, ok = r.int32Pointer()
			return ok
		case "taskPushNotificationConfig":
			return false
		}
		r.Skip()
		return true
	})
}

func (r *fastReader) message10(m *wireMessage[part10]) bool {
	return r.Object(func(name []byte) bool {
		var ok bool
		switch string(name) {
		case "kind":
			m.Kind, ok = r.Str()
		case "messageId":
			m.MessageID, ok = r.Str()
		case "contextId":
			m.ContextID, ok = r.Str()
		case "taskId":
			m.TaskID, ok = r.Str()
		case "role":
			m.Role, ok = r.StrOf(roleNames10)
		case "parts":
			m.Parts = []part10{}
			ok = r.Array(func() bool {
				m.Parts = append(m.Parts, part10{})
				return r.part10(&m.Parts[len(m.Parts)-1])
			})
		case "metadata":
			m.Metadata, ok = r.AnyObject()
		case "extensions":
			m.Extensions, ok = r.Strings()
		case "referenceTaskIds":
			m.ReferenceTaskIDs, ok = r.Strings()
		default:
			r.Skip()
			ok = true
		}
		return ok
	})
}

func (r *fastReader) part10(p *part10) bool {
	return r.Object(func(name []byte) bool {
		var ok bool
		switch string(name) {
		case "text":
			p.Text, ok = r.strPointer()
		case "raw":
			p.Raw, ok = r.strPointer()
		case "url":
			p.URL, ok = r.strPointer()
		case "data":
			r.Next()
			start := r.Offset()
			p.Data.set = true
			p.Data.v, ok = r.Any()
			// Integers of 16 digits or more are UnmarshalKeepingIntegers's.
			ok = ok && !jsonx.LongDigitRun(r.body[start:r.Offset()])
		case "metadata":
			p.Metadata, ok = r.AnyObject()
		case "filename":
			p.Filename, ok = r.Str()
		case "mediaType":
			p.MediaType, ok = r.Str()
		default:
			r.Skip()
			ok = true
		}
		return ok
	})
}

// int32Pointer reads an integer as encoding/json reads it into an *int32;
// false for anything else (null, a fraction, an exponent, out of range),
// which encoding/json then refuses or reads itself.
func (r *fastReader) int32Pointer() (*int32, bool) {
	if c := r.Next(); c != '-' && (c < '0' || c > '9') {
		return nil, false
	}
	n, err := strconv.ParseInt(string(r.Skip()), 10, 32)
	if err != nil {
		return nil, false
	}
	v := int32(n)
	return &v, true
}

func (r *fastReader) strPointer() (*string, bool) {
	s, ok := r.Str()
	return &s, ok
}
