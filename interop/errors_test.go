package interop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
)

// TestSDKErrors: the protocol errors reach the SDK as the errors it maps
// their codes to, in both versions.
func TestSDKErrors(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p protocol, c *a2aclient.Client) {
		ctx := ctxTimeout(t, 30*time.Second)
		unknown := a2a.NewTaskID()
		done := sendForTask(t, c, skillMessage("weather", map[string]any{"city": "Paris"}))
		if done.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("setup: weather task state %s, want completed", done.Status.State)
		}

		t.Run("task not found -32001", func(t *testing.T) {
			_, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: unknown})
			requireError(t, err, a2a.ErrTaskNotFound, -32001)
			_, err = c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: unknown})
			requireError(t, err, a2a.ErrTaskNotFound, -32001)
			events, err := collect(c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: unknown}))
			requireStreamError(t, events, err, a2a.ErrTaskNotFound, -32001)
		})

		t.Run("task not cancelable -32002", func(t *testing.T) {
			_, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: done.ID})
			requireError(t, err, a2a.ErrTaskNotCancelable, -32002)
		})

		t.Run("push notifications not supported -32003", func(t *testing.T) {
			_, err := c.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: done.ID, URL: "https://hooks.example.com/a2a"})
			requireError(t, err, a2a.ErrPushNotificationNotSupported, -32003)
			_, err = c.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: done.ID, ID: "cfg-1"})
			requireError(t, err, a2a.ErrPushNotificationNotSupported, -32003)
			_, err = c.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: done.ID})
			requireError(t, err, a2a.ErrPushNotificationNotSupported, -32003)
			err = c.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: done.ID, ID: "cfg-1"})
			requireError(t, err, a2a.ErrPushNotificationNotSupported, -32003)
		})

		t.Run("subscribe to a terminal task -32004", func(t *testing.T) {
			events, err := collect(c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: done.ID}))
			requireStreamError(t, events, err, a2a.ErrUnsupportedOperation, -32004)
		})

		t.Run("extended card not configured -32007", func(t *testing.T) {
			// This client was made without the card, so the SDK asks the
			// agent instead of answering from capabilities.extendedAgentCard.
			_, err := c.GetExtendedAgentCard(ctx, &a2a.GetExtendedAgentCardRequest{})
			requireError(t, err, a2a.ErrExtendedCardNotConfigured, -32007)
		})

		t.Run("invalid params -32602", func(t *testing.T) {
			m := a2a.NewMessage(a2a.MessageRoleUser) // a message needs at least one part
			m.Metadata = map[string]any{"skill": "weather"}
			_, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: m})
			requireError(t, err, a2a.ErrInvalidParams, -32602)
		})
	})
}

// An A2A-Version the agent does not speak reaches the SDK as the error it
// is, on a unary call (a JSON-RPC error) as on a streaming one (one SSE
// event holding it, as every error of a streaming method comes).
func TestSDKVersionNotSupported(t *testing.T) {
	hc := recordedHTTPClient(t)
	iface := &a2a.AgentInterface{URL: agent.URL, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version}
	c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{iface},
		a2aclient.WithJSONRPCTransport(hc), a2aclient.WithCallInterceptors(futureVersion{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Destroy() })
	ctx := ctxTimeout(t, 30*time.Second)
	req := &a2a.SendMessageRequest{Message: skillMessage("weather", map[string]any{"city": "Paris"})}
	_, err = c.SendMessage(ctx, req)
	requireError(t, err, a2a.ErrVersionNotSupported, -32009)
	events, err := collect(c.SendStreamingMessage(ctx, req))
	requireStreamError(t, events, err, a2a.ErrVersionNotSupported, -32009)
}

// futureVersion asks for an A2A version that does not exist yet.
type futureVersion struct {
	a2aclient.PassthroughInterceptor
}

func (futureVersion) Before(ctx context.Context, req *a2aclient.Request) (context.Context, any, error) {
	req.ServiceParams[a2a.SvcParamVersion] = []string{"9.9"}
	return ctx, nil, nil
}

// requireStreamError checks that a streaming call failed with code before
// any event.
func requireStreamError(t *testing.T, events []a2a.Event, err error, want error, code int) {
	t.Helper()
	if err == nil && len(events) == 0 {
		t.Fatalf("the stream ended with no event and no error, want %d (%v): the Go SDK reads a streaming "+
			"method's answer as SSE only, so an error it is to see must come as an SSE event "+
			"(data: {jsonrpc, id, error}), not as an application/json body", code, want)
	}
	if len(events) > 0 {
		t.Errorf("got %d events before the error:%s", len(events), describe(events))
	}
	requireError(t, err, want, code)
}

