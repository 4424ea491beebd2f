package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
	"github.com/caddy-a2a/caddy-a2a/server"
)

func TestSendMessageBlockingCompletesWithArtifact(t *testing.T) {
	a := newAgent(t, nil)
	for _, v := range versions {
		t.Run(versionName(v), func(t *testing.T) {
			ans := a.Call(v, methodName(v, a2a.MethodSendMessage),
				map[string]any{"message": message(v, "weather", map[string]any{"city": "Paris"})})
			if ans.Error != nil {
				t.Fatalf("error %d: %s", ans.Error.Code, ans.Error.Message)
			}
			task := taskOf(v, ans.Result)
			if got, want := stateOf(task), wireState(v, a2a.TaskStateCompleted); got != want {
				t.Fatalf("state = %q, want %q: %v", got, want, task)
			}
			if v == "" && task["kind"] != "task" {
				t.Errorf("0.3 task kind = %v, want task", task["kind"])
			}
			artifacts, _ := task["artifacts"].([]any)
			if len(artifacts) != 1 {
				t.Fatalf("artifacts = %v, want one", artifacts)
			}
			parts := artifacts[0].(map[string]any)["parts"].([]any)
			data, _ := parts[0].(map[string]any)["data"].(map[string]any)
			if data["city"] != "Paris" {
				t.Errorf("artifact data = %v, want the upstream's body for Paris", data)
			}
			if string(ans.ID) != "7" {
				t.Errorf("id = %s, want 7", ans.ID)
			}
		})
	}
}

