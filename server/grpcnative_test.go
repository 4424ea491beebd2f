package server_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// nativeGRPC serves h on a native gRPC server of its own, on loopback,
// until the test ends; it returns the server and its address.
func nativeGRPC(t testing.TB, h http.Handler, o server.GRPCServerOptions, ag server.GRPCAgent) (*server.GRPCServer, string) {
	t.Helper()
	s := server.NewGRPCServer(o)
	if _, err := s.Attach(h.(*server.Handler), ag); err != nil {
		t.Fatal(err)
	}
	return s, serveGRPC(t, s)
}

// serveGRPC serves s on loopback until the test ends, and returns its
// address.
func serveGRPC(t testing.TB, s *server.GRPCServer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Stop(ctx)
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// dial is a gRPC client connection to addr, without TLS.
func dial(t testing.TB, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// finalState reads a stream to its end, and returns the state of its last
// status update.
func finalState(t *testing.T, stream grpc.ServerStreamingClient[a2apb.StreamResponse]) a2apb.TaskState {
	t.Helper()
	var last a2apb.TaskState
	for {
		ev, err := stream.Recv()
		if err == io.EOF {
			return last
		}
		if err != nil {
			t.Fatal(err)
		}
		if su := ev.GetStatusUpdate(); su != nil {
			last = su.Status.State
		}
	}
}

// TestNativeGRPCFlow: on a listener of its own, the gRPC binding runs on
// the handler's engine, observed as on the handler's port: a task made
// there is the one JSON-RPC reads.
func TestNativeGRPCFlow(t *testing.T) {
	obs := make(observations, 64)
	a := newAgent(t, func(c *server.Config) { c.Observer = obs })
	_, addr := nativeGRPC(t, a.Handler, server.GRPCServerOptions{}, server.GRPCAgent{})
	c := a2apb.NewA2AServiceClient(dial(t, addr))
	ctx := v10(t.Context())

	sent, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Message: pbMessage(t, "weather", "", map[string]any{"city": "Paris"})})
	if err != nil {
		t.Fatal(err)
	}
	task := sent.GetTask()
	if task.GetStatus().GetState() != a2apb.TaskState_TASK_STATE_COMPLETED {
		t.Fatalf("SendMessage answered %v", sent)
	}
	obs.Expect(t, "start GRPC SendMessage 1.0", "annotate weather true", "detach span=SendMessage",
		"ended weather completed", "run weather true", "end SendMessage 1.0 0 span=SendMessage")

	if got, err := c.GetTask(ctx, &a2apb.GetTaskRequest{Id: task.Id}); err != nil || got.Id != task.Id {
		t.Fatalf("GetTask: %v %v", got, err)
	}
	obs.Until(t, "end GetTask 1.0 0")
	if ans := a.Call("1.0", "GetTask", map[string]any{"id": task.Id}); ans.Error != nil {
		t.Errorf("the task over JSON-RPC: %+v", ans.Error)
	}
	obs.Until(t, "end GetTask 1.0 0")

	stream, err := c.SendStreamingMessage(ctx, &a2apb.SendMessageRequest{Message: pbMessage(t, "weather", "", map[string]any{"city": "Tokyo"})})
	if err != nil {
		t.Fatal(err)
	}
	if last := finalState(t, stream); last != a2apb.TaskState_TASK_STATE_COMPLETED {
		t.Errorf("the stream ended at %v", last)
	}
	obs.Until(t, "end SendStreamingMessage 1.0 0")

	// A method the service does not have is refused as JSON-RPC refuses
	// one, and observed.
	err = dial(t, addr).Invoke(ctx, "/"+a2apb.A2AService_ServiceDesc.ServiceName+"/Nope", &a2apb.GetTaskRequest{}, &a2apb.Task{})
	if f := failureOf(t, err); f.code != codes.Unimplemented || f.reason != "METHOD_NOT_FOUND" {
		t.Errorf("an unknown method: %+v", f)
	}
	obs.Until(t, fmt.Sprintf("end  1.0 %d", a2a.CodeMethodNotFound))

	// A deadline ends a blocking call: the call, not the task.
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	a.CancelOnCleanup()
	_, err = c.SendMessage(short, &a2apb.SendMessageRequest{Message: pbMessage(t, "slow", "", map[string]any{"seconds": 30})})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("past its deadline: %v", err)
	}
	// The client's library resets the call at its deadline too, often
	// before the agent's copy of the deadline passes: either way, the
	// deadline ended it.
	if end := obs.Until(t, "end SendMessage 1.0 "); end != fmt.Sprintf("end SendMessage 1.0 %d span=SendMessage", server.CodeDeadlineExceeded) {
		t.Errorf("past its deadline, observed %q", end)
	}
}

