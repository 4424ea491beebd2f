package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// fastDecodeSeeds are 1.0 requests the hand reader takes, and some it gives
// up on.
var fastDecodeSeeds = []string{
	`{"jsonrpc":"2.0","id":"b6a1","method":"SendMessage","params":{"message":{"messageId":"9229","role":"ROLE_USER",` +
		`"parts":[{"text":"What is the weather in Paris?"},{"data":{"city":"Paris","units":"metric"}}],` +
		`"metadata":{"skill":"weather"}},"configuration":{"acceptedOutputModes":["application/json","text/plain"]}}}`,
	` { "jsonrpc" : "2.0" , "id" : 7 , "method" : "SendMessage" , "params" : { "message" : { "messageId" : "m" ,` +
		` "role" : "ROLE_AGENT" , "parts" : [ { "data" : [ 1 , -0 , 2.5e3 , true , false , null , { } , [ ] , "x" ] } ] } } } `,
	`{"jsonrpc":"2.0","id":null,"method":"GetTask","params":{"id":"t\u00e9","tenant":"a\"b","x":{"y":[1,{"z":"}"}]}}}`,
	`{"jsonrpc":"2.0","id":-1.5e2,"method":"SendStreamingMessage","params":{"message":{"messageId":"m","role":"ROLE_USER",` +
		`"parts":[{"text":"","metadata":{"a":{"b":[]}},"filename":"f","mediaType":"text/plain"},{"raw":"aGk="},{"url":"u"}],` +
		`"extensions":[],"referenceTaskIds":["a","b"],"contextId":"c","taskId":"t","kind":"message"},` +
		`"configuration":{"returnImmediately":true,"acceptedOutputModes":[]},"metadata":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":[{"data":{"id":12345678901234567}}]}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":[{"data":1e999}]}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":5,"parts":null}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"metadata":null,"extensions":null}}}`,
	`{"jsonrpc":2,"method":"SendMessage","params":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":5,"historyLength":1}}`,
	`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t","historyLength":-0}}`,
	`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t","historyLength":2147483648}}`,
	`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t","historyLength":1.0}}`,
	`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t","historyLength":1e1}}`,
	`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t","historyLength":null}}`,
	`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"configuration":{"historyLength":-2147483648}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"m\u0065ssage":{}}}`,
	`{"jsonrpc":"2.0","id":[1],"method":"SendMessage","params":{"configuration":{"returnImmediately":"yes"}}}`,
	`{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"parts":[{"text":null}]}}}`,
	`[]`, `"x"`, `{}`, `{"params":[]}`,
}

// FuzzFastDecode: whenever the hand reader takes a checked 1.0 request (or
// HTTP+JSON params), it fills the wire structs exactly as encoding/json
// does.
func FuzzFastDecode(f *testing.F) {
	for _, seed := range fastDecodeSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if renamed, valid, err := checkJSON(V10, body); valid && !renamed && err == nil {
			var fast, slow envelope[params10]
			if fastDecodeRequest10(body, &fast) {
				if err := json.Unmarshal(body, &slow); err != nil {
					t.Fatalf("read by hand, refused by encoding/json: %v", err)
				}
				sameDecoding(t, &fast, &slow)
			}
		}
		if renamed, valid, err := checkParams(paramsMembers[V10], body); valid && !renamed && err == nil {
			var fast, slow params10
			if fastDecodeParams10(body, &fast) {
				if err := json.Unmarshal(body, &slow); err != nil {
					t.Fatalf("params read by hand, refused by encoding/json: %v", err)
				}
				sameDecoding(t, &fast, &slow)
			}
		}
	})
}

// sameDecoding fails unless fast and slow are deeply equal, and their
// free-form values encode to the same bytes (which tells -0 from 0).
func sameDecoding[T any](t *testing.T, fast, slow *T) {
	t.Helper()
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("read by hand:\n%#v\nby encoding/json:\n%#v", fast, slow)
	}
	if a, b := freeFormValues(fast), freeFormValues(slow); !bytes.Equal(a, b) {
		t.Fatalf("free-form values read by hand: %s; by encoding/json: %s", a, b)
	}
}

