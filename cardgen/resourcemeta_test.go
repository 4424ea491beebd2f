package cardgen_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/cardgen"
)

func TestResourceMetadata(t *testing.T) {
	tests := []struct {
		resource string
		endpoint string   // the resource's path as the handler sees it
		url      string   // of the document
		serves   []string // paths that answer, as the handler sees them
		refuses  []string // paths that do not
	}{
		{"https://agent.example/mcp", "", "https://agent.example/.well-known/oauth-protected-resource/mcp",
			[]string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"},
			[]string{"/mcp", "/.well-known/oauth-protected-resource/", "/.well-known/oauth-protected-resource/mcp/x"}},
		{"http://127.0.0.1:8080/api/mcp/", "", "http://127.0.0.1:8080/.well-known/oauth-protected-resource/api/mcp",
			[]string{"/.well-known/oauth-protected-resource/api/mcp", "/.well-known/oauth-protected-resource"}, nil},
		{"https://agent.example", "", "https://agent.example/.well-known/oauth-protected-resource",
			[]string{"/.well-known/oauth-protected-resource"}, []string{"/.well-known/oauth-protected-resource/"}},
		// Under handle_path /agents/orders/*: served below the prefix,
		// where the proxy still sends requests.
		{"https://agent.example/agents/orders/mcp", "/mcp",
			"https://agent.example/agents/orders/.well-known/oauth-protected-resource/mcp",
			[]string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"},
			[]string{"/.well-known/oauth-protected-resource/agents/orders/mcp"}},
		{"https://agent.example/agents/orders/", "/", "https://agent.example/agents/orders/.well-known/oauth-protected-resource",
			[]string{"/.well-known/oauth-protected-resource"}, nil},
		// The handler sees paths unescaped.
		{"https://agent.example/outils-%C3%A9", "", "https://agent.example/.well-known/oauth-protected-resource/outils-%C3%A9",
			[]string{"/.well-known/oauth-protected-resource/outils-é"}, []string{"/.well-known/oauth-protected-resource/outils-%C3%A9"}},
	}
	for _, tt := range tests {
		t.Run(tt.resource, func(t *testing.T) {
			pr := cardgen.ProtectedResource{Resource: tt.resource, AuthorizationServers: []string{"https://issuer.example"},
				ScopesSupported: []string{"orders:read"}, BearerMethodsSupported: []string{"header"}, ResourceName: "Agent"}
			m, err := cardgen.NewResourceMetadata(pr, tt.endpoint, 90*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if m.URL() != tt.url {
				t.Errorf("URL = %s, want %s", m.URL(), tt.url)
			}
			if u, err := cardgen.ResourceMetadataURL(tt.resource, tt.endpoint); u != tt.url || err != nil {
				t.Errorf("ResourceMetadataURL = %s, %v; want %s", u, err, tt.url)
			}
			for _, p := range tt.serves {
				if !m.Serves(p) {
					t.Errorf("does not serve %s", p)
				}
			}
			for _, p := range tt.refuses {
				if m.Serves(p) {
					t.Errorf("serves %s", p)
				}
			}
			w := httptest.NewRecorder()
			m.ServeHTTP(w, httptest.NewRequest(http.MethodGet, tt.serves[0], nil))
			var got cardgen.ProtectedResource
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || !reflect.DeepEqual(got, pr) {
				t.Errorf("served %s (%v), want %+v", w.Body, err, pr)
			}
			if h := w.Header(); w.Code != http.StatusOK || h.Get("Content-Type") != "application/json" ||
				h.Get("Cache-Control") != "public, max-age=90" || h.Get("ETag") == "" || h.Get("Last-Modified") == "" {
				t.Errorf("answer %d with headers %v: want 200 and the card's cache headers", w.Code, h)
			}
			r := httptest.NewRequest(http.MethodGet, tt.serves[0], nil)
			r.Header.Set("If-None-Match", w.Header().Get("ETag"))
			w = httptest.NewRecorder()
			m.ServeHTTP(w, r)
			if w.Code != http.StatusNotModified {
				t.Errorf("revalidation: %d, want 304", w.Code)
			}
		})
	}
}

// TestResourceMetadataMembers: the members RFC 9728 defines, by their
// names; empty ones are left out.
func TestResourceMetadataMembers(t *testing.T) {
	m, err := cardgen.NewResourceMetadata(cardgen.ProtectedResource{Resource: "https://agent.example/mcp",
		BearerMethodsSupported: []string{"header"}}, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	m.ServeHTTP(w, httptest.NewRequest(http.MethodGet, cardgen.WellKnownResourceMetadata, nil))
	if want := `{"resource":"https://agent.example/mcp","bearer_methods_supported":["header"]}`; w.Body.String() != want {
		t.Errorf("served %s, want %s", w.Body, want)
	}
	if cc := w.Header().Get("Cache-Control"); cc != "public, max-age=0" {
		t.Errorf("Cache-Control %q", cc)
	}
}

func TestResourceMetadataErrors(t *testing.T) {
	tests := []struct {
		pr       cardgen.ProtectedResource
		endpoint string
		want     string
	}{
		{cardgen.ProtectedResource{}, "", "is not an absolute http or https URL"},
		{cardgen.ProtectedResource{Resource: "/mcp"}, "", "is not an absolute http or https URL"},
		{cardgen.ProtectedResource{Resource: "https://agent.example/mcp#x"}, "", "has a fragment"},
		{cardgen.ProtectedResource{Resource: "https://u:secret@agent.example/mcp"}, "", "https://u:xxxxx@agent.example/mcp holds credentials"},
		{cardgen.ProtectedResource{Resource: "https://agent.example/mcp"}, "/tools", `does not end with the endpoint's path "/tools"`},
		{cardgen.ProtectedResource{Resource: "https://agent.example/orders/mcp/"}, "/mcp", `does not end with the endpoint's path "/mcp"`},
		{cardgen.ProtectedResource{Resource: "https://agent.example/ordersmcp"}, "/mcp", `does not end with the endpoint's path "/mcp"`},
		{cardgen.ProtectedResource{Resource: "https://agent.example/mcp", AuthorizationServers: []string{"https://issuer.example?tenant=1"}}, "",
			`authorization server "https://issuer.example?tenant=1" is not an issuer identifier`},
	}
	for _, tt := range tests {
		_, err := cardgen.NewResourceMetadata(tt.pr, tt.endpoint, 0)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%+v at %q: error %v, want one containing %q (and no password)", tt.pr, tt.endpoint, err, tt.want)
		}
		if _, err := cardgen.ResourceMetadataURL(tt.pr.Resource, tt.endpoint); len(tt.pr.AuthorizationServers) == 0 && err == nil {
			t.Errorf("ResourceMetadataURL(%q, %q) accepted", tt.pr.Resource, tt.endpoint)
		}
	}
	if _, err := cardgen.NewResourceMetadata(cardgen.ProtectedResource{Resource: "https://agent.example/mcp"}, "", -time.Second); err == nil {
		t.Error("a negative max-age is accepted")
	}
}