// TestNativeGRPCReadTimeout: a message that does not arrive within the
// read timeout ends its call, as a slow body ends a JSON-RPC request.
// grpc-go alone would wait for it for ever.
func TestNativeGRPCReadTimeout(t *testing.T) {
	obs := make(observations, 64)
	a := newAgent(t, func(c *server.Config) { c.Observer, c.ReadBodyTimeout = obs, 200*time.Millisecond })
	_, addr := nativeGRPC(t, a.Handler, server.GRPCServerOptions{}, server.GRPCAgent{})

	// A plain HTTP/2 client announces a 100-byte message and sends 10
	// bytes of it.
	body, sending := io.Pipe()
	t.Cleanup(func() { sending.Close() })
	go func() {
		frame := make([]byte, 15)
		binary.BigEndian.PutUint32(frame[1:], 100)
		sending.Write(frame)
	}()
	// Without the timeout the call would hang: the test gives up first.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		"http://"+addr+"/"+a2apb.A2AService_ServiceDesc.ServiceName+"/GetTask", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	transport := &http.Transport{Protocols: new(http.Protocols)}
	transport.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(transport.CloseIdleConnections)
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	st, msg := resp.Header.Get("Grpc-Status")+resp.Trailer.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")+resp.Trailer.Get("Grpc-Message")
	if st != fmt.Sprint(int(codes.InvalidArgument)) || !strings.Contains(msg, "did not arrive within 200ms") {
		t.Errorf("grpc-status %q, grpc-message %q", st, msg)
	}
	obs.Until(t, fmt.Sprintf("end GetTask 1.0 %d", a2a.CodeInvalidRequest))
}

// TestNativeGRPCWriteTimeout: a client that stops reading its stream is
// dropped after the write timeout, as over SSE. grpc-go alone would hold
// the stream, and what it buffered, for ever.
func TestNativeGRPCWriteTimeout(t *testing.T) {
	obs := make(observations, 64)
	a := newAgent(t, func(c *server.Config) { c.Observer, c.WriteTimeout = obs, 300*time.Millisecond })
	_, addr := nativeGRPC(t, a.Handler, server.GRPCServerOptions{}, server.GRPCAgent{})
	// A small flow-control window, and no reading: the first event (the
	// task, with the large message in its history) fills it.
	conn := dial(t, addr, grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	msg := pbMessage(t, "weather", "", map[string]any{"city": "Paris"})
	msg.Parts = append(msg.Parts, &a2apb.Part{Content: &a2apb.Part_Text{Text: strings.Repeat("x", 512<<10)}})
	if _, err := a2apb.NewA2AServiceClient(conn).SendStreamingMessage(v10(t.Context()), &a2apb.SendMessageRequest{Message: msg}); err != nil {
		t.Fatal(err)
	}
	obs.Until(t, fmt.Sprintf("end SendStreamingMessage 1.0 %d", server.CodeDeadlineExceeded))
}

// TestNativeGRPCHealth: grpc.health.v1.Health says SERVING while the
// agent is ready and NOT_SERVING once it is not (here: it drains), to a
// check and to a watch; a watch ends when the server stops.
func TestNativeGRPCHealth(t *testing.T) {
	a := newAgent(t, nil)
	ready := func(context.Context) error {
		if a.Tasks.Draining() {
			return errors.New("draining")
		}
		return nil
	}
	s, addr := nativeGRPC(t, a.Handler, server.GRPCServerOptions{}, server.GRPCAgent{Ready: ready})
	health := healthpb.NewHealthClient(dial(t, addr))
	check := func(service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
		resp, err := health.Check(t.Context(), &healthpb.HealthCheckRequest{Service: service})
		return resp.GetStatus(), err
	}
	for _, service := range []string{"", a2apb.A2AService_ServiceDesc.ServiceName} {
		if st, err := check(service); st != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("check %q: %v %v", service, st, err)
		}
	}
	if _, err := check("other.Service"); status.Code(err) != codes.NotFound {
		t.Errorf("check of another service: %v", err)
	}
	watch, err := health.Watch(t.Context(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := watch.Recv(); got.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("watch: %v %v", got, err)
	}

	a.Tasks.BeginDrain()
	if st, err := check(""); st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("check while draining: %v %v", st, err)
	}
	if got, err := watch.Recv(); got.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("watch while draining: %v %v", got, err)
	}

	stopped := make(chan struct{})
	go func() {
		s.Stop(t.Context())
		close(stopped)
	}()
	if _, err := watch.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("the watch as the server stops: %v", err)
	}
	<-stopped
}

