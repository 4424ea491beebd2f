package a2a_test

import (
	"bytes"
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/a2atest"
)

// A member whose name only case folding makes a known one (METHOD, Params,
// "part\u017f" with a long s, a Kelvin sign for K) is refused, in every
// version and binding: encoding/json would read it as the known member, a
// case-sensitive parser in front of the agent would not, and the two would
// see different requests.
func TestFoldedMemberNames(t *testing.T) {
	const (
		msg10 = `"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]`
		msg03 = `"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]`
	)
	send := func(method, params string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	}
	tests := []struct {
		name  string
		v     a2a.Version
		body  string
		code  int
		field string // for -32602; for -32600, what the description starts with
	}{
		// the envelope: -32600
		{"METHOD", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"GetTask","METHOD":"ListTasks","params":{"id":"t"}}`, a2a.CodeInvalidRequest, "METHOD"},
		{"METHOD", a2a.V03, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","METHOD":"tasks/cancel","params":{"id":"t"}}`, a2a.CodeInvalidRequest, "METHOD"},
		{"Method alone", a2a.V10, `{"jsonrpc":"2.0","id":1,"Method":"GetTask","params":{"id":"t"}}`, a2a.CodeInvalidRequest, "Method"},
		{"Params", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"a"},"Params":{"id":"b"}}`, a2a.CodeInvalidRequest, "Params"},
		{"Params", a2a.V03, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"a"},"Params":{"id":"b"}}`, a2a.CodeInvalidRequest, "Params"},
		{"JSONRPC", a2a.V10, `{"jsonrpc":"2.0","JSONRPC":"1.0","id":1,"method":"GetTask","params":{"id":"t"}}`, a2a.CodeInvalidRequest, "JSONRPC"},
		{"JSONRPC", a2a.V03, `{"JSONRPC":"2.0","id":1,"method":"tasks/get","params":{"id":"t"}}`, a2a.CodeInvalidRequest, "JSONRPC"},
		{"ID", a2a.V10, `{"jsonrpc":"2.0","id":1,"ID":2,"method":"GetTask","params":{"id":"t"}}`, a2a.CodeInvalidRequest, "ID"},
		{"method_, which renaming proto names would make method", a2a.V10, `{"jsonrpc":"2.0","id":1,"method_":"ListTasks","params":{"history_length":1}}`, a2a.CodeInvalidRequest, "method_"},
		{"json_rpc, a proto name that folds", a2a.V10, `{"jsonrpc":"2.0","json_rpc":"1.0","id":1,"method":"GetTask","params":{"id":"t"}}`, a2a.CodeInvalidRequest, "json_rpc"},

		// params: -32602, naming the member
		{"part\u017f", a2a.V10, send("SendMessage", `{"message":{`+msg10+`,"part\u017f":[{"text":"evil"}]}}`), a2a.CodeInvalidParams, "params.message.part\u017f"},
		{"part\u017f", a2a.V03, send("message/send", `{"message":{`+msg03+`,"part\u017f":[{"kind":"text","text":"evil"}]}}`), a2a.CodeInvalidParams, "params.message.part\u017f"},
		{"Metadata", a2a.V10, send("SendMessage", `{"message":{`+msg10+`,"metadata":{"skill":"a"},"Metadata":{"skill":"b"}}}`), a2a.CodeInvalidParams, "params.message.Metadata"},
		{"Metadata", a2a.V03, send("message/send", `{"message":{`+msg03+`,"metadata":{"skill":"a"},"Metadata":{"skill":"b"}}}`), a2a.CodeInvalidParams, "params.message.Metadata"},
		{"TEXT", a2a.V10, send("SendMessage", `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi","TEXT":"evil"}]}}`), a2a.CodeInvalidParams, "params.message.parts[0].TEXT"},
		{"TEXT", a2a.V03, send("message/send", `{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":"hi","TEXT":"evil"}]}}`), a2a.CodeInvalidParams, "params.message.parts[0].TEXT"},
		{"\u212aind (Kelvin sign)", a2a.V03, send("message/send", `{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","\u212aind":"data","text":"hi"}]}}`), a2a.CodeInvalidParams, "params.message.parts[0].\u212aind"},
		{"params Metadata", a2a.V10, send("CancelTask", `{"id":"t","Metadata":{"why":"x"}}`), a2a.CodeInvalidParams, "params.Metadata"},
		{"Id", a2a.V03, send("tasks/get", `{"id":"a","Id":"b"}`), a2a.CodeInvalidParams, "params.Id"},
		{"a push config's URL", a2a.V10, send("CreateTaskPushNotificationConfig", `{"taskId":"t","url":"https://a.example/","URL":"https://b.example/"}`), a2a.CodeInvalidParams, "params.URL"},
		{"a push config's URL", a2a.V03, send("tasks/pushNotificationConfig/set", `{"taskId":"t","pushNotificationConfig":{"url":"https://a.example/","Url":"https://b.example/"}}`), a2a.CodeInvalidParams, "params.pushNotificationConfig.Url"},
		{"Message_id, a proto name that folds", a2a.V10, send("SendMessage", `{"message":{`+msg10+`,"Message_id":"n"}}`), a2a.CodeInvalidParams, "params.message.Message_id"},
		{"message__id, not the proto name of messageId", a2a.V10, send("SendMessage", `{"message":{"message__id":"n","role":"ROLE_USER","parts":[{"text":"hi"}]}}`), a2a.CodeInvalidParams, "params.message.message__id"},
		{"CONFIGURATION", a2a.V10, send("SendMessage", `{"message":{`+msg10+`},"CONFIGURATION":{"returnImmediately":true}}`), a2a.CodeInvalidParams, "params.CONFIGURATION"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+tt.v.String(), func(t *testing.T) {
			req, err := a2a.DecodeRequest(tt.v, []byte(tt.body))
			switch {
			case err == nil:
				t.Fatalf("decoded %+v, want error %d", req, tt.code)
			case err.Code != tt.code:
				t.Fatalf("err = %+v, want code %d", err, tt.code)
			case tt.code == a2a.CodeInvalidParams && err.Field != tt.field:
				t.Fatalf("err = %+v, want field %q", err, tt.field)
			case tt.code == a2a.CodeInvalidRequest && !strings.HasPrefix(err.Description, tt.field+" "):
				t.Fatalf("err = %+v, want a description naming %s", err, tt.field)
			case !strings.Contains(err.Description, "member names are matched exactly"):
				t.Fatalf("err = %+v, want a description that says why", err)
			}
			if req == nil || string(req.ID) != "1" {
				t.Errorf("req = %+v, want the id 1 echoed", req)
			}
		})
	}
}

