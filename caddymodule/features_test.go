package caddymodule

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestIntegrationMappingFeatures runs each feature of the skills language
// through a real Caddy in front of the demo API, as examples/skills.yaml
// declares it, in protocol 1.0.
func TestIntegrationMappingFeatures(t *testing.T) {
	a := startAgent(t)
	notes := base64.StdEncoding.EncodeToString([]byte("meeting notes\n"))
	tests := []struct {
		name string
		// message is the 1.0 message's parts and metadata.
		parts    string
		metadata string
		config   string
		// followUp, when set, is sent on the same task after the first answer,
		// which must then be input-required.
		followUp string
		want     string // the final state, in 1.0 spelling
		contains []string
	}{
		{name: "selection by predicate", parts: `[{"text": "search caddy"}]`,
			want: "TASK_STATE_COMPLETED", contains: []string{`"results"`}},
		{name: "arguments from text", parts: `[{"text": "What's the weather in Paris?"}]`,
			want: "TASK_STATE_COMPLETED", contains: []string{`"city":"Paris"`}},
		{name: "multi-turn: a missing argument is asked for", parts: `[{"text": "How is the weather?"}]`,
			followUp: `[{"text": "Tokyo"}]`, want: "TASK_STATE_COMPLETED", contains: []string{`"city":"Tokyo"`}},
		{name: "422 asks for the refused fields", metadata: `{"skill": "place_order"}`,
			parts: `[{"data": {"item": "widget", "quantity": 0}}]`, followUp: `[{"data": {"quantity": 2}}]`,
			want: "TASK_STATE_COMPLETED", contains: []string{`"quantity":2`, `"status":"placed"`}},
		{name: "form body", metadata: `{"skill": "feedback"}`, parts: `[{"data": {"rating": 5, "comment": "Great"}}]`,
			want: "TASK_STATE_COMPLETED", contains: []string{`"rating"`}},
		{name: "multipart body with a file", metadata: `{"skill": "upload"}`,
			parts: fmt.Sprintf(`[{"raw": %q, "mediaType": "text/plain", "filename": "notes.txt"}, {"data": {"title": "Notes"}}]`, notes),
			want:  "TASK_STATE_COMPLETED", contains: []string{"notes.txt"}},
		{name: "several calls per skill", metadata: `{"skill": "order_for"}`, parts: `[{"data": {"user": 1, "item": "tea"}}]`,
			want: "TASK_STATE_COMPLETED", contains: []string{`"item":"tea"`, `"customer"`}},
		{name: "retry of an idempotent request", metadata: `{"skill": "flaky"}`, parts: `[{"data": {}}]`,
			want: "TASK_STATE_COMPLETED"},
		{name: "file download", metadata: `{"skill": "avatar"}`, parts: `[{"data": {"id": 1}}]`,
			want: "TASK_STATE_COMPLETED", contains: []string{`"raw"`, `"mediaType":"image/png"`}},
		{name: "a job polled until done", metadata: `{"skill": "report"}`, parts: `[{"data": {}}]`,
			want: "TASK_STATE_COMPLETED", contains: []string{`"text":"Report 0% done"`, `"text":"Report 50% done"`, `"orders"`}},
		{name: "a streamed answer, chunk by chunk", metadata: `{"skill": "count"}`, parts: `[{"data": {"to": 3}}]`,
			want: "TASK_STATE_COMPLETED", contains: []string{`"parts":[{"data":{"n":1}},{"data":{"n":2}},{"data":{"n":3}}]`}},
		{name: "upstream error detail where allowed", metadata: `{"skill": "fail"}`, parts: `[{"data": {}}]`,
			want: "TASK_STATE_FAILED", contains: []string{"boom"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			metadata := tt.metadata
			if metadata == "" {
				metadata = "{}"
			}
			first := a.call("1.0", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":
				{"messageId":"feature-%d","role":"ROLE_USER","metadata":%s,"parts":%s}}}`, i, metadata, tt.parts))
			if first.Error != nil {
				t.Fatalf("error %d: %s", first.Error.Code, first.Error.Message)
			}
			result := first.Result
			if tt.followUp != "" {
				tk := decodeTask10(t, result)
				if tk.Status.State != "TASK_STATE_INPUT_REQUIRED" {
					t.Fatalf("first answer state %s, want input-required: %s", tk.Status.State, result)
				}
				next := a.call("1.0", fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":
					{"messageId":"feature-%d-2","taskId":%q,"role":"ROLE_USER","parts":%s}}}`, i, tk.ID, tt.followUp))
				if next.Error != nil {
					t.Fatalf("follow-up error %d: %s", next.Error.Code, next.Error.Message)
				}
				result = next.Result
			}
			if tk := decodeTask10(t, result); tk.Status.State != tt.want {
				t.Fatalf("state %s, want %s: %s", tk.Status.State, tt.want, result)
			}
			compact := compactJSON(t, result)
			for _, want := range tt.contains {
				if !strings.Contains(compact, want) {
					t.Errorf("result lacks %s: %s", want, compact)
				}
			}
		})
	}

	t.Run("no accepted output mode", func(t *testing.T) {
		r := a.call("1.0", `{"jsonrpc":"2.0","id":3,"method":"SendMessage","params":{
			"message":{"messageId":"modes","role":"ROLE_USER","metadata":{"skill":"weather"},"parts":[{"data":{"city":"Paris"}}]},
			"configuration":{"acceptedOutputModes":["video/mp4"]}}}`)
		if r.Error == nil || r.Error.Code != -32005 {
			t.Fatalf("answer %+v, want error -32005", r)
		}
	})
}

func compactJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
