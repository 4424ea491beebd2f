package a2a_test

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

func ptr[T any](v T) *T { return &v }

func TestDecodeRequestErrors(t *testing.T) {
	const (
		send10 = `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":`
		send03 = `{"jsonrpc":"2.0","id":7,"method":"message/send","params":`
		msg10  = `{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}`
	)
	tests := []struct {
		name  string
		v     a2a.Version
		body  string
		code  int
		field string
		id    string // echoed id; "" when none
	}{
		// envelope
		{"not JSON", a2a.V10, `{"jsonrpc":`, a2a.CodeParseError, "", ""},
		{"empty body", a2a.V10, ``, a2a.CodeParseError, "", ""},
		{"trailing garbage", a2a.V03, `{"jsonrpc":"2.0","id":1,"method":"tasks/get"} x`, a2a.CodeParseError, "", ""},
		{"batch", a2a.V10, `[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]`, a2a.CodeInvalidRequest, "", ""},
		{"string body", a2a.V10, `"GetTask"`, a2a.CodeInvalidRequest, "", ""},
		{"no jsonrpc", a2a.V10, `{"id":1,"method":"GetTask","params":{"id":"t"}}`, a2a.CodeInvalidRequest, "", "1"},
		{"jsonrpc 1.0", a2a.V10, `{"jsonrpc":"1.0","id":"a","method":"GetTask"}`, a2a.CodeInvalidRequest, "", `"a"`},
		{"jsonrpc number", a2a.V03, `{"jsonrpc":2.0,"id":1,"method":"tasks/get"}`, a2a.CodeInvalidRequest, "", "1"},
		{"object id", a2a.V10, `{"jsonrpc":"2.0","id":{"a":1},"method":"GetTask"}`, a2a.CodeInvalidRequest, "", ""},
		{"array id", a2a.V03, `{"jsonrpc":"2.0","id":[1],"method":"tasks/get"}`, a2a.CodeInvalidRequest, "", ""},
		{"boolean id", a2a.V10, `{"jsonrpc":"2.0","id":true,"method":"GetTask"}`, a2a.CodeInvalidRequest, "", ""},
		{"no method", a2a.V10, `{"jsonrpc":"2.0","id":1}`, a2a.CodeInvalidRequest, "", "1"},
		{"method number", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":3}`, a2a.CodeInvalidRequest, "", "1"},
		{"unknown method", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"DoThings"}`, a2a.CodeMethodNotFound, "", "1"},
		{"1.0 name as 0.3", a2a.V03, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}`, a2a.CodeMethodNotFound, "", "1"},
		{"0.3 name as 1.0", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`, a2a.CodeMethodNotFound, "", "1"},
		{"no tasks/list in 0.3", a2a.V03, `{"jsonrpc":"2.0","id":1,"method":"tasks/list"}`, a2a.CodeMethodNotFound, "", "1"},
		{"params string", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":"t"}`, a2a.CodeInvalidRequest, "", "1"},
		{"params array", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":["t"]}`, a2a.CodeInvalidParams, "params", "1"},

		// SendMessage, 1.0
		{"no params", a2a.V10, `{"jsonrpc":"2.0","id":7,"method":"SendMessage"}`, a2a.CodeInvalidParams, "params.message", "7"},
		{"no message", a2a.V10, send10 + `{}}`, a2a.CodeInvalidParams, "params.message", "7"},
		{"no messageId", a2a.V10, send10 + `{"message":{"role":"ROLE_USER","parts":[{"text":"hi"}]}}}`, a2a.CodeInvalidParams, "params.message.messageId", "7"},
		{"no role", a2a.V10, send10 + `{"message":{"messageId":"m","parts":[{"text":"hi"}]}}}`, a2a.CodeInvalidParams, "params.message.role", "7"},
		{"unspecified role", a2a.V10, send10 + `{"message":{"messageId":"m","role":"ROLE_UNSPECIFIED","parts":[{"text":"hi"}]}}}`, a2a.CodeInvalidParams, "params.message.role", "7"},
		{"unknown role", a2a.V10, send10 + `{"message":{"messageId":"m","role":"ROLE_BOT","parts":[{"text":"hi"}]}}}`, a2a.CodeInvalidParams, "params.message.role", "7"},
		{"0.3 role in 1.0", a2a.V10, send10 + `{"message":{"messageId":"m","role":"user","parts":[{"text":"hi"}]}}}`, a2a.CodeInvalidParams, "params.message.role", "7"},
		{"no parts", a2a.V10, send10 + `{"message":{"messageId":"m","role":"ROLE_USER"}}}`, a2a.CodeInvalidParams, "params.message.parts", "7"},
		{"empty parts", a2a.V10, send10 + `{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}`, a2a.CodeInvalidParams, "params.message.parts", "7"},
		{"part without content", a2a.V10, send10 + `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"mediaType":"text/plain"}]}}}`, a2a.CodeInvalidParams, "params.message.parts[0]", "7"},
		{"part with two contents", a2a.V10, send10 + `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"},{"text":"a","url":"https://x"}]}}}`, a2a.CodeInvalidParams, "params.message.parts[1]", "7"},
		{"bad base64", a2a.V10, send10 + `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"},{"raw":"!!!"}]}}}`, a2a.CodeInvalidParams, "params.message.parts[1].raw", "7"},
		{"messageId number", a2a.V10, send10 + `{"message":{"messageId":5,"role":"ROLE_USER","parts":[{"text":"a"}]}}}`, a2a.CodeInvalidParams, "params.message.messageId", "7"},
		{"text number", a2a.V10, send10 + `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"},{"text":5}]}}}`, a2a.CodeInvalidParams, "params.message.parts[1].text", "7"},
		{"parts object", a2a.V10, send10 + `{"message":{"messageId":"m","role":"ROLE_USER","parts":{"text":"a"}}}}`, a2a.CodeInvalidParams, "params.message.parts", "7"},
		{"metadata array", a2a.V10, send10 + `{"message":` + msg10 + `,"metadata":[1]}}`, a2a.CodeInvalidParams, "params.metadata", "7"},
		{"negative historyLength", a2a.V10, send10 + `{"message":` + msg10 + `,"configuration":{"historyLength":-1}}}`, a2a.CodeInvalidParams, "params.configuration.historyLength", "7"},
		{"historyLength string", a2a.V10, send10 + `{"message":` + msg10 + `,"configuration":{"historyLength":"x"}}}`, a2a.CodeInvalidParams, "params.configuration.historyLength", "7"},
		{"push config without url", a2a.V10, send10 + `{"message":` + msg10 + `,"configuration":{"taskPushNotificationConfig":{"token":"x"}}}}`, a2a.CodeInvalidParams, "params.configuration.taskPushNotificationConfig.url", "7"},

		// other methods, 1.0
		{"GetTask without params", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"GetTask"}`, a2a.CodeInvalidParams, "params.id", "1"},
		{"GetTask without id", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"historyLength":2}}`, a2a.CodeInvalidParams, "params.id", "1"},
		{"history_length and historyLength", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t","historyLength":2,"history_length":1}}`, a2a.CodeInvalidParams, "params", "1"},
		{"history_length string", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t","history_length":"x"}}`, a2a.CodeInvalidParams, "params.historyLength", "1"},
		{"negative page_size", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"page_size":-1}}`, a2a.CodeInvalidParams, "params.pageSize", "1"},
		{"message_id number", a2a.V10, send10 + `{"message":{"message_id":5,"role":"ROLE_USER","parts":[{"text":"a"}]}}}`, a2a.CodeInvalidParams, "params.message.messageId", "7"},
		{"GetTask negative history", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t","historyLength":-5}}`, a2a.CodeInvalidParams, "params.historyLength", "1"},
		{"ListTasks pageSize 0", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":0}}`, a2a.CodeInvalidParams, "params.pageSize", "1"},
		{"ListTasks pageSize 101", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":101}}`, a2a.CodeInvalidParams, "params.pageSize", "1"},
		{"ListTasks pageSize fraction", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":1.5}}`, a2a.CodeInvalidParams, "params.pageSize", "1"},
		{"ListTasks unknown status", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"status":"TASK_STATE_RUNNING"}}`, a2a.CodeInvalidParams, "params.status", "1"},
		{"ListTasks bad timestamp", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"statusTimestampAfter":"yesterday"}}`, a2a.CodeInvalidParams, "params.statusTimestampAfter", "1"},
		{"ListTasks negative history", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"historyLength":-5}}`, a2a.CodeInvalidParams, "params.historyLength", "1"},
		{"CancelTask without id", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{}}`, a2a.CodeInvalidParams, "params.id", "1"},
		{"SubscribeToTask without id", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"tenant":"x"}}`, a2a.CodeInvalidParams, "params.id", "1"},
		{"create push config without url", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"t"}}`, a2a.CodeInvalidParams, "params.url", "1"},
		{"push authentication without scheme", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"t","url":"https://x","authentication":{}}}`, a2a.CodeInvalidParams, "params.authentication.scheme", "1"},
		{"create push config without taskId", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"url":"https://x"}}`, a2a.CodeInvalidParams, "params.taskId", "1"},
		{"get push config without taskId", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"GetTaskPushNotificationConfig","params":{"id":"c"}}`, a2a.CodeInvalidParams, "params.taskId", "1"},
		{"delete push config without id", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"DeleteTaskPushNotificationConfig","params":{"taskId":"t"}}`, a2a.CodeInvalidParams, "params.id", "1"},
		{"list push configs without taskId", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"ListTaskPushNotificationConfigs","params":{}}`, a2a.CodeInvalidParams, "params.taskId", "1"},
		{"extended card params not object", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard","params":{"tenant":5}}`, a2a.CodeInvalidParams, "params.tenant", "1"},

		// 0.3
		{"1.0 role in 0.3", a2a.V03, send03 + `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"kind":"text","text":"hi"}]}}}`, a2a.CodeInvalidParams, "params.message.role", "7"},
		{"message kind", a2a.V03, send03 + `{"message":{"kind":"task","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`, a2a.CodeInvalidParams, "params.message.kind", "7"},
		{"unknown part kind", a2a.V03, send03 + `{"message":{"messageId":"m","role":"user","parts":[{"kind":"image","text":"hi"}]}}}`, a2a.CodeInvalidParams, "params.message.parts[0].kind", "7"},
		{"part kind mismatch", a2a.V03, send03 + `{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","data":{}}]}}}`, a2a.CodeInvalidParams, "params.message.parts[0].kind", "7"},
		{"part without content 0.3", a2a.V03, send03 + `{"message":{"messageId":"m","role":"user","parts":[{"kind":"text"}]}}}`, a2a.CodeInvalidParams, "params.message.parts[0]", "7"},
		{"part with two contents 0.3", a2a.V03, send03 + `{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":"a","data":{}}]}}}`, a2a.CodeInvalidParams, "params.message.parts[0]", "7"},
		{"part without kind 0.3", a2a.V03, send03 + `{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":"a"},{"text":"b"}]}}}`, a2a.CodeInvalidParams, "params.message.parts[1].kind", "7"},
		{"part of another kind 0.3", a2a.V03, send03 + `{"message":{"messageId":"m","role":"user","parts":[{"kind":"data","text":"b"}]}}}`, a2a.CodeInvalidParams, "params.message.parts[0].kind", "7"},
		{"file with bytes and uri", a2a.V03, send03 + `{"message":{"messageId":"m","role":"user","parts":[{"kind":"file","file":{"bytes":"aGk=","uri":"https://x"}}]}}}`, a2a.CodeInvalidParams, "params.message.parts[0].file", "7"},
		{"bad file bytes", a2a.V03, send03 + `{"message":{"messageId":"m","role":"user","parts":[{"kind":"file","file":{"bytes":"a"}}]}}}`, a2a.CodeInvalidParams, "params.message.parts[0].file.bytes", "7"},
		{"blocking string", a2a.V03, send03 + `{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"blocking":"yes"}}}`, a2a.CodeInvalidParams, "params.configuration.blocking", "7"},
		{"push config without url 0.3", a2a.V03, send03 + `{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"pushNotificationConfig":{}}}}`, a2a.CodeInvalidParams, "params.configuration.pushNotificationConfig.url", "7"},
		{"tasks/get without id", a2a.V03, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"historyLength":1}}`, a2a.CodeInvalidParams, "params.id", "1"},
		{"tasks/cancel without id", a2a.V03, `{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{}}`, a2a.CodeInvalidParams, "params.id", "1"},
		{"tasks/resubscribe without params", a2a.V03, `{"jsonrpc":"2.0","id":1,"method":"tasks/resubscribe"}`, a2a.CodeInvalidParams, "params.id", "1"},
		{"push set without taskId", a2a.V03, `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/set","params":{"pushNotificationConfig":{"url":"https://x"}}}`, a2a.CodeInvalidParams, "params.taskId", "1"},
		{"push set without config", a2a.V03, `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"t"}}`, a2a.CodeInvalidParams, "params.pushNotificationConfig", "1"},
		{"push set without schemes", a2a.V03, `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"t","pushNotificationConfig":{"url":"https://x","authentication":{"schemes":[]}}}}`, a2a.CodeInvalidParams, "params.pushNotificationConfig.authentication.schemes", "1"},
		{"push delete without config id", a2a.V03, `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/delete","params":{"id":"t"}}`, a2a.CodeInvalidParams, "params.pushNotificationConfigId", "1"},
		{"push list without id", a2a.V03, `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/list","params":{}}`, a2a.CodeInvalidParams, "params.id", "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDecodeError(t, tt.v, []byte(tt.body), tt.code, tt.field, tt.id)
		})
	}
}

