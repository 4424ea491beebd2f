package jsonx_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// envelopeOf is a JSON-RPC request in the shape the MCP endpoint reads: a
// tools/call whose arguments are kept as they are written, its answers to
// input requests read as answers.
type envelopeOf[answers any] struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      struct {
			ProtocolVersion string          `json:"io.modelcontextprotocol/protocolVersion"`
			ProgressToken   json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
		Answers answers `json:"inputResponses"`
	} `json:"params"`
	// What a session's first request holds, in fields of every kind.
	Initialize *struct {
		Version string `json:"protocolVersion"`
		Roots   *struct {
			ListChanged bool `json:"listChanged"`
		} `json:"roots"`
		Sampling *struct{}         `json:"sampling"`
		Extra    map[string]any    `json:"extra"`
		Tags     []string          `json:"tags"`
		Count    *int              `json:"count"`
		Named    map[string]answer `json:"named"`
		Self     *selfRef          `json:"self"`
	} `json:"initialize"`
}

type answer struct {
	Action string `json:"action"`
}

// selfRef holds itself: a plan must not recurse forever.
type selfRef struct {
	Next *selfRef `json:"next"`
	Name string   `json:"name"`
}

// envelope keeps its answers as they are written; they are checked member
// by member all the same (envelopeMembers).
type envelope = envelopeOf[json.RawMessage]

var (
	envelopeMembers = jsonx.MembersOf[envelopeOf[map[string]answer]]()
	rules           = jsonx.Rules{MaxDepth: 8, ExactIntegers: true}
	decoder         = jsonx.NewDecoder[envelope](envelopeMembers, rules)
)