// TestJSONRPCErrors sends what no SDK would send and reads the JSON-RPC
// envelope itself: codes, the echoed id (null when the request could not be
// read), and no result alongside the error.
func TestJSONRPCErrors(t *testing.T) {
	cases := []struct {
		name    string
		version string // the A2A-Version header; empty: none (0.3)
		body    string
		code    int
		id      string // the id the answer must carry, as JSON
	}{
		{"parse error 1.0", "1.0", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":`, -32700, "null"},
		{"parse error 0.3", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":`, -32700, "null"},
		{"parse error, not JSON", "1.0", `hello`, -32700, "null"},
		{"invalid request: no method", "1.0", `{"jsonrpc":"2.0","id":"r-1","params":{}}`, -32600, `"r-1"`},
		{"invalid request: wrong jsonrpc", "", `{"jsonrpc":"1.0","id":"r-2","method":"tasks/get","params":{"id":"x"}}`, -32600, `"r-2"`},
		{"method not found 1.0", "1.0", `{"jsonrpc":"2.0","id":"r-3","method":"NoSuchMethod","params":{}}`, -32601, `"r-3"`},
		{"method not found 0.3", "", `{"jsonrpc":"2.0","id":"r-4","method":"tasks/nosuch","params":{}}`, -32601, `"r-4"`},
		{"version not supported", "9.9", `{"jsonrpc":"2.0","id":"r-5","method":"GetTask","params":{"id":"x"}}`, -32009, `"r-5"`},
		{"invalid params 1.0: no message", "1.0", `{"jsonrpc":"2.0","id":"r-6","method":"SendMessage","params":{}}`, -32602, `"r-6"`},
		{"invalid params 1.0: no parts", "1.0", `{"jsonrpc":"2.0","id":"r-7","method":"SendMessage","params":{"message":{"messageId":"m-1","role":"ROLE_USER"}}}`, -32602, `"r-7"`},
		{"invalid params 0.3: no parts", "", `{"jsonrpc":"2.0","id":"r-8","method":"message/send","params":{"message":{"kind":"message","messageId":"m-1","role":"user"}}}`, -32602, `"r-8"`},
		{"invalid params 0.3: bad role", "", `{"jsonrpc":"2.0","id":"r-9","method":"message/send","params":{"message":{"kind":"message","messageId":"m-1","role":"robot","parts":[{"kind":"text","text":"hi"}]}}}`, -32602, `"r-9"`},
		{"numeric id echoed", "1.0", `{"jsonrpc":"2.0","id":42,"method":"GetTask","params":{"id":"no-such-task"}}`, -32001, `42`},
		{"numeric id echoed 0.3", "", `{"jsonrpc":"2.0","id":43,"method":"tasks/get","params":{"id":"no-such-task"}}`, -32001, `43`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := postRPC(t, tc.version, tc.body)
			if r.Error == nil {
				t.Fatalf("no error in the answer (%d): %s", r.Status, r.Raw)
			}
			if r.Error.Code != tc.code {
				t.Errorf("error code %d (%s), want %d: %s", r.Error.Code, r.Error.Message, tc.code, r.Raw)
			}
			if r.Error.Message == "" {
				t.Errorf("error has no message: %s", r.Raw)
			}
			if v := string(r.Envelope["jsonrpc"]); v != `"2.0"` {
				t.Errorf(`"jsonrpc" = %s, want "2.0": %s`, v, r.Raw)
			}
			id, ok := r.Envelope["id"]
			if !ok {
				t.Errorf("answer has no id member (JSON-RPC 2.0 requires it, null when unknown): %s", r.Raw)
			} else if !bytes.Equal(compact(id), []byte(tc.id)) {
				t.Errorf("answer id %s, want %s: %s", id, tc.id, r.Raw)
			}
			if _, ok := r.Envelope["result"]; ok {
				t.Errorf("answer has both result and error: %s", r.Raw)
			}
			if !strings.HasPrefix(r.ContentType, "application/json") {
				t.Errorf("Content-Type %q, want application/json", r.ContentType)
			}
			// 1.0 §9.5: error details are an array of objects with "@type".
			if tc.version == "1.0" && len(r.Error.Data) > 0 {
				var details []map[string]any
				if err := json.Unmarshal(r.Error.Data, &details); err != nil {
					t.Errorf("1.0 error data is not an array of objects: %s", r.Error.Data)
				}
				for _, d := range details {
					if _, ok := d["@type"].(string); !ok {
						t.Errorf("1.0 error detail without @type: %v", d)
					}
				}
			}
		})
	}
}

func compact(b []byte) []byte {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return b
	}
	return out.Bytes()
}
