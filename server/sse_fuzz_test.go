package server

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// FuzzSSEEvent writes events whose text and data come from anywhere: each
// is exactly one SSE event, a single "data:" line of valid UTF-8 JSON, so
// no value can break the stream's framing or inject an event.
func FuzzSSEEvent(f *testing.F) {
	f.Add("done", []byte(`{"a":1}`), true)
	f.Add("line\n\ndata: {\"injected\":true}\n\n", []byte(`"x\ny"`), false)
	f.Add("\r\n\u2028\xff", []byte(`[1,2,{"k":"\u0000"}]`), true)
	h := &Handler{log: zap.NewNop(), writeTimeout: DefaultWriteTimeout}
	f.Fuzz(func(t *testing.T, text string, data []byte, v10 bool) {
		var value any
		if json.Unmarshal(data, &value) != nil {
			value = string(data)
		}
		v := a2a.V03
		if v10 {
			v = a2a.V10
		}
		msg := &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(text), a2a.DataPart(value)}}
		ev := &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t", ContextID: "c",
			Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Message: msg}}}
		w := httptest.NewRecorder()
		s := h.startSSE(w, &Exchange{Call: Call{Version: v}, form: jsonRPC{h: h}, id: json.RawMessage(`1`)})
		if err := s.event(ev); err != nil {
			t.Fatal(err)
		}
		out := w.Body.Bytes()
		body, ok := bytes.CutPrefix(out, []byte("data: "))
		if !ok || !bytes.HasSuffix(body, []byte("\n\n")) {
			t.Fatalf("not one SSE data event: %q", out)
		}
		line := bytes.TrimSuffix(body, []byte("\n\n"))
		if bytes.ContainsAny(line, "\r\n") {
			t.Fatalf("the event spans lines: %q", out)
		}
		if !utf8.Valid(line) || !json.Valid(line) {
			t.Fatalf("the event is not UTF-8 JSON: %q", line)
		}
	})
}
