package authn_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
)

const mcpResource = "https://agent.example/mcp"

// TestProtectedResource holds each kind of scheme to what the protected
// resource metadata says of it (does it take tokens, whose) and to the
// audience rule: with MCP on, a token must be for the MCP endpoint.
func TestProtectedResource(t *testing.T) {
	secret := strings.Repeat("s", 32)
	key := []authn.APIKey{{Key: strings.Repeat("k", 16), Subject: "k", Scopes: []string{"read"}}}
	flows := &authn.Flows{ClientCredentials: &authn.Flow{TokenURL: "https://idp.example/token", Scopes: map[string]string{"orders:read": ""}}}
	// Discovery URLs on a closed loopback port: their background fetch
	// fails at once, and the test needs nothing from it.
	const idp = "http://127.0.0.1:1"
	tests := []struct {
		name        string
		scheme      *authn.Scheme
		tokens      bool
		servers     []string
		audienceErr string // "" when the audience rule is met
	}{
		{"api key", &authn.Scheme{Type: "apiKey", In: "header", Name: "X-Key", Keys: key}, false, nil, ""},
		{"bearer JWT, issuer, audience", &authn.Scheme{Type: "http", HTTPScheme: "bearer",
			JWT: &authn.JWTConfig{HMACSecret: secret, Issuer: "https://issuer.example", Audiences: []string{"a2a", mcpResource}}},
			true, []string{"https://issuer.example"}, ""},
		{"bearer JWT without audiences", &authn.Scheme{Type: "http", HTTPScheme: "bearer",
			JWT: &authn.JWTConfig{HMACSecret: secret}},
			true, nil, `scheme "s": jwt audiences (none) lack ` + mcpResource},
		{"bearer JWT for another audience", &authn.Scheme{Type: "http", HTTPScheme: "bearer",
			JWT: &authn.JWTConfig{HMACSecret: secret, Audiences: []string{"https://agent.example/"}}},
			true, nil, `jwt audiences (https://agent.example/) lack ` + mcpResource + `, the resource MCP clients ask tokens for (RFC 8707): add it beside the others (Caddyfile: audience ` + mcpResource + `)`},
		{"openIdConnect: the issuer its discovery URL ends in", &authn.Scheme{Type: "openIdConnect",
			OpenIDConnectURL: idp + "/realms/agents/.well-known/openid-configuration", JWT: &authn.JWTConfig{Audiences: []string{mcpResource}}},
			true, []string{idp + "/realms/agents"}, ""},
		{"openIdConnect: the configured issuer first", &authn.Scheme{Type: "openIdConnect",
			OpenIDConnectURL: idp + "/.well-known/openid-configuration", JWT: &authn.JWTConfig{Issuer: "https://login.example/", Audiences: []string{"x"}}},
			true, []string{"https://login.example/"}, `jwt audiences (x) lack`},
		{"oauth2: the issuer its RFC 8414 URL is made from", &authn.Scheme{Type: "oauth2", Flows: flows,
			MetadataURL: idp + "/.well-known/oauth-authorization-server/tenant", JWT: &authn.JWTConfig{Audiences: []string{mcpResource}}},
			true, []string{idp + "/tenant"}, ""},
		{"oauth2: keys of its own, no metadata", &authn.Scheme{Type: "oauth2", Flows: flows,
			JWT: &authn.JWTConfig{HMACSecret: secret, Audiences: []string{mcpResource}}},
			true, nil, ""},
		{"introspection without audiences: a warning", &authn.Scheme{Type: "http", HTTPScheme: "bearer",
			Introspection: &authn.IntrospectionConfig{URL: idp + "/introspect"}},
			true, nil, ""},
		{"introspection for another audience", &authn.Scheme{Type: "http", HTTPScheme: "bearer",
			Introspection: &authn.IntrospectionConfig{URL: idp + "/introspect", Audiences: []string{"other"}}},
			true, nil, `scheme "s": introspection audiences (other) lack ` + mcpResource},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAuth(t, authn.Config{Schemes: map[string]*authn.Scheme{"s": tt.scheme}}, authn.Options{})
			if got := a.TakesTokens(); got != tt.tokens {
				t.Errorf("TakesTokens = %v, want %v", got, tt.tokens)
			}
			if got := a.AuthorizationServers(); !slices.Equal(got, tt.servers) {
				t.Errorf("AuthorizationServers = %q, want %q", got, tt.servers)
			}
			err := a.CheckAudience(mcpResource)
			switch {
			case tt.audienceErr == "" && err != nil:
				t.Errorf("CheckAudience: %v", err)
			case tt.audienceErr != "" && (err == nil || !strings.Contains(err.Error(), tt.audienceErr)):
				t.Errorf("CheckAudience = %v, want an error containing %q", err, tt.audienceErr)
			}
		})
	}
}

func TestIntrospectionWithoutAudienceWarns(t *testing.T) {
	var logs logBuffer
	a := newAuth(t, authn.Config{Schemes: map[string]*authn.Scheme{"opaque": {Type: "http", HTTPScheme: "bearer",
		Introspection: &authn.IntrospectionConfig{URL: "http://127.0.0.1:1/introspect"}}}}, authn.Options{Logger: logs.logger()})
	if err := a.CheckAudience(mcpResource); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "introspection checks no audience") || !strings.Contains(logs.String(), `"scheme": "opaque"`) {
		t.Errorf("no warning naming the scheme in %q", logs.String())
	}
}

