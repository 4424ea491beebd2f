package a2a_test

import (
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

func TestAppendPushConfigResults(t *testing.T) {
	cfg := a2a.TaskPushNotificationConfig{ID: "c1", TaskID: "t1", URL: "https://hook.test/a", Token: "tok",
		Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer"}}
	tests := []struct {
		name           string
		result         any
		want10, want03 string
	}{
		{"create and get", &cfg,
			`{"url":"https://hook.test/a","id":"c1","token":"tok","taskId":"t1","authentication":{"scheme":"Bearer"}}`,
			`{"taskId":"t1","pushNotificationConfig":{"url":"https://hook.test/a","id":"c1","token":"tok","authentication":{"schemes":["Bearer"]}}}`},
		{"list", &a2a.ListTaskPushNotificationConfigsResponse{Configs: []a2a.TaskPushNotificationConfig{cfg, {ID: "c2", TaskID: "t1", URL: "https://b"}}},
			`{"configs":[{"url":"https://hook.test/a","id":"c1","token":"tok","taskId":"t1","authentication":{"scheme":"Bearer"}},{"url":"https://b","id":"c2","taskId":"t1"}]}`,
			`[{"taskId":"t1","pushNotificationConfig":{"url":"https://hook.test/a","id":"c1","token":"tok","authentication":{"schemes":["Bearer"]}}},{"taskId":"t1","pushNotificationConfig":{"url":"https://b","id":"c2"}}]`},
		{"empty list", &a2a.ListTaskPushNotificationConfigsResponse{}, `{"configs":[]}`, `[]`},
		{"delete", &a2a.Empty{}, `{}`, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []struct {
				v    a2a.Version
				want string
			}{{a2a.V10, tt.want10}, {a2a.V03, tt.want03}} {
				got, err := a2a.AppendResult(nil, c.v, []byte("7"), tt.result)
				if err != nil {
					t.Fatal(err)
				}
				want := `{"jsonrpc":"2.0","id":7,"result":` + c.want + `}`
				if string(got) != want {
					t.Errorf("%s:\n got %s\nwant %s", c.v, got, want)
				}
			}
		})
	}
}

func TestAppendPushNotification(t *testing.T) {
	ts := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	task := &a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: ts}}
	ev := &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t1", ContextID: "c1", Status: task.Status, Final: true}}

	got, err := a2a.AppendPushNotification(nil, a2a.V10, task, ev)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2025-01-02T03:04:05.000Z"}}}`
	if string(got) != want {
		t.Errorf("1.0:\n got %s\nwant %s", got, want)
	}
	got, err = a2a.AppendPushNotification(nil, a2a.V03, task, ev)
	if err != nil {
		t.Fatal(err)
	}
	want = `{"id":"t1","contextId":"c1","status":{"state":"completed","timestamp":"2025-01-02T03:04:05.000Z"},"kind":"task"}`
	if string(got) != want {
		t.Errorf("0.3:\n got %s\nwant %s", got, want)
	}
	if a2a.PushContentType(a2a.V10) != "application/a2a+json" || a2a.PushContentType(a2a.V03) != "application/json" {
		t.Error("content types")
	}
}

func TestDecodePushConfigBounds(t *testing.T) {
	long := strings.Repeat("x", a2a.MaxPushURLBytes)
	tests := []struct {
		name  string
		v     a2a.Version
		body  string
		field string
	}{
		{"1.0 create: url too long", a2a.V10,
			`{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"t","url":"https://` + long + `"}}`, "params.url"},
		{"1.0 send: token too long", a2a.V10,
			`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]},` +
				`"configuration":{"taskPushNotificationConfig":{"url":"https://h","token":"` + long + `"}}}}`, "params.configuration.taskPushNotificationConfig.token"},
		{"0.3 set: credentials too long", a2a.V03,
			`{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"t","pushNotificationConfig":{"url":"https://h",` +
				`"authentication":{"schemes":["Bearer"],"credentials":"` + long + long + long + `"}}}}`, "params.pushNotificationConfig.authentication.credentials"},
		{"0.3 send: url too long", a2a.V03,
			`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]},` +
				`"configuration":{"pushNotificationConfig":{"url":"https://` + long + `"}}}}`, "params.configuration.pushNotificationConfig.url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a2a.DecodeRequest(tt.v, []byte(tt.body))
			if err == nil || err.Code != a2a.CodeInvalidParams || err.Field != tt.field {
				t.Fatalf("got %+v, want invalid params at %s", err, tt.field)
			}
		})
	}
}

func TestDecodePushConfig03(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		method a2a.Method
		want   a2a.TaskPushNotificationConfig
	}{
		{"set", `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"t","pushNotificationConfig":{"id":"c","url":"https://h","token":"k","authentication":{"schemes":["Bearer","Basic"],"credentials":"s"}}}}`,
			a2a.MethodCreatePushConfig, a2a.TaskPushNotificationConfig{TaskID: "t", ID: "c", URL: "https://h", Token: "k",
				Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: "s"}}},
		{"get by task only", `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/get","params":{"id":"t"}}`,
			a2a.MethodGetPushConfig, a2a.TaskPushNotificationConfig{TaskID: "t"}},
		{"get", `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/get","params":{"id":"t","pushNotificationConfigId":"c"}}`,
			a2a.MethodGetPushConfig, a2a.TaskPushNotificationConfig{TaskID: "t", ID: "c"}},
		{"list", `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/list","params":{"id":"t"}}`,
			a2a.MethodListPushConfigs, a2a.TaskPushNotificationConfig{TaskID: "t"}},
		{"delete", `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/delete","params":{"id":"t","pushNotificationConfigId":"c"}}`,
			a2a.MethodDeletePushConfig, a2a.TaskPushNotificationConfig{TaskID: "t", ID: "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := a2a.DecodeRequest(a2a.V03, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			got := req.Params.(*a2a.TaskPushNotificationConfig)
			if req.Method != tt.method || got.TaskID != tt.want.TaskID || got.ID != tt.want.ID || got.URL != tt.want.URL ||
				got.Token != tt.want.Token || (got.Authentication == nil) != (tt.want.Authentication == nil) ||
				got.Authentication != nil && *got.Authentication != *tt.want.Authentication {
				t.Errorf("got %v %+v, want %v %+v", req.Method, got, tt.method, tt.want)
			}
		})
	}
	if _, err := a2a.DecodeRequest(a2a.V03, []byte(`{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/delete","params":{"id":"t"}}`)); err == nil ||
		err.Field != "params.pushNotificationConfigId" {
		t.Errorf("delete without a config id: %+v", err)
	}
}
