package caddymodule

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
	"github.com/caddy-a2a/caddy-a2a/push/pushtest"
)

// What the official compatibility kit (a2a-tck) found missing, through a
// real Caddy with every binding on.

// rest sends an HTTP+JSON request to the signed agent, with the
// A2A-Version header when version is set and then headers (name, value
// pairs), and returns the answer's status and body.
func (a *signedAgent) rest(method, path, version, body string, headers ...string) (int, string) {
	a.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(a.url(), "/")+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := a.tester.Client.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	return resp.StatusCode, string(raw)
}

// answerHolds fails the test unless an answer has status want and holds
// every one of parts.
func answerHolds(t *testing.T, what string, status int, body string, want int, parts ...string) {
	t.Helper()
	if status != want {
		t.Errorf("%s: status %d, want %d: %s", what, status, want, body)
		return
	}
	for _, p := range parts {
		if !strings.Contains(body, p) {
			t.Errorf("%s: %s, want it to hold %s", what, body, p)
		}
	}
}

// rpcHolds is answerHolds for a JSON-RPC answer, which must carry a result.
func rpcHolds(t *testing.T, what string, r rpcResponse, parts ...string) {
	t.Helper()
	if r.Error != nil {
		t.Errorf("%s: error %d: %s", what, r.Error.Code, r.Error.Message)
		return
	}
	answerHolds(t, what, http.StatusOK, string(r.Result), http.StatusOK, parts...)
}

