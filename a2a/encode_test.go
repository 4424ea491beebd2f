package a2a_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// completedTask is a typical answer: a completed task with one data
// artifact and the user's message in its history.
func completedTask() *a2a.Task {
	return &a2a.Task{
		ID:        "task-1",
		ContextID: "ctx-1",
		Status: a2a.TaskStatus{
			State:     a2a.TaskStateCompleted,
			Timestamp: time.Date(2025, 10, 28, 10, 30, 0, 123456789, time.FixedZone("CET", 3600)),
		},
		Artifacts: []a2a.Artifact{{
			ArtifactID: "art-1",
			Name:       "weather",
			Parts: []a2a.Part{{
				Kind:      a2a.PartData,
				Data:      map[string]any{"city": "Paris", "tempC": 21.5, "sunny": true},
				MediaType: "application/json",
			}},
		}},
		History: []a2a.Message{{
			MessageID: "m-1", ContextID: "ctx-1", TaskID: "task-1", Role: a2a.RoleUser,
			Parts: []a2a.Part{a2a.TextPart("weather in Paris?")},
		}},
	}
}

const (
	completedTask10 = `{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2025-10-28T09:30:00.123Z"},` +
		`"artifacts":[{"artifactId":"art-1","name":"weather","parts":[{"data":{"city":"Paris","sunny":true,"tempC":21.5},"mediaType":"application/json"}]}],` +
		`"history":[{"messageId":"m-1","contextId":"ctx-1","taskId":"task-1","role":"ROLE_USER","parts":[{"text":"weather in Paris?"}]}]}`
	completedTask03 = `{"id":"task-1","contextId":"ctx-1","status":{"state":"completed","timestamp":"2025-10-28T09:30:00.123Z"},` +
		`"artifacts":[{"artifactId":"art-1","name":"weather","parts":[{"kind":"data","data":{"city":"Paris","sunny":true,"tempC":21.5}}]}],` +
		`"history":[{"messageId":"m-1","contextId":"ctx-1","taskId":"task-1","role":"user","parts":[{"kind":"text","text":"weather in Paris?"}],"kind":"message"}],"kind":"task"}`
)

