package authn_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/crypto/bcrypt"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
)

// mixed declares four schemes; tests choose the requirement.
// The certificates are real, so the clock is too.
func mixed(t *testing.T, clk *clock, require []a2a.SecurityRequirement) (*authn.Authenticator, *x509.Certificate) {
	t.Helper()
	ca := newCA(t, "client CA")
	leaf := ca.issue(t, certOpts{cn: "workload", uri: "spiffe://example.org/workload"}).Leaf
	hash := string(must(bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)))
	return newAuth(t, authn.Config{
		Schemes: map[string]*authn.Scheme{
			"key":   {Type: "apiKey", In: "header", Name: "X-API-Key", Keys: []authn.APIKey{{Key: ciKey, Subject: "ci-bot", Scopes: []string{"tasks:read"}}}},
			"basic": {Type: "http", HTTPScheme: "basic", Users: []authn.User{{Username: "bob", Password: hash}}},
			"jwt": {Type: "http", HTTPScheme: "bearer", JWT: &authn.JWTConfig{
				Issuer: "https://issuer.example", Audiences: []string{"a2a-agent"}, PublicKeys: []string{publicPEM(&ecKey().PublicKey)}}},
			"mtls": {Type: "mutualTLS", MTLS: &authn.MTLSConfig{TrustedCAs: []string{ca.pem}}},
		},
		Require: require,
	}, authn.Options{Now: clk.Now}), leaf
}

func TestRequirementsOrOfAnds(t *testing.T) {
	clk := &clock{t: time.Now()}
	a, leaf := mixed(t, clk, []a2a.SecurityRequirement{
		{"key": {}, "mtls": {}},  // an API key from a known workload
		{"jwt": {"orders:read"}}, // or a token with the scope
	})
	withCert := func(r *http.Request) *http.Request {
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}
		return r
	}
	token := func(scope string) string {
		return mint(t, jwt.SigningMethodES256, ecKey(), "", claimsAt(clk.Now(), jwt.MapClaims{"scope": scope}))
	}
	tests := []struct {
		name    string
		req     *http.Request
		status  int    // 0 for success
		subject string // the primary credential's
	}{
		{"key and certificate", withCert(request("X-API-Key", ciKey)), 0, "ci-bot"},
		{"token with scope", bearer(token("orders:read")), 0, "alice"},
		{"token with scope and key: token is primary", request("Authorization", "Bearer "+token("orders:read"), "X-API-Key", ciKey), 0, "alice"},
		{"token with scope and a wrong key", request("Authorization", "Bearer "+token("orders:read"), "X-API-Key", "wrong-key-0123456789"), 0, "alice"},
		{"key alone", request("X-API-Key", ciKey), http.StatusUnauthorized, ""},
		{"certificate alone", withCert(request()), http.StatusUnauthorized, ""},
		{"basic is declared but not required", request("Authorization", basicHeader("bob", "pw")), http.StatusUnauthorized, ""},
		{"token without the scope", bearer(token("orders:write")), http.StatusForbidden, ""},
		{"nothing", request(), http.StatusUnauthorized, ""},
		{"wrong key and certificate", withCert(request("X-API-Key", "wrong-key-0123456789")), http.StatusUnauthorized, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, f := a.Authenticate(tt.req)
			if tt.status != 0 {
				if f == nil || f.Status != tt.status {
					t.Fatalf("Authenticate = %+v, %+v; want %d", id, f, tt.status)
				}
				return
			}
			if f != nil {
				t.Fatalf("refused: %v", f)
			}
			if id.Subject != tt.subject {
				t.Errorf("subject %q; want %q", id.Subject, tt.subject)
			}
		})
	}

	// Every challenge the requirement allows, once each; a token's names
	// the scopes the requirement asks of it.
	_, f := a.Authenticate(request())
	want := []string{`APIKey realm="a2a", in="header", name="X-API-Key"`, `MutualTLS realm="a2a"`, `Bearer realm="a2a", scope="orders:read"`}
	if !slices.Equal(f.Challenges, want) {
		t.Errorf("challenges %q; want %q", f.Challenges, want)
	}
	// A presented token that fails gets an error attribute; the key's does not.
	_, f = a.Authenticate(request("Authorization", "Bearer x.y.z"))
	if f.Challenges[2] != `Bearer realm="a2a", scope="orders:read", error="invalid_token", error_description="malformed token"` ||
		f.Message != "the credentials presented were not accepted" || !strings.Contains(f.Detail, `scheme "jwt": malformed token`) {
		t.Errorf("failure %+v", f)
	}
}

