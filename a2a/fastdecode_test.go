package a2a

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
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
	out, _ := AppendJSON(nil, p.Metadata)
	if m := p.Message; m != nil {
		out, _ = AppendJSON(out, m.Metadata)
		for _, part := range m.Parts {
			out, _ = AppendJSON(out, part.Data.v)
			out, _ = AppendJSON(out, part.Metadata)
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
