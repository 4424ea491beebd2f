package caddymodule

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpVersions are the MCP protocol versions the endpoint serves: without
// sessions, and with them.
var mcpVersions = []string{"2026-07-28", "2025-11-25"}

// Through a real Caddy, at both MCP versions: a body that names a member
// twice (the tool's name, the params, the arguments, a member inside the
// arguments) or a look-alike of one is refused with -32600, and runs
// nothing upstream. Before, the last one won: a parser in front of the
// agent that keeps the first, or matches names exactly, saw another call
// than the one that ran.
func TestIntegrationMCPStrictMembers(t *testing.T) {
	var calls atomic.Int64
	a := newAgent(t, writeSkills(t, `
skills:
  - {id: order, description: Places an order., request: {method: POST, path: /orders, body: args}}
  - {id: slowc, description: Something else., request: {method: POST, path: /slowc, body: args}}
`), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"done":true}`)
	}))
	a.loadWith(a.publicURL(), "Strict MCP", "mcp")
	endpoint := fmt.Sprintf("http://localhost:%d/mcp", a.port)

	for _, version := range mcpVersions {
		t.Run(version, func(t *testing.T) {
			// A 2026-07-28 call says its version in _meta, and needs no
			// session; an earlier one is made on a session.
			meta, session := `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`, ""
			if version != "2026-07-28" {
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(),
					&mcp.StreamableClientTransport{Endpoint: endpoint, DisableStandaloneSSE: true},
					&mcp.ClientSessionOptions{ProtocolVersion: version})
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				meta, session = "", cs.ID()
			}
			call := func(params string) string {
				return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{` + params + meta + `}}`
			}
			for _, tc := range []struct {
				name, body string
				// tool is the Mcp-Name header: the name the SDK and the
				// binding read, so that the call would run without the check.
				tool string
			}{
				{"name twice", call(`"name":"order","name":"slowc","arguments":{"item":"tea"}`), "slowc"},
				{"params twice", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"order","arguments":{"item":"tea"}` +
					meta + `},"params":{"name":"slowc","arguments":{}` + meta + `}}`, "slowc"},
				{"arguments twice", call(`"name":"order","arguments":{"item":"tea"},"arguments":{"item":"gold"}`), "order"},
				{"a member inside the arguments twice", call(`"name":"order","arguments":{"item":"tea","item":"gold"}`), "order"},
				{"a look-alike of name", call(`"name":"order","NAME":"slowc","arguments":{"item":"tea"}`), "order"},
				{"a look-alike of arguments", call(`"name":"order","arguments":{"item":"tea"},"Arguments":{"item":"gold"}`), "order"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					before := calls.Load()
					status, answer, raw := postMCPBody(t, a, endpoint, version, session, tc.tool, tc.body)
					if status != http.StatusBadRequest || answer.Error == nil || answer.Error.Code != jsonrpc.CodeInvalidRequest {
						t.Errorf("HTTP %d, %s; want 400 and -32600", status, raw)
					}
					if n := calls.Load() - before; n != 0 {
						t.Errorf("the upstream was called %d times", n)
					}
				})
			}
			// The same call, each member once, runs once.
			before := calls.Load()
			status, answer, raw := postMCPBody(t, a, endpoint, version, session, "order", call(`"name":"order","arguments":{"item":"tea"}`))
			if status != http.StatusOK || answer.Error != nil || calls.Load() != before+1 {
				t.Errorf("a plain call: HTTP %d, %s, %d upstream calls", status, raw, calls.Load()-before)
			}
		})
	}
}

// postMCPBody posts body to the MCP endpoint as a client of version does
// (on session, when not ""), its Mcp-Method and Mcp-Name headers saying a
// call of tool, and returns the answer's status and JSON-RPC message: the
// body, or the event of an SSE answer that holds it.
func postMCPBody(t *testing.T, a *agent, endpoint, version, session, tool, body string) (int, rpcResponse, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", version)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := a.tester.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.Lines(string(raw)) {
			if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok && strings.Contains(data, `"id"`) {
				raw = []byte(data)
			}
		}
	}
	var answer rpcResponse
	if err := json.Unmarshal(raw, &answer); err != nil {
		t.Fatalf("HTTP %d, an answer that is not JSON-RPC: %v\n%s", resp.StatusCode, err, raw)
	}
	return resp.StatusCode, answer, string(raw)
}
