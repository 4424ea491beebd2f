package server

import (
	"net/http/httptest"
	"testing"

	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// A stream's events in each binding's form: a JSON-RPC response per event,
// or the HTTP+JSON binding's bare objects with its errors as events of
// type error holding a google.rpc.Status.
func TestStreamEventForms(t *testing.T) {
	h := &Handler{log: zap.NewNop()}
	rpc := &Exchange{Call: Call{Version: a2a.V10}, form: jsonRPC{h: h}, id: []byte(`1`)}
	rest := &Exchange{Call: Call{Version: a2a.V10}, form: &httpJSON{h: h}}
	ev := &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t", ContextID: "c",
		Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}}
	for _, tc := range []struct {
		name string
		call *Exchange
		want string
	}{
		{"JSON-RPC", rpc,
			`data: {"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}}` + "\n\n" +
				`data: {"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Task not found","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{"taskId":"t"}}]}}` + "\n\n"},
		{"HTTP+JSON", rest,
			`data: {"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}` + "\n\n" +
				"event: error\n" + `data: {"error":{"code":404,"status":"NOT_FOUND","message":"Task not found","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{"taskId":"t"}}]}}` + "\n\n"},
	} {
		w := httptest.NewRecorder()
		s := h.startSSE(w, tc.call)
		if err := s.event(ev); err != nil {
			t.Fatal(err)
		}
		if err := s.error(a2a.TaskNotFound("t")); err != nil {
			t.Fatal(err)
		}
		if got := w.Body.String(); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}
