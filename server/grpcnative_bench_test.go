package server_test

import (
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// BenchmarkNativeGRPC is one blocking SendMessage over the gRPC binding on
// a listener of its own, its client in this process too, the upstream
// answered in memory: grpc-go's transport both ways, and the module's work.
func BenchmarkNativeGRPC(b *testing.B) {
	h := memoryHandler(b, "bench.yaml", benchSkills, answering(weatherBody), nil)
	_, addr := nativeGRPC(b, h, server.GRPCServerOptions{}, server.GRPCAgent{})
	c := a2apb.NewA2AServiceClient(dial(b, addr))
	ctx := v10(b.Context())
	data, _ := structpb.NewValue(map[string]any{"city": "Paris"})
	meta, _ := structpb.NewStruct(map[string]any{"skill": "weather"})
	parts := []*a2apb.Part{{Content: &a2apb.Part_Data{Data: data}}}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			msg := &a2apb.Message{MessageId: newMessageID(), Role: a2apb.Role_ROLE_USER, Metadata: meta, Parts: parts}
			if _, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Message: msg}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
