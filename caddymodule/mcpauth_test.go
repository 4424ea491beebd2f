package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
	mcpbinding "github.com/caddy-a2a/caddy-a2a/server/mcp"
)

// The skills of the MCP-authorization agent: whoami answers with the
// headers the upstream got; orders needs a token with orders:read.
const mcpAuthSkills = `upstream:
  url: http://127.0.0.1:1
skills:
  - id: whoami
    description: Tells the upstream who is calling
    request:
      path: /whoami
      headers:
        X-On-Behalf-Of: "{caller.subject}"
  - id: orders
    description: The caller's orders
    security:
      - jwt: [orders:read]
    request: {path: /orders}
`

// TestIntegrationMCPAuthorization runs a Caddy whose agent takes JWTs from
// an identity provider on loopback and serves MCP: the protected resource
// metadata is served beside the card, a 401 names it, tokens must be for
// the MCP endpoint's URL, and no token reaches the upstream. The agent is
// at its site's root, or under handle_path with the endpoint's public URL
// given: the metadata is then served below the prefix, where challenges
// point.
func TestIntegrationMCPAuthorization(t *testing.T) {
	for _, prefix := range []string{"", "/agents/orders"} {
		t.Run("prefix "+prefix, func(t *testing.T) { testMCPAuthorization(t, prefix) })
	}
}

func testMCPAuthorization(t *testing.T, prefix string) {
	idp := newJWKSServer(t)
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port) + prefix
	resource, docURL := base+"/mcp", base+"/.well-known/oauth-protected-resource/mcp"
	mcp := "mcp"
	if prefix != "" {
		mcp = "mcp /mcp " + resource
	}
	block := fmt.Sprintf(`		skills "%s"
		upstream %s
		url %s/
		name "MCP Agent"
		description "Tokens for its MCP endpoint"
		documentation_url https://docs.example/agent
		card_max_age 90s
		%s
		security {
			bearer jwt {
				issuer https://issuer.test
				audience a2a-test %s
				jwks_url %s
			}
		}`, writeSkills(t, mcpAuthSkills), headerEcho(t), base, mcp, resource, idp.url)
	tester := newTester(t)
	site := securedConfig(fmt.Sprintf(":%d", port), "", block)
	if prefix != "" {
		site = securedSite(fmt.Sprintf(":%d", port), fmt.Sprintf("\thandle_path %s/* {\n\t\ta2a {\n%s\n\t\t}\n\t}", prefix, block))
	}
	initServer(t, tester, site)
	a := &securedAgent{t: t, tester: tester, base: base, client: tester.Client}
	bearer := func(aud string) []string {
		return []string{"Authorization", "Bearer " + idp.tokenFor(t, "alice", aud, time.Minute)}
	}

	t.Run("metadata", func(t *testing.T) {
		card, err := a.client.Get(base + "/.well-known/agent-card.json")
		if err != nil {
			t.Fatal(err)
		}
		card.Body.Close()
		var first []byte
		for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
			resp, err := a.client.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("GET %s: %s %s", path, resp.Status, body)
			}
			if cc := resp.Header.Get("Cache-Control"); cc != card.Header.Get("Cache-Control") || cc != "public, max-age=90" {
				t.Errorf("GET %s: Cache-Control %q, the card's %q; want the same, public, max-age=90", path, cc, card.Header.Get("Cache-Control"))
			}
			if first == nil {
				first = body
			} else if string(body) != string(first) {
				t.Errorf("the two paths serve %s and %s", first, body)
			}
		}
		var doc map[string]any
		if err := json.Unmarshal(first, &doc); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"resource":                 resource,
			"authorization_servers":    []any{"https://issuer.test"},
			"scopes_supported":         []any{"orders:read"},
			"bearer_methods_supported": []any{"header"},
			"resource_name":            "MCP Agent",
			"resource_documentation":   "https://docs.example/agent",
		}
		if fmt.Sprint(doc) != fmt.Sprint(want) {
			t.Errorf("metadata %v\nwant %v", doc, want)
		}
	})

	t.Run("a 401 names it", func(t *testing.T) {
		resp, r, raw := a.send("whoami", "{}", "")
		want := `Bearer realm="a2a", resource_metadata="` + docURL + `"`
		if got := resp.Header.Values("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || r.Error == nil ||
			r.Error.Code != -31401 || !slices.Equal(got, []string{want}) {
			t.Errorf("%s %q %s; want 401 with %q", resp.Status, got, raw, want)
		}
		// A token for another audience fails the same way, and says why.
		resp, _, _ = a.send("whoami", "{}", "", bearer("https://elsewhere.example/mcp")...)
		if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized ||
			got != want+`, error="invalid_token", error_description="invalid audience"` {
			t.Errorf("a token for another audience: %s %q", resp.Status, got)
		}
		// A skill's scope is named, with the metadata, on its 403.
		resp, _, _ = a.send("orders", "{}", "", bearer(resource)...)
		if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusForbidden ||
			got != want+`, error="insufficient_scope", scope="orders:read"` {
			t.Errorf("a token without the skill's scope: %s %q", resp.Status, got)
		}
	})

	t.Run("a token for the MCP endpoint, never passed on", func(t *testing.T) {
		resp, r, raw := a.send("whoami", "{}", "", bearer(resource)...)
		if resp.StatusCode != http.StatusOK || r.Error != nil {
			t.Fatalf("%s %s", resp.Status, raw)
		}
		got := echoed(t, r)
		if got["on_behalf_of"] != "alice" || got["authorization"] != "" {
			t.Errorf("the upstream got %v: want alice's name and no Authorization header", got)
		}
	})
}