func TestAuthorizationServersOnce(t *testing.T) {
	secret := strings.Repeat("s", 32)
	a := newAuth(t, authn.Config{Schemes: map[string]*authn.Scheme{
		"b": {Type: "http", HTTPScheme: "bearer", JWT: &authn.JWTConfig{HMACSecret: secret, Issuer: "https://one.example"}},
		"a": {Type: "http", HTTPScheme: "bearer", JWT: &authn.JWTConfig{HMACSecret: secret, Issuer: "https://two.example"}},
		"c": {Type: "http", HTTPScheme: "bearer", JWT: &authn.JWTConfig{HMACSecret: secret, Issuer: "https://two.example"}},
	}}, authn.Options{})
	if got, want := a.AuthorizationServers(), []string{"https://two.example", "https://one.example"}; !slices.Equal(got, want) {
		t.Errorf("AuthorizationServers = %q, want %q (by scheme name, each once)", got, want)
	}
	var none *authn.Authenticator
	if none.TakesTokens() || none.AuthorizationServers() != nil {
		t.Error("a nil authenticator takes tokens")
	}
}

func TestTokenScopes(t *testing.T) {
	secret := strings.Repeat("s", 32)
	a := newAuth(t, authn.Config{Schemes: map[string]*authn.Scheme{
		"key": {Type: "apiKey", In: "header", Name: "X-Key", Keys: []authn.APIKey{{Key: strings.Repeat("k", 16), Subject: "k", Scopes: []string{"admin"}}}},
		"jwt": {Type: "http", HTTPScheme: "bearer", JWT: &authn.JWTConfig{HMACSecret: secret}},
	}}, authn.Options{})
	got := a.TokenScopes([]a2a.SecurityRequirement{
		{"jwt": {"orders:read"}},
		{"key": {"admin"}, "jwt": {"orders:write", "orders:read"}},
		{"key": {}},
	})
	if want := []string{"orders:read", "orders:write"}; !slices.Equal(got, want) {
		t.Errorf("TokenScopes = %q, want %q: the token scheme's, each once, not the key's", got, want)
	}
}

// TestResourceMetadataChallenge: with a resource metadata URL, every
// Bearer challenge names it, 401 and 403 alike, and names the scopes the
// requirement asks; other schemes' challenges are as they were.
func TestResourceMetadataChallenge(t *testing.T) {
	const doc = "https://agent.example/.well-known/oauth-protected-resource/mcp"
	secret := strings.Repeat("s", 32)
	a := newAuth(t, authn.Config{
		Schemes: map[string]*authn.Scheme{
			"key": {Type: "apiKey", In: "header", Name: "X-Key", Keys: []authn.APIKey{{Key: strings.Repeat("k", 16), Subject: "k"}}},
			"jwt": {Type: "http", HTTPScheme: "bearer", JWT: &authn.JWTConfig{HMACSecret: secret}},
		},
	}, authn.Options{ResourceMetadata: doc})
	bearer := `Bearer realm="a2a", resource_metadata="` + doc + `"`
	apiKey := `APIKey realm="a2a", in="header", name="X-Key"`

	_, f := a.Authenticate(request())
	if f == nil || f.Status != http.StatusUnauthorized || !slices.Equal(f.Challenges, []string{bearer, apiKey}) {
		t.Fatalf("no credentials: %+v; want a 401 with %q and %q", f, bearer, apiKey)
	}
	_, f = a.Authenticate(request("Authorization", "Bearer x.y.z"))
	if f == nil || f.Challenges[0] != bearer+`, error="invalid_token", error_description="malformed token"` {
		t.Errorf("a bad token: %+v", f)
	}
	reqs, err := a.CompileRequirements([]a2a.SecurityRequirement{{"jwt": {"orders:read"}}})
	if err != nil {
		t.Fatal(err)
	}
	if f := a.Authorize(nil, reqs); f == nil || !slices.Equal(f.Challenges, []string{bearer + `, scope="orders:read"`}) {
		t.Errorf("anonymous caller of a scoped skill: %+v", f)
	}
	keyID, f := a.Authenticate(request("X-Key", strings.Repeat("k", 16)))
	if f != nil {
		t.Fatal(f)
	}
	if f := a.Authorize(keyID, reqs); f == nil || f.Status != http.StatusForbidden ||
		!slices.Equal(f.Challenges, []string{bearer + `, error="insufficient_scope", scope="orders:read"`}) {
		t.Errorf("a key caller of a scoped skill: %+v", f)
	}
	if f := a.Challenge(); !slices.Contains(f.Challenges, bearer) {
		t.Errorf("Challenge: %q lacks %q", f.Challenges, bearer)
	}
}

func TestResourceMetadataURLChecked(t *testing.T) {
	for _, bad := range []string{"/.well-known/oauth-protected-resource", "ftp://agent.example/x"} {
		if a, err := authn.New(authn.Config{}, authn.Options{ResourceMetadata: bad}); err == nil {
			a.Close()
			t.Errorf("ResourceMetadata %q accepted", bad)
		}
	}
}
