package a2a_test

import (
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

func TestMatchREST(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         a2a.RESTTarget
		allow        string
		found        bool
	}{
		{"POST", "/message:send", a2a.RESTTarget{Method: a2a.MethodSendMessage}, "", true},
		{"POST", "/message:stream", a2a.RESTTarget{Method: a2a.MethodSendStreamingMessage}, "", true},
		{"GET", "/tasks", a2a.RESTTarget{Method: a2a.MethodListTasks}, "", true},
		{"GET", "/tasks/t%2F1", a2a.RESTTarget{Method: a2a.MethodGetTask, TaskID: "t/1"}, "", true},
		{"POST", "/tasks/t1:cancel", a2a.RESTTarget{Method: a2a.MethodCancelTask, TaskID: "t1"}, "", true},
		{"GET", "/tasks/t1:subscribe", a2a.RESTTarget{Method: a2a.MethodSubscribeToTask, TaskID: "t1"}, "", true},
		{"POST", "/tasks/t1:subscribe", a2a.RESTTarget{Method: a2a.MethodSubscribeToTask, TaskID: "t1"}, "", true},
		{"POST", "/tasks/t1/pushNotificationConfigs", a2a.RESTTarget{Method: a2a.MethodCreatePushConfig, TaskID: "t1"}, "", true},
		{"GET", "/tasks/t1/pushNotificationConfigs", a2a.RESTTarget{Method: a2a.MethodListPushConfigs, TaskID: "t1"}, "", true},
		{"GET", "/tasks/t1/pushNotificationConfigs/c1", a2a.RESTTarget{Method: a2a.MethodGetPushConfig, TaskID: "t1", ConfigID: "c1"}, "", true},
		{"DELETE", "/tasks/t1/pushNotificationConfigs/c1", a2a.RESTTarget{Method: a2a.MethodDeletePushConfig, TaskID: "t1", ConfigID: "c1"}, "", true},
		{"GET", "/extendedAgentCard", a2a.RESTTarget{Method: a2a.MethodGetExtendedAgentCard}, "", true},
		{"PUT", "/tasks/t1/pushNotificationConfigs/c1", a2a.RESTTarget{TaskID: "t1", ConfigID: "c1"}, "GET, DELETE", true},
		{"DELETE", "/tasks/t1:subscribe", a2a.RESTTarget{TaskID: "t1"}, "GET, POST", true},
		{"GET", "/tasks/", a2a.RESTTarget{}, "", false},
		{"GET", "/tasks/t1/other", a2a.RESTTarget{}, "", false},
		{"GET", "/tasks/t1/pushNotificationConfigs/", a2a.RESTTarget{}, "", false},
		{"GET", "/tasks/%zz", a2a.RESTTarget{}, "", false},
		{"POST", "/", a2a.RESTTarget{}, "", false},
		// The 0.3 specification's paths: the same operations but ListTasks,
		// the extended card at /v1/card; a path below /v1/ that names none
		// is still the 0.3 form's.
		{"POST", "/v1/message:send", a2a.RESTTarget{Method: a2a.MethodSendMessage, Proto03: true}, "", true},
		{"POST", "/v1/message:stream", a2a.RESTTarget{Method: a2a.MethodSendStreamingMessage, Proto03: true}, "", true},
		{"GET", "/v1/tasks/t1", a2a.RESTTarget{Method: a2a.MethodGetTask, TaskID: "t1", Proto03: true}, "", true},
		{"POST", "/v1/tasks/t1:cancel", a2a.RESTTarget{Method: a2a.MethodCancelTask, TaskID: "t1", Proto03: true}, "", true},
		{"POST", "/v1/tasks/t1:subscribe", a2a.RESTTarget{Method: a2a.MethodSubscribeToTask, TaskID: "t1", Proto03: true}, "", true},
		{"GET", "/v1/tasks/t1:subscribe", a2a.RESTTarget{Method: a2a.MethodSubscribeToTask, TaskID: "t1", Proto03: true}, "", true},
		{"POST", "/v1/tasks/t1/pushNotificationConfigs", a2a.RESTTarget{Method: a2a.MethodCreatePushConfig, TaskID: "t1", Proto03: true}, "", true},
		{"GET", "/v1/tasks/t1/pushNotificationConfigs", a2a.RESTTarget{Method: a2a.MethodListPushConfigs, TaskID: "t1", Proto03: true}, "", true},
		{"GET", "/v1/tasks/t1/pushNotificationConfigs/c1", a2a.RESTTarget{Method: a2a.MethodGetPushConfig, TaskID: "t1", ConfigID: "c1", Proto03: true}, "", true},
		{"DELETE", "/v1/tasks/t1/pushNotificationConfigs/c1", a2a.RESTTarget{Method: a2a.MethodDeletePushConfig, TaskID: "t1", ConfigID: "c1", Proto03: true}, "", true},
		{"GET", "/v1/card", a2a.RESTTarget{Method: a2a.MethodGetExtendedAgentCard, Proto03: true}, "", true},
		{"GET", "/v1/message:send", a2a.RESTTarget{Proto03: true}, "POST", true},
		{"GET", "/v1/tasks", a2a.RESTTarget{Proto03: true}, "", false},
		{"GET", "/v1/extendedAgentCard", a2a.RESTTarget{Proto03: true}, "", false},
		{"GET", "/card", a2a.RESTTarget{}, "", false},
		{"GET", "/v1", a2a.RESTTarget{}, "", false},
	} {
		got, allow, found := a2a.MatchREST(tc.method, tc.path)
		if got != tc.want || allow != tc.allow || found != tc.found {
			t.Errorf("%s %s: %+v %q %v, want %+v %q %v", tc.method, tc.path, got, allow, found, tc.want, tc.allow, tc.found)
		}
	}
}