func TestProtocolErrors(t *testing.T) {
	a := newAgent(t, func(c *server.Config) { c.MaxRequestBytes = 1 << 10 })
	tests := []struct {
		name        string
		version     string
		contentType string
		body        string
		wantHTTP    int
		wantCode    int
		wantID      string
	}{
		{"not JSON", "1.0", "", `{"jsonrpc":`, 200, a2a.CodeParseError, "null"},
		{"not a request", "1.0", "", `{"jsonrpc":"1.0","id":1,"method":"GetTask"}`, 200, a2a.CodeInvalidRequest, "1"},
		{"unknown method", "1.0", "", rpcBody("NoSuchMethod", map[string]any{}), 200, a2a.CodeMethodNotFound, "7"},
		{"1.0 name spoken as 0.3", "", "", rpcBody("GetTask", map[string]any{"id": "x"}), 200, a2a.CodeMethodNotFound, "7"},
		{"missing task id", "1.0", "", rpcBody("GetTask", map[string]any{}), 200, a2a.CodeInvalidParams, "7"},
		{"unknown task", "1.0", "", rpcBody("GetTask", map[string]any{"id": "nope"}), 200, a2a.CodeTaskNotFound, "7"},
		{"unknown task 0.3", "", "", rpcBody("tasks/get", map[string]any{"id": "nope"}), 200, a2a.CodeTaskNotFound, "7"},
		{"cancel unknown task", "1.0", "", rpcBody("CancelTask", map[string]any{"id": "nope"}), 200, a2a.CodeTaskNotFound, "7"},
		{"push config", "1.0", "", rpcBody("GetTaskPushNotificationConfig", map[string]any{"taskId": "t", "id": "c"}), 200, a2a.CodePushNotificationNotSupported, "7"},
		{"push config 0.3", "", "", rpcBody("tasks/pushNotificationConfig/get", map[string]any{"id": "t"}), 200, a2a.CodePushNotificationNotSupported, "7"},
		{"extended card", "1.0", "", rpcBody("GetExtendedAgentCard", nil), 200, a2a.CodeExtendedAgentCardNotConfigured, "7"},
		{"unsupported version", "9.9", "", rpcBody("GetTask", map[string]any{"id": "x"}), 200, a2a.CodeVersionNotSupported, "7"},
		{"agent role", "1.0", "", rpcBody("SendMessage", map[string]any{"message": map[string]any{
			"messageId": "m", "role": "ROLE_AGENT", "parts": []any{map[string]any{"text": "hi"}}}}), 200, a2a.CodeInvalidParams, "7"},
		{"no accepted output mode", "1.0", "", rpcBody("SendMessage", map[string]any{
			"message":       message("1.0", "weather", map[string]any{"city": "Paris"}),
			"configuration": map[string]any{"acceptedOutputModes": []string{"image/png"}}}), 200, a2a.CodeContentTypeNotSupported, "7"},
		{"no accepted output mode 0.3", "", "", rpcBody("message/send", map[string]any{
			"message":       message("", "weather", map[string]any{"city": "Paris"}),
			"configuration": map[string]any{"acceptedOutputModes": []string{"image/png"}}}), 200, a2a.CodeContentTypeNotSupported, "7"},
		{"push config in a message's configuration", "1.0", "", rpcBody("SendMessage", map[string]any{
			"message":       message("1.0", "weather", map[string]any{"city": "Paris"}),
			"configuration": map[string]any{"taskPushNotificationConfig": map[string]any{"url": "https://client.example/hook"}}}), 200, a2a.CodePushNotificationNotSupported, "7"},
		{"wrong content type", "1.0", "text/plain", rpcBody("GetTask", map[string]any{"id": "x"}), 415, a2a.CodeInvalidRequest, "null"},
		{"body too large", "1.0", "", rpcBody("GetTask", map[string]any{"id": strings.Repeat("x", 2<<10)}), 413, a2a.CodeInvalidRequest, "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, a.URL+"/", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			ct := tt.contentType
			if ct == "" {
				ct = "application/json; charset=utf-8"
			}
			req.Header.Set("Content-Type", ct)
			if tt.version != "" {
				req.Header.Set("A2A-Version", tt.version)
			}
			resp, err := a.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var ans rpcAnswer
			if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
				t.Fatalf("answer is not JSON-RPC: %v", err)
			}
			if resp.StatusCode != tt.wantHTTP {
				t.Errorf("HTTP status = %d, want %d", resp.StatusCode, tt.wantHTTP)
			}
			if ans.Error == nil {
				t.Fatalf("no error in the answer; result %v", ans.Result)
			}
			if ans.Error.Code != tt.wantCode {
				t.Errorf("code = %d (%s), want %d", ans.Error.Code, ans.Error.Message, tt.wantCode)
			}
			if string(ans.ID) != tt.wantID {
				t.Errorf("id = %s, want %s", ans.ID, tt.wantID)
			}
		})
	}
}

func TestVersionFromQueryParameter(t *testing.T) {
	a := newAgent(t, nil)
	req, err := http.NewRequest(http.MethodPost, a.URL+"/?A2A-Version=1.0", strings.NewReader(rpcBody("GetTask", map[string]any{"id": "x"})))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans rpcAnswer
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		t.Fatal(err)
	}
	if ans.Error == nil || ans.Error.Code != a2a.CodeTaskNotFound {
		t.Fatalf("GetTask spoken as 1.0 by query parameter: got %+v, want task not found", ans.Error)
	}
}

