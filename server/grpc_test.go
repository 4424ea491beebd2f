package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// grpcClient is a real gRPC client of the agent at url, over h2c.
func grpcClient(t *testing.T, url string) a2apb.A2AServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(strings.TrimPrefix(url, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return a2apb.NewA2AServiceClient(conn)
}

func withGRPC(cfg *server.Config) { cfg.Bindings = append(cfg.Bindings, server.GRPC()) }

// pbMessage is a user message for skill with data, on task taskID ("": a
// new task).
func pbMessage(t *testing.T, skill, taskID string, data map[string]any) *a2apb.Message {
	t.Helper()
	value, err := structpb.NewValue(data)
	if err != nil {
		t.Fatal(err)
	}
	m := &a2apb.Message{MessageId: newMessageID(), Role: a2apb.Role_ROLE_USER, TaskId: taskID,
		Parts: []*a2apb.Part{{Content: &a2apb.Part_Data{Data: value}}}}
	if skill != "" {
		m.Metadata, _ = structpb.NewStruct(map[string]any{"skill": skill})
	}
	return m
}

func v10(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "a2a-version", "1.0")
}

// TestGRPCFlow: the whole flow of a client over the gRPC binding, on the
// engine JSON-RPC uses: send, get, list, stream, multi-turn, cancel and
// subscribe.
func TestGRPCFlow(t *testing.T) {
	a := newAgent(t, withGRPC)
	c := grpcClient(t, a.URL)
	ctx := v10(t.Context())

	sent, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Message: pbMessage(t, "weather", "", map[string]any{"city": "Paris"})})
	if err != nil {
		t.Fatal(err)
	}
	task := sent.GetTask()
	if task.GetStatus().GetState() != a2apb.TaskState_TASK_STATE_COMPLETED || len(task.GetArtifacts()) != 1 {
		t.Fatalf("SendMessage answered %v", sent)
	}
	if city := task.Artifacts[0].Parts[0].GetData().GetStructValue().GetFields()["city"].GetStringValue(); city != "Paris" {
		t.Errorf("artifact city %q", city)
	}

	got, err := c.GetTask(ctx, &a2apb.GetTaskRequest{Id: task.Id, HistoryLength: new(int32)})
	if err != nil || got.Id != task.Id || len(got.History) != 0 || got.Status.State != a2apb.TaskState_TASK_STATE_COMPLETED {
		t.Fatalf("GetTask: %v %v", got, err)
	}
	list, err := c.ListTasks(ctx, &a2apb.ListTasksRequest{ContextId: task.ContextId})
	if err != nil || len(list.Tasks) != 1 || list.Tasks[0].Id != task.Id {
		t.Fatalf("ListTasks: %v %v", list, err)
	}

	t.Run("stream", func(t *testing.T) {
		stream, err := c.SendStreamingMessage(ctx, &a2apb.SendMessageRequest{Message: pbMessage(t, "weather", "", map[string]any{"city": "Tokyo"})})
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		var last a2apb.TaskState
		for {
			ev, err := stream.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("after %v: %v", kinds, err)
			}
			switch p := ev.Payload.(type) {
			case *a2apb.StreamResponse_Task:
				kinds = append(kinds, "task")
			case *a2apb.StreamResponse_StatusUpdate:
				kinds = append(kinds, "status")
				last = p.StatusUpdate.Status.State
			case *a2apb.StreamResponse_ArtifactUpdate:
				kinds = append(kinds, "artifact")
			}
		}
		if len(kinds) < 3 || kinds[0] != "task" || !strings.Contains(strings.Join(kinds, " "), "artifact") || last != a2apb.TaskState_TASK_STATE_COMPLETED {
			t.Errorf("events %v, last state %v", kinds, last)
		}
	})

	t.Run("multi-turn", func(t *testing.T) {
		asked, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Message: pbMessage(t, "weather", "", map[string]any{})})
		if err != nil || asked.GetTask().GetStatus().GetState() != a2apb.TaskState_TASK_STATE_INPUT_REQUIRED {
			t.Fatalf("first turn: %v %v", asked, err)
		}
		id := asked.GetTask().Id
		done, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Message: pbMessage(t, "", id, map[string]any{"city": "Tokyo"})})
		if err != nil || done.GetTask().Id != id || done.GetTask().Status.State != a2apb.TaskState_TASK_STATE_COMPLETED {
			t.Fatalf("follow-up: %v %v", done, err)
		}
	})

	t.Run("cancel and subscribe", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		before := a.API.Stats().SlowStarted
		started, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{
			Message:       pbMessage(t, "slow", "", map[string]any{"seconds": 30}),
			Configuration: &a2apb.SendMessageConfiguration{ReturnImmediately: true}})
		if err != nil {
			t.Fatal(err)
		}
		id := started.GetTask().GetId()
		sub, err := c.SubscribeToTask(ctx, &a2apb.SubscribeToTaskRequest{Id: id})
		if err != nil {
			t.Fatal(err)
		}
		first, err := sub.Recv()
		if err != nil || first.GetTask().GetId() != id {
			t.Fatalf("first event of the subscription: %v %v", first, err)
		}
		// Canceled once the upstream call runs, so that its cancellation
		// is there to see.
		if _, err := a.API.WaitStats(ctx, func(s demoapi.Stats) bool { return s.SlowStarted > before }); err != nil {
			t.Fatal(err)
		}
		canceled, err := c.CancelTask(ctx, &a2apb.CancelTaskRequest{Id: id})
		if err != nil || canceled.Status.State != a2apb.TaskState_TASK_STATE_CANCELED {
			t.Fatalf("CancelTask: %v %v", canceled, err)
		}
		var last a2apb.TaskState
		for {
			ev, err := sub.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if su := ev.GetStatusUpdate(); su != nil {
				last = su.Status.State
			}
		}
		if last != a2apb.TaskState_TASK_STATE_CANCELED {
			t.Errorf("the subscription ended at %v", last)
		}
		if _, err := a.API.WaitStats(ctx, func(s demoapi.Stats) bool { return s.SlowCanceled > 0 }); err != nil {
			t.Errorf("the upstream call was not canceled: %v", err)
		}
	})
}

