package a2a_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// richTask uses only what both versions can carry.
func richTask() *a2a.Task {
	agent := a2a.Message{MessageID: "m-2", ContextID: "c", TaskID: "t", Role: a2a.RoleAgent,
		Parts: []a2a.Part{a2a.TextPart("which city?")}, Metadata: map[string]any{"step": 1.0}}
	return &a2a.Task{
		ID:        "t",
		ContextID: "c",
		Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: &agent,
			Timestamp: time.Date(2025, 1, 2, 3, 4, 5, 6_000_000, time.UTC)},
		Artifacts: []a2a.Artifact{{
			ArtifactID: "a", Name: "n", Description: "d", Extensions: []string{"e"}, Metadata: map[string]any{},
			Parts: []a2a.Part{
				{Kind: a2a.PartRaw, Raw: []byte("bytes"), MediaType: "application/octet-stream", Filename: "f.bin"},
				{Kind: a2a.PartURL, URL: "https://x/y", MediaType: "image/png"},
				{Kind: a2a.PartData, Data: map[string]any{"k": []any{"v", 2.0, nil}}},
				{Kind: a2a.PartData, Data: "a bare string", Metadata: map[string]any{"m": true}},
			},
		}},
		History: []a2a.Message{
			{MessageID: "m-1", ContextID: "c", TaskID: "t", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("weather")},
				Extensions: []string{"x"}, ReferenceTaskIDs: []string{"t0"}},
			agent,
		},
		Metadata: map[string]any{"owner": "me"},
	}
}

func TestTaskRoundTrip(t *testing.T) {
	for _, v := range []a2a.Version{a2a.V10, a2a.V03} {
		t.Run(v.String(), func(t *testing.T) {
			b, err := a2a.AppendTask(nil, v, richTask())
			if err != nil {
				t.Fatal(err)
			}
			got, err := a2a.UnmarshalTask(v, b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, richTask()) {
				t.Errorf("round trip through %s changed the task:\n%s\ngot %+v", v, b, got)
			}
		})
	}
}

func TestMessageRoundTrip(t *testing.T) {
	for _, v := range []a2a.Version{a2a.V10, a2a.V03} {
		t.Run(v.String(), func(t *testing.T) {
			want := richTask().History[0]
			b, err := a2a.MarshalMessage(v, &want)
			if err != nil {
				t.Fatal(err)
			}
			got, err := a2a.UnmarshalMessage(v, b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("got %+v from %s", got, b)
			}
		})
	}
}

// Results are read back as agents write them: REQUIRED members may miss.
func TestUnmarshalTaskLenient(t *testing.T) {
	got, err := a2a.UnmarshalTask(a2a.V10, []byte(`{"status":{"message":{"parts":[{"text":"x"}]}},"artifacts":[{"parts":[]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Message.Parts[0].Text != "x" || len(got.Artifacts) != 1 {
		t.Errorf("got %+v", got)
	}
}

func TestUnmarshalErrors(t *testing.T) {
	tests := []struct {
		name  string
		v     a2a.Version
		task  string
		field string // "" for a syntax error
	}{
		{"syntax", a2a.V10, `{"id":`, ""},
		{"unknown state", a2a.V10, `{"id":"t","status":{"state":"TASK_STATE_DONE"}}`, "status.state"},
		{"0.3 state in 1.0", a2a.V10, `{"id":"t","status":{"state":"completed"}}`, "status.state"},
		{"bad timestamp", a2a.V03, `{"id":"t","status":{"state":"completed","timestamp":"noon"}}`, "status.timestamp"},
		{"kind", a2a.V03, `{"id":"t","kind":"message","status":{"state":"completed"}}`, "kind"},
		{"history role", a2a.V03, `{"id":"t","status":{"state":"working"},"history":[{"role":"user","parts":[]},{"role":"bot","parts":[]}]}`, "history[1].role"},
		{"status message part", a2a.V10, `{"id":"t","status":{"state":"TASK_STATE_WORKING","message":{"parts":[{}]}}}`, "status.message.parts[0]"},
		{"artifact part type", a2a.V10, `{"id":"t","status":{},"artifacts":[{"parts":[{"text":"a"}]},{"parts":[{"text":["a"]}]}]}`, "artifacts[1].parts[0].text"},
		{"metadata", a2a.V03, `{"id":"t","metadata":"x"}`, "metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a2a.UnmarshalTask(tt.v, []byte(tt.task))
			if err == nil {
				t.Fatal("no error")
			}
			var e *a2a.Error
			if tt.field == "" {
				var se *json.SyntaxError
				if !errors.As(err, &se) {
					t.Errorf("got %v, want a syntax error", err)
				}
				return
			}
			if !errors.As(err, &e) || e.Field != tt.field {
				t.Errorf("got %v, want field %q", err, tt.field)
			}
		})
	}
	if _, err := a2a.UnmarshalMessage(a2a.V03, []byte(`{"role":"user","parts":[{"kind":"file","file":{"bytes":"%%"}}]}`)); err == nil {
		t.Error("bad base64 in a message: no error")
	}
	if _, err := a2a.AppendTask(nil, a2a.V10, nil); err == nil {
		t.Error("nil task: no error")
	}
	if _, err := a2a.MarshalMessage(a2a.V03, nil); err == nil {
		t.Error("nil message: no error")
	}
}