// freeFormValues encodes the free-form JSON values of a decoded request.
func freeFormValues(v any) []byte {
	var p *params10
	switch v := v.(type) {
	case *envelope[params10]:
		p = v.Params
	case *params10:
		p = v
	}
	if p == nil {
		return nil
	}
	out, _ := jsonx.AppendValue(nil, p.Metadata)
	if m := p.Message; m != nil {
		out, _ = jsonx.AppendValue(out, m.Metadata)
		for _, part := range m.Parts {
			out, _ = jsonx.AppendValue(out, part.Data.v)
			out, _ = jsonx.AppendValue(out, part.Metadata)
		}
	}
	return out
}

// TestFastDecodeTakes: the hand reader takes the common shapes, so that
// the fuzz target's comparisons are not vacuous.
func TestFastDecodeTakes(t *testing.T) {
	for _, seed := range fastDecodeSeeds[:4] {
		var env envelope[params10]
		if !fastDecodeRequest10([]byte(seed), &env) {
			t.Errorf("gave up on %s", seed)
		}
	}
}

// TestFastDecodeEveryMember puts each member of the wire structs the hand
// reader fills into a request, with a value of its type: whenever the
// reader takes the request, it must have read the member as encoding/json
// does. A member added to a struct but not to the reader's switch, which
// the reader would skip, fails here rather than being dropped.
func TestFastDecodeEveryMember(t *testing.T) {
	const msg = `"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]`
	levels := []struct {
		name     string
		wire     any
		body     string // %s: the member
		inBodyAs []string
	}{
		{"params", params10{}, `{"message":{` + msg + `},%s}`, []string{"message"}},
		{"configuration", sendConfiguration10{}, `{"message":{` + msg + `},"configuration":{%s}}`, nil},
		{"message", wireMessage[part10]{}, `{"message":{` + msg + `,%s}}`, []string{"messageId", "role", "parts"}},
		{"part", part10{}, `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{%s}]}}`, nil},
	}
	taken := 0
	for _, level := range levels {
		typ := reflect.TypeOf(level.wire)
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" || slices.Contains(level.inBodyAs, name) {
				continue
			}
			member := fmt.Sprintf("%q:%s", name, sampleJSON(t, f.Type))
			body := []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":` + fmt.Sprintf(level.body, member) + `}`)
			var slow envelope[params10]
			if err := json.Unmarshal(body, &slow); err != nil {
				t.Fatalf("%s.%s: encoding/json refuses %s (give sampleJSON a value of this type): %v", level.name, name, body, err)
			}
			var fast envelope[params10]
			if fastDecodeRequest10(body, &fast) {
				taken++
				sameDecoding(t, &fast, &slow)
			}
		}
	}
	if taken < 20 {
		t.Errorf("the hand reader took %d of the requests: the comparisons are nearly vacuous", taken)
	}
}

// sampleJSON is a JSON value, not a zero one, that decodes into typ.
func sampleJSON(t *testing.T, typ reflect.Type) string {
	switch {
	case typ == reflect.TypeOf(jsonValue{}):
		return `{"k":[1,"v"]}`
	case typ == reflect.TypeOf(json.RawMessage{}):
		return `7`
	}
	switch typ.Kind() {
	case reflect.Pointer:
		return sampleJSON(t, typ.Elem())
	case reflect.String:
		return `"v"`
	case reflect.Bool:
		return `true`
	case reflect.Int, reflect.Int32, reflect.Int64:
		return `3`
	case reflect.Slice:
		return "[" + sampleJSON(t, typ.Elem()) + "]"
	case reflect.Map:
		return `{"k":` + sampleJSON(t, typ.Elem()) + `}`
	case reflect.Interface:
		return `{"k":[1,"v"]}`
	case reflect.Struct:
		var members []string
		for i := range typ.NumField() {
			if name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
				members = append(members, fmt.Sprintf("%q:%s", name, sampleJSON(t, typ.Field(i).Type)))
			}
		}
		return "{" + strings.Join(members, ",") + "}"
	}
	t.Fatalf("sampleJSON: no sample for %s", typ)
	return ""
}
