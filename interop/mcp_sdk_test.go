package interop_test

// The official MCP Go SDK's client (github.com/modelcontextprotocol/go-sdk)
// against the interop agent's MCP endpoint, at the stateless 2026-07-28
// protocol and at 2025-11-25 with its initialize handshake and session:
// list, call, and a call whose missing argument the agent asks for.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMCPGoSDK(t *testing.T) {
	tests := []struct {
		name, version string // version: what the client asks for, "" for the SDK's latest
		wire          string // the Mcp-Protocol-Version its requests carry
		session       bool   // whether it gets a session
	}{
		{"latest", "", "2026-07-28", false},
		{"2025-11-25", "2025-11-25", "2025-11-25", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ctxTimeout(t, 30*time.Second)
			var asked []*mcp.ElicitParams // the missing arguments the agent asks for
			client := mcp.NewClient(&mcp.Implementation{Name: "caddy-a2a-interop", Version: "1.0.0"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = append(asked, req.Params)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"city": "London"}}, nil
				},
			})
			httpClient := recordedHTTPClient(t)
			tap := &mcpHeaderTap{base: httpClient.Transport}
			httpClient.Transport = tap
			transport := &mcp.StreamableClientTransport{Endpoint: agent.BaseURL + "/mcp", HTTPClient: httpClient}
			session, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: tt.version})
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
			// Without its argument, the call asks for it: an elicitation/create
			// at 2025-11-25, an input request the client answers by calling
			// again at 2026-07-28; the SDK's client does either.
			res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{}})
			if err != nil {
				t.Fatalf("tools/call weather without a city: %v", err)
			}
			if len(asked) != 1 || !strings.Contains(jsonString(asked[0].RequestedSchema), `"city"`) {
				t.Errorf("asked %s, want one question for the city", jsonString(asked))
			}
			if res.IsError || !strings.Contains(jsonString(res.StructuredContent), `"London"`) {
				t.Errorf("tools/call weather answered with London: %s %s", jsonString(res.StructuredContent), jsonString(res.Content))
			}

			versions, sessions := tap.seen()
			if len(versions) != 1 || versions[0] != tt.wire {
				t.Errorf("the requests after the first carried Mcp-Protocol-Version %q, want only %q", versions, tt.wire)
			}
			if sessions != tt.session {
				t.Errorf("requests in a session (Mcp-Session-Id): %t, want %t", sessions, tt.session)
			}
		})
	}
}

// mcpHeaderTap records the protocol versions the requests after the first
// carry, and whether any carries a session id.
type mcpHeaderTap struct {
	base     http.RoundTripper
	mu       sync.Mutex
	requests int
	versions []string
	session  bool
}

func (m *mcpHeaderTap) RoundTrip(req *http.Request) (*http.Response, error) {
	m.mu.Lock()
	if m.requests++; m.requests > 1 { // the first may be an initialize, which carries none
		if v := req.Header.Get("Mcp-Protocol-Version"); !slices.Contains(m.versions, v) {
			m.versions = append(m.versions, v)
		}
	}
	m.session = m.session || req.Header.Get("Mcp-Session-Id") != ""
	m.mu.Unlock()
	return m.base.RoundTrip(req)
}

func (m *mcpHeaderTap) seen() (versions []string, session bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.versions), m.session
}

// TestMCPStopEndsStreamsNotCalls stops a Caddy (SIGTERM, as a pod's
// kubelet does) while an MCP 2025-11-25 session holds its standalone
// stream open and has a call under way: the stream ends, the call still
// gets its result (the drain lets the task finish), and the process exits
// at once, rather than waiting for the client to leave (Caddy's default
// grace period is unbounded).
func TestMCPStopEndsStreamsNotCalls(t *testing.T) {
	base, proc := startAuthAgent(t, newTokenIssuer(t), "", "mcp")
	httpClient := &http.Client{Transport: apiKeyTransport{key: authAPIKey}}
	ctx := ctxTimeout(t, 60*time.Second)
	session, err := mcp.NewClient(&mcp.Implementation{Name: "caddy-a2a-interop", Version: "1.0.0"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: httpClient, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", session.ID())
	stream, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/mcp: %s", base, stream.Status)
	}

	before := getStats(t)
	answered := make(chan error, 1)
	go func() {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 1}})
		if err == nil && res.IsError {
			err = fmt.Errorf("an error result: %v", res.Content)
		}
		answered <- err
	}()
	waitStats(t, 15*time.Second, "the slow request", func(s demoStats) bool { return s.SlowStarted > before.SlowStarted })
	stopped := time.Now()
	if err := proc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, stream.Body); err != nil {
		t.Errorf("the standalone stream ended with %v", err)
	}
	if err := <-answered; err != nil {
		t.Errorf("the call under way as Caddy stopped: %v", err)
	}
	select {
	case <-proc.exited:
		t.Logf("exited %s after SIGTERM", time.Since(stopped).Round(time.Millisecond))
	case <-ctx.Done():
		t.Fatalf("still running %s after SIGTERM", time.Since(stopped).Round(time.Second))
	}
}

// apiKeyTransport sends the secured agent's API key with every request.
type apiKeyTransport struct{ key string }

func (k apiKeyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("X-API-Key", k.key)
	return http.DefaultTransport.RoundTrip(req)
}
