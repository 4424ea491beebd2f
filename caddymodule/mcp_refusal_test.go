package caddymodule

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpbinding "github.com/caddy-a2a/caddy-a2a/server/mcp"
)

// Through a real Caddy, at both MCP versions: a call refused because the
// caller's share of the task store is full says so, in the words A2A's
// refusal uses, under a code of its own (-32029) that a client tells from
// a fault (-32603), with the reason in its data.
func TestIntegrationMCPQuotaRefusal(t *testing.T) {
	a := startAgent(t)
	a.loadHostile(`		mcp
		tasks {
			max_live_per_owner 2
		}`)
	// Two tasks that wait for input fill the share of this client address.
	for range 2 {
		if r := a.postFrom("127.0.0.1", sendMessage("weather", `{}`)); r.Error != nil {
			t.Fatalf("filling the share: %+v", r.Error)
		}
	}
	for _, version := range mcpVersions {
		t.Run(version, func(t *testing.T) {
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(),
				&mcp.StreamableClientTransport{Endpoint: fmt.Sprintf("http://127.0.0.1:%d/mcp", a.port), DisableStandaloneSSE: true},
				&mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{"city": "Paris"}})
			var rpcErr *jsonrpc.Error
			if !errors.As(err, &rpcErr) {
				t.Fatalf("result %+v, error %v; want a JSON-RPC error", res, err)
			}
			var data struct{ Reason string }
			_ = json.Unmarshal(rpcErr.Data, &data)
			if rpcErr.Code != mcpbinding.CodeResourceExhausted || data.Reason != "RESOURCE_EXHAUSTED" ||
				!strings.Contains(rpcErr.Message, "as much as one anonymous client may; finish or cancel some, authenticate, or retry later") {
				t.Errorf("code %d, message %q, data %s; want %d naming the quota, reason RESOURCE_EXHAUSTED",
					rpcErr.Code, rpcErr.Message, rpcErr.Data, mcpbinding.CodeResourceExhausted)
			}
		})
	}
}
