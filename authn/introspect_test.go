package authn_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/confval"
)

func introspectAuth(t *testing.T, p *idp, clk *clock, logs *logBuffer, mutate func(*authn.Scheme)) *authn.Authenticator {
	t.Helper()
	sc := &authn.Scheme{Type: "oauth2",
		Flows: &authn.Flows{ClientCredentials: &authn.Flow{TokenURL: "https://idp.example/token",
			Scopes: map[string]string{"orders:read": "Read"}}},
		Introspection: &authn.IntrospectionConfig{
			URL: p.URL + "/introspect", ClientID: p.clientID, ClientSecret: "{env.INTROSPECT_SECRET}",
			CacheTTL: confval.Duration(time.Minute), Timeout: confval.Duration(time.Second),
		},
	}
	if mutate != nil {
		mutate(sc)
	}
	opts := authn.Options{Now: clk.Now, LookupEnv: func(name string) (string, bool) {
		return p.secret, name == "INTROSPECT_SECRET"
	}}
	if logs != nil {
		opts.Logger = logs.logger()
	}
	return newAuth(t, authn.Config{Schemes: map[string]*authn.Scheme{"oauth": sc}}, opts)
}

func TestIntrospection(t *testing.T) {
	clk := newClock()
	p := newIDP(t)
	a := introspectAuth(t, p, clk, nil, nil)
	const tok = "opaque-2YotnFZFEjr1zCsicMWpAA"
	p.setToken(tok, map[string]any{"active": true, "sub": "svc-42", "scope": "orders:read", "client_id": "svc",
		"exp": float64(clk.Now().Add(10 * time.Minute).Unix())})

	id, f := a.Authenticate(bearer(tok))
	if f != nil {
		t.Fatalf("refused: %v", f)
	}
	if id.Subject != "svc-42" || !reflect.DeepEqual(id.Scopes, []string{"orders:read"}) || id.Claims["client_id"] != "svc" || id.Owner() != "oauth:svc-42" {
		t.Errorf("identity %+v", id)
	}
	// Cached: no second call within the TTL.
	if _, f := a.Authenticate(bearer(tok)); f != nil || p.intro.Load() != 1 {
		t.Errorf("second use: %v, %d calls", f, p.intro.Load())
	}
	// After the TTL it is asked again; revoked now, it is refused.
	p.setToken(tok, map[string]any{"active": false})
	clk.Advance(61 * time.Second)
	if _, f := a.Authenticate(bearer(tok)); f == nil || !strings.Contains(f.Challenges[0], "token inactive") {
		t.Errorf("revoked token: %+v", f)
	}
	if p.intro.Load() != 2 {
		t.Errorf("%d calls; want 2", p.intro.Load())
	}
}

func TestIntrospectionCacheEndsWithToken(t *testing.T) {
	clk := newClock()
	p := newIDP(t)
	a := introspectAuth(t, p, clk, nil, nil)
	const tok = "short-lived-token-value"
	p.setToken(tok, map[string]any{"active": true, "sub": "svc", "exp": float64(clk.Now().Add(10 * time.Second).Unix())})
	if _, f := a.Authenticate(bearer(tok)); f != nil {
		t.Fatal(f)
	}
	clk.Advance(11 * time.Second)
	if _, f := a.Authenticate(bearer(tok)); f == nil || !strings.Contains(f.Challenges[0], "token expired") {
		t.Errorf("past its exp, within the cache TTL: %+v", f)
	}
}

