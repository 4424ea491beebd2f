package caddymodule

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
)

// TestGRPCThroughCaddy: one Caddy site, with `protocols h1 h2c`, answers
// gRPC and JSON-RPC on the same port, and its card lists the gRPC binding.
func TestGRPCThroughCaddy(t *testing.T) {
	a := newAgent(t, demoSkills(t), newOrderCounter(t))
	a.loadAllBindings("gRPC and JSON-RPC")

	_, card := a.get(a.publicURL()+".well-known/agent-card.json", nil)
	grpcEntry := fmt.Sprintf(`{"url":"localhost:%d","protocolBinding":"GRPC","protocolVersion":"1.0"}`, a.port)
	if !strings.Contains(card, grpcEntry) {
		t.Errorf("the card does not list %s:\n%s", grpcEntry, card)
	}

	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", a.port), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := a2apb.NewA2AServiceClient(conn)
	ctx := metadata.AppendToOutgoingContext(t.Context(), "a2a-version", "1.0")
	data, _ := structpb.NewValue(map[string]any{"city": "Paris"})
	skill, _ := structpb.NewStruct(map[string]any{"skill": "weather"})
	msg := &a2apb.Message{MessageId: "g1", Role: a2apb.Role_ROLE_USER, Metadata: skill,
		Parts: []*a2apb.Part{{Content: &a2apb.Part_Data{Data: data}}}}

	sent, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	if st := sent.GetTask().GetStatus().GetState(); st != a2apb.TaskState_TASK_STATE_COMPLETED {
		t.Fatalf("SendMessage: %v", sent)
	}

	msg.MessageId = "g2" // a new message: g1 sent again would not run again
	stream, err := c.SendStreamingMessage(ctx, &a2apb.SendMessageRequest{Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	events, last := readStream(t, stream)
	if events < 3 || last != a2apb.TaskState_TASK_STATE_COMPLETED {
		t.Errorf("stream: %d events, last state %v", events, last)
	}

	// The task is the same one over JSON-RPC.
	got := a.call("1.0", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":%q}}`, sent.GetTask().Id))
	if got.Error != nil || decodeTask(t, got.Result).Status.State != "TASK_STATE_COMPLETED" {
		t.Errorf("GetTask over JSON-RPC: %+v %s", got.Error, got.Result)
	}
}

// TestGRPCMutualTLSThroughCaddy: over TLS, with client certificates, a
// gRPC caller is named by its certificate as a JSON-RPC caller is, and
// owns its tasks.
func TestGRPCMutualTLSThroughCaddy(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, dir, "trusted")
	serverCert, serverKey, _ := ca.issue(t, "server", true, "")
	_, _, alice := ca.issue(t, "alice", false, "spiffe://test.example/alice")
	_, _, bob := ca.issue(t, "bob", false, "spiffe://test.example/bob")
	skills := writeSkills(t, securedSkills[:strings.Index(securedSkills, "  - id: admin_report")])
	port := freePort(t)
	loadSecured(t, fmt.Sprintf("https://localhost:%d", port),
		fmt.Sprintf("\ttls %s %s {\n\t\tclient_auth {\n\t\t\tmode request\n\t\t}\n\t}", serverCert, serverKey),
		fmt.Sprintf(`
		skills "%s"
		upstream %s
		url https://localhost:%d/
		name "mTLS Agent"
		description "Callers are named by their certificates"
		security {
			mutual_tls mtls {
				trusted_ca %s
			}
		}
		grpc`, skills, headerEcho(t), port, ca.file))

	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	clientFor := func(certs ...tls.Certificate) a2apb.A2AServiceClient {
		// By name (SNI), which Caddy's client_auth policy matches.
		creds := credentials.NewTLS(&tls.Config{RootCAs: roots, Certificates: certs, ServerName: "localhost"})
		conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", port), grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return a2apb.NewA2AServiceClient(conn)
	}
	ctx := metadata.AppendToOutgoingContext(t.Context(), "a2a-version", "1.0")
	data, _ := structpb.NewValue(map[string]any{})
	skill, _ := structpb.NewStruct(map[string]any{"skill": "whoami"})
	msg := &a2apb.Message{MessageId: "g1", Role: a2apb.Role_ROLE_USER, Metadata: skill,
		Parts: []*a2apb.Part{{Content: &a2apb.Part_Data{Data: data}}}}

	sent, err := clientFor(alice).SendMessage(ctx, &a2apb.SendMessageRequest{Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	task := sent.GetTask()
	echo := task.GetArtifacts()[0].GetParts()[0].GetData().GetStructValue().GetFields()
	if got := echo["on_behalf_of"].GetStringValue(); got != "spiffe://test.example/alice" {
		t.Errorf("the upstream was called for %q", got)
	}
	if _, err := clientFor().GetTask(ctx, &a2apb.GetTaskRequest{Id: task.Id}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("without a certificate: %v", err)
	}
	if _, err := clientFor(bob).GetTask(ctx, &a2apb.GetTaskRequest{Id: task.Id}); status.Code(err) != codes.NotFound {
		t.Errorf("alice's task as bob: %v", err)
	}
}

// TestGRPCDeadlineCounted: a gRPC call that its client's deadline ends is
// counted as deadline_exceeded, blocking or streaming, on the site's port
// and on the binding's own listener; one its client cancels long before
// its deadline, as canceled. A gRPC client resets the call at its
// deadline as it does to cancel it, and the reset reaches the agent about
// when the agent's copy of the deadline (grpc-timeout) passes, often just
// before.
func TestGRPCDeadlineCounted(t *testing.T) {
	a := newAgent(t, demoSkills(t), newOrderCounter(t))
	listen := freePort(t)
	slow := func() *a2apb.SendMessageRequest {
		msg, err := grpcMessage("slow", map[string]any{"seconds": 30})
		if err != nil {
			t.Fatal(err)
		}
		return &a2apb.SendMessageRequest{Message: msg}
	}
	for _, where := range []struct {
		name string
		load func()
		port int
	}{
		{"the site's port", func() { a.loadAllBindings("gRPC on the site's port") }, a.port},
		{"the gRPC listener", func() {
			a.loadWith(a.publicURL(), "gRPC on its own listener", fmt.Sprintf("grpc {\n\t\t\tlisten 127.0.0.1:%d\n\t\t}", listen))
		}, listen},
	} {
		where.load()
		c := a2apb.NewA2AServiceClient(grpcDial(t, where.port, nil))
		// call sends a slow message by method, and waits for its end; a
		// stream it cancels after its first event when cancelEarly.
		call := func(ctx context.Context, cancel context.CancelFunc, method string, cancelEarly bool) error {
			if method == "SendMessage" {
				_, err := c.SendMessage(ctx, slow())
				return err
			}
			stream, err := c.SendStreamingMessage(ctx, slow())
			for events := 0; err == nil; events++ {
				if cancelEarly && events == 1 {
					cancel()
				}
				_, err = stream.Recv()
			}
			return err
		}
		for _, tc := range []struct {
			method      string
			timeout     time.Duration
			cancelEarly bool
			want        string
		}{
			{"SendMessage", 300 * time.Millisecond, false, "deadline_exceeded"},
			{"SendStreamingMessage", 300 * time.Millisecond, false, "deadline_exceeded"},
			{"SendStreamingMessage", 30 * time.Second, true, "canceled"},
		} {
			codes := map[string]codes.Code{"deadline_exceeded": codes.DeadlineExceeded, "canceled": codes.Canceled}
			count := func(families map[string]*dto.MetricFamily, code string) float64 {
				return max(sample(families, "caddy_a2a_requests_total",
					"binding", "GRPC", "method", tc.method, "version", "1.0", "code", code), 0)
			}
			before := scrape(t)
			ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(t.Context(), "a2a-version", "1.0"), tc.timeout)
			err := call(ctx, cancel, tc.method, tc.cancelEarly)
			cancel()
			if status.Code(err) != codes[tc.want] {
				t.Fatalf("%s, %s with a deadline of %s: %v; want %v", where.name, tc.method, tc.timeout, err, codes[tc.want])
			}
			// The agent counts the call as it ends, after the client has
			// given up on it.
			var after map[string]*dto.MetricFamily
			for deadline := time.Now().Add(10 * time.Second); ; {
				after = scrape(t)
				ended := 0.0
				for code := range codes {
					ended += count(after, code) - count(before, code)
				}
				if ended > 0 || time.Now().After(deadline) {
					break
				}
			}
			for code := range codes {
				want := 0.0
				if code == tc.want {
					want = 1
				}
				if got := count(after, code) - count(before, code); got != want {
					t.Errorf("%s, %s with a deadline of %s: %v more counted %s; want %v", where.name, tc.method, tc.timeout, got, code, want)
				}
			}
		}
	}
}
