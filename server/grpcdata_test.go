package server_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// TestGRPCUpstreamData: an upstream's JSON answer reaches a gRPC client as
// encoding/json (a JSON-RPC client's decoder) reads it, also when it names
// a member twice or holds bytes that are not UTF-8: the answer does not
// fail for them.
func TestGRPCUpstreamData(t *testing.T) {
	h := memoryHandler(t, "data.yaml", benchSkills,
		answering("{\"city\":\"Paris\",\"city\":\"Lyon\",\"note\":\"caf\xe9\",\"deep\":{\"list\":[1.5,true,null,\"\\u00e9\"]}}"), nil)
	_, addr := nativeGRPC(t, h, server.GRPCServerOptions{}, server.GRPCAgent{})
	c := a2apb.NewA2AServiceClient(dial(t, addr))
	sent, err := c.SendMessage(v10(t.Context()), &a2apb.SendMessageRequest{Message: pbMessage(t, "weather", "", map[string]any{"city": "Paris"})})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	want, err := structpb.NewValue(map[string]any{"city": "Lyon", "note": "caf\uFFFD",
		"deep": map[string]any{"list": []any{1.5, true, nil, "é"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := sent.GetTask().GetArtifacts()[0].GetParts()[0].GetData(); !proto.Equal(got, want) {
		t.Errorf("the artifact's data:\n got %v\nwant %v", got, want)
	}
}