func TestIntrospectionBadAnswers(t *testing.T) {
	clk := newClock()
	const tok = "opaque-token-for-bad-answers"
	tests := []struct {
		name   string
		mode   string
		answer map[string]any
		mutate func(*authn.Scheme)
	}{
		{"unknown token", "", nil, nil},
		{"inactive", "", map[string]any{"active": false, "sub": "svc"}, nil},
		{"active not a boolean", "", map[string]any{"active": "true", "sub": "svc"}, nil},
		{"expired", "", map[string]any{"active": true, "sub": "svc", "exp": float64(clk.Now().Add(-time.Second).Unix())}, nil},
		{"not yet valid", "", map[string]any{"active": true, "sub": "svc", "nbf": float64(clk.Now().Add(time.Hour).Unix())}, nil},
		{"no subject", "", map[string]any{"active": true}, nil},
		{"wrong audience", "", map[string]any{"active": true, "sub": "svc", "aud": []any{"other"}},
			func(s *authn.Scheme) { s.Introspection.Audiences = []string{"a2a-agent"} }},
		{"no audience when one is required", "", map[string]any{"active": true, "sub": "svc"},
			func(s *authn.Scheme) { s.Introspection.Audiences = []string{"a2a-agent"} }},
		{"endpoint down", "500", nil, nil},
		{"garbage", "garbage", nil, nil},
		{"hangs", "hang", nil, nil},
		{"wrong client secret", "", map[string]any{"active": true, "sub": "svc"},
			func(s *authn.Scheme) { s.Introspection.ClientSecret = "not-the-secret" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newIDP(t)
			p.setMode(tt.mode)
			if tt.answer != nil {
				p.setToken(tok, tt.answer)
			}
			logs := &logBuffer{}
			a := introspectAuth(t, p, clk, logs, tt.mutate)
			start := time.Now()
			id, f := a.Authenticate(bearer(tok))
			if f == nil || f.Status != http.StatusUnauthorized || id != nil {
				t.Fatalf("Authenticate = %+v, %+v; want a 401", id, f)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v; the timeout is 1s", d)
			}
			assertNoSecret(t, failureText(f)+logs.String(), tok)
			assertNoSecret(t, failureText(f)+logs.String(), p.secret)
		})
	}
}

// TestJWTAndIntrospection: one scheme verifies JWTs locally and
// introspects everything else.
func TestJWTAndIntrospection(t *testing.T) {
	clk := newClock()
	p := newIDP(t)
	a := introspectAuth(t, p, clk, nil, func(s *authn.Scheme) {
		s.JWT = &authn.JWTConfig{PublicKeys: []string{publicPEM(&ecKey().PublicKey)}, Audiences: []string{"a2a-agent"}}
	})
	p.setToken("opaque-value-1234567890", map[string]any{"active": true, "sub": "svc"})
	if _, f := a.Authenticate(bearer("opaque-value-1234567890")); f != nil {
		t.Errorf("opaque token: %v", f)
	}
	if _, f := a.Authenticate(bearer(mint(t, jwt.SigningMethodES256, ecKey(), "", claimsAt(clk.Now(), nil)))); f != nil {
		t.Errorf("JWT: %v", f)
	}
	// A JWT-shaped token is never sent to the introspection endpoint.
	before := p.intro.Load()
	_, _ = a.Authenticate(bearer(mint(t, jwt.SigningMethodES384, ec384Key(), "", claimsAt(clk.Now(), nil))))
	if p.intro.Load() != before {
		t.Error("a JWT that failed was introspected")
	}
}

// A subject taken from client_id or username is marked with where it came
// from, so a client never shares an owner (and tasks) with a user whose
// sub or username is the same string.
func TestIntrospectionSubjectNamesItsSource(t *testing.T) {
	clk := newClock()
	p := newIDP(t)
	a := introspectAuth(t, p, clk, nil, nil)
	exp := float64(clk.Now().Add(10 * time.Minute).Unix())
	tests := []struct {
		token  string
		answer map[string]any
		owner  string
	}{
		{"opaque-user-alice", map[string]any{"active": true, "sub": "alice", "exp": exp}, "oauth:alice"},
		{"opaque-client-alice", map[string]any{"active": true, "client_id": "alice", "exp": exp}, "oauth:client_id:alice"},
		{"opaque-username-alice", map[string]any{"active": true, "username": "alice", "exp": exp}, "oauth:username:alice"},
	}
	for _, tt := range tests {
		p.setToken(tt.token, tt.answer)
		id, f := a.Authenticate(bearer(tt.token))
		if f != nil {
			t.Fatalf("%s: refused: %v", tt.token, f)
		}
		if id.Owner() != tt.owner {
			t.Errorf("%s: owner %q, want %q", tt.token, id.Owner(), tt.owner)
		}
	}
}
