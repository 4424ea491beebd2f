package caddymodule

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestIntegrationMCPArtifactResources: through a real Caddy, a file a
// tool call answers is embedded under its artifact's resource URI, which
// the caller reads again at either protocol version, and another caller
// cannot read.
func TestIntegrationMCPArtifactResources(t *testing.T) {
	const pdf = "%PDF-1.7\n\xff"
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		io.WriteString(w, pdf)
	}))
	t.Cleanup(upstream.Close)
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	loadSecured(t, fmt.Sprintf(":%d", port), "", fmt.Sprintf(`
		skills "%s"
		upstream %s
		url %s/
		name "Reports"
		description "Reports as PDF"
		security {
			api_key key header X-API-Key {
				key %s alice tasks
				key %s bob tasks
			}
		}
		mcp`, writeSkills(t, "skills:\n  - {id: report, description: A report as PDF, request: {path: /report}}\n"),
		upstream.URL, base, aliceKey, bobKey))

	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			connect := func(key string) *mcp.ClientSession {
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(),
					&mcp.StreamableClientTransport{Endpoint: base + "/mcp",
						HTTPClient: &http.Client{Transport: apiKeyTransport{key, http.DefaultTransport}}},
					&mcp.ClientSessionOptions{ProtocolVersion: version})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cs.Close() })
				return cs
			}
			alice, bob := connect(aliceKey), connect(bobKey)
			res, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "report"})
			if err != nil {
				t.Fatal(err)
			}
			file, ok := res.Content[0].(*mcp.EmbeddedResource)
			if !ok || string(file.Resource.Blob) != pdf {
				t.Fatalf("report: %+v", res.Content[0])
			}
			read, err := alice.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: file.Resource.URI})
			if err != nil || len(read.Contents) != 1 || string(read.Contents[0].Blob) != pdf || read.Contents[0].MIMEType != "application/pdf" {
				t.Fatalf("resources/read %s by its owner: %v %+v", file.Resource.URI, err, read)
			}
			_, err = bob.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: file.Resource.URI})
			if rpcErr, ok := errors.AsType[*jsonrpc.Error](err); !ok || rpcErr.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("resources/read %s by another caller: %v, want not found", file.Resource.URI, err)
			}
		})
	}
}