func TestIdentityCredentials(t *testing.T) {
	clk := &clock{t: time.Now()}
	a, leaf := mixed(t, clk, []a2a.SecurityRequirement{{"key": {}}})
	r := request("X-API-Key", ciKey, "Authorization", "Bearer "+mint(t, jwt.SigningMethodES256, ecKey(), "", claimsAt(clk.Now(), nil)))
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}
	id, f := a.Authenticate(r)
	if f != nil {
		t.Fatal(f)
	}
	var schemes []string
	for _, c := range id.Credentials {
		schemes = append(schemes, c.Scheme)
	}
	// Primary first: token, then API key, then certificate.
	if !slices.Equal(schemes, []string{"jwt", "key", "mtls"}) || id.Scheme != "jwt" || id.Owner() != "jwt:alice" {
		t.Errorf("credentials %v, primary %q", schemes, id.Scheme)
	}
	if id.For("mtls").Subject != "spiffe://example.org/workload" {
		t.Errorf("mtls credential %+v", id.For("mtls"))
	}
	// The bearer token an upstream may take in exchange, and its expiry,
	// which bounds how long the token it is exchanged for is kept.
	tok, exp := authn.BearerToken(r, id)
	if tok == "" || !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer "+tok) || !exp.Equal(id.For("jwt").Expires) || exp.IsZero() {
		t.Errorf("BearerToken = %q, %v; want the request's token and its exp", tok, exp)
	}
	if tok, exp := authn.BearerToken(request("X-API-Key", ciKey), &authn.Identity{Credentials: []*authn.Credential{id.For("key")}}); tok != "" || !exp.IsZero() {
		t.Errorf("BearerToken of an API key's identity = %q, %v; want none", tok, exp)
	}
}

func TestAnonymousAlternative(t *testing.T) {
	clk := &clock{t: time.Now()}
	a, _ := mixed(t, clk, []a2a.SecurityRequirement{{}, {"key": {}}})
	if id, f := a.Authenticate(request()); id != nil || f != nil {
		t.Errorf("no credentials: %+v, %+v; want anonymous", id, f)
	}
	if id, f := a.Authenticate(request("X-API-Key", ciKey)); f != nil || id.Subject != "ci-bot" {
		t.Errorf("a key: %+v, %+v", id, f)
	}
	// Credentials declared by a scheme the requirement does not name are
	// still an identity.
	if id, f := a.Authenticate(request("Authorization", basicHeader("bob", "pw"))); f != nil || id.Subject != "bob" {
		t.Errorf("basic: %+v, %+v", id, f)
	}
	// A bad credential is refused, not downgraded to anonymous.
	if _, f := a.Authenticate(request("X-API-Key", "wrong-key-0123456789")); f == nil || f.Status != http.StatusUnauthorized {
		t.Errorf("a wrong key: %+v; want a 401", f)
	}
	if got := a.CardRequirements(); len(got) != 2 || len(got[0]) != 0 {
		t.Errorf("card requirements %v", got)
	}
}