// TestDecoder: a document is filled, refused as Check refuses it, or
// found not to fit, in one pass.
func TestDecoder(t *testing.T) {
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather","arguments":{"city":"Paris"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":null}}}`
	var want envelope
	want.JSONRPC, want.ID, want.Method = "2.0", json.RawMessage(`1`), "tools/call"
	want.Params.Name, want.Params.Arguments = "weather", json.RawMessage(`{"city":"Paris"}`)
	want.Params.Meta.ProtocolVersion, want.Params.Meta.ProgressToken = "2026-07-28", json.RawMessage(`null`)
	var got envelope
	if err := decoder.Decode([]byte(call), &got); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode(%s) = %v:\n%#v\nwant\n%#v", call, err, got, want)
	}

	for _, tc := range []struct {
		body string
		// refused is what the Violation says, at path; misfit a value
		// that does not fit, "" for none.
		refused, path, misfit string
	}{
		{body: `{"method":"a","method":"b"}`, refused: `names the member "method" twice`},
		{body: `{"params":{"name":"b","NAME":"c"}}`, refused: `differs from "name" only in case`, path: "params.NAME"},
		{body: `{"params":{"arguments":{"x":1,"x":2}}}`, refused: `names the member "x" twice`, path: "params.arguments"},
		{body: `{"params":{"inputResponses":{"q":{"action":"go","Action":"stop"}}}}`, refused: `differs from "action"`, path: "params.inputResponses.q.Action"},
		{body: `{"params":{"argument\u017f":{}}}`, refused: `differs from "arguments"`, path: "params.argument\u017f"},
		{body: `{"params":{"arguments":{"n":1e400}}}`, refused: "beyond what a 64-bit float holds", path: "params.arguments.n"},
		{body: "{\"method\":\"\xff\"}", refused: "not valid UTF-8", path: "method"},
		{body: `{"params":{"arguments":[[[[[[[[]]]]]]]]}}`, refused: "nests deeper than 8 levels", path: "params.arguments[0][0][0][0][0][0]"},
		{body: `{"params":` + strings.Repeat("[", 9), refused: "nests deeper than 8 levels"}, // no JSON, but too deep for any reader
		{body: `{"method":"tools/call","method":"x","id":{"a":1}}`, refused: "twice"},
		{body: `{"method":5,"id":1,"method":"x"}`, refused: "twice"}, // refused though a value did not fit first
		{body: `{"method":5}`, misfit: "5"},
		{body: `{"params":{"name":true}}`, misfit: "true"},
		{body: `{"params":[]}`, misfit: "[]"},
		{body: `{"initialize":{"count":"x"}}`, misfit: "string"},
		{body: `{"method":`, misfit: "not one JSON value"},
		{body: `{"params":{"arguments":{"id":12345678901234567890}}}`},
		{body: `{"params":{"inputResponses":{"Q":{"action":"go"},"q":{"action":"stop"}}}}`}, // a map's keys are the sender's
	} {
		var v envelope
		err := decoder.Decode([]byte(tc.body), &v)
		var violation *jsonx.Violation
		switch {
		case tc.refused != "":
			if !errors.As(err, &violation) || !strings.Contains(violation.What, tc.refused) {
				t.Errorf("%s: %v, want it refused: %s", tc.body, err, tc.refused)
			} else if path := jsonx.PathAt([]byte(tc.body), violation.Offset); path != tc.path {
				t.Errorf("%s: refused at %q, want %q", tc.body, path, tc.path)
			}
		case tc.misfit != "":
			if err == nil || errors.As(err, &violation) || !strings.Contains(err.Error(), tc.misfit) {
				t.Errorf("%s: %v, want it not to fit, saying %s", tc.body, err, tc.misfit)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.body, err)
		}
	}
}

// TestDecoderKnowsItsOwnMembers: a decoder held to members that leave out
// some of T's would let a look-alike of one through to another reader.
func TestDecoderKnowsItsOwnMembers(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewDecoder took members that leave out params.name")
		}
	}()
	jsonx.NewDecoder[envelope](jsonx.MembersOf[struct {
		Method string `json:"method"`
	}](), rules)
}

// FuzzDecoder: whenever the decoder fills an envelope, encoding/json fills
// it alike; whenever it refuses one, Check refuses it alike; and when it
// says a value does not fit, encoding/json refuses the document too.
func FuzzDecoder(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather","arguments":{"city":"Paris"},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":"p"},"inputResponses":{"q":{"action":"go"}}}}`,
		`{"initialize":{"protocolVersion":"1","roots":{"listChanged":true},"sampling":{},"extra":{"a":[1,"b",null]},` +
			`"tags":["x"],"count":3,"named":{"k":{"action":"a"}},"self":{"next":{"name":"n"}}}}`,
		`{"initialize":{"roots":null,"count":null,"tags":null,"protocolVersion":null},"id":null,"params":null}`,
		`{"m\u0065thod":"a","id":[1,{"b":2}],"params":{"name":"\u00e9\ud83d\ude00"}}`,
		`{"method":5}`, `{"initialize":{"roots":{"listChanged":"yes"}}}`, `[]`, `null`, `{"a":1e400}`, `{"ID":1}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var got, want envelope
		err := decoder.Decode(body, &got)
		var violation *jsonx.Violation
		if errors.As(err, &violation) {
			_, valid, checked := jsonx.Check(body, envelopeMembers, rules)
			if valid && (checked == nil || *checked != *violation) {
				t.Fatalf("%q: Decode refuses it: %v; Check: %v", body, violation, checked)
			}
			return
		}
		if _, _, checked := jsonx.Check(body, envelopeMembers, rules); checked != nil {
			t.Fatalf("%q: Check refuses it (%v), Decode does not: %v", body, checked, err)
		}
		wantErr := json.Unmarshal(body, &want)
		if err != nil {
			if wantErr == nil {
				t.Fatalf("%q: Decode: %v; encoding/json reads it: %#v", body, err, want)
			}
			return
		}
		if wantErr != nil {
			t.Fatalf("%q: Decode reads it, encoding/json does not: %v", body, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: Decode:\n%#v\nencoding/json:\n%#v", body, got, want)
		}
	})
}