// The specification's own invalid examples.
func TestDecodeRequestSpecErrors(t *testing.T) {
	tests := []struct {
		file  string
		field string
		id    string
	}{
		{"testdata/v0.3/stream-request-invalid-file.json", "params.message.parts[1].file", "1"},
		{"testdata/v0.3/send-flight-request-invalid.json", "params.message.messageId", `"req-003"`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			body, err := os.ReadFile(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			checkDecodeError(t, a2a.V03, body, a2a.CodeInvalidParams, tt.field, tt.id)
		})
	}
}

func checkDecodeError(t *testing.T, v a2a.Version, body []byte, code int, field, id string) {
	t.Helper()
	req, err := a2a.DecodeRequest(v, body)
	if err == nil {
		t.Fatalf("no error; params %#v", req.Params)
	}
	if err.Code != code || err.Field != field {
		t.Errorf("got %d %q (%v), want %d %q", err.Code, err.Field, err, code, field)
	}
	if code == a2a.CodeInvalidParams && err.Description == "" {
		t.Errorf("no description for %q", err.Field)
	}
	switch {
	case code == a2a.CodeParseError || req == nil:
		if req != nil {
			t.Errorf("request %+v alongside a parse error", req)
		}
		if id != "" {
			t.Errorf("no request, want id %s", id)
		}
	case string(req.ID) != id:
		t.Errorf("id %s, want %s", req.ID, id)
	case req.Params != nil:
		t.Errorf("params %#v alongside an error", req.Params)
	}
}