func TestChallenge(t *testing.T) {
	clk := &clock{t: time.Now()}
	tests := []struct {
		name    string
		require []a2a.SecurityRequirement
		want    []string
	}{
		{"the requirement's schemes", []a2a.SecurityRequirement{{}, {"key": {}}},
			[]string{`APIKey realm="a2a", in="header", name="X-API-Key"`}},
		{"every scheme when the requirement names none", []a2a.SecurityRequirement{{}},
			[]string{`Basic realm="a2a", charset="UTF-8"`, `Bearer realm="a2a"`, `APIKey realm="a2a", in="header", name="X-API-Key"`, `MutualTLS realm="a2a"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := mixed(t, clk, tt.require)
			f := a.Challenge()
			if f.Status != http.StatusUnauthorized || f.Reason != authn.ReasonUnauthenticated {
				t.Errorf("Challenge = %+v; want a 401", f)
			}
			if !slices.Equal(slices.Sorted(slices.Values(f.Challenges)), slices.Sorted(slices.Values(tt.want))) {
				t.Errorf("challenges %q, want %q", f.Challenges, tt.want)
			}
		})
	}
	var none *authn.Authenticator
	if f := none.Challenge(); f.Status != http.StatusUnauthorized {
		t.Errorf("nil authenticator: %+v", f)
	}
}

func TestAuthorize(t *testing.T) {
	clk := &clock{t: time.Now()}
	a, _ := mixed(t, clk, []a2a.SecurityRequirement{{"key": {}}, {"jwt": {}}})
	keyID, f := a.Authenticate(request("X-API-Key", ciKey))
	if f != nil {
		t.Fatal(f)
	}
	tokID, f := a.Authenticate(bearer(mint(t, jwt.SigningMethodES256, ecKey(), "", claimsAt(clk.Now(), jwt.MapClaims{"scope": "orders:write"}))))
	if f != nil {
		t.Fatal(f)
	}
	tests := []struct {
		name    string
		id      *authn.Identity
		reqs    []a2a.SecurityRequirement
		allowed bool
		message string
	}{
		{"no requirement", keyID, nil, true, ""},
		{"no requirement, anonymous", nil, nil, true, ""},
		{"key with its scope", keyID, []a2a.SecurityRequirement{{"key": {"tasks:read"}}}, true, ""},
		{"key without the scope", keyID, []a2a.SecurityRequirement{{"key": {"admin"}}}, false, `scheme "key" with scopes [admin]`},
		{"token needed, key used", keyID, []a2a.SecurityRequirement{{"jwt": {"orders:write"}}}, false, `scheme "jwt" with scopes [orders:write]`},
		{"token with the scope", tokID, []a2a.SecurityRequirement{{"jwt": {"orders:write"}}}, true, ""},
		{"one alternative suffices", tokID, []a2a.SecurityRequirement{{"key": {}}, {"jwt": {}}}, true, ""},
		{"both needed", tokID, []a2a.SecurityRequirement{{"key": {}, "jwt": {}}}, false, `scheme "key"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := a.Authorize(tt.id, compile(t, a, tt.reqs))
			if tt.allowed != (f == nil) {
				t.Fatalf("Authorize = %+v; want allowed %v", f, tt.allowed)
			}
			if f == nil {
				return
			}
			if f.Status != http.StatusForbidden || f.Reason != authn.ReasonUnauthorized || !strings.Contains(f.Message, tt.message) {
				t.Errorf("failure %+v; want a 403 naming %q", f, tt.message)
			}
		})
	}
	// An anonymous caller is asked to authenticate, with the challenges of
	// the schemes the requirement names.
	f = a.Authorize(nil, compile(t, a, []a2a.SecurityRequirement{{"key": {}}, {"jwt": {"orders:write"}}}))
	if f == nil || f.Status != http.StatusUnauthorized || f.Reason != authn.ReasonUnauthenticated ||
		!strings.Contains(f.Message, `scheme "key", or scheme "jwt" with scopes [orders:write]`) {
		t.Errorf("anonymous: %+v; want a 401 naming both alternatives", f)
	}
	if f != nil && !slices.Equal(f.Challenges, []string{`APIKey realm="a2a", in="header", name="X-API-Key"`, `Bearer realm="a2a", scope="orders:write"`}) {
		t.Errorf("anonymous: challenges %q", f.Challenges)
	}
	if e := f.RPCError(); e.Code != a2a.CodeUnauthenticated {
		t.Errorf("anonymous: code %d", e.Code)
	}

	f = a.Authorize(keyID, compile(t, a, []a2a.SecurityRequirement{{"jwt": {"orders:write"}}}))
	if !slices.Equal(f.Challenges, []string{`Bearer realm="a2a", error="insufficient_scope", scope="orders:write"`}) {
		t.Errorf("challenges %q", f.Challenges)
	}
}

