package a2a_test

import (
	"encoding/json"
	"net/url"
	"testing"

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
			return
		}
		if req.Method != target.Method || (req.Params == nil) != (target.Method == a2a.MethodGetExtendedAgentCard) {
			t.Fatalf("decoded %+v for %+v", req, target)
		}
	})
}
