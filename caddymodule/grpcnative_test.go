package caddymodule

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
	"github.com/caddy-a2a/caddy-a2a/confval"
	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// TestGRPCNativeCaddyfile: the grpc subdirective, its argument (the
// card's address) and the block of the binding's own listener.
func TestGRPCNativeCaddyfile(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     GRPCConfig
		err      string // in the parse or validation error
	}{
		{name: "same port", in: "grpc", want: GRPCConfig{}},
		{name: "same port, the card's address", in: "grpc grpc.example.com:443", want: GRPCConfig{URL: "grpc.example.com:443"}},
		{name: "own listener", in: `grpc agent.example.com:50051 {
			listen :50051
			tls cert.pem key.pem
			keepalive_time 1m
			keepalive_timeout 5s
			keepalive_min_time 20s
			max_concurrent_streams 100
			reflection
		}`, want: GRPCConfig{URL: "agent.example.com:50051", Listen: ":50051", TLS: &GRPCTLSConfig{CertFile: "cert.pem", KeyFile: "key.pem"},
			GRPCServerOptions: server.GRPCServerOptions{KeepaliveTime: confval.Duration(time.Minute), KeepaliveTimeout: confval.Duration(5 * time.Second),
				KeepaliveMinTime: confval.Duration(20 * time.Second), MaxConcurrentStreams: 100}, Reflection: true}},
		{name: "Caddy's certificates", in: "grpc {\nlisten 127.0.0.1:50051\ntls\n}", want: GRPCConfig{Listen: "127.0.0.1:50051", TLS: &GRPCTLSConfig{}}},
		{name: "a listener setting without listen", in: "grpc {\nkeepalive_time 1m\n}", err: "keepalive_time applies to the binding's own listener: set listen"},
		{name: "reflection without listen", in: "grpc {\nreflection\n}", err: "reflection applies to the binding's own listener"},
		{name: "no port", in: "grpc {\nlisten localhost\n}", err: `"localhost" is not host:port`},
		{name: "a port out of range", in: "grpc {\nlisten :70000\n}", err: "the port must be a number from 1 to 65535"},
		{name: "a certificate without its key", in: "grpc {\nlisten :50051\ntls cert.pem\n}", err: "want <cert file> <key file>"},
		{name: "an unknown setting", in: "grpc {\nlisten :50051\nkeepalive 1m\n}", err: "unknown subdirective 'keepalive'"},
		{name: "two addresses", in: "grpc a:1 b:2", err: "want at most one argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := validHandler()
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("a2a {\n" + tc.in + "\n}"))
			if err == nil {
				err = h.GRPC.validate()
			}
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v; want one saying %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case !reflect.DeepEqual(*h.GRPC, tc.want):
				t.Errorf("got %+v (tls %+v); want %+v", *h.GRPC, h.GRPC.TLS, tc.want)
			}
		})
	}
}

// grpcDial is a gRPC client connection to the port on loopback: with
// creds, or without TLS.
func grpcDial(t *testing.T, port int, creds credentials.TransportCredentials) *grpc.ClientConn {
	t.Helper()
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", port), grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// grpcSend sends a 1.0 message for skill with data over conn, and returns
// the task it answers.
func grpcSend(ctx context.Context, conn *grpc.ClientConn, skill string, data map[string]any) (*a2apb.Task, error) {
	msg, err := grpcMessage(skill, data)
	if err != nil {
		return nil, err
	}
	sent, err := a2apb.NewA2AServiceClient(conn).SendMessage(metadata.AppendToOutgoingContext(ctx, "a2a-version", "1.0"),
		&a2apb.SendMessageRequest{Message: msg})
	return sent.GetTask(), err
}

func grpcMessage(skill string, data map[string]any) (*a2apb.Message, error) {
	value, err := structpb.NewValue(data)
	if err != nil {
		return nil, err
	}
	meta, err := structpb.NewStruct(map[string]any{"skill": skill})
	return &a2apb.Message{MessageId: newMessageID(), Role: a2apb.Role_ROLE_USER, Metadata: meta,
		Parts: []*a2apb.Part{{Content: &a2apb.Part_Data{Data: value}}}}, err
}

// readStream reads a stream to its end: how many events it had, and the
// state of its last status update.
func readStream(t *testing.T, stream grpc.ServerStreamingClient[a2apb.StreamResponse]) (events int, last a2apb.TaskState) {
	t.Helper()
	for {
		ev, err := stream.Recv()
		if err == io.EOF {
			return events, last
		}
		if err != nil {
			t.Fatalf("after %d events: %v", events, err)
		}
		events++
		if su := ev.GetStatusUpdate(); su != nil {
			last = su.Status.State
		}
	}
}

// healthOf is what the health service says of the whole server.
func healthOf(t *testing.T, conn *grpc.ClientConn) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	resp, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatalf("health check: %v", err)
	}
	return resp.Status
}