// TestIntegrationPushConfigsOnEndedTasks: a completed task takes push
// configs in every binding and both versions, as the kit creates them:
// each is read back, listed and deleted; and none is notified, since the
// task changes no more.
func TestIntegrationPushConfigsOnEndedTasks(t *testing.T) {
	a := startSignedAgent(t)
	hook := pushtest.NewReceiver(t)
	a.loadAllBindings(`push {
			allow_insecure
			allow_private
		}`)
	ended := a.call("1.0", sendMessage("weather", `{"city":"Paris"}`))
	if ended.Error != nil {
		t.Fatal(ended.Error.Message)
	}
	tk := decodeTask10(t, ended.Result)
	if tk.Status.State != "TASK_STATE_COMPLETED" {
		t.Fatalf("the task is %s, want completed", tk.Status.State)
	}
	id := tk.ID

	// Each version's four methods, their params written with %[1]q for the
	// task's id, %[2]q for the config's id and %[3]q for its URL.
	for _, v := range []struct{ name, version, key, create, get, list, del string }{
		{"JSON-RPC 1.0", "1.0", "c10",
			`"CreateTaskPushNotificationConfig","params":{"taskId":%[1]q,"id":%[2]q,"url":%[3]q}`,
			`"GetTaskPushNotificationConfig","params":{"taskId":%[1]q,"id":%[2]q}`,
			`"ListTaskPushNotificationConfigs","params":{"taskId":%[1]q}`,
			`"DeleteTaskPushNotificationConfig","params":{"taskId":%[1]q,"id":%[2]q}`},
		{"JSON-RPC 0.3", "", "c03",
			`"tasks/pushNotificationConfig/set","params":{"taskId":%[1]q,"pushNotificationConfig":{"id":%[2]q,"url":%[3]q}}`,
			`"tasks/pushNotificationConfig/get","params":{"id":%[1]q,"pushNotificationConfigId":%[2]q}`,
			`"tasks/pushNotificationConfig/list","params":{"id":%[1]q}`,
			`"tasks/pushNotificationConfig/delete","params":{"id":%[1]q,"pushNotificationConfigId":%[2]q}`},
	} {
		t.Run(v.name, func(t *testing.T) {
			key, url := v.key, hook.URL+"/"+v.key
			call := func(method string) rpcResponse {
				t.Helper()
				return a.call(v.version, `{"jsonrpc":"2.0","id":1,"method":`+fmt.Sprintf(method, id, key, url)+`}`)
			}
			rpcHolds(t, "create", call(v.create), `"id":"`+key+`"`, url)
			rpcHolds(t, "get", call(v.get), url)
			rpcHolds(t, "list", call(v.list), `"id":"`+key+`"`)
			rpcHolds(t, "delete", call(v.del))
		})
	}

	for _, b := range []struct{ name, version, prefix, create, key string }{
		{"HTTP+JSON 1.0", "1.0", "/rest", `{"id":"r10","url":%q}`, "r10"},
		{"HTTP+JSON 0.3, a2a-go's form", "", "/rest", `{"pushNotificationConfig":{"id":"r03","url":%q}}`, "r03"},
		{"HTTP+JSON 0.3, the specification's form", "", "/rest/v1", `{"config_id":"v1","config":{"push_notification_config":{"url":%q}}}`, "v1"},
	} {
		t.Run(b.name, func(t *testing.T) {
			url := hook.URL + "/" + b.key
			configs := b.prefix + "/tasks/" + id + "/pushNotificationConfigs"
			status, body := a.rest("POST", configs, b.version, fmt.Sprintf(b.create, url))
			answerHolds(t, "create", status, body, http.StatusOK, `"id":"`+b.key+`"`, url)
			status, body = a.rest("GET", configs+"/"+b.key, b.version, "")
			answerHolds(t, "get", status, body, http.StatusOK, url)
			status, body = a.rest("GET", configs, b.version, "")
			answerHolds(t, "list", status, body, http.StatusOK, `"id":"`+b.key+`"`)
			status, body = a.rest("DELETE", configs+"/"+b.key, b.version, "")
			answerHolds(t, "delete", status, body, http.StatusOK)
		})
	}

	t.Run("gRPC", func(t *testing.T) {
		conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", a.port), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		c := a2apb.NewA2AServiceClient(conn)
		ctx := metadata.AppendToOutgoingContext(t.Context(), "a2a-version", "1.0")
		url := hook.URL + "/grpc"
		if got, err := c.CreateTaskPushNotificationConfig(ctx, &a2apb.TaskPushNotificationConfig{TaskId: id, Id: "g", Url: url}); err != nil || got.GetUrl() != url {
			t.Fatalf("create: %v %v", got, err)
		}
		if got, err := c.GetTaskPushNotificationConfig(ctx, &a2apb.GetTaskPushNotificationConfigRequest{TaskId: id, Id: "g"}); err != nil || got.GetUrl() != url {
			t.Errorf("get: %v %v", got, err)
		}
		if got, err := c.ListTaskPushNotificationConfigs(ctx, &a2apb.ListTaskPushNotificationConfigsRequest{TaskId: id}); err != nil || len(got.GetConfigs()) != 1 {
			t.Errorf("list: %v %v", got, err)
		}
		if _, err := c.DeleteTaskPushNotificationConfig(ctx, &a2apb.DeleteTaskPushNotificationConfigRequest{TaskId: id, Id: "g"}); err != nil {
			t.Errorf("delete: %v", err)
		}
	})

	if r := a.call("1.0", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"ListTaskPushNotificationConfigs","params":{"taskId":%q}}`, id)); r.Error != nil || strings.Contains(string(r.Result), `"url"`) {
		t.Errorf("configs left on the task: %+v %s", r.Error, r.Result)
	}
	// Nothing was sent for the ended task: the first notification the
	// receiver gets is a new task's.
	if r := a.call("1.0", withConfig(hook.URL+"/after")); r.Error != nil {
		t.Fatal(r.Error.Message)
	}
	if n := hook.Next(t); n.Path != "/after" {
		t.Errorf("the receiver got %s %.80s first, want the new task's notification", n.Path, n.Body)
	}
}

// TestIntegrationRESTProto03: below /v1/, the HTTP+JSON binding of the 0.3
// specification, through Caddy, with requests in the form of the kit's
// 0.3 tests (proto field names, no A2A-Version, Content-Type on every
// request): a message sent and streamed, a task read and canceled, errors
// as the 0.3 SDKs write them.
func TestIntegrationRESTProto03(t *testing.T) {
	a := startSignedAgent(t)
	a.loadAllBindings("")
	// The kit sends Content-Type on every request, with a body or not.
	kit := func(method, path, body string) (int, string) {
		t.Helper()
		return a.rest(method, "/rest"+path, "", body, "Content-Type", "application/json", "Accept", "application/json")
	}
	send := func(skill, data string) string {
		return fmt.Sprintf(`{"message":{"message_id":%q,"role":"ROLE_USER","content":[{"data":{"data":%s}}],"metadata":{"skill":%q}}}`,
			newMessageID(), data, skill)
	}

	status, body := kit("POST", "/v1/message:send", send("weather", `{"city":"Paris"}`))
	answerHolds(t, "send", status, body, http.StatusOK, `{"task":{"id":"`, `"state":"TASK_STATE_COMPLETED"`, `"content":[{"data":{"data":{"city":"Paris"}}}]`)
	var sent struct{ Task struct{ ID string } }
	if err := json.Unmarshal([]byte(body), &sent); err != nil || sent.Task.ID == "" {
		t.Fatalf("send: %v %s", err, body)
	}
	status, body = kit("GET", "/v1/tasks/"+sent.Task.ID+"?history_length=1", "")
	answerHolds(t, "get", status, body, http.StatusOK, `"id":"`+sent.Task.ID+`"`, `"history":[{"messageId"`, `"role":"ROLE_AGENT","content":[{"text":`)
	status, body = kit("POST", "/v1/tasks/"+sent.Task.ID+":cancel", "")
	answerHolds(t, "cancel a completed task", status, body, http.StatusConflict, `"code":-32002`, `"error":"io.a2a.spec.TaskNotCancelableError"`)
	status, body = kit("GET", "/v1/tasks/nope", "")
	answerHolds(t, "an unknown task", status, body, http.StatusNotFound, `"code":-32001`, `"error":"io.a2a.spec.TaskNotFoundError"`)

	status, body = kit("POST", "/v1/message:stream", send("count", `{"to":2}`))
	var events []string
	if err := readSSE(strings.NewReader(body), func(data []byte) bool { events = append(events, string(data)); return true }); err != nil || status != http.StatusOK {
		t.Fatalf("stream: %d %v %s", status, err, body)
	}
	if len(events) < 3 || !strings.HasPrefix(events[0], `{"task":`) || !strings.Contains(events[len(events)-1], `"state":"TASK_STATE_COMPLETED"`) ||
		!strings.Contains(events[len(events)-1], `"final":true`) || !strings.Contains(body, `{"artifactUpdate":`) || !strings.Contains(body, `{"data":{"data":{"n":2}}}`) {
		t.Errorf("stream: %q", events)
	}
}