// The HTTP+JSON binding refuses the same look-alikes in its bodies, naming
// the member from the body's root.
func TestFoldedMemberNamesREST(t *testing.T) {
	send := a2a.RESTTarget{Method: a2a.MethodSendMessage}
	tests := []struct {
		name   string
		v      a2a.Version
		target a2a.RESTTarget
		body   string
		field  string
	}{
		{"part\u017f", a2a.V10, send, `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}],"part\u017f":[{"text":"evil"}]}}`, "message.part\u017f"},
		{"part\u017f", a2a.V03, send, `{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}],"part\u017f":[{"kind":"text","text":"evil"}]}}`, "message.part\u017f"},
		{"Metadata", a2a.V10, send, `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]},"metadata":{},"Metadata":{"a":1}}`, "Metadata"},
		{"TEXT", a2a.V03, send, `{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":"hi","TEXT":"evil"}]}}`, "message.parts[0].TEXT"},
		{"MESSAGE_ID, a proto name that folds", a2a.V03, send, `{"message":{"message_id":"m","MESSAGE_ID":"n","role":"user","parts":[{"kind":"text","text":"hi"}]}}`, "message.MESSAGE_ID"},
		{"a push config's Token", a2a.V10, a2a.RESTTarget{Method: a2a.MethodCreatePushConfig, TaskID: "t"}, `{"url":"https://a.example/","token":"a","Token":"b"}`, "Token"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+tt.v.String(), func(t *testing.T) {
			req, err := a2a.DecodeRESTRequest(tt.v, tt.target, url.Values{}, []byte(tt.body))
			if err == nil || err.Code != a2a.CodeInvalidParams || err.Field != tt.field {
				t.Fatalf("req %+v, err %+v; want -32602 on %q", req, err, tt.field)
			}
			if status, _ := a2a.RESTStatus(err); status != 400 {
				t.Errorf("status %d, want 400", status)
			}
		})
	}
}

