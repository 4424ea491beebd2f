package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/server"
)

// restAnswer is an HTTP+JSON answer, kept loose so tests see the wire.
type restAnswer struct {
	status      int
	contentType string
	allow       string
	body        map[string]any
	raw         string
}

// restError is the google.rpc.Status of an error answer, with the
// ErrorInfo reason and the BadRequest field it carries.
func (a restAnswer) restError() (code float64, status, reason, field string) {
	e, _ := a.body["error"].(map[string]any)
	code, _ = e["code"].(float64)
	status, _ = e["status"].(string)
	details, _ := e["details"].([]any)
	for _, d := range details {
		d, _ := d.(map[string]any)
		switch d["@type"] {
		case "type.googleapis.com/google.rpc.ErrorInfo":
			if d["domain"] == "a2a-protocol.org" {
				reason, _ = d["reason"].(string)
			}
		case "type.googleapis.com/google.rpc.BadRequest":
			v, _ := d["fieldViolations"].([]any)
			if len(v) > 0 {
				field, _ = v[0].(map[string]any)["field"].(string)
			}
		}
	}
	return code, status, reason, field
}

// rest sends one HTTP+JSON request with A2A-Version: 1.0; body "" sends
// none. headers (name, value pairs) are added or, with value "", removed.
func restRequest(a *agent, method, path, body string, headers ...string) restAnswer {
	a.T.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.URL+path, rd)
	if err != nil {
		a.T.Fatal(err)
	}
	req.Header.Set("A2A-Version", "1.0")
	if body != "" {
		req.Header.Set("Content-Type", "application/a2a+json")
	}
	setHeaders(req, headers)
	resp, err := a.HTTP.Do(req)
	if err != nil {
		a.T.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		a.T.Fatal(err)
	}
	ans := restAnswer{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"),
		allow: resp.Header.Get("Allow"), raw: string(raw)}
	if strings.HasPrefix(ans.contentType, "text/event-stream") {
		return ans
	}
	if err := json.Unmarshal(raw, &ans.body); err != nil {
		a.T.Fatalf("%s %s: HTTP %d, not JSON: %v: %s", method, path, resp.StatusCode, err, raw)
	}
	return ans
}

// setHeaders adds headers (name, value pairs) to req, or removes those
// whose value is "".
func setHeaders(req *http.Request, headers []string) {
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
}

// restStream opens an HTTP+JSON stream and returns its events as they
// come; headers are as rest's.
func restStream(a *agent, ctx context.Context, method, path, body string, headers ...string) (*http.Response, <-chan map[string]any) {
	a.T.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.URL+path, rd)
	if err != nil {
		a.T.Fatal(err)
	}
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("Content-Type", "application/a2a+json")
	req.Header.Set("Accept", "text/event-stream")
	setHeaders(req, headers)
	resp, err := a.HTTP.Do(req)
	if err != nil {
		a.T.Fatal(err)
	}
	return resp, sseEvents(ctx, resp)
}