func TestCacheBounded(t *testing.T) {
	clk := &clock{t: time.Now()}
	a := newAuth(t, authn.Config{CacheSize: 4, Schemes: map[string]*authn.Scheme{
		"jwt": {Type: "http", HTTPScheme: "bearer", JWT: &authn.JWTConfig{PublicKeys: []string{publicPEM(&ecKey().PublicKey)}}},
	}}, authn.Options{Now: clk.Now})
	// More distinct tokens than the cache holds all verify, and each still
	// verifies when used again.
	var toks []string
	for i := range 20 {
		toks = append(toks, mint(t, jwt.SigningMethodES256, ecKey(), "", claimsAt(clk.Now(), jwt.MapClaims{"n": i})))
	}
	for range 2 {
		for _, tok := range toks {
			if _, f := a.Authenticate(bearer(tok)); f != nil {
				t.Fatal(f)
			}
		}
	}
}

// compile compiles reqs, which the test expects to be valid.
func compile(t testing.TB, a *authn.Authenticator, reqs []a2a.SecurityRequirement) *authn.Requirements {
	t.Helper()
	compiled, err := a.CompileRequirements(reqs)
	if err != nil {
		t.Fatalf("CompileRequirements(%v): %v", reqs, err)
	}
	return compiled
}

// TestCompileRequirements: a requirement that names an undeclared scheme
// cannot be met, so it is refused when compiled, before any request.
func TestCompileRequirements(t *testing.T) {
	a, _ := mixed(t, &clock{t: time.Now()}, nil)
	if _, err := a.CompileRequirements([]a2a.SecurityRequirement{{"key": {}}, {"nope": {}}}); err == nil ||
		!strings.Contains(err.Error(), `scheme "nope" is not declared`) {
		t.Errorf("an undeclared scheme: %v", err)
	}
	if reqs, err := a.CompileRequirements(nil); reqs != nil || err != nil {
		t.Errorf("no requirement: %v, %v; want nil, nil", reqs, err)
	}
}

// A failure names the scheme and a fixed cause that metrics count by,
// never what was presented.
func TestFailureSchemeAndCause(t *testing.T) {
	clk := &clock{t: time.Now()}
	a, _ := mixed(t, clk, []a2a.SecurityRequirement{{"key": {}}, {"jwt": {"orders:read"}}})
	expired := mint(t, jwt.SigningMethodES256, ecKey(), "", claimsAt(clk.Now().Add(-2*time.Hour), jwt.MapClaims{"scope": "orders:read"}))
	noScope := mint(t, jwt.SigningMethodES256, ecKey(), "", claimsAt(clk.Now(), jwt.MapClaims{"scope": "orders:write"}))
	tests := []struct {
		name          string
		req           *http.Request
		scheme, cause string
	}{
		{"nothing", request(), "", authn.CauseNoCredentials},
		{"unknown key", request("X-API-Key", "wrong-key-0123456789"), "key", "the API key is not valid"},
		{"expired token", bearer(expired), "jwt", "token expired"},
		{"token without the scope", bearer(noScope), "jwt", authn.CauseInsufficientScope},
		{"a scheme not required", request("Authorization", basicHeader("bob", "pw")), "", authn.CauseNotAccepted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, f := a.Authenticate(tt.req)
			if f == nil || f.Scheme != tt.scheme || f.Cause != tt.cause {
				t.Fatalf("failure %+v; want scheme %q, cause %q", f, tt.scheme, tt.cause)
			}
		})
	}
	if f := a.Authorize(nil, compile(t, a, []a2a.SecurityRequirement{{"key": {}}})); f.Scheme != "" || f.Cause != authn.CauseNoCredentials {
		t.Errorf("anonymous refused: %+v", f)
	}
	if f := a.Challenge(); f.Cause != authn.CauseNoCredentials {
		t.Errorf("challenge: %+v", f)
	}
}