// reflected lists the services server reflection names, or fails with
// its status.
func reflected(ctx context.Context, conn *grpc.ClientConn) (string, error) {
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		return "", err
	}
	// A stream the server ended fails Send with io.EOF; Recv has the status.
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil && err != io.EOF {
		return "", err
	}
	resp, err := stream.Recv()
	if err != nil {
		return "", err
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.Name)
	}
	return strings.Join(names, " "), nil
}

// TestGRPCNativeThroughCaddy: with listen, a real Caddy serves the gRPC
// binding on a listener of its own, on the engine JSON-RPC uses, and the
// card lists that address. Its health service follows the agent's
// readiness; reflection is off until asked for; a reload that keeps the
// address keeps the listener and its connections, and hands new calls,
// and TLS, to the new config.
func TestGRPCNativeThroughCaddy(t *testing.T) {
	a := newAgent(t, demoSkills(t), newOrderCounter(t))
	grpcPort := freePort(t)
	load := func(description, more string) {
		t.Helper()
		a.loadWith(a.publicURL(), description, fmt.Sprintf("grpc {\n\t\t\tlisten 127.0.0.1:%d\n%s\t\t}", grpcPort, more))
	}
	load("Native gRPC", "")

	_, card := a.get(a.publicURL()+".well-known/agent-card.json", nil)
	if entry := fmt.Sprintf(`{"url":"localhost:%d","protocolBinding":"GRPC","protocolVersion":"1.0"}`, grpcPort); !strings.Contains(card, entry) {
		t.Errorf("the card does not list %s:\n%s", entry, card)
	}

	conn := grpcDial(t, grpcPort, nil)
	ctx := metadata.AppendToOutgoingContext(t.Context(), "a2a-version", "1.0")
	c := a2apb.NewA2AServiceClient(conn)
	task, err := grpcSend(ctx, conn, "weather", map[string]any{"city": "Paris"})
	if err != nil || task.GetStatus().GetState() != a2apb.TaskState_TASK_STATE_COMPLETED {
		t.Fatalf("SendMessage: %v %v", task, err)
	}
	if got, err := c.GetTask(ctx, &a2apb.GetTaskRequest{Id: task.Id}); err != nil || got.Id != task.Id {
		t.Errorf("GetTask: %v %v", got, err)
	}
	got := a.call("1.0", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":%q}}`, task.Id))
	if got.Error != nil || decodeTask(t, got.Result).Status.State != "TASK_STATE_COMPLETED" {
		t.Errorf("GetTask over JSON-RPC: %+v %s", got.Error, got.Result)
	}

	msg, err := grpcMessage("weather", map[string]any{"city": "Tokyo"})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := c.SendStreamingMessage(ctx, &a2apb.SendMessageRequest{Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	events, last := readStream(t, stream)
	if events < 3 || last != a2apb.TaskState_TASK_STATE_COMPLETED {
		t.Errorf("stream: %d events, last state %v", events, last)
	}

	// A client's deadline ends its blocking call (its library resets the
	// call at the deadline too: either status may come first).
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := grpcSend(short, conn, "slow", map[string]any{"seconds": 30}); status.Code(err) != codes.DeadlineExceeded && status.Code(err) != codes.Canceled {
		t.Errorf("past its deadline: %v", err)
	}

	if st := healthOf(t, conn); st != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health: %v", st)
	}
	if _, err := reflected(t.Context(), conn); status.Code(err) != codes.Unimplemented {
		t.Errorf("reflection, off by default: %v", err)
	}

	// The same address after a reload: no "address in use", the client's
	// connection carries on, and the new config's agent answers.
	load("Native gRPC, reloaded", "\t\t\treflection\n")
	if _, err := grpcSend(ctx, conn, "weather", map[string]any{"city": "Paris"}); err != nil {
		t.Errorf("SendMessage on the connection opened before the reload: %v", err)
	}
	if names, err := reflected(t.Context(), conn); err != nil || !strings.Contains(names, "lf.a2a.v1.A2AService") {
		t.Errorf("reflection after the reload that asks for it: %q %v", names, err)
	}

	// TLS from a file pair, turned on by a reload: new connections take
	// it; the one opened before goes on as it began.
	ca := newTestCA(t, t.TempDir(), "grpc")
	cert, key, _ := ca.issue(t, "server", true, "")
	load("Native gRPC over TLS", fmt.Sprintf("\t\t\ttls %s %s\n", cert, key))
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	secure := grpcDial(t, grpcPort, credentials.NewTLS(&tls.Config{RootCAs: roots, ServerName: "localhost"}))
	if _, err := grpcSend(ctx, secure, "weather", map[string]any{"city": "Paris"}); err != nil {
		t.Errorf("SendMessage over TLS: %v", err)
	}
	if _, err := grpcSend(ctx, conn, "weather", map[string]any{"city": "Paris"}); err != nil {
		t.Errorf("SendMessage on the cleartext connection opened before: %v", err)
	}

	// Draining (as when Caddy stops), the agent is not ready: health says
	// so, and new tasks are refused.
	for _, p := range agents.probes() {
		p.manager.BeginDrain()
	}
	if st := healthOf(t, secure); st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health while draining: %v", st)
	}
	if _, err := grpcSend(ctx, secure, "weather", map[string]any{"city": "Paris"}); status.Code(err) != codes.Unavailable {
		t.Errorf("SendMessage while draining: %v", err)
	}
}

// TestGRPCNativeSecuredThroughCaddy: on its own listener, over TLS with
// the certificate Caddy serves its site with, a gRPC caller authenticates
// by an API key in its metadata or by its client certificate, and owns its
// tasks.
func TestGRPCNativeSecuredThroughCaddy(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, dir, "trusted")
	serverCert, serverKey, _ := ca.issue(t, "server", true, "")
	_, _, alice := ca.issue(t, "alice", false, "spiffe://test.example/alice")
	_, _, bob := ca.issue(t, "bob", false, "spiffe://test.example/bob")
	port, grpcPort := freePort(t), freePort(t)
	loadSecured(t, fmt.Sprintf("https://localhost:%d", port), fmt.Sprintf("\ttls %s %s", serverCert, serverKey), fmt.Sprintf(`
		skills "%s"
		upstream %s
		url https://localhost:%d/
		name "Secured gRPC Agent"
		description "Callers are named by their keys or certificates"
		security {
			api_key key header X-API-Key {
				key %s alice tasks
			}
			mutual_tls mtls {
				trusted_ca %s
			}
		}
		grpc {
			listen 127.0.0.1:%d
			tls
		}`, writeSkills(t, securedSkills[:strings.Index(securedSkills, "  - id: admin_report")]), headerEcho(t), port, aliceKey, ca.file, grpcPort))

	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	dialAs := func(certs ...tls.Certificate) *grpc.ClientConn {
		return grpcDial(t, grpcPort, credentials.NewTLS(&tls.Config{RootCAs: roots, Certificates: certs, ServerName: "localhost"}))
	}
	onBehalfOf := func(task *a2apb.Task) string {
		return task.GetArtifacts()[0].GetParts()[0].GetData().GetStructValue().GetFields()["on_behalf_of"].GetStringValue()
	}

	var trailer metadata.MD
	msg, err := grpcMessage("whoami", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a2apb.NewA2AServiceClient(dialAs()).SendMessage(metadata.AppendToOutgoingContext(t.Context(), "a2a-version", "1.0"),
		&a2apb.SendMessageRequest{Message: msg}, grpc.Trailer(&trailer))
	if status.Code(err) != codes.Unauthenticated || len(trailer.Get("www-authenticate")) == 0 {
		t.Errorf("without credentials: %v, challenges %v", err, trailer.Get("www-authenticate"))
	}

	byKey, err := grpcSend(metadata.AppendToOutgoingContext(t.Context(), "x-api-key", aliceKey), dialAs(), "whoami", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if got := onBehalfOf(byKey); got != "alice" {
		t.Errorf("with alice's key, the upstream was called for %q", got)
	}

	byCert, err := grpcSend(t.Context(), dialAs(alice), "whoami", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if got := onBehalfOf(byCert); got != "spiffe://test.example/alice" {
		t.Errorf("with alice's certificate, the upstream was called for %q", got)
	}
	v10 := metadata.AppendToOutgoingContext(t.Context(), "a2a-version", "1.0")
	if _, err := a2apb.NewA2AServiceClient(dialAs(bob)).GetTask(v10, &a2apb.GetTaskRequest{Id: byCert.Id}); status.Code(err) != codes.NotFound {
		t.Errorf("alice's task as bob: %v", err)
	}
	if _, err := a2apb.NewA2AServiceClient(dialAs(alice)).GetTask(v10, &a2apb.GetTaskRequest{Id: byCert.Id}); err != nil {
		t.Errorf("alice's task as alice: %v", err)
	}
}

// TestGRPCListenerShared: a config loaded while another holds the address
// (a reload) attaches to its listener, which serves the config attached
// last; two agents of one config cannot share an address; the listener
// stops, and frees its address, with its last handler's Cleanup.
func TestGRPCListenerShared(t *testing.T) {
	t.Setenv("DEMO_API_KEY", testAPIKey)
	upstream := httptest.NewServer(demoapi.New(demoapi.Options{APIKey: testAPIKey}))
	defer upstream.Close()
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	withListener := func(ctx caddy.Context, url string) (*Handler, error) {
		h := &Handler{Skills: filepath.Join("..", "examples", "skills.yaml"), Upstream: upstream.URL, URL: url,
			Name: "Test Agent", Description: "Provisioned by a test", GRPC: &GRPCConfig{Listen: listen}}
		if err := h.Provision(ctx); err != nil {
			_ = h.Cleanup() // as Caddy cleans up a module that failed
			return nil, err
		}
		t.Cleanup(func() { _ = h.Cleanup() })
		return h, nil
	}
	oldConfig, cancelOld := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancelOld()
	newConfig, cancelNew := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancelNew()

	before, err := withListener(oldConfig, "https://agent.example.com/before")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := withListener(oldConfig, "https://agent.example.com/beside"); err == nil || !strings.Contains(err.Error(),
		"the agent https://agent.example.com/before listens there already: give each agent its own address") {
		t.Errorf("a second agent of the config on the address: %v", err)
	}
	after, err := withListener(newConfig, "https://agent.example.com/after")
	if err != nil {
		t.Fatalf("the next config on the same address: %v", err)
	}

	conn := grpcDial(t, freePortOf(t, listen), nil)
	owner := func(id string) string {
		for _, h := range []*Handler{before, after} {
			if getTask(t, h, id).Error == nil {
				return h.URL
			}
		}
		return "none"
	}
	task, err := grpcSend(t.Context(), conn, "weather", map[string]any{"city": "Paris"})
	if err != nil || owner(task.GetId()) != after.URL {
		t.Fatalf("with both configs loaded, the task went to %s (%v)", owner(task.GetId()), err)
	}
	if err := before.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if _, err := grpcSend(t.Context(), conn, "weather", map[string]any{"city": "Paris"}); err != nil {
		t.Errorf("after the old config's Cleanup: %v", err)
	}
	if err := after.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if _, held := grpcListeners.References(listen); held {
		t.Errorf("the listener on %s is still held after its last handler's Cleanup", listen)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatalf("the address after the listener stopped: %v", err)
	}
	ln.Close()

	// An address another process holds fails the load, naming it.
	blocker, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close()
	listen = blocker.Addr().String()
	if _, err := withListener(newConfig, "https://agent.example.com/blocked"); err == nil || !strings.Contains(err.Error(), "grpc: listen "+listen) {
		t.Errorf("an address in use: %v", err)
	}
}

// freePortOf is the port of a host:port.
func freePortOf(t *testing.T, addr string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestGRPCListenerHeaderListBound: the binding's own listener takes a
// call's header list up to the bound the site's port puts on a request's
// headers (Caddy's default max_header_size, 16 KiB), and resets a call
// over it, as the site's port refuses such a request (431); grpc-go
// alone would take 16 MiB. The client here is a plain HTTP/2 framer, which
// sends what it is told whatever limit the server announces.
func TestGRPCListenerHeaderListBound(t *testing.T) {
	a := newAgent(t, demoSkills(t), newOrderCounter(t))
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	a.loadWith(a.publicURL(), "Bounded headers", fmt.Sprintf("grpc {\n\t\t\tlisten %s\n\t\t}", listen))
	for _, tc := range []struct {
		name, addr string
		padding    int // bytes of headers besides the call's own
		refused    bool
	}{
		{"the site's port, under the bound", fmt.Sprintf("127.0.0.1:%d", a.port), 8 << 10, false},
		{"the site's port, over it", fmt.Sprintf("127.0.0.1:%d", a.port), 20 << 10, true},
		{"the gRPC listener, under the bound", listen, 8 << 10, false},
		{"the gRPC listener, over it", listen, 20 << 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer := h2Call(t, tc.addr, tc.padding)
			if refused := answer == "reset" || answer == "431"; refused != tc.refused {
				t.Errorf("a header list with %d bytes of padding: answered %s, want refused %v", tc.padding, answer, tc.refused)
			}
		})
	}
}

// h2Call sends a GetTask call to addr over HTTP/2 without TLS, its header
// list padded with headers of padding bytes in all, and says how the server
// answered its stream: "reset", or the :status of its response.
func h2Call(t *testing.T, addr string, padding int) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range [][2]string{
		{":method", "POST"}, {":scheme", "http"}, {":authority", addr},
		{":path", "/" + a2apb.A2AService_ServiceDesc.ServiceName + "/GetTask"},
		{"content-type", "application/grpc"}, {"te", "trailers"}, {"a2a-version", "1.0"},
	} {
		if err := enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
			t.Fatal(err)
		}
	}
	// Headers of 1 KiB: a single long one would be refused as a string
	// too long to decode, which closes the whole connection.
	for i := 0; i < padding; i += 1 << 10 {
		if err := enc.WriteField(hpack.HeaderField{Name: fmt.Sprint("x-padding-", i), Value: strings.Repeat("p", min(1<<10, padding-i))}); err != nil {
			t.Fatal(err)
		}
	}
	msg, err := proto.Marshal(&a2apb.GetTaskRequest{Id: "no-such-task"})
	if err != nil {
		t.Fatal(err)
	}
	data := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg)))

	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	const stream, frameSize = 1, 16 << 10 // frameSize: HTTP/2's default SETTINGS_MAX_FRAME_SIZE
	err = fr.WriteSettings()
	for first, rest := true, block.Bytes(); err == nil && (first || len(rest) > 0); first = false {
		chunk := rest[:min(len(rest), frameSize)]
		rest = rest[len(chunk):]
		if first {
			err = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: chunk, EndHeaders: len(rest) == 0})
		} else {
			err = fr.WriteContinuation(stream, len(rest) == 0, chunk)
		}
	}
	if err == nil {
		err = fr.WriteData(stream, true, append(data, msg...))
	}
	if err != nil {
		t.Fatalf("sending the call: %v", err)
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if err := fr.WriteSettingsAck(); err != nil {
					t.Fatal(err)
				}
			}
		case *http2.RSTStreamFrame:
			if f.StreamID == stream {
				return "reset"
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID == stream {
				return f.PseudoValue("status")
			}
		case *http2.GoAwayFrame:
			t.Fatalf("the server closed the connection: %v", f.ErrCode)
		}
	}
}