func TestDecodeRequest(t *testing.T) {
	ts := time.Date(2024, 3, 15, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		v      a2a.Version
		body   string
		id     string
		method a2a.Method
		params any
	}{
		{
			name: "SendMessage, every member",
			v:    a2a.V10,
			body: `{"jsonrpc":"2.0","id":"r-1","method":"SendMessage","params":{
				"tenant":"acme",
				"message":{"messageId":"m1","contextId":"c1","taskId":"t1","role":"ROLE_USER",
					"parts":[
						{"text":"hello","metadata":{"k":"v"}},
						{"raw":"_-8","filename":"a.bin","mediaType":"application/octet-stream"},
						{"url":"https://x/y.png","mediaType":"image/png"},
						{"data":{"n":1,"list":[true,null]}},
						{"data":null}
					],
					"metadata":{"skill":"weather"},"extensions":["https://ext"],"referenceTaskIds":["t0"],
					"someFutureField":{"ignored":true}},
				"configuration":{"acceptedOutputModes":["application/json"],"historyLength":3,"returnImmediately":true,
					"taskPushNotificationConfig":{"url":"https://hook","token":"tok","authentication":{"scheme":"Bearer","credentials":"c"}}},
				"metadata":{"trace":"abc"}}}`,
			id:     `"r-1"`,
			method: a2a.MethodSendMessage,
			params: &a2a.SendMessageRequest{
				Tenant: "acme",
				Message: a2a.Message{
					MessageID: "m1", ContextID: "c1", TaskID: "t1", Role: a2a.RoleUser,
					Parts: []a2a.Part{
						{Kind: a2a.PartText, Text: "hello", Metadata: map[string]any{"k": "v"}},
						{Kind: a2a.PartRaw, Raw: []byte{0xff, 0xef}, Filename: "a.bin", MediaType: "application/octet-stream"},
						{Kind: a2a.PartURL, URL: "https://x/y.png", MediaType: "image/png"},
						{Kind: a2a.PartData, Data: map[string]any{"n": 1.0, "list": []any{true, nil}}},
						{Kind: a2a.PartData},
					},
					Metadata:         map[string]any{"skill": "weather"},
					Extensions:       []string{"https://ext"},
					ReferenceTaskIDs: []string{"t0"},
				},
				Configuration: &a2a.SendMessageConfiguration{
					AcceptedOutputModes: []string{"application/json"},
					HistoryLength:       ptr[int32](3),
					ReturnImmediately:   true,
					PushNotification: &a2a.TaskPushNotificationConfig{URL: "https://hook", Token: "tok",
						Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: "c"}},
				},
				Metadata: map[string]any{"trace": "abc"},
			},
		},
		{
			name: "message/send, every part kind, blocking by default",
			v:    a2a.V03,
			body: `{"jsonrpc":"2.0","id":3,"method":"message/stream","params":{
				"message":{"kind":"message","messageId":"m1","role":"user","parts":[
					{"kind":"text","text":"hi"},
					{"kind":"file","file":{"bytes":"aGk=","mimeType":"text/plain","name":"hi.txt"}},
					{"kind":"file","file":{"uri":"https://x/y"}},
					{"kind":"data","data":{"a":"b"}},
					{"kind":"data","data":{"value":[1,2]},"metadata":{"data_part_compat":true}}
				]},
				"configuration":{"acceptedOutputModes":["text/plain"],"historyLength":0,
					"pushNotificationConfig":{"id":"p1","url":"https://hook","authentication":{"schemes":["Bearer","Basic"]}}}}}`,
			id:     `3`,
			method: a2a.MethodSendStreamingMessage,
			params: &a2a.SendMessageRequest{
				Message: a2a.Message{MessageID: "m1", Role: a2a.RoleUser, Parts: []a2a.Part{
					{Kind: a2a.PartText, Text: "hi"},
					{Kind: a2a.PartRaw, Raw: []byte("hi"), MediaType: "text/plain", Filename: "hi.txt"},
					{Kind: a2a.PartURL, URL: "https://x/y"},
					{Kind: a2a.PartData, Data: map[string]any{"a": "b"}},
					{Kind: a2a.PartData, Data: []any{1.0, 2.0}},
				}},
				Configuration: &a2a.SendMessageConfiguration{
					AcceptedOutputModes: []string{"text/plain"},
					HistoryLength:       ptr[int32](0),
					PushNotification: &a2a.TaskPushNotificationConfig{ID: "p1", URL: "https://hook",
						Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer"}},
				},
			},
		},
		{
			name:   "message/send, blocking false",
			v:      a2a.V03,
			body:   `{"jsonrpc":"2.0","id":null,"method":"message/send","params":{"message":{"messageId":"m1","role":"agent","parts":[{"kind":"text","text":"hi"}]},"configuration":{"blocking":false}}}`,
			id:     `null`,
			method: a2a.MethodSendMessage,
			params: &a2a.SendMessageRequest{
				Message:       a2a.Message{MessageID: "m1", Role: a2a.RoleAgent, Parts: []a2a.Part{{Kind: a2a.PartText, Text: "hi"}}},
				Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true},
			},
		},
		{
			name:   "message/send, blocking true",
			v:      a2a.V03,
			body:   `{"jsonrpc":"2.0","method":"message/send","params":{"message":{"messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"blocking":true}}}`,
			method: a2a.MethodSendMessage,
			params: &a2a.SendMessageRequest{
				Message:       a2a.Message{MessageID: "m1", Role: a2a.RoleUser, Parts: []a2a.Part{{Kind: a2a.PartText, Text: "hi"}}},
				Configuration: &a2a.SendMessageConfiguration{},
			},
		},
		{"GetTask", a2a.V10, `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"task-uuid","historyLength":10}}`, "2",
			a2a.MethodGetTask, &a2a.GetTaskRequest{ID: "task-uuid", HistoryLength: ptr[int32](10)}},
		{
			name: "SendMessage, proto field names (ProtoJSON accepts both), free-form names kept",
			v:    a2a.V10,
			body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{
				"message":{"message_id":"m1","context_id":"c1","task_id":"t1","role":"ROLE_USER",
					"parts":[{"raw":"aGk=","media_type":"text/plain","metadata":{"page_size":1}},{"data":{"first_name":"Ada","nested":{"last_name":"L"}}}],
					"reference_task_ids":["t0"],"metadata":{"skill_id":"weather"}},
				"configuration":{"accepted_output_modes":["application/json"],"history_length":3,"return_immediately":true,
					"task_push_notification_config":{"url":"https://hook","token":"tok"}}}}`,
			id:     `1`,
			method: a2a.MethodSendMessage,
			params: &a2a.SendMessageRequest{
				Message: a2a.Message{
					MessageID: "m1", ContextID: "c1", TaskID: "t1", Role: a2a.RoleUser,
					Parts: []a2a.Part{
						{Kind: a2a.PartRaw, Raw: []byte("hi"), MediaType: "text/plain", Metadata: map[string]any{"page_size": 1.0}},
						{Kind: a2a.PartData, Data: map[string]any{"first_name": "Ada", "nested": map[string]any{"last_name": "L"}}},
					},
					Metadata:         map[string]any{"skill_id": "weather"},
					ReferenceTaskIDs: []string{"t0"},
				},
				Configuration: &a2a.SendMessageConfiguration{
					AcceptedOutputModes: []string{"application/json"},
					HistoryLength:       ptr[int32](3),
					ReturnImmediately:   true,
					PushNotification:    &a2a.TaskPushNotificationConfig{URL: "https://hook", Token: "tok"},
				},
			},
		},
		{"GetTask, history_length", a2a.V10, `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"task-uuid","history_length":1}}`, "2",
			a2a.MethodGetTask, &a2a.GetTaskRequest{ID: "task-uuid", HistoryLength: ptr[int32](1)}},
		{"ListTasks, proto field names", a2a.V10, `{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{"context_id":"context-uuid","page_size":50,"page_token":"cursor-token","history_length":0,"status_timestamp_after":"2024-03-15T10:00:00Z","include_artifacts":true}}`, "3",
			a2a.MethodListTasks, &a2a.ListTasksRequest{ContextID: "context-uuid", PageSize: ptr[int32](50),
				PageToken: "cursor-token", HistoryLength: ptr[int32](0), StatusTimestampAfter: ts, IncludeArtifacts: ptr(true)}},
		{"tasks/get", a2a.V03, `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"t","historyLength":1,"metadata":{}}}`, "2",
			a2a.MethodGetTask, &a2a.GetTaskRequest{ID: "t", HistoryLength: ptr[int32](1)}},
		{"ListTasks", a2a.V10, `{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{"tenant":"x","contextId":"context-uuid","status":"TASK_STATE_WORKING","pageSize":50,"pageToken":"cursor-token","historyLength":0,"statusTimestampAfter":"2024-03-15T10:00:00Z","includeArtifacts":true}}`, "3",
			a2a.MethodListTasks, &a2a.ListTasksRequest{Tenant: "x", ContextID: "context-uuid", Status: a2a.TaskStateWorking, PageSize: ptr[int32](50),
				PageToken: "cursor-token", HistoryLength: ptr[int32](0), StatusTimestampAfter: ts, IncludeArtifacts: ptr(true)}},
		{"ListTasks without params", a2a.V10, `{"jsonrpc":"2.0","id":3,"method":"ListTasks"}`, "3",
			a2a.MethodListTasks, &a2a.ListTasksRequest{}},
		{"CancelTask", a2a.V10, `{"jsonrpc":"2.0","id":4,"method":"CancelTask","params":{"id":"task-uuid","metadata":{"why":"late"}}}`, "4",
			a2a.MethodCancelTask, &a2a.TaskIDRequest{ID: "task-uuid", Metadata: map[string]any{"why": "late"}}},
		{"tasks/cancel", a2a.V03, `{"jsonrpc":"2.0","id":4,"method":"tasks/cancel","params":{"id":"t"}}`, "4",
			a2a.MethodCancelTask, &a2a.TaskIDRequest{ID: "t"}},
		{"SubscribeToTask", a2a.V10, `{"jsonrpc":"2.0","id":5,"method":"SubscribeToTask","params":{"id":"task-uuid"}}`, "5",
			a2a.MethodSubscribeToTask, &a2a.TaskIDRequest{ID: "task-uuid"}},
		{"tasks/resubscribe", a2a.V03, `{"jsonrpc":"2.0","id":5,"method":"tasks/resubscribe","params":{"id":"t"}}`, "5",
			a2a.MethodSubscribeToTask, &a2a.TaskIDRequest{ID: "t"}},
		{"CreateTaskPushNotificationConfig", a2a.V10, `{"jsonrpc":"2.0","id":6,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"t","id":"c","url":"https://hook","token":"k"}}`, "6",
			a2a.MethodCreatePushConfig, &a2a.TaskPushNotificationConfig{TaskID: "t", ID: "c", URL: "https://hook", Token: "k"}},
		{"GetTaskPushNotificationConfig", a2a.V10, `{"jsonrpc":"2.0","id":6,"method":"GetTaskPushNotificationConfig","params":{"taskId":"t","id":"c"}}`, "6",
			a2a.MethodGetPushConfig, &a2a.TaskPushNotificationConfig{TaskID: "t", ID: "c"}},
		{"ListTaskPushNotificationConfigs", a2a.V10, `{"jsonrpc":"2.0","id":6,"method":"ListTaskPushNotificationConfigs","params":{"taskId":"t","pageSize":3}}`, "6",
			a2a.MethodListPushConfigs, &a2a.TaskPushNotificationConfig{TaskID: "t"}},
		{"DeleteTaskPushNotificationConfig", a2a.V10, `{"jsonrpc":"2.0","id":6,"method":"DeleteTaskPushNotificationConfig","params":{"taskId":"t","id":"c"}}`, "6",
			a2a.MethodDeletePushConfig, &a2a.TaskPushNotificationConfig{TaskID: "t", ID: "c"}},
		{"tasks/pushNotificationConfig/set", a2a.V03, `{"jsonrpc":"2.0","id":6,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"t","pushNotificationConfig":{"id":"c","url":"https://hook"}}}`, "6",
			a2a.MethodCreatePushConfig, &a2a.TaskPushNotificationConfig{TaskID: "t", ID: "c", URL: "https://hook"}},
		{"tasks/pushNotificationConfig/get", a2a.V03, `{"jsonrpc":"2.0","id":6,"method":"tasks/pushNotificationConfig/get","params":{"id":"t","pushNotificationConfigId":"c"}}`, "6",
			a2a.MethodGetPushConfig, &a2a.TaskPushNotificationConfig{TaskID: "t", ID: "c"}},
		{"tasks/pushNotificationConfig/list", a2a.V03, `{"jsonrpc":"2.0","id":6,"method":"tasks/pushNotificationConfig/list","params":{"id":"t"}}`, "6",
			a2a.MethodListPushConfigs, &a2a.TaskPushNotificationConfig{TaskID: "t"}},
		{"tasks/pushNotificationConfig/delete", a2a.V03, `{"jsonrpc":"2.0","id":6,"method":"tasks/pushNotificationConfig/delete","params":{"id":"t","pushNotificationConfigId":"c"}}`, "6",
			a2a.MethodDeletePushConfig, &a2a.TaskPushNotificationConfig{TaskID: "t", ID: "c"}},
		{"GetExtendedAgentCard", a2a.V10, `{"jsonrpc":"2.0","id":6,"method":"GetExtendedAgentCard"}`, "6",
			a2a.MethodGetExtendedAgentCard, nil},
		{"GetExtendedAgentCard with tenant", a2a.V10, `{"jsonrpc":"2.0","id":6.5e0,"method":"GetExtendedAgentCard","params":{"tenant":"x"}}`, "6.5e0",
			a2a.MethodGetExtendedAgentCard, nil},
		{"agent/getAuthenticatedExtendedCard", a2a.V03, `{"jsonrpc":"2.0","id":-1,"method":"agent/getAuthenticatedExtendedCard","params":null}`, "-1",
			a2a.MethodGetExtendedAgentCard, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := a2a.DecodeRequest(tt.v, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if string(req.ID) != tt.id || req.Method != tt.method {
				t.Errorf("id %s method %d, want %s %d", req.ID, req.Method, tt.id, tt.method)
			}
			if !reflect.DeepEqual(req.Params, tt.params) {
				got, _ := json.MarshalIndent(req.Params, "", "  ")
				want, _ := json.MarshalIndent(tt.params, "", "  ")
				t.Errorf("params\ngot  %s\nwant %s", got, want)
			}
		})
	}
}

// The request's body buffer may be reused once DecodeRequest returns.
func TestDecodeRequestKeepsNothingOfBody(t *testing.T) {
	body := []byte(`{"jsonrpc":"2.0","id":"abc","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi","metadata":{"k":"v"}}]}}}`)
	req, err := a2a.DecodeRequest(a2a.V10, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := range body {
		body[i] = 'x'
	}
	msg := req.Params.(*a2a.SendMessageRequest).Message
	if string(req.ID) != `"abc"` || msg.MessageID != "m" || msg.Parts[0].Text != "hi" || msg.Parts[0].Metadata["k"] != "v" {
		t.Errorf("request changed with the body: %s %+v", req.ID, msg)
	}
}

// A method of the other version is most likely a client that asked for the
// wrong version: the error says what it received and how to ask for the
// right one, in the message (both versions) and the details (1.0).
func TestMethodOfTheOtherVersion(t *testing.T) {
	tests := []struct {
		v                 a2a.Version
		method, want, not string
	}{
		{a2a.V03, "SendMessage", "SendMessage is a 1.0 method, and this request was read as 0.3", ""},
		{a2a.V03, "SendMessage", "A2A-Version: 1.0", ""},
		{a2a.V10, "message/send", "message/send is a 0.3 method", ""},
		{a2a.V10, "message/send", "call SendMessage", ""},
		{a2a.V10, "tasks/nosuch", "tasks/nosuch is not an A2A 1.0 method", "A2A-Version"},
	}
	for _, tt := range tests {
		body := `{"jsonrpc":"2.0","id":1,"method":"` + tt.method + `","params":{}}`
		_, e := a2a.DecodeRequest(tt.v, []byte(body))
		if e == nil || e.Code != a2a.CodeMethodNotFound {
			t.Fatalf("%s as %s: %v, want -32601", tt.method, tt.v, e)
		}
		answer := string(a2a.AppendError(nil, tt.v, json.RawMessage("1"), e))
		if !strings.Contains(answer, tt.want) || tt.not != "" && strings.Contains(answer, tt.not) {
			t.Errorf("%s as %s answers %s; want it to say %q", tt.method, tt.v, answer, tt.want)
		}
		if tt.v == a2a.V10 && !strings.Contains(answer, `"metadata":{"method":"`+tt.method+`","version":"1.0"}`) {
			t.Errorf("%s as 1.0: no method in the ErrorInfo details: %s", tt.method, answer)
		}
	}
	_, e := a2a.ParseVersion("2.0")
	if answer := string(a2a.AppendError(nil, a2a.V10, nil, e)); !strings.Contains(answer, "this agent speaks 0.3, 1.0") {
		t.Errorf("-32009 does not say which versions are supported: %s", answer)
	}
}