// TestMCPAudienceAtProvision: with MCP on, a scheme that verifies JWTs
// must list the MCP endpoint's URL among its audiences, or the config does
// not load, naming the scheme and the line that fixes it; with MCP off, or
// without token schemes, nothing is asked and no metadata is served.
func TestMCPAudienceAtProvision(t *testing.T) {
	t.Setenv("DEMO_API_KEY", testAPIKey)
	upstream := httptest.NewServer(demoapi.New(demoapi.Options{APIKey: testAPIKey}))
	defer upstream.Close()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()

	const resource = "https://agent.example/mcp"
	secret := strings.Repeat("s", 32)
	jwtScheme := func(audiences ...string) map[string]*authn.Scheme {
		return map[string]*authn.Scheme{"tokens": {Type: "http", HTTPScheme: "bearer",
			JWT: &authn.JWTConfig{HMACSecret: secret, Issuer: "https://issuer.example", Audiences: audiences}}}
	}
	tests := []struct {
		name     string
		mcp      *MCPConfig
		schemes  map[string]*authn.Scheme
		err      string // "" when it loads
		metadata bool
	}{
		{"no audiences", &MCPConfig{}, jwtScheme(),
			`security: with mcp on, tokens must be for the MCP endpoint: scheme "tokens": jwt audiences (none) lack ` + resource, false},
		{"the card's audience only", &MCPConfig{}, jwtScheme("https://agent.example/"),
			`scheme "tokens": jwt audiences (https://agent.example/) lack ` + resource + `, the resource MCP clients ask tokens for (RFC 8707): add it beside the others (Caddyfile: audience ` + resource + `)`, false},
		{"another path", &MCPConfig{Config: mcpbinding.Config{Path: "/tools"}}, jwtScheme(resource), `lack https://agent.example/tools`, false},
		{"the MCP endpoint's URL", &MCPConfig{}, jwtScheme("a2a", resource), "", true},
		{"its public URL, under a prefix", &MCPConfig{URL: "https://agent.example/orders/mcp"},
			jwtScheme(resource), `lack https://agent.example/orders/mcp`, false},
		{"its public URL as the audience", &MCPConfig{URL: "https://agent.example/orders/mcp"},
			jwtScheme("https://agent.example/orders/mcp"), "", true},
		{"MCP off", nil, jwtScheme(), "", false},
		{"no token scheme", &MCPConfig{}, map[string]*authn.Scheme{"key": {Type: "apiKey", In: "header", Name: "X-Key",
			Keys: []authn.APIKey{{Key: strings.Repeat("k", 16), Subject: "k"}}}}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &Handler{
				Skills: filepath.Join("..", "examples", "skills.yaml"), Upstream: upstream.URL,
				URL: "https://agent.example/", Name: "Test Agent", Description: "Provisioned by a test",
				Security: &SecurityConfig{Config: authn.Config{Schemes: tt.schemes}}, MCP: tt.mcp,
			}
			err := h.Provision(ctx)
			t.Cleanup(func() { _ = h.Cleanup() })
			switch {
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("Provision: %v; want an error containing %q", err, tt.err)
			case tt.err == "" && err != nil:
				t.Fatalf("Provision: %v", err)
			case err != nil:
				return
			}
			w := httptest.NewRecorder()
			if err := h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/.well-known/oauth-protected-resource", nil), nil); err != nil {
				t.Fatal(err)
			}
			if served := w.Code == http.StatusOK; served != tt.metadata {
				t.Errorf("metadata served: %v (%d %s), want %v", served, w.Code, w.Body, tt.metadata)
			}
		})
	}
}