// What folding would not confuse keeps today's treatment: unknown members
// are ignored, and the names inside free-form values (metadata, a part's
// data) and inside unknown members are the sender's own.
func TestExactMemberNamesAccepted(t *testing.T) {
	tests := []struct {
		v    a2a.Version
		body string
	}{
		{a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","extra":{"METHOD":1},"params":{"message":{"messageId":"m","role":"ROLE_USER",` +
			`"parts":[{"text":"hi","metadata":{"Text":1,"text":2}},{"data":{"TEXT":1,"text":2,"Parts":[]}}],"metadata":{"skill":"a","Skill":"b"},"partz":1}}}`},
		{a2a.V03, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user",` +
			`"parts":[{"kind":"data","data":{"KIND":"x","kind":"y"}}],"metadata":{"METADATA":1}},"unknown":{"Message":1}}}`},
		// a proto field name is not a look-alike in 1.0
		{a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t","history_length":1}}`},
		// and in 0.3, whose JSON-RPC decoder does not read proto names, it is unknown
		{a2a.V03, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t","history_length":1,"HISTORY_LENGTH":2}}`},
	}
	for _, tt := range tests {
		if _, err := a2a.DecodeRequest(tt.v, []byte(tt.body)); err != nil {
			t.Errorf("%s %s: %v", tt.v, tt.body, err)
		}
	}
}

// An early error (a version not spoken, a refused body) answers the id and
// the method read by their exact names, as a case-sensitive parser reads
// them.
func TestPeekRequestExactNames(t *testing.T) {
	got := a2a.PeekRequest([]byte(`{"id":1,"ID":2,"method":"GetTask","METHOD":"SendStreamingMessage"}`))
	if string(got.ID) != "1" || got.Method != a2a.MethodGetTask {
		t.Errorf("PeekRequest = %s, %v; want 1, GetTask", got.ID, got.Method)
	}
	got = a2a.PeekRequest([]byte(`{"ID":2,"Method":"SendStreamingMessage"}`))
	if got.ID != nil || got.Method != a2a.MethodUnknown {
		t.Errorf("PeekRequest = %s, %v; want no id, no method", got.ID, got.Method)
	}
}

// FuzzStrictMemberNames: what the agent decodes from a request it accepts
// is what a strict reader reads in it, one that looks members up by their
// exact names (and their proto field names where the binding reads those)
// as a case-sensitive parser in front of the agent does: the method, the
// id, and the members the engine acts on. And the same request with a
// look-alike of one of those members added (METHOD, "part\u017f") is
// refused.
func FuzzStrictMemberNames(f *testing.F) {
	for _, seed := range []struct {
		v10, rest bool
		body      string
	}{
		{true, false, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi","metadata":{"k":1}}],"metadata":{"skill":"weather"}},"metadata":{"a":"b"}}}`},
		{false, false, `{"jsonrpc":"2.0","id":"x","method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}],"contextId":"c"}}}`},
		{true, false, `{"jsonrpc":"2.0","id":1,"method":"GetTask","METHOD":"ListTasks","params":{"id":"t"}}`},
		{true, false, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"a"},"Params":{"id":"b"}}`},
		{true, false, `{"jsonrpc":"2.0","JSONRPC":"1.0","id":1,"method":"CancelTask","params":{"id":"t"}}`},
		{true, false, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"}],"part\u017f":[{"text":"b"}]}}}`},
		{false, false, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":"a","TEXT":"b"}],"metadata":{},"Metadata":{"skill":"x"}}}}`},
		{true, false, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"context_id":"c","page_size":5}}`},
		{true, false, `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"t","url":"https://a.example/","URL":"https://b.example/"}}`},
		{false, false, `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"t","pushNotificationConfig":{"url":"https://a.example/"}}}`},
		{true, true, `{"message":{"message_id":"m","role":"ROLE_USER","parts":[{"text":"hi"}]},"metadata":{"skill":"x"}}`},
		{false, true, `{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}],"part\u017f":[]}}`},
	} {
		f.Add(seed.v10, seed.rest, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, v10, rest bool, body []byte) {
		v := a2a.V03
		if v10 {
			v = a2a.V10
		}
		decode := func(body []byte) (*a2a.Request, *a2a.Error) {
			if rest {
				return a2a.DecodeRESTRequest(v, a2a.RESTTarget{Method: a2a.MethodSendMessage}, url.Values{}, body)
			}
			return a2a.DecodeRequest(v, body)
		}
		req, err := decode(body)
		if err != nil {
			return
		}
		var read any // as the strict reader reads it
		if err := json.Unmarshal(body, &read); err != nil {
			t.Fatalf("accepted a body a strict reader cannot read: %v", err)
		}
		r := strictReader{v: v, proto: v10 || rest}
		params := read
		if !rest {
			params = r.get(read, "params")
			if got := r.str(read, "method"); a2a.LookupMethod(v, got) != req.Method {
				t.Fatalf("decoded method %v, the strict reader reads %q", req.Method, got)
			}
			var raw map[string]json.RawMessage
			_ = json.Unmarshal(body, &raw)
			if !bytes.Equal(raw["id"], req.ID) {
				t.Fatalf("decoded id %s, the strict reader reads %s", req.ID, raw["id"])
			}
		}
		r.compare(t, req, params)

		// A look-alike of a member the engine acts on is refused, wherever
		// it is added. doc keeps the body's numbers as they are written.
		var doc any
		d := json.NewDecoder(bytes.NewReader(body))
		d.UseNumber()
		_ = d.Decode(&doc)
		for _, at := range r.objects(doc, rest) {
			for _, name := range at.names {
				value, ok := at.obj[name]
				if !ok {
					continue
				}
				for _, alike := range a2atest.LookAlikes(name) {
					at.obj[alike] = value
					changed, mErr := json.Marshal(doc)
					delete(at.obj, alike)
					if mErr != nil {
						t.Fatal(mErr)
					}
					want := a2a.CodeInvalidParams
					if at.envelope {
						want = a2a.CodeInvalidRequest
					}
					if _, err := decode(changed); err == nil || err.Code != want || !strings.Contains(err.Description, "matched exactly") {
						t.Fatalf("with %q beside %q: err = %v, want %d refusing the look-alike\n%s", alike, name, err, want, changed)
					}
				}
			}
		}
	})
}

// strictReader reads a request decoded into any, looking members up by
// their exact names.
type strictReader struct {
	v     a2a.Version
	proto bool // the proto field name is read as well
}

// get returns the member of obj named names[0], or by its proto field
// name names[1] when r reads those.
func (r strictReader) get(obj any, names ...string) any {
	m, _ := obj.(map[string]any)
	if v, ok := m[names[0]]; ok || !r.proto || len(names) == 1 {
		return v
	}
	return m[names[1]]
}

func (r strictReader) str(obj any, names ...string) string {
	s, _ := r.get(obj, names...).(string)
	return s
}

func (r strictReader) object(obj any, names ...string) map[string]any {
	m, _ := r.get(obj, names...).(map[string]any)
	return m
}

// compare checks that what the agent decoded of req's params is what r
// reads in params.
func (r strictReader) compare(t *testing.T, req *a2a.Request, params any) {
	t.Helper()
	check := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded %s %#v, the strict reader reads %#v", what, got, want)
		}
	}
	switch p := req.Params.(type) {
	case *a2a.SendMessageRequest:
		msg := r.get(params, "message")
		check("messageId", p.Message.MessageID, r.str(msg, "messageId", "message_id"))
		check("contextId", p.Message.ContextID, r.str(msg, "contextId", "context_id"))
		check("taskId", p.Message.TaskID, r.str(msg, "taskId", "task_id"))
		check("message metadata", p.Message.Metadata, r.object(msg, "metadata"))
		check("params metadata", p.Metadata, r.object(params, "metadata"))
		parts, _ := r.get(msg, "parts").([]any)
		check("number of parts", len(p.Message.Parts), len(parts))
		for i, part := range parts {
			if text, ok := r.get(part, "text").(string); ok {
				check("part kind", p.Message.Parts[i].Kind, a2a.PartText)
				check("text", p.Message.Parts[i].Text, text)
				check("part metadata", p.Message.Parts[i].Metadata, r.object(part, "metadata"))
			}
		}
	case *a2a.GetTaskRequest:
		check("id", p.ID, r.str(params, "id"))
	case *a2a.TaskIDRequest:
		check("id", p.ID, r.str(params, "id"))
		check("metadata", p.Metadata, r.object(params, "metadata"))
	case *a2a.ListTasksRequest:
		check("contextId", p.ContextID, r.str(params, "contextId", "context_id"))
	case *a2a.TaskPushNotificationConfig:
		if req.Method != a2a.MethodCreatePushConfig {
			return
		}
		config := params
		if r.v == a2a.V03 { // 0.3 nests the config
			config = r.get(params, "pushNotificationConfig")
		}
		check("url", p.URL, r.str(config, "url"))
		check("token", p.Token, r.str(config, "token"))
	}
}

// memberObject is an object of a request and the names of its members the
// engine acts on.
type memberObject struct {
	obj      map[string]any
	names    []string
	envelope bool
}

// objects returns the objects of doc whose members the engine acts on:
// the envelope, the params, the message, its parts.
func (r strictReader) objects(doc any, rest bool) []memberObject {
	var out []memberObject
	params, _ := doc.(map[string]any)
	if !rest {
		out = append(out, memberObject{params, []string{"jsonrpc", "id", "method", "params"}, true})
		params = r.object(doc, "params")
	}
	if params == nil {
		return out
	}
	out = append(out, memberObject{params, []string{"message", "metadata", "configuration", "id"}, false})
	msg := r.object(params, "message")
	if msg == nil {
		return out
	}
	out = append(out, memberObject{msg, []string{"messageId", "role", "parts", "metadata", "contextId", "taskId"}, false})
	parts, _ := msg["parts"].([]any)
	for _, part := range parts {
		if p, ok := part.(map[string]any); ok {
			out = append(out, memberObject{p, []string{"text", "data", "metadata"}, false})
		}
	}
	return out
}