func TestGetIsNotAllowedOnTheEndpoint(t *testing.T) {
	a := newAgent(t, nil)
	resp, err := a.HTTP.Get(a.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodPost {
		t.Fatalf("GET / = %d (Allow %q), want 405 with Allow: POST", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

func TestCardServedOnWellKnownPaths(t *testing.T) {
	a := newAgent(t, nil)
	for _, path := range []string{server.CardPath, server.LegacyCardPath} {
		resp, err := a.HTTP.Get(a.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var card map[string]any
		err = json.NewDecoder(resp.Body).Decode(&card)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("ETag") == "" {
			t.Fatalf("GET %s = %d, ETag %q, err %v", path, resp.StatusCode, resp.Header.Get("ETag"), err)
		}
		if card["name"] != "Test Agent" {
			t.Errorf("card name = %v", card["name"])
		}
	}
}

func TestStreamingMessageEventsInOrder(t *testing.T) {
	a := newAgent(t, nil)
	for _, v := range versions {
		t.Run(versionName(v), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp, events := a.Stream(ctx, v, methodName(v, a2a.MethodSendStreamingMessage),
				map[string]any{"message": message(v, "weather", map[string]any{"city": "Tokyo"})})
			for header, want := range map[string]string{
				"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no",
			} {
				if got := resp.Header.Get(header); got != want {
					t.Errorf("%s = %q, want %q", header, got, want)
				}
			}
			var kinds []string
			var first, last map[string]any
			for ev := range events {
				result, _ := ev["result"].(map[string]any)
				kinds = append(kinds, eventKind(v, result))
				if first == nil {
					first = result
				}
				last = result
			}
			// The task starts working in the transaction that creates it.
			want := []string{"task", "artifact-update", "status-update"}
			if strings.Join(kinds, ",") != strings.Join(want, ",") {
				t.Fatalf("events = %v, want %v", kinds, want)
			}
			if v == "1.0" {
				first = first["task"].(map[string]any)
			}
			if got := stateOf(first); got != wireState(v, a2a.TaskStateWorking) {
				t.Errorf("first event's task state = %q, want working", got)
			}
			if v == "1.0" {
				last = last["statusUpdate"].(map[string]any)
			} else if last["final"] != true {
				t.Errorf("0.3 last status update has final = %v, want true", last["final"])
			}
			if got := stateOf(last); got != wireState(v, a2a.TaskStateCompleted) {
				t.Errorf("last state = %q, want completed", got)
			}
		})
	}
}

// eventKind names a stream event whatever the version's spelling.
func eventKind(version string, result map[string]any) string {
	if version != "1.0" {
		kind, _ := result["kind"].(string)
		return kind
	}
	for key, kind := range map[string]string{"task": "task", "message": "message", "statusUpdate": "status-update", "artifactUpdate": "artifact-update"} {
		if _, ok := result[key]; ok {
			return kind
		}
	}
	return "?"
}

func TestNonBlockingSendAnswersAtOnceThenCompletes(t *testing.T) {
	a := newAgent(t, nil)
	v := "1.0"
	ans := a.Call(v, "SendMessage", map[string]any{
		"message":       message(v, "slow", map[string]any{"seconds": 0.2}),
		"configuration": map[string]any{"returnImmediately": true},
	})
	task := taskOf(v, ans.Result)
	if state := stateOf(task); state != wireState(v, a2a.TaskStateSubmitted) && state != wireState(v, a2a.TaskStateWorking) {
		t.Fatalf("non-blocking answer state = %q, want submitted or working", state)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, events := a.Stream(ctx, v, "SubscribeToTask", map[string]any{"id": task["id"]})
	var last map[string]any
	for ev := range events {
		last, _ = ev["result"].(map[string]any)
	}
	if update, _ := last["statusUpdate"].(map[string]any); stateOf(update) != wireState(v, a2a.TaskStateCompleted) {
		t.Fatalf("last event = %v, want a completed status update", last)
	}
	got := a.Call(v, "GetTask", map[string]any{"id": task["id"]})
	if stateOf(got.Result) != wireState(v, a2a.TaskStateCompleted) {
		t.Fatalf("GetTask after the stream: %v", got.Result)
	}
}

func TestCancelReachesTheUpstream(t *testing.T) {
	a := newAgent(t, nil)
	for _, v := range versions {
		t.Run(versionName(v), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			before := a.API.Stats()
			config := map[string]any{"returnImmediately": true}
			if v == "" {
				config = map[string]any{"blocking": false}
			}
			ans := a.Call(v, methodName(v, a2a.MethodSendMessage), map[string]any{
				"message": message(v, "slow", map[string]any{"seconds": 30}), "configuration": config,
			})
			id := taskOf(v, ans.Result)["id"]
			if _, err := a.API.WaitStats(ctx, func(s demoapi.Stats) bool { return s.SlowStarted > before.SlowStarted }); err != nil {
				t.Fatalf("the upstream call never started: %v", err)
			}
			canceled := a.Call(v, methodName(v, a2a.MethodCancelTask), map[string]any{"id": id})
			if canceled.Error != nil || stateOf(canceled.Result) != wireState(v, a2a.TaskStateCanceled) {
				t.Fatalf("cancel answered %+v %v", canceled.Error, canceled.Result)
			}
			if _, err := a.API.WaitStats(ctx, func(s demoapi.Stats) bool { return s.SlowCanceled > before.SlowCanceled }); err != nil {
				t.Fatalf("the cancellation did not reach the upstream: %v", err)
			}
			again := a.Call(v, methodName(v, a2a.MethodCancelTask), map[string]any{"id": id})
			if again.Error == nil || again.Error.Code != a2a.CodeTaskNotCancelable {
				t.Fatalf("second cancel = %+v, want task not cancelable", again.Error)
			}
			// A streaming method answers even its errors as a stream: one
			// error event.
			resp, events := a.Stream(ctx, v, methodName(v, a2a.MethodSubscribeToTask), map[string]any{"id": id})
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("subscribe error Content-Type = %q, want text/event-stream", ct)
			}
			var codes []any
			for ev := range events {
				errObj, _ := ev["error"].(map[string]any)
				codes = append(codes, errObj["code"])
			}
			if len(codes) != 1 || codes[0] != float64(a2a.CodeUnsupportedOperation) {
				t.Fatalf("subscribe to a canceled task: error events %v, want one with code %d", codes, a2a.CodeUnsupportedOperation)
			}
		})
	}
}

func TestIdleStreamGetsHeartbeats(t *testing.T) {
	a := newAgent(t, func(c *server.Config) { c.HeartbeatInterval = 5 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL+"/",
		strings.NewReader(rpcBody("SendStreamingMessage", map[string]any{"message": message("1.0", "slow", map[string]any{"seconds": 30})})))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := a.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 4096)
	var seen strings.Builder
	for !strings.Contains(seen.String(), ": keep-alive\n\n") {
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatalf("stream ended before a heartbeat: %v; got %q", err, seen.String())
		}
		seen.Write(buf[:n])
	}
	// Cancel the task so the slow upstream call ends with the test.
	first, _, _ := strings.Cut(strings.TrimPrefix(seen.String(), "data: "), "\n")
	var ev struct {
		Result struct {
			Task struct {
				ID string `json:"id"`
			} `json:"task"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(first), &ev); err != nil || ev.Result.Task.ID == "" {
		t.Fatalf("first event %q is not the task: %v", first, err)
	}
	if ans := a.Call("1.0", "CancelTask", map[string]any{"id": ev.Result.Task.ID}); ans.Error != nil {
		t.Fatalf("cancel: %+v", ans.Error)
	}
}

func TestMessageSkillAnswersWithAMessage(t *testing.T) {
	a := newAgent(t, nil)
	for _, v := range versions {
		t.Run(versionName(v), func(t *testing.T) {
			ans := a.Call(v, methodName(v, a2a.MethodSendMessage), map[string]any{"message": message(v, "echo", map[string]any{"x": 1})})
			if ans.Error != nil {
				t.Fatalf("error %+v", ans.Error)
			}
			msg := ans.Result
			if v == "1.0" {
				msg, _ = ans.Result["message"].(map[string]any)
			} else if msg["kind"] != "message" {
				t.Fatalf("0.3 result kind = %v, want message", msg["kind"])
			}
			if msg == nil || msg["messageId"] == "" || msg["contextId"] == "" {
				t.Fatalf("result %v is not an agent message with ids", ans.Result)
			}
			if _, hasTask := msg["taskId"]; hasTask {
				t.Errorf("a message answer has a taskId: %v", msg)
			}
		})
	}
}

func TestNoSkillSelectedRejectsTheTaskListingSkills(t *testing.T) {
	a := newAgent(t, nil)
	ans := a.Call("1.0", "SendMessage", map[string]any{"message": map[string]any{
		"messageId": "m1", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hello"}},
	}})
	task := taskOf("1.0", ans.Result)
	if stateOf(task) != "TASK_STATE_REJECTED" {
		t.Fatalf("state = %q, want rejected", stateOf(task))
	}
	status := task["status"].(map[string]any)
	text, _ := json.Marshal(status["message"])
	for _, skill := range []string{"weather", "place_order", "slow"} {
		if !strings.Contains(string(text), skill) {
			t.Errorf("rejection message %s does not list skill %q", text, skill)
		}
	}
}

func TestGetAndListTasks(t *testing.T) {
	a := newAgent(t, nil)
	first := taskOf("1.0", a.Call("1.0", "SendMessage", map[string]any{"message": message("1.0", "weather", map[string]any{"city": "Paris"})}).Result)
	contextID := first["contextId"]
	follow := message("1.0", "weather", map[string]any{"city": "London"})
	follow["contextId"] = contextID
	second := taskOf("1.0", a.Call("1.0", "SendMessage", map[string]any{"message": follow}).Result)
	if second["contextId"] != contextID {
		t.Fatalf("second task context = %v, want %v", second["contextId"], contextID)
	}

	got := a.Call("1.0", "GetTask", map[string]any{"id": first["id"], "historyLength": 0}).Result
	if _, has := got["history"]; has {
		t.Errorf("historyLength 0 still returned history: %v", got["history"])
	}
	got = a.Call("1.0", "GetTask", map[string]any{"id": first["id"]}).Result
	if h, _ := got["history"].([]any); len(h) == 0 {
		t.Errorf("GetTask without historyLength returned no history")
	}

	list := a.Call("1.0", "ListTasks", map[string]any{"contextId": contextID, "pageSize": 1}).Result
	tasks, _ := list["tasks"].([]any)
	if len(tasks) != 1 || list["nextPageToken"] == "" || list["totalSize"] != float64(2) {
		t.Fatalf("first page = %v", list)
	}
	rest := a.Call("1.0", "ListTasks", map[string]any{"contextId": contextID, "pageSize": 1, "pageToken": list["nextPageToken"]}).Result
	if more, _ := rest["tasks"].([]any); len(more) != 1 || more[0].(map[string]any)["id"] == tasks[0].(map[string]any)["id"] {
		t.Fatalf("second page = %v", rest)
	}
}

// Every JSON-RPC error of a streaming method, also one found before the
// stream starts (an unsupported version, bad params), is one SSE event
// whose data is the JSON-RPC error response, as the spec says a streaming
// method answers ("an SSE stream where each event's data is a
// JSONRPCResponse"); the official SDKs read a streaming call's answer as
// SSE only.
func TestStreamingMethodErrorsComeAsOneEvent(t *testing.T) {
	a := newAgent(t, nil)
	tests := []struct {
		name, version, body string
		code                int
	}{
		{"unsupported version", "9.9", rpcBody("SendStreamingMessage", map[string]any{"message": message("1.0", "weather", nil)}), a2a.CodeVersionNotSupported},
		{"unsupported version 0.3 name", "9.9", rpcBody("message/stream", map[string]any{"message": message("", "weather", nil)}), a2a.CodeVersionNotSupported},
		{"invalid params", "1.0", rpcBody("SendStreamingMessage", map[string]any{}), a2a.CodeInvalidParams},
		{"1.0 method read as 0.3", "", rpcBody("SubscribeToTask", map[string]any{"id": "t"}), a2a.CodeMethodNotFound},
		{"unknown task", "1.0", rpcBody("SubscribeToTask", map[string]any{"id": "nope"}), a2a.CodeTaskNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := a.Post(tt.version, tt.body)
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("HTTP %d %s, want 200 text/event-stream: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			data, ok := strings.CutPrefix(strings.TrimSpace(string(body)), "data: ")
			if !ok || strings.Count(string(body), "data: ") != 1 {
				t.Fatalf("want one SSE event, got %q", body)
			}
			var answer rpcAnswer
			if err := json.Unmarshal([]byte(data), &answer); err != nil || answer.Error == nil || answer.Error.Code != tt.code || string(answer.ID) != "7" {
				t.Errorf("event %s (%v), want error %d for id 7", data, err, tt.code)
			}
		})
	}
}

// Protocol 1.0 is ProtoJSON, whose parsers take a proto field name
// (history_length) as well as its JSON name (historyLength); ListTasks
// answers the page size it used, not how many tasks it returned.
func TestProtoFieldNamesAndPageSize(t *testing.T) {
	a := newAgent(t, nil)
	first := taskOf("1.0", a.Call("1.0", "SendMessage", map[string]any{"message": message("1.0", "weather", map[string]any{"city": "Paris"})}).Result)
	follow := message("1.0", "weather", map[string]any{"city": "London"})
	follow["context_id"] = first["contextId"]
	second := taskOf("1.0", a.Call("1.0", "SendMessage", map[string]any{"message": follow}).Result)
	if second["contextId"] != first["contextId"] {
		t.Fatalf("context_id was not taken: second task in %v, want %v", second["contextId"], first["contextId"])
	}
	a.Call("1.0", "SendMessage", map[string]any{"message": message("1.0", "weather", map[string]any{"city": "Rome"})})

	got := a.Call("1.0", "GetTask", map[string]any{"id": first["id"], "history_length": 1}).Result
	if h, _ := got["history"].([]any); len(h) != 1 {
		t.Errorf("GetTask with history_length 1 returned %d messages", len(h))
	}
	list := a.Call("1.0", "ListTasks", map[string]any{"context_id": first["contextId"], "page_size": 10}).Result
	if tasks, _ := list["tasks"].([]any); len(tasks) != 2 || list["totalSize"] != float64(2) || list["pageSize"] != float64(10) {
		t.Errorf("ListTasks by context_id, page_size 10: %d tasks, totalSize %v, pageSize %v; want 2, 2, 10",
			len(tasks), list["totalSize"], list["pageSize"])
	}
	if list := a.Call("1.0", "ListTasks", nil).Result; list["pageSize"] != float64(50) {
		t.Errorf("ListTasks without pageSize answered pageSize %v, want the default 50", list["pageSize"])
	}
	answer := a.Call("1.0", "GetTask", map[string]any{"id": first["id"], "history_length": 1, "historyLength": 2})
	if answer.Error == nil || answer.Error.Code != a2a.CodeInvalidParams {
		t.Errorf("both spellings of one field: %+v, want -32602", answer.Error)
	}
}

// A client that hangs up frees its subscription at once, while its task
// runs on.
func TestDisconnectedStreamFreesItsSubscription(t *testing.T) {
	a := newAgent(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	streamCtx, hangUp := context.WithCancel(ctx)
	_, events := a.Stream(streamCtx, "1.0", "SendStreamingMessage",
		map[string]any{"message": message("1.0", "slow", map[string]any{"seconds": 30})})
	first := <-events
	task, _ := first["result"].(map[string]any)["task"].(map[string]any)
	if task == nil {
		t.Fatalf("first event %v is not the task", first)
	}
	if n := a.Tasks.OpenStreams(); n != 1 {
		t.Fatalf("open streams while the client listens = %d, want 1", n)
	}
	hangUp()
	for a.Tasks.OpenStreams() != 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("the subscription of a client that hung up is still open")
		case <-time.After(time.Millisecond):
		}
	}
	ans := a.Call("1.0", "GetTask", map[string]any{"id": task["id"]})
	if got := stateOf(ans.Result); got != "TASK_STATE_WORKING" {
		t.Errorf("task after its client hung up: %s, want still working", got)
	}
	if ans := a.Call("1.0", "CancelTask", map[string]any{"id": task["id"]}); ans.Error != nil {
		t.Fatalf("cancel: %+v", ans.Error)
	}
}