func TestDecodeRESTRequest(t *testing.T) {
	q, _ := url.ParseQuery("contextId=c&status=TASK_STATE_WORKING&pageSize=5&pageToken=p&historyLength=2" +
		"&statusTimestampAfter=2026-01-02T03:04:05Z&includeArtifacts=true&A2A-Version=1.0")
	req, err := a2a.DecodeRESTRequest(a2a.V10, a2a.RESTTarget{Method: a2a.MethodListTasks}, q, nil)
	if err != nil {
		t.Fatal(err)
	}
	list := req.Params.(*a2a.ListTasksRequest)
	if list.ContextID != "c" || list.Status != a2a.TaskStateWorking || *list.PageSize != 5 || list.PageToken != "p" ||
		*list.HistoryLength != 2 || list.StatusTimestampAfter.Year() != 2026 || !*list.IncludeArtifacts {
		t.Errorf("ListTasks: %+v", list)
	}

	// Proto field names in a body, and the path's task id.
	req, err = a2a.DecodeRESTRequest(a2a.V10, a2a.RESTTarget{Method: a2a.MethodCreatePushConfig, TaskID: "t1"}, nil,
		[]byte(`{"url":"https://h.test/","token":"x","task_id":"t1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if c := req.Params.(*a2a.TaskPushNotificationConfig); c.TaskID != "t1" || c.URL != "https://h.test/" {
		t.Errorf("push config: %+v", c)
	}

	for _, tc := range []struct {
		name  string
		t     a2a.RESTTarget
		query string
		body  string
		field string
	}{
		{"repeated parameter", a2a.RESTTarget{Method: a2a.MethodListTasks}, "pageSize=1&pageSize=2", "", "pageSize"},
		{"bad boolean", a2a.RESTTarget{Method: a2a.MethodListTasks}, "includeArtifacts=yes", "", "includeArtifacts"},
		{"negative history", a2a.RESTTarget{Method: a2a.MethodGetTask, TaskID: "t"}, "historyLength=-1", "", "historyLength"},
		{"task id differs", a2a.RESTTarget{Method: a2a.MethodCreatePushConfig, TaskID: "t1"}, "", `{"url":"https://h.test/","taskId":"t2"}`, "taskId"},
		{"wrong type", a2a.RESTTarget{Method: a2a.MethodSendMessage}, "", `{"message":{"parts":"x"}}`, "message.parts"},
	} {
		q, _ := url.ParseQuery(tc.query)
		var body []byte
		if tc.body != "" {
			body = []byte(tc.body)
		}
		_, err := a2a.DecodeRESTRequest(a2a.V10, tc.t, q, body)
		if err == nil || err.Code != a2a.CodeInvalidParams || err.Field != tc.field {
			t.Errorf("%s: %v, want invalid params at %s", tc.name, err, tc.field)
		}
	}
}

// In 0.3 the same paths take the 0.3 params, as a2a-go's a2av0 REST
// transport sends them (every member name in snake_case); ListTasks has no
// 0.3 form.
func TestDecodeRESTRequest03(t *testing.T) {
	req, err := a2a.DecodeRESTRequest(a2a.V03, a2a.RESTTarget{Method: a2a.MethodSendMessage}, nil,
		[]byte(`{"message":{"kind":"message","message_id":"m","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"blocking":false}}`))
	if err != nil {
		t.Fatal(err)
	}
	if p := req.Params.(*a2a.SendMessageRequest); p.Message.MessageID != "m" || !p.Configuration.ReturnImmediately {
		t.Errorf("SendMessage: %+v", p)
	}
	req, err = a2a.DecodeRESTRequest(a2a.V03, a2a.RESTTarget{Method: a2a.MethodGetPushConfig, TaskID: "t1", ConfigID: "c1"}, nil, nil)
	if c, _ := req.Params.(*a2a.TaskPushNotificationConfig); err != nil || c.TaskID != "t1" || c.ID != "c1" {
		t.Errorf("GetTaskPushNotificationConfig: %+v %v", req.Params, err)
	}
	req, err = a2a.DecodeRESTRequest(a2a.V03, a2a.RESTTarget{Method: a2a.MethodCreatePushConfig, TaskID: "t1"}, nil,
		[]byte(`{"task_id":"t1","push_notification_config":{"id":"c1","url":"https://h.test/"}}`))
	if c, _ := req.Params.(*a2a.TaskPushNotificationConfig); err != nil || c.TaskID != "t1" || c.ID != "c1" {
		t.Errorf("CreateTaskPushNotificationConfig: %+v %v", req.Params, err)
	}
	q, _ := url.ParseQuery("historyLength=3")
	req, err = a2a.DecodeRESTRequest(a2a.V03, a2a.RESTTarget{Method: a2a.MethodGetTask, TaskID: "t1"}, q, nil)
	if g, _ := req.Params.(*a2a.GetTaskRequest); err != nil || g.ID != "t1" || *g.HistoryLength != 3 {
		t.Errorf("GetTask: %+v %v", req.Params, err)
	}
	if _, err := a2a.DecodeRESTRequest(a2a.V03, a2a.RESTTarget{Method: a2a.MethodListTasks}, nil, nil); err == nil || err.Code != a2a.CodeMethodNotFound {
		t.Errorf("ListTasks in 0.3: %v", err)
	}
}

func TestAppendRESTError(t *testing.T) {
	e := a2a.TaskNotFound("t1")
	status, code := a2a.RESTStatus(e)
	got := string(a2a.AppendRESTError(nil, status, e))
	want := `{"error":{"code":404,"status":"NOT_FOUND","message":"Task not found","details":[` +
		`{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{"taskId":"t1"}}]}}`
	if status != 404 || code != "NOT_FOUND" || got != want {
		t.Errorf("got %d %s %s", status, code, got)
	}
}

// FuzzDecodeRESTRequest: whatever the method, path, query and body, the
// binding names an operation or none, and decoding ends in the model or in
// a request error, never a panic; an error body is JSON.
func FuzzDecodeRESTRequest(f *testing.F) {
	f.Add("POST", "/message:send", "", []byte(`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}`), true)
	f.Add("GET", "/tasks", "pageSize=5&status=TASK_STATE_WORKING&includeArtifacts=true", []byte(nil), true)
	f.Add("GET", "/tasks/t%2F1", "historyLength=2", []byte(nil), false)
	f.Add("POST", "/tasks/t1/pushNotificationConfigs", "", []byte(`{"url":"https://h/","task_id":"t1"}`), true)
	f.Add("POST", "/tasks/t1:cancel", "", []byte(`null`), false)
	f.Add("POST", "/v1/message:send", "", []byte(`{"message":{"message_id":"m","role":"ROLE_USER","content":[{"text":"hi"},`+
		`{"data":{"data":{"a":1}}},{"file":{"file_with_uri":"u","mime_type":"t/p"}}]},"configuration":{"blocking":true}}`), false)
	f.Add("POST", "/v1/tasks/t1/pushNotificationConfigs", "", []byte(`{"parent":"tasks/t1","config_id":"c","config":`+
		`{"name":"tasks/t1/pushNotificationConfigs/c","push_notification_config":{"url":"https://h/","authentication":{}}}}`), false)
	f.Add("GET", "/v1/tasks/t1", "history_length=2", []byte(nil), false)
	f.Fuzz(func(t *testing.T, method, path, query string, body []byte, v10 bool) {
		target, _, found := a2a.MatchREST(method, path)
		if !found || target.Method == a2a.MethodUnknown {
			return
		}
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		v := a2a.V03
		if v10 {
			v = a2a.V10
		}
		req, e := a2a.DecodeRESTRequest(v, target, q, body)
		if e != nil {
			switch e.Code {
			case a2a.CodeParseError, a2a.CodeInvalidRequest, a2a.CodeInvalidParams, a2a.CodeMethodNotFound:
			default:
				t.Fatalf("error code %d", e.Code)
			}
			status, _ := a2a.RESTStatus(e)
			if out := a2a.AppendRESTError(nil, status, e); !json.Valid(out) {
				t.Fatalf("error body is not JSON: %s", out)
			}
			if out := a2a.AppendProto03Error(nil, e); !json.Valid(out) {
				t.Fatalf("0.3 error body is not JSON: %s", out)
			}
			return
		}
		if req.Method != target.Method || (req.Params == nil) != (target.Method == a2a.MethodGetExtendedAgentCard) {
			t.Fatalf("decoded %+v for %+v", req, target)
		}
		// What a request holds, the 0.3 form writes back as JSON.
		if p, ok := req.Params.(*a2a.SendMessageRequest); ok && target.Proto03 {
			if out, err := a2a.AppendProto03Result(nil, &a2a.StreamResponse{Message: &p.Message}); err != nil || !json.Valid(out) {
				t.Fatalf("the message written back: %s %v", out, err)
			}
		}
	})
}

// The 0.3 form's bodies are the 0.3 proto's requests in ProtoJSON: as the
// compatibility kit sends them (proto field names, a message's parts in
// content, a data part's object under data.data, the whole
// CreateTaskPushNotificationConfigRequest), and as @a2a-js/sdk 0.3 sends
// them (JSON names, the TaskPushNotificationConfig alone).
func TestDecodeRESTRequestProto03(t *testing.T) {
	decode := func(target a2a.RESTTarget, query, body string) (any, *a2a.Error) {
		t.Helper()
		target.Proto03 = true
		q, _ := url.ParseQuery(query)
		var b []byte
		if body != "" {
			b = []byte(body)
		}
		req, err := a2a.DecodeRESTRequest(a2a.V03, target, q, b)
		if err != nil {
			return nil, err
		}
		return req.Params, nil
	}
	send := a2a.RESTTarget{Method: a2a.MethodSendMessage}

	p, err := decode(send, "", `{"message":{"message_id":"m1","context_id":"c1","role":"ROLE_USER","content":[
		{"text":"hi"},{"data":{"data":{"city":"Paris"}}},{"file":{"mime_type":"image/png","file_with_uri":"https://h.test/a.png"}},
		{"file":{"file_with_bytes":"aGk="}}],"metadata":{"skill":"weather"},"extensions":["urn:x"]},
		"configuration":{"accepted_output_modes":["text/plain"],"history_length":2,"blocking":false}}`)
	if err != nil {
		t.Fatal(err)
	}
	sm := p.(*a2a.SendMessageRequest)
	m := sm.Message
	if m.MessageID != "m1" || m.ContextID != "c1" || m.Role != a2a.RoleUser || len(m.Parts) != 4 ||
		m.Parts[0].Text != "hi" || m.Parts[1].Data.(map[string]any)["city"] != "Paris" ||
		m.Parts[2].URL != "https://h.test/a.png" || m.Parts[2].MediaType != "image/png" || string(m.Parts[3].Raw) != "hi" ||
		m.Metadata["skill"] != "weather" || m.Extensions[0] != "urn:x" {
		t.Errorf("the kit's message: %+v", m)
	}
	if c := sm.Configuration; c == nil || !c.ReturnImmediately || *c.HistoryLength != 2 || c.AcceptedOutputModes[0] != "text/plain" {
		t.Errorf("the kit's configuration: %+v", c)
	}
	// @a2a-js/sdk 0.3: JSON names, no configuration: blocking, as 0.3's
	// JSON-RPC reads an absent blocking.
	p, err = decode(send, "", `{"message":{"messageId":"m2","role":"ROLE_USER","content":[{"text":"hi"}]},
		"configuration":{"pushNotification":{"url":"https://h.test/hook","authentication":{"schemes":["Bearer"]}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if sm := p.(*a2a.SendMessageRequest); sm.Message.MessageID != "m2" || sm.Configuration.ReturnImmediately ||
		sm.Configuration.PushNotification.URL != "https://h.test/hook" || sm.Configuration.PushNotification.Authentication.Scheme != "Bearer" {
		t.Errorf("a2a-js's request: %+v %+v", sm.Message, sm.Configuration)
	}
	if p, err := decode(send, "", `{"request":{"messageId":"m3","role":"ROLE_USER","content":[{"text":"hi"}]}}`); err != nil ||
		p.(*a2a.SendMessageRequest).Message.MessageID != "m3" {
		t.Errorf("the message by its proto field name, request: %+v %v", p, err)
	}

	create := a2a.RESTTarget{Method: a2a.MethodCreatePushConfig, TaskID: "t1"}
	for _, tc := range []struct{ name, body, id string }{
		{"the kit's CreateTaskPushNotificationConfigRequest", `{"parent":"tasks/t1","config_id":"default","config":{
			"name":"tasks/t1/pushNotificationConfigs/default","push_notification_config":{"id":"default",
			"url":"https://h.test/hook","token":"","authentication":{}}}}`, "default"},
		{"a2a-js's TaskPushNotificationConfig", `{"name":"tasks/t1/pushNotificationConfigs/","pushNotificationConfig":{"url":"https://h.test/hook"}}`, ""},
		{"the id from the name alone", `{"name":"tasks/t1/pushNotificationConfigs/c9","pushNotificationConfig":{"url":"https://h.test/hook"}}`, "c9"},
		{"the id from configId alone", `{"configId":"c8","config":{"pushNotificationConfig":{"url":"https://h.test/hook"}}}`, "c8"},
	} {
		p, err := decode(create, "", tc.body)
		if c, _ := p.(*a2a.TaskPushNotificationConfig); err != nil || c.TaskID != "t1" || c.ID != tc.id || c.URL != "https://h.test/hook" || c.Authentication != nil {
			t.Errorf("%s: %+v %v", tc.name, p, err)
		}
	}

	q, err := decode(a2a.RESTTarget{Method: a2a.MethodGetTask, TaskID: "t1"}, "history_length=3", "")
	if g, _ := q.(*a2a.GetTaskRequest); err != nil || g.ID != "t1" || *g.HistoryLength != 3 {
		t.Errorf("GetTask, history_length as the kit sends it: %+v %v", q, err)
	}
	if c, err := decode(a2a.RESTTarget{Method: a2a.MethodCancelTask, TaskID: "t1"}, "", `{"name":"tasks/t1"}`); err != nil || c.(*a2a.TaskIDRequest).ID != "t1" {
		t.Errorf("cancel with its CancelTaskRequest: %+v %v", c, err)
	}

	for _, tc := range []struct {
		name  string
		t     a2a.RESTTarget
		query string
		body  string
		field string
	}{
		{"no message", send, "", `{}`, "message"},
		{"message and request", send, "", `{"message":{},"request":{}}`, "request"},
		{"no content", send, "", `{"message":{"messageId":"m","role":"ROLE_USER"}}`, "message.content"},
		{"a 0.3 JSON-RPC part", send, "", `{"message":{"messageId":"m","role":"ROLE_USER","content":[{"kind":"text"}]}}`, "message.content[0]"},
		{"a data part that is no object", send, "", `{"message":{"messageId":"m","role":"ROLE_USER","content":[{"data":{"data":[1]}}]}}`,
			"message.content[0].data.data"},
		{"a file with both", send, "", `{"message":{"messageId":"m","role":"ROLE_USER","content":[{"file":{"fileWithUri":"u","fileWithBytes":"aGk="}}]}}`,
			"message.content[0].file"},
		{"a 0.3 JSON-RPC role", send, "", `{"message":{"messageId":"m","role":"user","content":[{"text":"hi"}]}}`, "message.role"},
		{"a push config without url", send, "", `{"message":{"messageId":"m","role":"ROLE_USER","content":[{"text":"hi"}]},"configuration":{"pushNotification":{}}}`,
			"configuration.pushNotification.url"},
		{"no config", create, "", `{}`, "pushNotificationConfig"},
		{"both forms", create, "", `{"config":{"pushNotificationConfig":{"url":"https://h/"}},"pushNotificationConfig":{"url":"https://h/"}}`, "config"},
		{"another task's parent", create, "", `{"parent":"tasks/t2","config":{"pushNotificationConfig":{"url":"https://h/"}}}`, "parent"},
		{"another task's config name", create, "", `{"name":"tasks/t2/pushNotificationConfigs/c","pushNotificationConfig":{"url":"https://h/"}}`, "name"},
		{"ids that differ", create, "", `{"configId":"a","config":{"pushNotificationConfig":{"id":"b","url":"https://h/"}}}`, "configId"},
		{"another task's name", a2a.RESTTarget{Method: a2a.MethodCancelTask, TaskID: "t1"}, "", `{"name":"tasks/t2"}`, "name"},
		{"history length twice", a2a.RESTTarget{Method: a2a.MethodGetTask, TaskID: "t1"}, "historyLength=1&history_length=1", "", "historyLength"},
		{"a member twice", send, "", `{"message":{},"message":{}}`, ""},
	} {
		_, err := decode(tc.t, tc.query, tc.body)
		if err == nil || err.Code != a2a.CodeInvalidParams || err.Field != tc.field {
			t.Errorf("%s: %v, want invalid params at %q", tc.name, err, tc.field)
		}
	}
}

// The 0.3 form's answers are the 0.3 proto's messages in ProtoJSON.
func TestAppendProto03Result(t *testing.T) {
	task := &a2a.Task{ID: "t1", ContextID: "c1",
		Status: a2a.TaskStatus{State: a2a.TaskStateCanceled, Timestamp: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
			Message: &a2a.Message{MessageID: "m2", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("stopped")}, ReferenceTaskIDs: []string{"t0"}}},
		Artifacts: []a2a.Artifact{{ArtifactID: "a1", Parts: []a2a.Part{
			{Kind: a2a.PartData, Data: map[string]any{"n": 1}, Metadata: map[string]any{"x": 1}},
			{Kind: a2a.PartData, Data: []any{1, 2}},
			{Kind: a2a.PartRaw, Raw: []byte("hi"), MediaType: "text/plain", Filename: "hi.txt"},
			{Kind: a2a.PartURL, URL: "https://h.test/a.png"},
		}}},
	}
	for _, tc := range []struct {
		name   string
		result any
		want   string
	}{
		{"a task", task, `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_CANCELLED","message":{"messageId":"m2","role":"ROLE_AGENT",` +
			`"content":[{"text":"stopped"}]},"timestamp":"2025-01-02T03:04:05.000Z"},"artifacts":[{"artifactId":"a1","parts":[{"data":{"data":{"n":1}}},` +
			`{"data":{"data":{"value":[1,2]}}},{"file":{"fileWithBytes":"aGk=","mimeType":"text/plain"}},{"file":{"fileWithUri":"https://h.test/a.png"}}]}]}`},
		{"SendMessage's task", &a2a.StreamResponse{Task: &a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}}},
			`{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}`},
		{"a status update", &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t1", ContextID: "c1",
			Status: a2a.TaskStatus{State: a2a.TaskStateWorking}, Final: false}},
			`{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"},"final":false}}`},
		{"an artifact update", &a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "t1", ContextID: "c1",
			Artifact: a2a.Artifact{ArtifactID: "a1", Parts: []a2a.Part{a2a.TextPart("x")}}, Append: true, LastChunk: true}},
			`{"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"a1","parts":[{"text":"x"}]},"append":true,"lastChunk":true}}`},
		{"a push config", &a2a.TaskPushNotificationConfig{TaskID: "t1", ID: "c1", URL: "https://h.test/", Token: "tok",
			Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer"}},
			`{"name":"tasks/t1/pushNotificationConfigs/c1","pushNotificationConfig":{"url":"https://h.test/","id":"c1","token":"tok",` +
				`"authentication":{"schemes":["Bearer"]}}}`},
		{"push configs", &a2a.ListTaskPushNotificationConfigsResponse{Configs: []a2a.TaskPushNotificationConfig{{TaskID: "t1", ID: "c1", URL: "https://h.test/"}}},
			`{"configs":[{"name":"tasks/t1/pushNotificationConfigs/c1","pushNotificationConfig":{"url":"https://h.test/","id":"c1"}}]}`},
		{"a deletion", &a2a.Empty{}, `{}`},
	} {
		got, err := a2a.AppendProto03Result(nil, tc.result)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s:\n got %s %v\nwant %s", tc.name, got, err, tc.want)
		}
	}
	if _, err := a2a.AppendProto03Result(nil, &a2a.ListTasksResponse{}); err == nil {
		t.Error("a ListTasks answer has no 0.3 form")
	}
}