// TestNativeGRPCReflection: server reflection answers only when the agent
// turns it on.
func TestNativeGRPCReflection(t *testing.T) {
	services := func(addr string) ([]string, error) {
		stream, err := reflectionpb.NewServerReflectionClient(dial(t, addr)).ServerReflectionInfo(t.Context())
		if err != nil {
			return nil, err
		}
		// A stream the server ended fails Send with io.EOF; Recv has the
		// status.
		if err := stream.Send(&reflectionpb.ServerReflectionRequest{
			MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil && err != io.EOF {
			return nil, err
		}
		resp, err := stream.Recv()
		if err != nil {
			return nil, err
		}
		var names []string
		for _, s := range resp.GetListServicesResponse().GetService() {
			names = append(names, s.Name)
		}
		return names, nil
	}

	a := newAgent(t, nil)
	_, off := nativeGRPC(t, a.Handler, server.GRPCServerOptions{}, server.GRPCAgent{})
	if _, err := services(off); status.Code(err) != codes.Unimplemented {
		t.Errorf("reflection off: %v", err)
	}
	_, on := nativeGRPC(t, a.Handler, server.GRPCServerOptions{}, server.GRPCAgent{Reflection: true})
	names, err := services(on)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names, " "); !strings.Contains(got, a2apb.A2AService_ServiceDesc.ServiceName) || !strings.Contains(got, "grpc.health.v1.Health") {
		t.Errorf("reflection lists %s", got)
	}
}

// TestNativeGRPCAttach: new calls go to the handler attached last, and
// back to the one before when it detaches; with none, calls and health
// say no agent is there.
func TestNativeGRPCAttach(t *testing.T) {
	first, second := newAgent(t, nil), newAgent(t, nil)
	s := server.NewGRPCServer(server.GRPCServerOptions{})
	addr := serveGRPC(t, s)
	detachFirst, err := s.Attach(first.Handler.(*server.Handler), server.GRPCAgent{})
	if err != nil {
		t.Fatal(err)
	}
	detachSecond, err := s.Attach(second.Handler.(*server.Handler), server.GRPCAgent{})
	if err != nil {
		t.Fatal(err)
	}
	conn := dial(t, addr)
	c := a2apb.NewA2AServiceClient(conn)
	ctx := v10(t.Context())
	send := func() (string, error) {
		sent, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Message: pbMessage(t, "weather", "", map[string]any{"city": "Paris"})})
		return sent.GetTask().GetId(), err
	}
	owned := func(a *agent, id string) bool { return a.Call("1.0", "GetTask", map[string]any{"id": id}).Error == nil }

	if id, err := send(); err != nil || !owned(second, id) || owned(first, id) {
		t.Errorf("with both attached, the task did not go to the second alone (%v)", err)
	}
	detachSecond()
	detachSecond()
	if id, err := send(); err != nil || !owned(first, id) {
		t.Errorf("with the second detached, the task did not go to the first (%v)", err)
	}
	detachFirst()
	if _, err := send(); status.Code(err) != codes.Unavailable {
		t.Errorf("with none attached: %v", err)
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health with none attached: %v %v", resp, err)
	}
}
