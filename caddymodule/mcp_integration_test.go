package caddymodule

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/server"
	mcpbinding "github.com/caddy-a2a/caddy-a2a/server/mcp"
)

// apiKeyTransport sends an API key with every request.
type apiKeyTransport struct {
	key  string
	next http.RoundTripper
}

func (k apiKeyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-API-Key", k.key)
	return k.next.RoundTrip(r)
}

// TestIntegrationMCP runs a Caddy whose agent, which takes API keys, also
// serves its skills as MCP tools, and calls them with the Go SDK's client
// at both protocol versions.
func TestIntegrationMCP(t *testing.T) {
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	a2aBlock := fmt.Sprintf(`
		skills "%s"
		upstream %s
		url %s/
		name "MCP Agent"
		description "The skills as tools"
		security {
			api_key key header X-API-Key {
				key %s alice tasks
				key %s bob tasks admin
			}
		}
		extended_card {
			description "Everything, for the callers we know"
		}
		mcp /tools {
			max_sessions 10
		}`, writeSkills(t, securedSkills), headerEcho(t), base, aliceKey, bobKey)
	tester := loadSecured(t, fmt.Sprintf(":%d", port), "", a2aBlock)

	t.Run("unauthenticated", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, base+"/tools", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := tester.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "X-API-Key") {
			t.Errorf("HTTP %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Values("WWW-Authenticate"))
		}
	})
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: base + "/tools",
				HTTPClient: &http.Client{Transport: apiKeyTransport{aliceKey, http.DefaultTransport}}},
				&mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("connected at %s", got)
			}
			list, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
			}
			if !slices.Contains(names, "whoami") || slices.Contains(names, "admin_report") {
				t.Errorf("alice's tools: %v", names)
			}
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "whoami"})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := res.StructuredContent.(map[string]any)
			if res.IsError || got["on_behalf_of"] != "alice" || got["api_key"] != "" {
				t.Errorf("whoami: %+v", res)
			}
		})
	}
}

// A reload ends the standalone streams of the config it replaces, which
// Caddy's shutdown of the old server would otherwise wait for, up to the
// sessions' idle timeout; a call under way on a session still answers.
func TestIntegrationMCPReload(t *testing.T) {
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	reached, release := make(chan struct{}, 1), make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"done": true}`)
	}))
	t.Cleanup(upstream.Close)
	t.Cleanup(func() { close(release) })
	a2aBlock := fmt.Sprintf(`
		skills "%s"
		upstream %s
		url %s/
		name "Reloaded"
		description "d"
		mcp`, writeSkills(t, "upstream: {url: http://127.0.0.1:1}\nskills:\n  - {id: held, description: d, request: {path: /h}}\n"),
		upstream.URL, base)
	loadSecured(t, fmt.Sprintf(":%d", port), "", a2aBlock)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp", DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// Without its end the stream would last the session's idle timeout
	// (5 min): the test gives up well before.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: HTTP %d", resp.StatusCode)
	}
	answered := make(chan error, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "held", Arguments: map[string]any{}})
		if err == nil && res.IsError {
			err = fmt.Errorf("the call failed: %v", res.Content)
		}
		answered <- err
	}()
	<-reached
	reloaded := make(chan struct{})
	go func() { // the reload ends once the old server has shut down: once the call answers
		defer close(reloaded)
		newTester(t).InitServer(securedConfig(fmt.Sprintf(":%d", port), "", a2aBlock+" /mcp2"), "caddyfile")
	}()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Errorf("the stream ended with %v (within 30s: %v)", err, ctx.Err() == nil)
	}
	release <- struct{}{}
	if err := <-answered; err != nil {
		t.Errorf("the call under way across the reload: %v", err)
	}
	<-reloaded
}

// An MCP call's span and metrics say the binding and the MCP method, and
// no A2A version: MCP speaks none.
func TestMCPObservedNames(t *testing.T) {
	for _, name := range []string{"tools/call", "tools/list", "mcp/other"} {
		c := server.Call{Binding: mcpbinding.Binding, Operation: name, Version: a2a.V10}
		span := observedCall(t, c, 0)
		if span.Name() != "A2A "+name || attr(span, "rpc.method") != name || attr(span, "rpc.system") != "jsonrpc" ||
			attr(span, "a2a.protocol_binding") != mcpbinding.Binding || attr(span, "a2a.protocol_version") != "" {
			t.Errorf("%s: span %q %v", name, span.Name(), span.Attributes())
		}
		counter := metrics.requests.WithLabelValues(mcpbinding.Binding, name, "", "ok")
		before := counterValue(t, counter)
		observedCall(t, c, 0)
		if after := counterValue(t, counter); after != before+1 {
			t.Errorf("%s: requests_total{binding=MCP,version=\"\"} went from %v to %v", name, before, after)
		}
	}
}
