package a2a_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

func sendBody(data string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":` + data + `}]}}}`
}

// What encoding/json accepts but the agent must not is refused before
// decoding, the same in both versions, naming where it is.
func TestCheckJSON(t *testing.T) {
	deep := strings.Repeat("[", a2a.MaxJSONDepth) + strings.Repeat("]", a2a.MaxJSONDepth)
	var wide strings.Builder // more members than the checker keeps without a set
	for i := range 40 {
		fmt.Fprintf(&wide, `"m%d":%d,`, i, i)
	}
	tests := []struct {
		name      string
		body      string
		wantCode  int
		wantField string
		wantText  string
	}{
		{"nesting past the cap", sendBody(deep), a2a.CodeInvalidParams, "params.message.parts[0].data", "deeper than 64"},
		{"a duplicate member in params", sendBody(`{"a":1,"a":2}`), a2a.CodeInvalidParams, "params.message.parts[0].data", `"a" twice`},
		{"a duplicate member spelled with an escape", sendBody(`{"a":1,"\u0061":2}`), a2a.CodeInvalidParams, "params.message.parts[0].data", "twice"},
		{"a duplicate member among many", sendBody(`{` + wide.String() + `"m3":0}`), a2a.CodeInvalidParams, "params.message.parts[0].data", `"m3" twice`},
		{"a duplicate params", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"a"},"params":{"id":"b"}}`,
			a2a.CodeInvalidRequest, "", `"params" twice`},
		{"an integer beyond 2^53", sendBody(`{"n":12345678901234567890}`), a2a.CodeInvalidParams, "params.message.parts[0].data.n", "12345678901234567890"},
		{"2^53 + 1", sendBody(`9007199254740993`), a2a.CodeInvalidParams, "params.message.parts[0].data", "2^53"},
		{"a negative integer beyond 2^53", sendBody(`-9007199254740993`), a2a.CodeInvalidParams, "params.message.parts[0].data", "2^53"},
		{"a string that is not UTF-8", sendBody("\"\xff\""), a2a.CodeInvalidParams, "params.message.parts[0].data", "UTF-8"},
	}
	for _, tt := range tests {
		for _, v := range a2a.Versions {
			t.Run(tt.name+"/"+v.String(), func(t *testing.T) {
				body := tt.body
				if v == a2a.V03 {
					body = strings.NewReplacer(`"SendMessage"`, `"message/send"`, `"ROLE_USER"`, `"user"`, `"GetTask"`, `"tasks/get"`,
						`[{"data":`, `[{"kind":"data","data":`).Replace(body)
				}
				_, err := a2a.DecodeRequest(v, []byte(body))
				if err == nil || err.Code != tt.wantCode || (err.Field != tt.wantField && !strings.HasPrefix(err.Field, tt.wantField+"[")) ||
					!strings.Contains(err.Description, tt.wantText) {
					t.Fatalf("err = %+v, want code %d, field %q, saying %q", err, tt.wantCode, tt.wantField, tt.wantText)
				}
			})
		}
	}

	// What stays within the limits decodes as before.
	for _, data := range []string{
		strings.Repeat("[", a2a.MaxJSONDepth-5) + strings.Repeat("]", a2a.MaxJSONDepth-5),
		`{"a":1,"b":{"a":2}}`, `9007199254740992`, `-9007199254740992`, `1.5e300`, `"caf\u00e9 ✓"`,
	} {
		if _, err := a2a.DecodeRequest(a2a.V10, []byte(sendBody(data))); err != nil {
			t.Errorf("data %.40s: %v", data, err)
		}
	}
}

func TestMaxParts(t *testing.T) {
	parts := strings.TrimSuffix(strings.Repeat(`{"text":"x"},`, a2a.MaxParts+1), ",")
	body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[` + parts + `]}}}`
	if _, err := a2a.DecodeRequest(a2a.V10, []byte(body)); err == nil || err.Code != a2a.CodeInvalidParams || err.Field != "params.message.parts" {
		t.Errorf("err = %+v, want InvalidParams on params.message.parts", err)
	}
}

// An id the answer cannot echo is answered as null, with -32600.
func TestInvalidIDs(t *testing.T) {
	for _, id := range []string{`{}`, `[1]`, `true`, "\"\xff\""} {
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"GetTask","params":{"id":"t"}}`
		req, err := a2a.DecodeRequest(a2a.V10, []byte(body))
		if err == nil || err.Code != a2a.CodeInvalidRequest || req == nil || req.ID != nil {
			t.Errorf("id %q: req %+v, err %+v; want -32600 with no id", id, req, err)
		}
		if got := a2a.PeekRequest([]byte(body)); got.ID != nil || got.Method != a2a.MethodGetTask {
			t.Errorf("PeekRequest of id %q = %+v, want no id, GetTask", id, got)
		}
	}
	for body, want := range map[string]a2a.Method{
		`{"id":"abc","method":"message/stream"}`:       a2a.MethodSendStreamingMessage,
		`{"id":"abc","method":"SendStreamingMessage"}`: a2a.MethodSendStreamingMessage,
		`{"id":"abc","method":"nosuch"}`:               a2a.MethodUnknown,
	} {
		if got := a2a.PeekRequest([]byte(body)); string(got.ID) != `"abc"` || got.Method != want {
			t.Errorf("PeekRequest(%s) = %s, %v; want \"abc\", %v", body, got.ID, got.Method, want)
		}
	}
}

// FuzzDecodeRequest: whatever the body, both decoders answer without
// panicking, with a JSON-RPC error code or a request whose id can be
// echoed; a decoded SendMessage survives a round trip through its codec.
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		sendBody(`{"city":"Paris"}`),
		`{"jsonrpc":"2.0","id":"x","method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"},{"kind":"file","file":{"bytes":"aGk=","mimeType":"text/plain"}}]}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"ListTasks","params":{"pageSize":5,"status":"TASK_STATE_WORKING"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tasks/get","params":{"id":"t","historyLength":2}}`,
		`{"jsonrpc":"2.0","id":3,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"raw":"aGk=","mediaType":"a/b"},{"url":"https://x/y"}],"metadata":{"k":[1,2,{"a":null}]}},"configuration":{"historyLength":1,"returnImmediately":true}}}`,
		`[]`, `{"id":{}}`, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":[]}`,
	} {
		f.Add(true, []byte(seed))
		f.Add(false, []byte(seed))
	}
	f.Fuzz(func(t *testing.T, v10 bool, body []byte) {
		v := a2a.V03
		if v10 {
			v = a2a.V10
		}
		req, err := a2a.DecodeRequest(v, body)
		if err != nil {
			switch err.Code {
			case a2a.CodeParseError, a2a.CodeInvalidRequest, a2a.CodeMethodNotFound, a2a.CodeInvalidParams:
			default:
				t.Fatalf("error code %d", err.Code)
			}
		}
		if req != nil && req.ID != nil && (!utf8.Valid(req.ID) || !json.Valid(req.ID)) {
			t.Fatalf("id %q cannot be echoed", req.ID)
		}
		if err != nil {
			return
		}
		p, ok := req.Params.(*a2a.SendMessageRequest)
		if !ok {
			return
		}
		b, mErr := a2a.MarshalMessage(v, &p.Message)
		if mErr != nil {
			return // values the codec refuses to write (e.g. NaN) are reported, not written
		}
		if !json.Valid(b) {
			t.Fatalf("encoded message is not JSON: %s", b)
		}
		back, uErr := a2a.UnmarshalMessage(v, b)
		if uErr != nil {
			t.Fatalf("the codec cannot read back what it wrote: %v\n%s", uErr, b)
		}
		again, _ := a2a.MarshalMessage(v, back)
		if !reflect.DeepEqual(again, b) {
			t.Fatalf("round trip changed the message:\n%s\n%s", b, again)
		}
	})
}

// An object of more members than the checker tracks without a set, each
// named once, passes; its string escapes, however many, are read.
func TestCheckJSONManyMembersAndEscapes(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{`)
	for i := range 40 {
		fmt.Fprintf(&b, `"m%d":"\n\"%d\\",`, i, i)
	}
	b.WriteString(`"last":0}`)
	req, err := a2a.DecodeRequest(a2a.V10, []byte(sendBody(b.String())))
	if err != nil {
		t.Fatal(err)
	}
	data := req.Params.(*a2a.SendMessageRequest).Message.Parts[0].Data.(map[string]any)
	if len(data) != 41 || data["m39"] != "\n\"39\\" {
		t.Errorf("decoded %d members, m39 = %q", len(data), data["m39"])
	}
}

// CheckMembers holds another protocol's request to the rules every A2A body
// is held to, its objects' members read off the wire struct given (a map's
// values included), every problem -32600 saying where it lies; integers
// beyond 2^53 pass, numbers beyond a float64 do not.
func TestCheckMembers(t *testing.T) {
	type answer struct {
		Action string `json:"action"`
	}
	type request struct {
		Method string `json:"method"`
		Params struct {
			Name    string            `json:"name"`
			Args    json.RawMessage   `json:"arguments"`
			Answers map[string]answer `json:"answers"`
		} `json:"params"`
	}
	known := a2a.MembersOf[request]()
	reader := a2a.NewRequestReader[request](nil)
	for _, tc := range []struct{ body, refused string }{
		{`{"method":"a","params":{"name":"b","arguments":{"x":1},"answers":{"q":{"action":"go"}}}}`, ""},
		{`{"method":"a","method":"b"}`, `the request names the member "method" twice`},
		{`{"method":"a","params":{"name":"b","name":"c"}}`, `params names the member "name" twice`},
		{`{"params":{"arguments":{"x":1,"x":2}}}`, `params.arguments names the member "x" twice`},
		{`{"method":"a","METHOD":"b"}`, `METHOD differs from "method" only in case`},
		{`{"params":{"argument\u017f":{}}}`, "params.argument\u017f differs from \"arguments\" only in case"},
		{`{"params":{"NAME":"b"}}`, `params.NAME differs from "name" only in case`},
		{`{"params":{"answers":{"q":{"action":"go","Action":"stop"}}}}`, `params.answers.q.Action differs from "action" only in case`},
		{`{"params":{"answers":{"Q":{"action":"go"},"q":{"action":"stop"}}}}`, ""}, // a map's keys are the sender's
		{`{"params":{"arguments":{"Name":1,"name":2}}}`, ""},                       // and so are free-form members
		{`{"params":{"arguments":{"id":12345678901234567890,"big":1e308}}}`, ""},
		{`{"params":{"arguments":{"n":1e400}}}`, "params.arguments.n holds the number 1e400, beyond what a 64-bit float holds"},
		{`{"params":{"arguments":{"n":-2.5E+309}}}`, "beyond what a 64-bit float holds"},
		{"{\"params\":{\"name\":\"\xff\"}}", "not valid UTF-8"},
		{`{"params":` + strings.Repeat("[", a2a.MaxJSONDepth) + strings.Repeat("]", a2a.MaxJSONDepth) + `}`, "deeper than 64"},
		{`[{"method":"a"},{"method":"a","method":"b"}]`, `[1] names the member "method" twice`},
		{`{"method":`, ""}, // not JSON: left to the decoder
	} {
		err := a2a.CheckMembers([]byte(tc.body), known)
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s: %v", tc.body, err)
		case tc.refused != "" && (err == nil || err.Code != a2a.CodeInvalidRequest || !strings.Contains(err.Description, tc.refused)):
			t.Errorf("%s: %+v, want -32600 saying %q", tc.body, err, tc.refused)
		}
		// The reader refuses what the check refuses, in the same words.
		var v request
		fits, refused := reader.Read([]byte(tc.body), &v)
		if wantFits := err == nil && json.Valid([]byte(tc.body)); !reflect.DeepEqual(refused, err) || fits != wantFits {
			t.Errorf("%s: read: fits %v, refused %+v; want fits %v, refused as CheckMembers refuses: %+v", tc.body, fits, refused, wantFits, err)
		}
	}
}