func sendBody(t *testing.T, msg map[string]any, configuration map[string]any) string {
	t.Helper()
	p := map[string]any{"message": msg}
	if configuration != nil {
		p["configuration"] = configuration
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func newRESTAgent(t *testing.T, tune func(*server.Config)) *agent {
	return newAgent(t, func(c *server.Config) {
		c.Bindings = append(c.Bindings, server.HTTPJSON("/rest"))
		if tune != nil {
			tune(c)
		}
	})
}

// Every HTTP+JSON endpoint, and the HTTP status and google.rpc.Status of
// every kind of error it answers (spec 1.0 §5.4, §11.6).
func TestRESTEndpoints(t *testing.T) {
	a := newRESTAgent(t, nil)
	sent := restRequest(a, "POST", "/rest/message:send", sendBody(t, message("1.0", "weather", map[string]any{"city": "Paris"}), nil))
	task, _ := sent.body["task"].(map[string]any)
	if sent.status != 200 || sent.contentType != "application/a2a+json" || stateOf(task) != "TASK_STATE_COMPLETED" {
		t.Fatalf("send: %d %s %s", sent.status, sent.contentType, sent.raw)
	}
	id, contextID := task["id"].(string), task["contextId"].(string)
	const unknown = "00000000-0000-4000-8000-000000000000"

	for _, tc := range []struct {
		name, method, path, body string
		headers                  []string
		status                   int
		check                    func(restAnswer) bool
		reason, field            string
	}{
		{name: "get", method: "GET", path: "/rest/tasks/" + id, status: 200,
			check: func(a restAnswer) bool { return a.body["id"] == id && a.body["history"] != nil }},
		{name: "get historyLength=0", method: "GET", path: "/rest/tasks/" + id + "?historyLength=0", status: 200,
			check: func(a restAnswer) bool { return a.body["id"] == id && a.body["history"] == nil }},
		{name: "get, version as query parameter", method: "GET", path: "/rest/tasks/" + id + "?A2A-Version=1.0",
			headers: []string{"A2A-Version", ""}, status: 200},
		{name: "get, application/json", method: "GET", path: "/rest/tasks/" + id, headers: []string{"Accept", "application/json"},
			status: 200, check: func(a restAnswer) bool { return a.contentType == "application/json" }},
		{name: "get, application/a2a+json", method: "GET", path: "/rest/tasks/" + id, headers: []string{"Accept", "application/a2a+json, application/json"},
			status: 200, check: func(a restAnswer) bool { return a.contentType == "application/a2a+json" }},
		{name: "list by context", method: "GET", path: "/rest/tasks?contextId=" + contextID + "&pageSize=10&includeArtifacts=true", status: 200,
			check: func(a restAnswer) bool {
				tasks, _ := a.body["tasks"].([]any)
				return len(tasks) == 1 && tasks[0].(map[string]any)["artifacts"] != nil
			}},
		{name: "list by status", method: "GET", path: "/rest/tasks?status=TASK_STATE_WORKING", status: 200,
			check: func(a restAnswer) bool { tasks, _ := a.body["tasks"].([]any); return len(tasks) == 0 }},
		{name: "unknown task", method: "GET", path: "/rest/tasks/" + unknown, status: 404, reason: "TASK_NOT_FOUND"},
		{name: "cancel a completed task", method: "POST", path: "/rest/tasks/" + id + ":cancel", status: 400, reason: "TASK_NOT_CANCELABLE"},
		{name: "subscribe to a completed task", method: "GET", path: "/rest/tasks/" + id + ":subscribe", status: 400, reason: "UNSUPPORTED_OPERATION"},
		{name: "push not enabled", method: "GET", path: "/rest/tasks/" + id + "/pushNotificationConfigs", status: 400, reason: "PUSH_NOTIFICATION_NOT_SUPPORTED"},
		{name: "extended card not configured", method: "GET", path: "/rest/extendedAgentCard", status: 400, reason: "EXTENDED_AGENT_CARD_NOT_CONFIGURED"},
		{name: "no version is 0.3", method: "GET", path: "/rest/tasks/" + id, headers: []string{"A2A-Version", ""}, status: 200,
			check: func(a restAnswer) bool { return a.body["kind"] == "task" && stateOf(a.body) == "completed" }},
		{name: "ListTasks has no 0.3 form", method: "GET", path: "/rest/tasks", headers: []string{"A2A-Version", "0.3"}, status: 404, reason: "METHOD_NOT_FOUND"},
		{name: "unknown version", method: "GET", path: "/rest/tasks/" + id, headers: []string{"A2A-Version", "9.9"}, status: 400, reason: "VERSION_NOT_SUPPORTED"},
		{name: "bad historyLength", method: "GET", path: "/rest/tasks/" + id + "?historyLength=x", status: 400, reason: "INVALID_PARAMS", field: "historyLength"},
		{name: "bad status filter", method: "GET", path: "/rest/tasks?status=done", status: 400, reason: "INVALID_PARAMS", field: "status"},
		{name: "bad page size", method: "GET", path: "/rest/tasks?pageSize=1000", status: 400, reason: "INVALID_PARAMS", field: "pageSize"},
		{name: "no message", method: "POST", path: "/rest/message:send", body: `{}`, status: 400, reason: "INVALID_PARAMS", field: "message"},
		{name: "no parts", method: "POST", path: "/rest/message:send", body: `{"message":{"messageId":"m","role":"ROLE_USER"}}`,
			status: 400, reason: "INVALID_PARAMS", field: "message.parts"},
		{name: "a member twice", method: "POST", path: "/rest/message:send", body: `{"message":{},"message":{}}`, status: 400, reason: "INVALID_PARAMS"},
		{name: "not JSON", method: "POST", path: "/rest/message:send", body: `{`, status: 400, reason: "PARSE_ERROR"},
		{name: "not an object", method: "POST", path: "/rest/message:send", body: `[]`, status: 400, reason: "INVALID_REQUEST"},
		{name: "wrong content type", method: "POST", path: "/rest/message:send", body: `{}`, headers: []string{"Content-Type", "text/plain"},
			status: 415, reason: "INVALID_REQUEST"},
		{name: "too large", method: "POST", path: "/rest/message:send", body: `{"metadata":"` + strings.Repeat("x", 5<<20) + `"}`, status: 413, reason: "INVALID_REQUEST"},
		{name: "wrong HTTP method", method: "GET", path: "/rest/message:send", status: 405, reason: "INVALID_REQUEST",
			check: func(a restAnswer) bool { return a.allow == "POST" }},
		{name: "no such operation", method: "GET", path: "/rest/nothing", status: 404, reason: "METHOD_NOT_FOUND"},
		{name: "id in the body differs from the path", method: "POST", path: "/rest/tasks/" + id + ":cancel", body: `{"id":"other"}`,
			status: 400, reason: "INVALID_PARAMS", field: "id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := restRequest(a, tc.method, tc.path, tc.body, tc.headers...)
			if got.status != tc.status {
				t.Fatalf("HTTP %d, want %d: %s", got.status, tc.status, got.raw)
			}
			if tc.check != nil && !tc.check(got) {
				t.Errorf("unexpected answer: %s", got.raw)
			}
			if tc.status == 200 {
				return
			}
			code, _, reason, field := got.restError()
			if int(code) != tc.status || reason != tc.reason || field != tc.field {
				t.Errorf("error code %v reason %q field %q, want %d %q %q: %s", code, reason, field, tc.status, tc.reason, tc.field, got.raw)
			}
		})
	}

	// JSON-RPC is still served beside the binding.
	if ans := a.Call("1.0", "GetTask", map[string]any{"id": id}); ans.Error != nil || ans.Result["id"] != id {
		t.Errorf("JSON-RPC GetTask beside REST: %+v", ans)
	}
}

// In 0.3 the same paths take and answer the 0.3 objects, as a2a-go's
// a2av0 REST transport speaks them.
func TestREST03(t *testing.T) {
	a := newRESTAgent(t, nil)
	sent := restRequest(a, "POST", "/rest/message:send", sendBody(t, message("", "weather", map[string]any{"city": "Paris"}), nil),
		"A2A-Version", "0.3")
	if sent.status != 200 || sent.body["kind"] != "task" || stateOf(sent.body) != "completed" {
		t.Fatalf("send: %d %s", sent.status, sent.raw)
	}
	id := sent.body["id"].(string)
	if got := restRequest(a, "GET", "/rest/tasks/"+id, "", "A2A-Version", "0.3"); got.status != 200 || got.body["id"] != id {
		t.Errorf("get: %d %s", got.status, got.raw)
	}
	canceled := restRequest(a, "POST", "/rest/tasks/"+id+":cancel", "", "A2A-Version", "0.3")
	if _, _, reason, _ := canceled.restError(); canceled.status != 400 || reason != "TASK_NOT_CANCELABLE" {
		t.Errorf("cancel a completed task: %d %s", canceled.status, canceled.raw)
	}
	bad := restRequest(a, "POST", "/rest/message:send", sendBody(t, message("1.0", "weather", map[string]any{}), nil), "A2A-Version", "0.3")
	if _, _, reason, field := bad.restError(); bad.status != 400 || reason != "INVALID_PARAMS" || field != "message.role" {
		t.Errorf("a 1.0 message read as 0.3: %d %s", bad.status, bad.raw)
	}
}

// A task started by one binding is read, canceled and subscribed to by
// the other: one engine, one store.
func TestRESTCancelAndSubscribe(t *testing.T) {
	a := newRESTAgent(t, nil)
	sent := restRequest(a, "POST", "/rest/message:send", sendBody(t, message("1.0", "slow", map[string]any{"seconds": 30}),
		map[string]any{"returnImmediately": true}))
	task, _ := sent.body["task"].(map[string]any)
	if sent.status != 200 || stateOf(task) != "TASK_STATE_WORKING" {
		t.Fatalf("send: %s", sent.raw)
	}
	id := task["id"].(string)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, events := restStream(a, ctx, "POST", "/rest/tasks/"+id+":subscribe", "")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("subscribe: HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if first := <-events; first["task"] == nil {
		t.Fatalf("first event: %v", first)
	}

	if ans := a.Call("1.0", "GetTask", map[string]any{"id": id}); ans.Error != nil {
		t.Fatalf("JSON-RPC GetTask of a REST task: %+v", ans.Error)
	}
	canceled := restRequest(a, "POST", "/rest/tasks/"+id+":cancel", "", "Content-Type", "")
	if canceled.status != 200 || stateOf(canceled.body) != "TASK_STATE_CANCELED" {
		t.Fatalf("cancel: %d %s", canceled.status, canceled.raw)
	}
	var last map[string]any
	for ev := range events {
		last = ev
	}
	update, _ := last["statusUpdate"].(map[string]any)
	if stateOf(update) != "TASK_STATE_CANCELED" {
		t.Errorf("the stream's last event: %v", last)
	}
}

// A streamed message: the task, then its updates, as bare StreamResponse
// objects; an error found before the stream starts is an HTTP error.
func TestRESTStream(t *testing.T) {
	a := newRESTAgent(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, events := restStream(a, ctx, "POST", "/rest/message:stream", sendBody(t, message("1.0", "count", map[string]any{"to": 3}), nil))
	if resp.StatusCode != 200 {
		t.Fatalf("HTTP %d", resp.StatusCode)
	}
	var kinds []string
	var last map[string]any
	for ev := range events {
		for k := range ev {
			kinds = append(kinds, k)
		}
		last = ev
	}
	if len(kinds) < 3 || kinds[0] != "task" || stateOf(last["statusUpdate"].(map[string]any)) != "TASK_STATE_COMPLETED" {
		t.Errorf("events %v, last %v", kinds, last)
	}

	bad := restRequest(a, "POST", "/rest/message:stream", `{"message":{"messageId":"m","role":"ROLE_USER"}}`)
	if _, _, reason, _ := bad.restError(); bad.status != 400 || reason != "INVALID_PARAMS" {
		t.Errorf("a bad streaming request: %d %s", bad.status, bad.raw)
	}
}

// A missing argument asks for input; the follow-up on the same task,
// sent to the binding, completes it.
func TestRESTMultiTurn(t *testing.T) {
	a := newRESTAgent(t, nil)
	first := restRequest(a, "POST", "/rest/message:send", sendBody(t, userMessage("1.0", "weather", "", "", map[string]any{}), nil))
	task, _ := first.body["task"].(map[string]any)
	if stateOf(task) != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("first turn: %s", first.raw)
	}
	second := restRequest(a, "POST", "/rest/message:send", sendBody(t, userMessage("1.0", "", task["id"].(string), "", map[string]any{"city": "Paris"}), nil))
	if task, _ := second.body["task"].(map[string]any); stateOf(task) != "TASK_STATE_COMPLETED" {
		t.Fatalf("second turn: %s", second.raw)
	}
}

// Push configs over the binding: create, get, list, delete, each on the
// path the spec gives it.
func TestRESTPushConfigs(t *testing.T) {
	a := newRESTAgent(t, func(c *server.Config) { c.Push = urlPolicy{} })
	sent := restRequest(a, "POST", "/rest/message:send", sendBody(t, message("1.0", "slow", map[string]any{"seconds": 30}),
		map[string]any{"returnImmediately": true}))
	id := sent.body["task"].(map[string]any)["id"].(string)
	base := "/rest/tasks/" + id + "/pushNotificationConfigs"

	created := restRequest(a, "POST", base, `{"id":"c1","url":"https://hook.test/a","token":"t"}`)
	if created.status != 200 || created.body["id"] != "c1" || created.body["taskId"] != id {
		t.Fatalf("create: %d %s", created.status, created.raw)
	}
	if refused := restRequest(a, "POST", base, `{"url":"https://refused.test/"}`); refused.status != 400 {
		t.Errorf("a refused URL: %d %s", refused.status, refused.raw)
	}
	if got := restRequest(a, "GET", base+"/c1", ""); got.status != 200 || got.body["url"] != "https://hook.test/a" {
		t.Errorf("get: %d %s", got.status, got.raw)
	}
	if list := restRequest(a, "GET", base, ""); list.status != 200 || len(list.body["configs"].([]any)) != 1 {
		t.Errorf("list: %d %s", list.status, list.raw)
	}
	if del := restRequest(a, "DELETE", base+"/c1", ""); del.status != 200 || del.raw != "{}" {
		t.Errorf("delete: %d %s", del.status, del.raw)
	}
	if gone := restRequest(a, "GET", base+"/c1", ""); gone.status != 404 {
		t.Errorf("get after delete: %d %s", gone.status, gone.raw)
	}
	restRequest(a, "POST", "/rest/tasks/"+id+":cancel", "")
}

// At "/", the binding's operations share the root with JSON-RPC, which
// answers every other path.
func TestRESTAtRoot(t *testing.T) {
	a := newAgent(t, func(c *server.Config) { c.Bindings = []server.NewBinding{server.HTTPJSON("/")} })
	sent := restRequest(a, "POST", "/message:send", sendBody(t, message("1.0", "weather", map[string]any{"city": "Paris"}), nil))
	if sent.status != 200 || sent.body["task"] == nil {
		t.Fatalf("REST at /: %d %s", sent.status, sent.raw)
	}
	if ans := a.Call("1.0", "ListTasks", map[string]any{}); ans.Error != nil {
		t.Errorf("JSON-RPC at /: %+v", ans.Error)
	}
}

// The binding authenticates as JSON-RPC does: 401 with a challenge, 403
// for a skill the caller may not use, another caller's task answered as an
// unknown one, the extended card for authenticated callers.
func TestRESTAuthentication(t *testing.T) {
	a := newAuthAgent(t, nil, func(c *server.Config) { c.Bindings = []server.NewBinding{server.HTTPJSON("/rest")} })
	id := a.Task(aliceKey, "ask", map[string]any{})["id"].(string)

	anonymous := restRequest(a.Agent, "GET", "/rest/tasks/"+id, "")
	if _, status, reason, _ := anonymous.restError(); anonymous.status != 401 || status != "UNAUTHENTICATED" || reason == "" {
		t.Errorf("no credentials: %d %s", anonymous.status, anonymous.raw)
	}
	if mine := restRequest(a.Agent, "GET", "/rest/tasks/"+id, "", "X-API-Key", aliceKey); mine.status != 200 {
		t.Errorf("the owner: %d %s", mine.status, mine.raw)
	}
	if theirs := restRequest(a.Agent, "GET", "/rest/tasks/"+id, "", "X-API-Key", bobKey); theirs.status != 404 {
		t.Errorf("another caller: %d %s", theirs.status, theirs.raw)
	}
	admin := restRequest(a.Agent, "POST", "/rest/message:send", sendBody(t, message("1.0", "admin", map[string]any{}), nil), "X-API-Key", aliceKey)
	// UNAUTHORIZED: the reason the official Go SDK's REST client maps to
	// ErrUnauthorized (anything else it reads as an internal error).
	if _, status, reason, _ := admin.restError(); admin.status != 403 || status != "PERMISSION_DENIED" || reason != "UNAUTHORIZED" {
		t.Errorf("a skill beyond the caller's scopes: %d %s", admin.status, admin.raw)
	}
	a.NoUpstreamCall()
	if card := restRequest(a.Agent, "GET", "/rest/extendedAgentCard", "", "X-API-Key", bobKey); card.status != 200 || card.body["description"] != "the extended description" {
		t.Errorf("extended card: %d %s", card.status, card.raw)
	}
}

// kitHeaders are what the compatibility kit's 0.3 REST client sends with
// every request: no A2A-Version, and Content-Type application/json even
// without a body.
var kitHeaders = []string{"A2A-Version", "", "Content-Type", "application/json", "Accept", "application/json"}

// kitSend is a SendMessageRequest of the 0.3 proto, written as the kit
// writes it: proto field names, the parts in content, a data part's
// object under data.data.
func kitSend(skill string, data, configuration string) string {
	body := fmt.Sprintf(`{"message":{"message_id":%q,"role":"ROLE_USER","content":[{"data":{"data":%s}}],"metadata":{"skill":%q}}`,
		newMessageID(), data, skill)
	if configuration != "" {
		body += `,"configuration":` + configuration
	}
	return body + "}"
}

// proto03Error is the error of an answer in the 0.3 form.
func (a restAnswer) proto03Error() (code float64, kind string) {
	code, _ = a.body["code"].(float64)
	kind, _ = a.body["error"].(string)
	return code, kind
}

// Below /v1/, the HTTP+JSON binding as the 0.3 specification defines it,
// spoken as the compatibility kit speaks it: the 0.3 proto's ProtoJSON in
// and out, errors as {"code", "error", "message"} with the 0.3 SDKs'
// statuses.
func TestRESTProto03(t *testing.T) {
	a := newRESTAgent(t, func(c *server.Config) { c.Push = urlPolicy{} })
	sent := restRequest(a, "POST", "/rest/v1/message:send", kitSend("weather", `{"city":"Paris"}`, `{"accepted_output_modes":["application/json"]}`), kitHeaders...)
	task, _ := sent.body["task"].(map[string]any)
	if sent.status != 200 || sent.contentType != "application/json" || stateOf(task) != "TASK_STATE_COMPLETED" || task["kind"] != nil {
		t.Fatalf("send: %d %s %s", sent.status, sent.contentType, sent.raw)
	}
	if !strings.Contains(sent.raw, `"role":"ROLE_USER","content":[{"data":{"data":{"city":"Paris"}}}]`) {
		t.Errorf("the history's message is not in the 0.3 proto's form: %s", sent.raw)
	}
	id := task["id"].(string)
	const unknown = "00000000-0000-4000-8000-000000000000"
	configs := "/rest/v1/tasks/" + id + "/pushNotificationConfigs"

	for _, tc := range []struct {
		name, method, path, body string
		headers                  []string
		status                   int
		check                    func(restAnswer) bool
		code                     int
		kind                     string
	}{
		{name: "get, history_length", method: "GET", path: "/rest/v1/tasks/" + id + "?history_length=1", status: 200,
			check: func(a restAnswer) bool { h, _ := a.body["history"].([]any); return a.body["id"] == id && len(h) == 1 }},
		{name: "a push config on the ended task, as the kit creates it", method: "POST", path: configs,
			body: `{"parent":"tasks/` + id + `","config_id":"default","config":{"name":"tasks/` + id + `/pushNotificationConfigs/default",` +
				`"push_notification_config":{"id":"default","url":"https://hook.test/a","token":"","authentication":{}}}}`, status: 200,
			check: func(a restAnswer) bool {
				c, _ := a.body["pushNotificationConfig"].(map[string]any)
				return a.body["name"] == "tasks/"+id+"/pushNotificationConfigs/default" && c["url"] == "https://hook.test/a"
			}},
		{name: "get the config", method: "GET", path: configs + "/default", status: 200,
			check: func(a restAnswer) bool {
				c, _ := a.body["pushNotificationConfig"].(map[string]any)
				return c["id"] == "default"
			}},
		{name: "list the configs", method: "GET", path: configs, status: 200,
			check: func(a restAnswer) bool { c, _ := a.body["configs"].([]any); return len(c) == 1 }},
		{name: "delete the config", method: "DELETE", path: configs + "/default", status: 200, check: func(a restAnswer) bool { return a.raw == "{}" }},
		{name: "cancel a completed task", method: "POST", path: "/rest/v1/tasks/" + id + ":cancel", status: 409,
			code: -32002, kind: "io.a2a.spec.TaskNotCancelableError"},
		{name: "unknown task", method: "GET", path: "/rest/v1/tasks/" + unknown, status: 404, code: -32001, kind: "io.a2a.spec.TaskNotFoundError"},
		{name: "invalid params", method: "POST", path: "/rest/v1/message:send", body: `{"message":{"messageId":"m","role":"ROLE_USER"}}`,
			status: 422, code: -32602, kind: "io.a2a.spec.InvalidParamsError",
			check: func(a restAnswer) bool { return strings.Contains(a.body["message"].(string), "message.content") }},
		{name: "a 0.3 JSON-RPC message", method: "POST", path: "/rest/v1/message:send",
			body:   `{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}`,
			status: 422, code: -32602, kind: "io.a2a.spec.InvalidParamsError"},
		{name: "not JSON", method: "POST", path: "/rest/v1/message:send", body: `{`, status: 400, code: -32700, kind: "io.a2a.spec.JSONParseError"},
		{name: "extended card not configured", method: "GET", path: "/rest/v1/card", status: 404,
			code: -32007, kind: "io.a2a.spec.AuthenticatedExtendedCardNotConfiguredError"},
		{name: "ListTasks has no 0.3 form", method: "GET", path: "/rest/v1/tasks", status: 404, code: -32601, kind: "io.a2a.spec.MethodNotFoundError"},
		{name: "wrong HTTP method", method: "GET", path: "/rest/v1/message:send", status: 405, code: -32600, kind: "io.a2a.spec.InvalidRequestError",
			check: func(a restAnswer) bool { return a.allow == "POST" }},
		{name: "1.0 asked on a 0.3 path", method: "GET", path: "/rest/v1/tasks/" + id, headers: []string{"A2A-Version", "1.0"}, status: 404,
			code: -32601, kind: "io.a2a.spec.MethodNotFoundError",
			check: func(a restAnswer) bool {
				return strings.Contains(a.body["message"].(string), "the /v1/ paths are the HTTP+JSON binding of A2A 0.3")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := restRequest(a, tc.method, tc.path, tc.body, append(kitHeaders[:len(kitHeaders):len(kitHeaders)], tc.headers...)...)
			if got.status != tc.status || got.contentType != "application/json" {
				t.Fatalf("HTTP %d %s, want %d: %s", got.status, got.contentType, tc.status, got.raw)
			}
			if tc.check != nil && !tc.check(got) {
				t.Errorf("unexpected answer: %s", got.raw)
			}
			if tc.status == 200 {
				return
			}
			if code, kind := got.proto03Error(); int(code) != tc.code || kind != tc.kind {
				t.Errorf("error %v %q, want %d %q: %s", code, kind, tc.code, tc.kind, got.raw)
			}
		})
	}

	// The SDK's form on the 1.0 paths is served beside it.
	if got := restRequest(a, "GET", "/rest/tasks/"+id, "", "A2A-Version", ""); got.status != 200 || got.body["kind"] != "task" {
		t.Errorf("a2av0's form: %d %s", got.status, got.raw)
	}
}

// A stream below /v1/: StreamResponse objects of the 0.3 proto, the
// status updates with final; a subscriber of a running task sees it
// canceled, TASK_STATE_CANCELLED as the 0.3 proto spells it.
func TestRESTProto03Stream(t *testing.T) {
	a := newRESTAgent(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, events := restStream(a, ctx, "POST", "/rest/v1/message:stream", kitSend("count", `{"to":2}`, ""), kitHeaders...)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var kinds []string
	var last map[string]any
	for ev := range events {
		for k := range ev {
			kinds = append(kinds, k)
		}
		if u, ok := ev["artifactUpdate"].(map[string]any); ok {
			if parts := u["artifact"].(map[string]any)["parts"].([]any); parts[0].(map[string]any)["data"].(map[string]any)["data"] == nil {
				t.Errorf("a chunk not in the 0.3 proto's form: %v", u)
			}
		}
		last = ev
	}
	update, _ := last["statusUpdate"].(map[string]any)
	if len(kinds) < 3 || kinds[0] != "task" || stateOf(update) != "TASK_STATE_COMPLETED" || update["final"] != true {
		t.Errorf("events %v, last %v", kinds, last)
	}

	sent := restRequest(a, "POST", "/rest/v1/message:send", kitSend("slow", `{"seconds":30}`, `{"blocking":false}`), kitHeaders...)
	task, _ := sent.body["task"].(map[string]any)
	if stateOf(task) != "TASK_STATE_WORKING" {
		t.Fatalf("send: %d %s", sent.status, sent.raw)
	}
	id := task["id"].(string)
	_, events = restStream(a, ctx, "POST", "/rest/v1/tasks/"+id+":subscribe", "", kitHeaders...)
	if first := <-events; first["task"] == nil {
		t.Fatalf("first event: %v", first)
	}
	canceled := restRequest(a, "POST", "/rest/v1/tasks/"+id+":cancel", "", kitHeaders...)
	if canceled.status != 200 || stateOf(canceled.body) != "TASK_STATE_CANCELLED" {
		t.Fatalf("cancel: %d %s", canceled.status, canceled.raw)
	}
	for ev := range events {
		last = ev
	}
	if update, _ := last["statusUpdate"].(map[string]any); stateOf(update) != "TASK_STATE_CANCELLED" || update["final"] != true {
		t.Errorf("the stream's last event: %v", last)
	}
}