// Errors in the 0.3 form: the JSON-RPC code, the error's type as
// a2a-java 0.3 names it, the 0.3 message, with the 0.3 SDKs' statuses.
func TestAppendProto03Error(t *testing.T) {
	for _, tc := range []struct {
		e      *a2a.Error
		status int
		want   string
	}{
		{a2a.TaskNotFound("t1"), 404, `{"code":-32001,"error":"io.a2a.spec.TaskNotFoundError","message":"Task not found: taskId=t1"}`},
		{a2a.TaskNotCancelable("t1", a2a.TaskStateCompleted), 409,
			`{"code":-32002,"error":"io.a2a.spec.TaskNotCancelableError","message":"Task cannot be canceled: state=completed, taskId=t1"}`},
		{a2a.InvalidParams("message.content", "at least one part is required"), 422,
			`{"code":-32602,"error":"io.a2a.spec.InvalidParamsError","message":"Invalid parameters: message.content: at least one part is required"}`},
		{a2a.PushNotificationNotSupported(), 501, `{"code":-32003,"error":"io.a2a.spec.PushNotificationNotSupportedError","message":"Push Notification is not supported"}`},
		{a2a.ExtendedAgentCardNotConfigured(), 404,
			`{"code":-32007,"error":"io.a2a.spec.AuthenticatedExtendedCardNotConfiguredError","message":"Extended agent card is not configured"}`},
		{&a2a.Error{Code: a2a.CodeUnauthenticated, Message: "Unauthenticated"}, 401, `{"code":-31401,"error":"io.a2a.spec.JSONRPCError","message":"Unauthenticated"}`},
	} {
		if got := string(a2a.AppendProto03Error(nil, tc.e)); got != tc.want || a2a.Proto03Status(tc.e) != tc.status {
			t.Errorf("%v: %d %s, want %d %s", tc.e, a2a.Proto03Status(tc.e), got, tc.status, tc.want)
		}
	}
}