// grpcFailure is what a test reads of a gRPC error.
type grpcFailure struct {
	code   codes.Code
	reason string // ErrorInfo.reason
	domain string
	field  string // the BadRequest's field violation
}

func failureOf(t *testing.T, err error) grpcFailure {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || err == nil {
		t.Fatalf("not a gRPC status: %v", err)
	}
	f := grpcFailure{code: st.Code()}
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			f.reason, f.domain = d.Reason, d.Domain
		case *errdetails.BadRequest:
			f.field = d.FieldViolations[0].Field
		}
	}
	return f
}

// TestGRPCErrors: protocol errors are gRPC statuses with the codes of
// spec 1.0 §5.4 and the details of §10.6.
func TestGRPCErrors(t *testing.T) {
	a := newAgent(t, func(cfg *server.Config) { withGRPC(cfg); cfg.MaxRequestBytes = 64 << 10 })
	c := grpcClient(t, a.URL)
	ctx := v10(t.Context())
	noParts := &a2apb.Message{MessageId: "m", Role: a2apb.Role_ROLE_USER}
	for _, tc := range []struct {
		name string
		call func() error
		want grpcFailure
	}{
		{"unknown task", func() error {
			_, err := c.GetTask(ctx, &a2apb.GetTaskRequest{Id: "nope"})
			return err
		}, grpcFailure{codes.NotFound, "TASK_NOT_FOUND", "a2a-protocol.org", ""}},
		{"no id", func() error {
			_, err := c.CancelTask(ctx, &a2apb.CancelTaskRequest{})
			return err
		}, grpcFailure{codes.InvalidArgument, "INVALID_PARAMS", "a2a-protocol.org", "id"}},
		{"no parts", func() error {
			_, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Message: noParts})
			return err
		}, grpcFailure{codes.InvalidArgument, "INVALID_PARAMS", "a2a-protocol.org", "message.parts"}},
		{"no parts, streaming", func() error {
			s, err := c.SendStreamingMessage(ctx, &a2apb.SendMessageRequest{Message: noParts})
			if err == nil {
				_, err = s.Recv()
			}
			return err
		}, grpcFailure{codes.InvalidArgument, "INVALID_PARAMS", "a2a-protocol.org", "message.parts"}},
		{"version 0.3", func() error {
			_, err := c.GetTask(metadata.AppendToOutgoingContext(t.Context(), "a2a-version", "0.3"), &a2apb.GetTaskRequest{Id: "x"})
			return err
		}, grpcFailure{codes.FailedPrecondition, "VERSION_NOT_SUPPORTED", "a2a-protocol.org", ""}},
		{"push not supported", func() error {
			_, err := c.GetTaskPushNotificationConfig(ctx, &a2apb.GetTaskPushNotificationConfigRequest{TaskId: "t", Id: "c"})
			return err
		}, grpcFailure{codes.FailedPrecondition, "PUSH_NOTIFICATION_NOT_SUPPORTED", "a2a-protocol.org", ""}},
		{"no extended card", func() error {
			_, err := c.GetExtendedAgentCard(ctx, &a2apb.GetExtendedAgentCardRequest{})
			return err
		}, grpcFailure{codes.FailedPrecondition, "EXTENDED_AGENT_CARD_NOT_CONFIGURED", "a2a-protocol.org", ""}},
		{"page size", func() error {
			size := int32(1000)
			_, err := c.ListTasks(ctx, &a2apb.ListTasksRequest{PageSize: &size})
			return err
		}, grpcFailure{codes.InvalidArgument, "INVALID_PARAMS", "a2a-protocol.org", "pageSize"}},
		{"too large", func() error {
			m := pbMessage(t, "echo", "", map[string]any{"text": strings.Repeat("x", 70<<10)})
			_, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Message: m})
			return err
		}, grpcFailure{code: codes.ResourceExhausted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := failureOf(t, tc.call()); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestGRPCAuthAndOwners: the agent's authentication reads gRPC metadata;
// a caller sees only its own tasks; the extended card is for
// authenticated callers.
func TestGRPCAuthAndOwners(t *testing.T) {
	a := newAuthAgent(t, nil, withGRPC)
	c := grpcClient(t, a.URL)
	as := func(key string) context.Context {
		ctx := v10(t.Context())
		if key != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "x-api-key", key)
		}
		return ctx
	}

	// Refused before the message is read, the call's answer is
	// Trailers-Only: its challenges come as trailers.
	var trailer metadata.MD
	_, err := c.GetTask(as(""), &a2apb.GetTaskRequest{Id: "x"}, grpc.Trailer(&trailer))
	if f := failureOf(t, err); f.code != codes.Unauthenticated || f.reason == "" {
		t.Errorf("without a key: %+v", f)
	}
	if ch := trailer.Get("www-authenticate"); len(ch) == 0 {
		t.Errorf("no challenge in %v", trailer)
	}
	_, err = c.SendMessage(as(aliceKey), &a2apb.SendMessageRequest{Message: pbMessage(t, "admin", "", map[string]any{})})
	if f := failureOf(t, err); f.code != codes.PermissionDenied || f.reason == "" {
		t.Errorf("alice using the admin skill: %+v", f)
	}

	asked, err := c.SendMessage(as(aliceKey), &a2apb.SendMessageRequest{Message: pbMessage(t, "ask", "", map[string]any{})})
	if err != nil {
		t.Fatal(err)
	}
	id := asked.GetTask().GetId()
	if _, err := c.GetTask(as(aliceKey), &a2apb.GetTaskRequest{Id: id}); err != nil {
		t.Errorf("alice's own task: %v", err)
	}
	_, err = c.GetTask(as(bobKey), &a2apb.GetTaskRequest{Id: id})
	if f := failureOf(t, err); f.code != codes.NotFound {
		t.Errorf("alice's task as bob: %+v", f)
	}
	// A real call over JSON-RPC sees the same.
	if ans := a.As(bobKey, "GetTask", map[string]any{"id": id}); ans.Error == nil {
		t.Errorf("alice's task as bob over JSON-RPC: %s", ans.Raw)
	}

	card, err := c.GetExtendedAgentCard(as(aliceKey), &a2apb.GetExtendedAgentCardRequest{})
	if err != nil || card.Description != "the extended description" {
		t.Errorf("extended card: %v %v", card, err)
	}
}

