package a2a_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// A request AppendRequest writes decodes back to itself, in both versions.
func TestAppendRequestRoundTrip(t *testing.T) {
	history := int32(2)
	params := &a2a.SendMessageRequest{
		Message: a2a.Message{MessageID: "m", ContextID: "c", Role: a2a.RoleUser,
			Parts: []a2a.Part{a2a.TextPart("hi"), a2a.DataPart(map[string]any{"n": 1.0})}, Metadata: map[string]any{"skill": "x"}},
		Configuration: &a2a.SendMessageConfiguration{AcceptedOutputModes: []string{"text/plain"}, HistoryLength: &history,
			ReturnImmediately: true, PushNotification: &a2a.TaskPushNotificationConfig{ID: "p", URL: "https://hook.test/",
				Token: "tok", Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: "secret"}}},
		Metadata: map[string]any{"trace": "t-1"},
	}
	for _, v := range []a2a.Version{a2a.V03, a2a.V10} {
		for _, method := range []a2a.Method{a2a.MethodSendMessage, a2a.MethodSendStreamingMessage} {
			in := &a2a.Request{ID: json.RawMessage(`"r-1"`), Method: method, Params: params}
			body, err := a2a.AppendRequest(nil, v, in)
			if err != nil {
				t.Fatal(err)
			}
			out, protoErr := a2a.DecodeRequest(v, body)
			if protoErr != nil {
				t.Fatalf("%s: %v\n%s", v, protoErr, body)
			}
			if string(out.ID) != `"r-1"` || out.Method != method || !reflect.DeepEqual(out.Params, params) {
				t.Errorf("%s %s: got %+v, params %+v\nfrom %s", v, method.Name(v), out, out.Params, body)
			}
		}
	}
	if _, err := a2a.AppendRequest(nil, a2a.V10, &a2a.Request{Method: a2a.MethodGetTask, Params: &a2a.GetTaskRequest{ID: "t"}}); err == nil {
		t.Error("a GetTask request was encoded")
	}
}

func TestDecodeSendMessage(t *testing.T) {
	tests := []struct {
		name, doc string
		v         a2a.Version
		wantID    string
		streaming bool
		wantErr   string
	}{
		{name: "message", doc: `{"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "hi"}]}`, v: a2a.V10},
		{name: "params", doc: `{"message": {"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "hi"}]},
			"configuration": {"blocking": false}}`, v: a2a.V03},
		{name: "request", doc: `{"jsonrpc": "2.0", "id": 7, "method": "message/stream", "params": {"message":
			{"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "hi"}]}}}`, v: a2a.V03, wantID: "7", streaming: true},
		{name: "message without messageId", doc: `{"role": "ROLE_USER", "parts": [{"text": "hi"}]}`, v: a2a.V10,
			wantErr: "params.message.messageId"},
		{name: "another method", doc: `{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t"}}`, v: a2a.V10,
			wantErr: "GetTask, not SendMessage"},
		{name: "not an object", doc: `[1]`, v: a2a.V10, wantErr: "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := a2a.DecodeSendMessage(tt.v, []byte(tt.doc))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one that mentions %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p := req.Params.(*a2a.SendMessageRequest)
			if string(req.ID) != tt.wantID || (req.Method == a2a.MethodSendStreamingMessage) != tt.streaming || p.Message.MessageID != "m" {
				t.Errorf("got id %s, method %s, message %+v", req.ID, req.Method.Name(tt.v), p.Message)
			}
		})
	}
}

func TestSniffVersion(t *testing.T) {
	tests := []struct {
		doc     string
		want    a2a.Version
		wantErr string
	}{
		{doc: `{"jsonrpc": "2.0", "method": "SendMessage"}`, want: a2a.V10},
		{doc: `{"jsonrpc": "2.0", "method": "message/send"}`, want: a2a.V03},
		{doc: `{"jsonrpc": "2.0", "method": "nope"}`, wantErr: `"nope" is not an A2A method`},
		{doc: `{"message": {"role": "ROLE_USER"}}`, want: a2a.V10},
		{doc: `{"role": "agent"}`, want: a2a.V03},
		{doc: `{"kind": "message"}`, want: a2a.V03},
		{doc: `{"parts": [{"kind": "text", "text": "hi"}]}`, want: a2a.V03},
		{doc: `{"parts": [{"text": "hi"}]}`, want: a2a.V10},
		{doc: `hello`, wantErr: "not a JSON object"},
	}
	for _, tt := range tests {
		v, err := a2a.SniffVersion([]byte(tt.doc))
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: err = %v, want one that mentions %q", tt.doc, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || v != tt.want):
			t.Errorf("%s: %s, %v; want %s", tt.doc, v, err, tt.want)
		}
	}
}

// DecodeResponse reads back what AppendResult and AppendError write: a
// message result decoded, a task result left as written.
func TestDecodeResponse(t *testing.T) {
	task := &a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}}
	msg := &a2a.Message{MessageID: "a", ContextID: "c", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("hello")}}
	for _, v := range []a2a.Version{a2a.V03, a2a.V10} {
		body, err := a2a.AppendResult(nil, v, json.RawMessage("3"), &a2a.StreamResponse{Message: msg})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := a2a.DecodeResponse(v, body)
		if err != nil {
			t.Fatalf("%s: %v\n%s", v, err, body)
		}
		if string(resp.ID) != "3" || resp.Error != nil || !reflect.DeepEqual(resp.Message, msg) {
			t.Errorf("%s: got %+v, want %+v", v, resp.Message, msg)
		}

		body, err = a2a.AppendResult(nil, v, json.RawMessage("3"), &a2a.StreamResponse{Task: task})
		if err != nil {
			t.Fatal(err)
		}
		if resp, err = a2a.DecodeResponse(v, body); err != nil || resp.Message != nil || resp.Error != nil ||
			!strings.Contains(string(resp.Result), `"id":"t"`) {
			t.Errorf("%s: a task result: %+v, %v", v, resp, err)
		}

		body = a2a.AppendError(nil, v, json.RawMessage("3"), a2a.InvalidParams("params.message.role", "must be user"))
		if resp, err = a2a.DecodeResponse(v, body); err != nil {
			t.Fatal(err)
		}
		e := resp.Error
		if e == nil || e.Code != a2a.CodeInvalidParams || !strings.Contains(e.Message+e.Field+e.Description, "params.message.role") {
			t.Errorf("%s: error %+v", v, e)
		}
		if v == a2a.V10 && (e.Field != "params.message.role" || e.Description != "must be user" || e.Reason != "INVALID_PARAMS") {
			t.Errorf("1.0 details not read: %+v", e)
		}
	}
	if _, err := a2a.DecodeResponse(a2a.V10, []byte(`{"jsonrpc": "2.0", "id": 1}`)); err == nil {
		t.Error("a response with neither result nor error decoded")
	}
}
