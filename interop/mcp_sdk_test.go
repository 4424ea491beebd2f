package interop_test

// The official MCP Go SDK's client (github.com/modelcontextprotocol/go-sdk)
// against the interop agent's MCP endpoint, at the stateless 2026-07-28
// protocol and at 2025-11-25 with its initialize handshake and session.

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMCPGoSDK(t *testing.T) {
	for _, version := range []string{"" /* the SDK's latest, 2026-07-28 */, "2025-11-25"} {
		name := version
		if name == "" {
			name = "latest"
		}
		t.Run(name, func(t *testing.T) {
			ctx := ctxTimeout(t, 30*time.Second)
			client := mcp.NewClient(&mcp.Implementation{Name: "caddy-a2a-interop", Version: "1.0.0"}, nil)
			transport := &mcp.StreamableClientTransport{Endpoint: agent.BaseURL + "/mcp", HTTPClient: recordedHTTPClient(t)}
			session, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatalf("connecting to %s/mcp: %v", agent.BaseURL, err)
			}
			defer session.Close()

			tools, err := session.ListTools(ctx, nil)
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			var weather *mcp.Tool
			for _, tool := range tools.Tools {
				if tool.Name == "weather" {
					weather = tool
				}
			}
			if weather == nil {
				t.Fatalf("tools/list has no weather tool: %s", jsonString(tools.Tools))
			}
			var schema struct {
				Properties map[string]struct {
					Type string `json:"type"`
				} `json:"properties"`
				Required []string `json:"required"`
			}
			if err := json.Unmarshal([]byte(jsonString(weather.InputSchema)), &schema); err != nil ||
				schema.Properties["city"].Type != "string" || len(schema.Required) != 1 || schema.Required[0] != "city" {
				t.Errorf("weather's inputSchema %s, want a required string city (%v)", jsonString(weather.InputSchema), err)
			}

			res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{"city": "Tokyo"}})
			if err != nil {
				t.Fatalf("tools/call weather: %v", err)
			}
			if res.IsError {
				t.Fatalf("tools/call weather: isError: %s", jsonString(res.Content))
			}
			var report struct {
				City       string `json:"city"`
				Conditions string `json:"conditions"`
			}
			if err := json.Unmarshal([]byte(jsonString(res.StructuredContent)), &report); err != nil || report.City != "Tokyo" || report.Conditions != "cloudy" {
				t.Errorf("structuredContent %s, want Tokyo's weather (%v)", jsonString(res.StructuredContent), err)
			}
			if session.InitializeResult() != nil && version != "" && session.InitializeResult().ProtocolVersion != version {
				t.Errorf("negotiated %q, want %q", session.InitializeResult().ProtocolVersion, version)
			}
		})
	}
}
