package caddymodule

import (
	"fmt"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
)

// gRPC on a plain-HTTP site: Caddy 2.11's default protocols already take
// a gRPC client's HTTP/2 without TLS (h2c, with prior knowledge), and so
// does protocols h1 h2c, which docs/bindings.md gives to say so and to
// keep Caddy from logging that HTTP/2 needs TLS.
func TestGRPCOnAPlainHTTPSite(t *testing.T) {
	for _, opts := range []string{"", "servers {\n\t\tprotocols h1 h2c\n\t}"} {
		t.Run(fmt.Sprintf("%q", opts), func(t *testing.T) {
			a := newAgent(t, demoSkills(t), newOrderCounter(t))
			initServer(t, a.tester, fmt.Sprintf(`{
	admin localhost:%d
	persist_config off
	%s
}

:%d {
	bind 127.0.0.1
	a2a {
		skills "%s"
		upstream %s
		url %s
		name "Test Agent"
		description "gRPC on plain HTTP"
		grpc
	}
}
`, adminPort, opts, a.port, a.skills, a.upstream, a.publicURL()))
			conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", a.port), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			c := a2apb.NewA2AServiceClient(conn)
			ctx := metadata.AppendToOutgoingContext(t.Context(), "a2a-version", "1.0")
			data, _ := structpb.NewValue(map[string]any{"city": "Paris"})
			skill, _ := structpb.NewStruct(map[string]any{"skill": "weather"})
			_, err = c.SendMessage(ctx, &a2apb.SendMessageRequest{Message: &a2apb.Message{MessageId: newMessageID(), Role: a2apb.Role_ROLE_USER, Metadata: skill,
				Parts: []*a2apb.Part{{Content: &a2apb.Part_Data{Data: data}}}}})
			if err != nil {
				t.Errorf("a gRPC call over h2c with server options %q: %v", opts, err)
			}
		})
	}
}