func TestAppendResult(t *testing.T) {
	ts := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	agentMsg := &a2a.Message{MessageID: "m-2", ContextID: "c", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("done")}}
	tests := []struct {
		name     string
		result   any
		want10   string
		want03   string
		idPrefix string
	}{
		{
			name:   "SendMessage answer: task",
			result: &a2a.StreamResponse{Task: completedTask()},
			want10: `{"task":` + completedTask10 + `}`,
			want03: completedTask03,
		},
		{
			name:   "GetTask answer",
			result: completedTask(),
			want10: completedTask10,
			want03: completedTask03,
		},
		{
			name:   "message",
			result: &a2a.StreamResponse{Message: agentMsg},
			want10: `{"message":{"messageId":"m-2","contextId":"c","role":"ROLE_AGENT","parts":[{"text":"done"}]}}`,
			want03: `{"messageId":"m-2","contextId":"c","role":"agent","parts":[{"kind":"text","text":"done"}],"kind":"message"}`,
		},
		{
			name: "status update",
			result: &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t", ContextID: "c",
				Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Message: agentMsg, Timestamp: ts}}},
			want10: `{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"m-2","contextId":"c","role":"ROLE_AGENT","parts":[{"text":"done"}]},"timestamp":"2025-01-02T03:04:05.000Z"}}}`,
			want03: `{"taskId":"t","contextId":"c","status":{"state":"working","message":{"messageId":"m-2","contextId":"c","role":"agent","parts":[{"kind":"text","text":"done"}],"kind":"message"},"timestamp":"2025-01-02T03:04:05.000Z"},"final":false,"kind":"status-update"}`,
		},
		{
			name: "final status update with metadata",
			result: &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t", ContextID: "c",
				Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired}, Final: true, Metadata: map[string]any{}}},
			want10: `{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_INPUT_REQUIRED"},"metadata":{}}}`,
			want03: `{"taskId":"t","contextId":"c","status":{"state":"input-required"},"final":true,"metadata":{},"kind":"status-update"}`,
		},
		{
			name: "artifact update",
			result: &a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "t", ContextID: "c", Append: true, LastChunk: true,
				Artifact: a2a.Artifact{ArtifactID: "a", Description: "d", Parts: []a2a.Part{
					{Kind: a2a.PartRaw, Raw: []byte{0xff, 0xfe, 0x00}, MediaType: "image/png", Filename: "x.png"},
					{Kind: a2a.PartURL, URL: "https://x/y.pdf", Metadata: map[string]any{"b": 2, "a": []any{"1"}}},
					{Kind: a2a.PartText, Text: "t", MediaType: "text/markdown"},
				}, Extensions: []string{"https://ext"}}}},
			want10: `{"artifactUpdate":{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","description":"d","parts":[` +
				`{"raw":"//4A","filename":"x.png","mediaType":"image/png"},` +
				`{"url":"https://x/y.pdf","metadata":{"a":["1"],"b":2}},` +
				`{"text":"t","mediaType":"text/markdown"}],"extensions":["https://ext"]},"append":true,"lastChunk":true}}`,
			want03: `{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","description":"d","parts":[` +
				`{"kind":"file","file":{"bytes":"//4A","mimeType":"image/png","name":"x.png"}},` +
				`{"kind":"file","file":{"uri":"https://x/y.pdf"},"metadata":{"a":["1"],"b":2}},` +
				`{"kind":"text","text":"t"}],"extensions":["https://ext"]},"append":true,"lastChunk":true,"kind":"artifact-update"}`,
		},
		{
			name: "data parts: raw JSON, and non-objects in 0.3",
			result: &a2a.StreamResponse{Message: &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{
				{Kind: a2a.PartData, Data: json.RawMessage("{\n  \"a\": [1, 2]\n}")},
				{Kind: a2a.PartData, Data: json.RawMessage(`{"b":true}`)},
				{Kind: a2a.PartData, Data: []any{1, "x"}, Metadata: map[string]any{"k": "v"}},
				{Kind: a2a.PartData},
			}, Extensions: []string{"e"}, ReferenceTaskIDs: []string{"t0"}}},
			want10: `{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"data":{"a":[1,2]}},{"data":{"b":true}},{"data":[1,"x"],"metadata":{"k":"v"}},{"data":null}],` +
				`"extensions":["e"],"referenceTaskIds":["t0"]}}`,
			want03: `{"messageId":"m","role":"agent","parts":[{"kind":"data","data":{"a":[1,2]}},{"kind":"data","data":{"b":true}},` +
				`{"kind":"data","data":{"value":[1,"x"]},"metadata":{"data_part_compat":true,"k":"v"}},` +
				`{"kind":"data","data":{"value":null},"metadata":{"data_part_compat":true}}],"extensions":["e"],"referenceTaskIds":["t0"],"kind":"message"}`,
		},
		{
			name:   "already-encoded result",
			result: json.RawMessage(`{"name":"card"}`),
			want10: `{"name":"card"}`,
			want03: `{"name":"card"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []struct {
				v    a2a.Version
				want string
			}{{a2a.V10, tt.want10}, {a2a.V03, tt.want03}} {
				prefix := []byte("data: ")
				got, err := a2a.AppendResult(prefix, c.v, json.RawMessage(`"id-1"`), tt.result)
				if err != nil {
					t.Fatalf("%s: %v", c.v, err)
				}
				want := `data: {"jsonrpc":"2.0","id":"id-1","result":` + c.want + `}`
				if string(got) != want {
					t.Errorf("%s\ngot  %s\nwant %s", c.v, got, want)
				}
			}
		})
	}
}

func TestAppendResultListTasks(t *testing.T) {
	r := &a2a.ListTasksResponse{Tasks: []a2a.Task{{ID: "t", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}}, PageSize: 10, TotalSize: 1}
	got, err := a2a.AppendResult(nil, a2a.V10, nil, r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","id":null,"result":{"tasks":[{"id":"t","status":{"state":"TASK_STATE_SUBMITTED"}}],"nextPageToken":"","pageSize":10,"totalSize":1}}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	got, err = a2a.AppendResult(nil, a2a.V10, nil, &a2a.ListTasksResponse{})
	if err != nil || !strings.Contains(string(got), `"tasks":[]`) {
		t.Errorf("empty list: %s %v", got, err)
	}
	if _, err := a2a.AppendResult(nil, a2a.V03, nil, r); err == nil {
		t.Error("0.3 has no ListTasks, but a result was written")
	}
}

func TestAppendResultErrors(t *testing.T) {
	msg := func(p a2a.Part) *a2a.StreamResponse {
		return &a2a.StreamResponse{Message: &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{p}}}
	}
	tests := []struct {
		name   string
		v      a2a.Version
		result any
	}{
		{"nil task", a2a.V10, (*a2a.Task)(nil)},
		{"nil stream response", a2a.V10, (*a2a.StreamResponse)(nil)},
		{"empty stream response", a2a.V03, &a2a.StreamResponse{}},
		{"unsupported type", a2a.V10, "a string"},
		{"part without kind", a2a.V10, msg(a2a.Part{Text: "x"})},
		{"part without kind 0.3", a2a.V03, msg(a2a.Part{Text: "x"})},
		{"NaN in data", a2a.V10, msg(a2a.Part{Kind: a2a.PartData, Data: map[string]any{"x": math.NaN()}})},
		{"NaN in metadata", a2a.V03, msg(a2a.Part{Kind: a2a.PartText, Metadata: map[string]any{"x": math.Inf(1)}})},
		{"bad raw JSON", a2a.V10, msg(a2a.Part{Kind: a2a.PartData, Data: json.RawMessage("{\n")})},
		{"unmarshalable data", a2a.V10, msg(a2a.Part{Kind: a2a.PartData, Data: make(chan int)})},
		{"no 0.3 role", a2a.V03, &a2a.StreamResponse{Message: &a2a.Message{MessageID: "m", Parts: []a2a.Part{a2a.TextPart("x")}}}},
		{"unknown state", a2a.V10, &a2a.Task{ID: "t", Status: a2a.TaskStatus{State: 42}}},
		{"bad card", a2a.V10, &a2a.AgentCard{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := a2a.AppendResult([]byte("keep"), tt.v, json.RawMessage("1"), tt.result)
			if err == nil {
				t.Fatalf("no error; wrote %s", got)
			}
			if string(got) != "keep" {
				t.Errorf("dst changed to %s", got)
			}
		})
	}
}

func TestStringEscaping(t *testing.T) {
	text := "quote\" back\\ nl\n cr\r tab\t nul\x00 esc\x1b <html> & é 世界 \u2028\u2029 bad\xff end"
	got, err := a2a.MarshalMessage(a2a.V10, &a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(text)}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messageId":"m","role":"ROLE_USER","parts":[{"text":"quote\" back\\ nl\n cr\r tab\t nul\u0000 esc\u001b <html> & é 世界 \u2028\u2029 bad\ufffd end"}]}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	m, err := a2a.UnmarshalMessage(a2a.V10, got)
	if err != nil {
		t.Fatal(err)
	}
	if wantText := strings.ToValidUTF8(text, "\uFFFD"); m.Parts[0].Text != wantText {
		t.Errorf("decoded %q, want %q", m.Parts[0].Text, wantText)
	}
}

func TestNumbers(t *testing.T) {
	data := map[string]any{"a": 1e21, "b": 1e-7, "c": 123456789.0, "d": -0.5, "e": float32(0.1), "f": int64(-3), "g": uint64(7), "h": json.Number("12.50"), "i": int32(4)}
	got, err := a2a.MarshalMessage(a2a.V10, &a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.DataPart(data)}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"a":1e+21,"b":1e-7,"c":123456789,"d":-0.5,"e":0.1,"f":-3,"g":7,"h":12.50,"i":4}}]}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	std, _ := json.Marshal(data)
	if !bytes.Contains(got, std) {
		t.Errorf("differs from encoding/json: %s", std)
	}
}

func TestAppendError(t *testing.T) {
	notFound := a2a.TaskNotFound("nonexistent-task-id")
	notFound.Metadata["timestamp"] = "2025-11-09T10:30:00.000Z"
	tests := []struct {
		name   string
		err    *a2a.Error
		id     string
		want10 string
		want03 string
	}{
		{
			name:   "invalid params",
			err:    a2a.InvalidParams("params.message.parts", "at least one part is required"),
			id:     "1",
			want10: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid parameters","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"INVALID_PARAMS","domain":"a2a-protocol.org"},{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"params.message.parts","description":"at least one part is required"}]}]}}`,
			want03: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid parameters: params.message.parts: at least one part is required"}}`,
		},
		{
			name:   "task not found",
			err:    notFound,
			id:     `"2"`,
			want10: `{"jsonrpc":"2.0","id":"2","error":{"code":-32001,"message":"Task not found","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{"taskId":"nonexistent-task-id","timestamp":"2025-11-09T10:30:00.000Z"}}]}}`,
			want03: `{"jsonrpc":"2.0","id":"2","error":{"code":-32001,"message":"Task not found: taskId=nonexistent-task-id, timestamp=2025-11-09T10:30:00.000Z"}}`,
		},
		{
			name:   "parse error answers with a null id",
			err:    a2a.ParseError("unexpected end of JSON input"),
			id:     "3",
			want10: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Invalid JSON payload: unexpected end of JSON input","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"PARSE_ERROR","domain":"a2a-protocol.org"}]}}`,
			want03: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Invalid JSON payload: unexpected end of JSON input"}}`,
		},
		{
			name:   "detail in the message",
			err:    a2a.UnsupportedOperation(`task is in terminal state "completed"`),
			want10: `{"jsonrpc":"2.0","id":null,"error":{"code":-32004,"message":"This operation is not supported: task is in terminal state \"completed\"","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"UNSUPPORTED_OPERATION","domain":"a2a-protocol.org"}]}}`,
			want03: `{"jsonrpc":"2.0","id":null,"error":{"code":-32004,"message":"This operation is not supported: task is in terminal state \"completed\""}}`,
		},
		{
			name:   "bare error",
			err:    &a2a.Error{Code: -32050, Message: "custom"},
			id:     "4",
			want10: `{"jsonrpc":"2.0","id":4,"error":{"code":-32050,"message":"custom"}}`,
			want03: `{"jsonrpc":"2.0","id":4,"error":{"code":-32050,"message":"custom"}}`,
		},
		{
			name:   "nil error",
			id:     "5",
			want10: `{"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"Internal error","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"INTERNAL","domain":"a2a-protocol.org"}]}}`,
			want03: `{"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"Internal error"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for v, want := range map[a2a.Version]string{a2a.V10: tt.want10, a2a.V03: tt.want03} {
				got := a2a.AppendError([]byte("x"), v, json.RawMessage(tt.id), tt.err)
				if string(got) != "x"+want {
					t.Errorf("%s\ngot  %s\nwant x%s", v, got, want)
				}
			}
		})
	}
}
