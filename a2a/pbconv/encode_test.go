package pbconv_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
	"github.com/caddy-a2a/caddy-a2a/a2a/pbconv"
)

// viaJSON is the answer as the 1.0 JSON codec writes it, read back as
// ProtoJSON into out: what the field-by-field conversion must equal.
func viaJSON(t *testing.T, out proto.Message, result any) proto.Message {
	t.Helper()
	doc, err := a2a.AppendResult(nil, a2a.V10, nil, result)
	if err != nil {
		t.Fatal(err)
	}
	prefix := []byte(`{"jsonrpc":"2.0","id":null,"result":`)
	if !bytes.HasPrefix(doc, prefix) {
		t.Fatalf("envelope: %s", doc)
	}
	if err := pbconv.DecodeJSON(out, doc[len(prefix):len(doc)-1]); err != nil {
		t.Fatalf("%v: %s", err, doc)
	}
	return out
}

// onWire is m as a client reads it: marshaled and unmarshaled, so that
// data written straight in wire form (rawValue) compares by its fields.
func onWire(t *testing.T, m proto.Message) proto.Message {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out := m.ProtoReflect().Type().New().Interface()
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func sampleMessage(role a2a.Role) *a2a.Message {
	return &a2a.Message{MessageID: "m1", ContextID: "c1", TaskID: "t1", Role: role,
		Extensions: []string{"https://ext/v1"}, ReferenceTaskIDs: []string{"t0"},
		Metadata: map[string]any{"skill": "weather", "n": 3.5, "deep": map[string]any{"list": []any{1.0, "x", true, nil}}},
		Parts: []a2a.Part{
			a2a.TextPart("hello"),
			{Kind: a2a.PartRaw, Raw: []byte{0, 1, 2, 250}, Filename: "a.bin", MediaType: "application/octet-stream"},
			{Kind: a2a.PartURL, URL: "https://example.com/f.pdf", MediaType: "application/pdf"},
			{Kind: a2a.PartData, Data: map[string]any{"city": "Paris", "temp": int64(17), "n": json.Number("2.5")},
				Metadata: map[string]any{"k": "v"}},
			{Kind: a2a.PartData, Data: json.RawMessage(`{"raw":[1,2,{"x":null}]}`)},
			{Kind: a2a.PartData, Data: []any{"a", 1.0}},
		}}
}

func sampleTask() *a2a.Task {
	return &a2a.Task{ID: "t1", ContextID: "c1",
		Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: sampleMessage(a2a.RoleAgent),
			Timestamp: time.Date(2026, 11, 24, 1, 2, 3, 456789123, time.UTC)},
		Artifacts: []a2a.Artifact{{ArtifactID: "a1", Name: "weather", Description: "d", Extensions: []string{"e"},
			Parts: sampleMessage(a2a.RoleAgent).Parts, Metadata: map[string]any{}}},
		History:  []a2a.Message{*sampleMessage(a2a.RoleUser), *sampleMessage(a2a.RoleAgent)},
		Metadata: map[string]any{"skill": "weather"}}
}

// TestAnswers holds the field-by-field conversion of answers to what the
// JSON codec writes, for every kind of answer.
func TestAnswers(t *testing.T) {
	task := sampleTask()
	events := map[string]*a2a.StreamResponse{
		"task":    {Task: task},
		"message": {Message: sampleMessage(a2a.RoleAgent)},
		"status": {StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t1", ContextID: "c1", Final: true,
			Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}, Metadata: map[string]any{"x": "y"}}},
		"artifact": {ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "t1", ContextID: "c1", Append: true, LastChunk: true,
			Artifact: task.Artifacts[0]}},
	}
	for name, ev := range events {
		got, err := pbconv.StreamResponse(ev)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := viaJSON(t, new(a2apb.StreamResponse), ev); !proto.Equal(onWire(t, got), want) {
			t.Errorf("%s event:\n got %v\nwant %v", name, got, want)
		}
		if ev.Task == nil && ev.Message == nil {
			continue
		}
		sent, err := pbconv.SendMessageResponse(ev)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := viaJSON(t, new(a2apb.SendMessageResponse), ev); !proto.Equal(onWire(t, sent), want) {
			t.Errorf("%s answer:\n got %v\nwant %v", name, sent, want)
		}
	}

	list := &a2a.ListTasksResponse{Tasks: []a2a.Task{*task, {ID: "t2", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}},
		NextPageToken: "next", PageSize: 2, TotalSize: 7}
	gotList, err := pbconv.ListTasksResponse(list)
	if err != nil {
		t.Fatal(err)
	}
	if want := viaJSON(t, new(a2apb.ListTasksResponse), list); !proto.Equal(onWire(t, gotList), want) {
		t.Errorf("list:\n got %v\nwant %v", gotList, want)
	}

	cfg := &a2a.TaskPushNotificationConfig{ID: "p1", TaskID: "t1", URL: "https://hooks.example.com/a", Token: "tok",
		Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: "secret"}}
	if got, want := pbconv.PushConfig(cfg), viaJSON(t, new(a2apb.TaskPushNotificationConfig), cfg); !proto.Equal(got, want) {
		t.Errorf("push config:\n got %v\nwant %v", got, want)
	}
	configs := &a2a.ListTaskPushNotificationConfigsResponse{Configs: []a2a.TaskPushNotificationConfig{*cfg}}
	if got, want := pbconv.PushConfigs(configs), viaJSON(t, new(a2apb.ListTaskPushNotificationConfigsResponse), configs); !proto.Equal(got, want) {
		t.Errorf("push configs:\n got %v\nwant %v", got, want)
	}
}
