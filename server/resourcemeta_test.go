package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// TestResourceMetadataServed: with an agent that takes bearer tokens and
// serves its protected resource metadata, the document is public (even
// with the card protected), and every binding's 401 names it.
func TestResourceMetadataServed(t *testing.T) {
	const resource = "https://agent.example/mcp"
	docURL, err := cardgen.ResourceMetadataURL(resource, "")
	if err != nil {
		t.Fatal(err)
	}
	auth, err := authn.New(authn.Config{Schemes: map[string]*authn.Scheme{"jwt": {Type: authn.TypeHTTP, HTTPScheme: "bearer",
		JWT: &authn.JWTConfig{HMACSecret: strings.Repeat("s", 32), Issuer: "https://issuer.example", Audiences: []string{resource}}}}},
		authn.Options{ResourceMetadata: docURL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(auth.Close)
	meta, err := cardgen.NewResourceMetadata(cardgen.ProtectedResource{Resource: resource,
		AuthorizationServers: auth.AuthorizationServers(), BearerMethodsSupported: []string{"header"}}, "", cardgen.DefaultMaxAge)
	if err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, func(cfg *server.Config) {
		cfg.Auth, cfg.ProtectCard, cfg.ResourceMetadata = auth, true, meta
		cfg.Bindings = []server.NewBinding{server.GRPC(), server.HTTPJSON("/rest")}
	})

	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		resp, err := a.HTTP.Get(a.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil || doc["resource"] != resource {
			t.Errorf("GET %s: %s %v (%v); want the document", path, resp.Status, doc, err)
		}
	}

	want := `Bearer realm="a2a", resource_metadata="` + docURL + `"`
	for _, tt := range []struct {
		name, method, path, body string
	}{
		{"JSON-RPC", http.MethodPost, "/", rpcBody("GetTask", map[string]any{"id": "t"})},
		{"HTTP+JSON", http.MethodGet, "/rest/tasks/t", ""},
		{"the protected card", http.MethodGet, "/.well-known/agent-card.json", ""},
	} {
		req, _ := http.NewRequest(tt.method, a.URL+tt.path, strings.NewReader(tt.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		resp, err := a.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := resp.Header.Values("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || len(got) != 1 || got[0] != want {
			t.Errorf("%s: %s, challenges %q; want 401 with %q", tt.name, resp.Status, got, want)
		}
	}

	var trailer metadata.MD
	_, err = grpcClient(t, a.URL).GetTask(v10(t.Context()), &a2apb.GetTaskRequest{Id: "t"}, grpc.Trailer(&trailer))
	if got := trailer.Get("www-authenticate"); err == nil || len(got) != 1 || got[0] != want {
		t.Errorf("gRPC: %v, challenges %q; want %q", err, got, want)
	}
}

// TestResourceMetadataOff: without it, its paths are the JSON-RPC
// endpoint's like any other; and it needs an authenticator.
func TestResourceMetadataOff(t *testing.T) {
	a := newAgent(t, nil)
	cfg := a.Config
	resp, err := a.HTTP.Get(a.URL + "/.well-known/oauth-protected-resource")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Errorf("GET the metadata of an agent without it: %s", resp.Status)
	}
	meta, err := cardgen.NewResourceMetadata(cardgen.ProtectedResource{Resource: "https://agent.example/mcp"}, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ResourceMetadata = meta
	_, err = server.New(cfg)
	if err == nil || !strings.Contains(err.Error(), "needs one") {
		t.Errorf("resource metadata without an authenticator: %v", err)
	}
}