// TestGRPCOverTLS: the same handler serves gRPC over TLS (HTTP/2 by ALPN),
// as Caddy does by default.
func TestGRPCOverTLS(t *testing.T) {
	a := newAgent(t, withGRPC)
	front := httptest.NewUnstartedServer(a.Handler)
	front.EnableHTTP2 = true
	front.StartTLS()
	t.Cleanup(front.Close)
	roots := x509.NewCertPool()
	roots.AddCert(front.Certificate())
	conn, err := grpc.NewClient(strings.TrimPrefix(front.URL, "https://"),
		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: roots})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	sent, err := a2apb.NewA2AServiceClient(conn).SendMessage(v10(t.Context()),
		&a2apb.SendMessageRequest{Message: pbMessage(t, "weather", "", map[string]any{"city": "Paris"})})
	if err != nil || sent.GetTask().GetStatus().GetState() != a2apb.TaskState_TASK_STATE_COMPLETED {
		t.Fatalf("SendMessage over TLS: %v %v", sent, err)
	}
}

// TestGRPCObserver: a gRPC call is observed as a JSON-RPC one is.
func TestGRPCObserver(t *testing.T) {
	obs := make(observations, 64)
	a := newAgent(t, func(c *server.Config) { withGRPC(c); c.Observer = obs })
	c := grpcClient(t, a.URL)
	ctx := v10(t.Context())
	if _, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Message: pbMessage(t, "weather", "", map[string]any{"city": "Paris"})}); err != nil {
		t.Fatal(err)
	}
	obs.Expect(t, "start GRPC SendMessage 1.0", "annotate weather true", "detach span=SendMessage",
		"ended weather completed", "run weather true", "end SendMessage 1.0 0 span=SendMessage")
	if _, err := c.GetTask(ctx, &a2apb.GetTaskRequest{Id: "no-such-task"}); err == nil {
		t.Fatal("GetTask of no task answered")
	}
	obs.Expect(t, "start GRPC GetTask 1.0", fmt.Sprintf("end GetTask 1.0 %d span=GetTask", a2a.CodeTaskNotFound))

	obs = make(observations, 64)
	auth := newAuthAgent(t, nil, func(c *server.Config) { withGRPC(c); c.Observer = obs })
	_, err := grpcClient(t, auth.URL).GetTask(metadata.AppendToOutgoingContext(ctx, "x-api-key", "wrong-key-0123456789"),
		&a2apb.GetTaskRequest{Id: "x"})
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("a wrong key: %v", err)
	}
	obs.Expect(t, `auth key "the API key is not valid"`, fmt.Sprintf("end  1.0 %d span=", a2a.CodeUnauthenticated))
}

// TestGRPCPushConfigs: the push config methods over gRPC, on the task's
// owner's configs.
func TestGRPCPushConfigs(t *testing.T) {
	a := newAuthAgent(t, nil, func(c *server.Config) { withGRPC(c); c.Push = urlPolicy{} })
	c := grpcClient(t, a.URL)
	alice := metadata.AppendToOutgoingContext(v10(t.Context()), "x-api-key", aliceKey)
	bob := metadata.AppendToOutgoingContext(v10(t.Context()), "x-api-key", bobKey)
	asked, err := c.SendMessage(alice, &a2apb.SendMessageRequest{Message: pbMessage(t, "ask", "", map[string]any{})})
	if err != nil {
		t.Fatal(err)
	}
	id := asked.GetTask().GetId()
	cfg := &a2apb.TaskPushNotificationConfig{TaskId: id, Id: "cfg-1", Url: "https://hooks.example.com/a2a", Token: "tok",
		Authentication: &a2apb.AuthenticationInfo{Scheme: "Bearer", Credentials: "secret"}}
	created, err := c.CreateTaskPushNotificationConfig(alice, cfg)
	if err != nil || created.Id != "cfg-1" || created.TaskId != id || created.Url != cfg.Url || created.Authentication.GetScheme() != "Bearer" {
		t.Fatalf("Create: %v %v", created, err)
	}
	got, err := c.GetTaskPushNotificationConfig(alice, &a2apb.GetTaskPushNotificationConfigRequest{TaskId: id, Id: "cfg-1"})
	if err != nil || got.Url != cfg.Url {
		t.Fatalf("Get: %v %v", got, err)
	}
	list, err := c.ListTaskPushNotificationConfigs(alice, &a2apb.ListTaskPushNotificationConfigsRequest{TaskId: id})
	if err != nil || len(list.Configs) != 1 || list.Configs[0].Id != "cfg-1" {
		t.Fatalf("List: %v %v", list, err)
	}
	if _, err := c.ListTaskPushNotificationConfigs(bob, &a2apb.ListTaskPushNotificationConfigsRequest{TaskId: id}); status.Code(err) != codes.NotFound {
		t.Errorf("List as bob: %v", err)
	}
	if _, err := c.DeleteTaskPushNotificationConfig(alice, &a2apb.DeleteTaskPushNotificationConfigRequest{TaskId: id, Id: "cfg-1"}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := c.GetTaskPushNotificationConfig(alice, &a2apb.GetTaskPushNotificationConfigRequest{TaskId: id, Id: "cfg-1"}); status.Code(err) != codes.NotFound {
		t.Errorf("Get after Delete: %v", err)
	}
	bad := &a2apb.TaskPushNotificationConfig{TaskId: id, Url: "https://refused.example.com/hook"}
	if _, err := c.CreateTaskPushNotificationConfig(alice, bad); status.Code(err) != codes.InvalidArgument {
		t.Errorf("a refused URL: %v", err)
	}
}

// TestStreamEndedByContext: a stream whose request's context ends, by a
// gRPC deadline or canceled by the client, ends with that status, and is
// observed so, not as an answered request.
func TestStreamEndedByContext(t *testing.T) {
	obs := make(observations, 64)
	a := newAgent(t, func(c *server.Config) { withGRPC(c); c.Observer = obs })
	a.CancelOnCleanup()
	// A new message each call: the same one sent again would not run again.
	slow := func() *a2apb.SendMessageRequest {
		return &a2apb.SendMessageRequest{Message: pbMessage(t, "slow", "", map[string]any{"seconds": 30})}
	}
	ended := func(binding string, code int) []string {
		return []string{"start " + binding + " SendStreamingMessage 1.0", "annotate slow true", "detach span=SendStreamingMessage",
			fmt.Sprintf("end SendStreamingMessage 1.0 %d span=SendStreamingMessage", code)}
	}

	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(v10(t.Context()))
		defer cancel()
		stream, err := grpcClient(t, a.URL).SendStreamingMessage(ctx, slow())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := stream.Recv(); err != nil {
			t.Fatalf("the first event: %v", err)
		}
		cancel()
		obs.Expect(t, ended("GRPC", server.CodeCanceled)...)
	})

	t.Run("SSE canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		_, events := a.Stream(ctx, "1.0", "SendStreamingMessage", map[string]any{"message": message("1.0", "slow", map[string]any{"seconds": 30})})
		<-events
		cancel()
		obs.Expect(t, ended("JSONRPC", server.CodeCanceled)...)
	})

	// A client that waits past its own deadline (grpc-timeout) reads the
	// status the agent gives the call when it passes.
	t.Run("deadline", func(t *testing.T) {
		resp := rawGRPC(t, a.URL, "SendStreamingMessage", slow(), "grpc-timeout", "300m")
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatal(err)
		}
		if got := resp.Trailer.Get("Grpc-Status"); got != fmt.Sprint(int(codes.DeadlineExceeded)) {
			t.Errorf("grpc-status %q; want DEADLINE_EXCEEDED", got)
		}
		obs.Expect(t, ended("GRPC", server.CodeDeadlineExceeded)...)
	})
}

// rawGRPC calls method of the agent at url with in and the given metadata
// (name, value, …) over h2c as a plain HTTP/2 client, one that enforces
// no deadline of its own, and returns the answer.
func rawGRPC(t *testing.T, url, method string, in proto.Message, md ...string) *http.Response {
	t.Helper()
	msg, err := proto.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	body := append([]byte{0, 0, 0, 0, 0}, msg...)
	binary.BigEndian.PutUint32(body[1:], uint32(len(msg)))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost,
		url+"/"+a2apb.A2AService_ServiceDesc.ServiceName+"/"+method, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	req.Header.Set("A2A-Version", "1.0")
	for i := 0; i+1 < len(md); i += 2 {
		req.Header.Set(md[i], md[i+1])
	}
	transport := &http.Transport{Protocols: new(http.Protocols)}
	transport.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(transport.CloseIdleConnections)
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}
