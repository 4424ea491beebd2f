package authn_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/confval"
)

// jwksAuth verifies tokens against p's JWKS. The background refresh is an
// hour away unless the test changes it, so only the tests' own requests
// cause fetches.
func jwksAuth(t *testing.T, p *idp, clk *clock, logs *logBuffer, mutate func(*authn.JWTConfig)) *authn.Authenticator {
	t.Helper()
	cfg := &authn.JWTConfig{
		Issuer:             "https://issuer.example",
		Audiences:          []string{"a2a-agent"},
		JWKSURL:            p.URL + "/jwks",
		RefreshInterval:    confval.Duration(time.Hour),
		MinRefreshInterval: confval.Duration(time.Minute),
		FetchTimeout:       confval.Duration(2 * time.Second),
	}
	if mutate != nil {
		mutate(cfg)
	}
	opts := authn.Options{Now: clk.Now}
	if logs != nil {
		opts.Logger = logs.logger()
	}
	a := newAuth(t, authn.Config{Schemes: map[string]*authn.Scheme{
		"jwt": {Type: "http", HTTPScheme: "bearer", JWT: cfg},
	}}, opts)
	if p.mode != "hang" {
		authn.WaitForFetches(a) // the first keys, fetched in the background
	}
	return a
}

func TestJWKS(t *testing.T) {
	clk := newClock()
	p := newIDP(t, jwk("rsa-1", "RS256", &rsaKey().PublicKey), jwk("ec-1", "", &ecKey().PublicKey), jwk("ed-1", "EdDSA", edKey().Public()))
	a := jwksAuth(t, p, clk, nil, nil)
	for _, tt := range []struct {
		kid    string
		method jwt.SigningMethod
		key    any
	}{
		{"rsa-1", jwt.SigningMethodRS256, rsaKey()},
		{"ec-1", jwt.SigningMethodES256, ecKey()},
		{"ed-1", jwt.SigningMethodEdDSA, edKey()},
		{"", jwt.SigningMethodES256, ecKey()}, // no kid: every key that fits is tried
	} {
		if _, f := a.Authenticate(bearer(mint(t, tt.method, tt.key, tt.kid, claimsAt(clk.Now(), nil)))); f != nil {
			t.Errorf("kid %q %s: %v", tt.kid, tt.method.Alg(), f)
		}
	}
	// A JWK's alg binds the key: rsa-1 says RS256, so PS256 is refused.
	if _, f := a.Authenticate(bearer(mint(t, jwt.SigningMethodPS256, rsaKey(), "rsa-1", claimsAt(clk.Now(), nil)))); f == nil {
		t.Error("PS256 accepted with a key published for RS256")
	}
	// A kid names one key: a token signed by another key under that kid fails.
	if _, f := a.Authenticate(bearer(mint(t, jwt.SigningMethodES256, ecKey(), "rsa-1", claimsAt(clk.Now(), nil)))); f == nil {
		t.Error("an ES256 token under an RSA key's kid was accepted")
	}
	if n := p.hits.Load(); n != 1 {
		t.Errorf("%d JWKS fetches; want the one at start", n)
	}
}

func TestJWKSUnknownKid(t *testing.T) {
	clk := newClock()
	p := newIDP(t, jwk("old", "RS256", &rsaKey().PublicKey))
	a := jwksAuth(t, p, clk, nil, nil)
	rotated := mint(t, jwt.SigningMethodRS256, rsaKey2(), "new", claimsAt(clk.Now(), jwt.MapClaims{"exp": clk.Now().Add(3 * time.Hour).Unix()}))

	// Unknown kid, JWKS up but the key not published: refused, one fetch.
	clk.Advance(2 * time.Minute)
	if _, f := a.Authenticate(bearer(rotated)); f == nil || !strings.Contains(f.Challenges[0], "unknown signing key") {
		t.Fatalf("unknown kid: %+v", f)
	}
	if n := p.hits.Load(); n != 2 {
		t.Fatalf("%d fetches; want 2 (start, unknown kid)", n)
	}
	// Within the minimum interval, more unknown kids cause no fetch.
	p.setKeys(jwk("old", "RS256", &rsaKey().PublicKey), jwk("new", "RS256", &rsaKey2().PublicKey))
	for range 5 {
		if _, f := a.Authenticate(bearer(rotated)); f == nil {
			t.Fatal("accepted before a refresh was allowed")
		}
	}
	if n := p.hits.Load(); n != 2 {
		t.Fatalf("%d fetches; the unknown-kid refresh is not rate-limited", n)
	}
	// Once the interval has passed, the rotated key is fetched and accepted.
	clk.Advance(time.Minute)
	if _, f := a.Authenticate(bearer(rotated)); f != nil {
		t.Fatalf("rotated key refused after a refresh: %v", f)
	}
	if n := p.hits.Load(); n != 3 {
		t.Errorf("%d fetches; want 3", n)
	}
}

func TestJWKSDownKeepsLastGoodKeys(t *testing.T) {
	clk := newClock()
	logs := &logBuffer{}
	p := newIDP(t, jwk("k1", "RS256", &rsaKey().PublicKey))
	a := jwksAuth(t, p, clk, logs, nil)
	good := mint(t, jwt.SigningMethodRS256, rsaKey(), "k1", claimsAt(clk.Now(), jwt.MapClaims{"exp": clk.Now().Add(3 * time.Hour).Unix()}))
	unknown := mint(t, jwt.SigningMethodRS256, rsaKey2(), "k2", claimsAt(clk.Now(), jwt.MapClaims{"exp": clk.Now().Add(3 * time.Hour).Unix()}))

	for _, mode := range []string{"500", "garbage", "huge"} {
		t.Run(mode, func(t *testing.T) {
			p.setMode(mode)
			clk.Advance(2 * time.Minute)
			before := p.hits.Load()
			if _, f := a.Authenticate(bearer(unknown)); f == nil || f.Status != http.StatusUnauthorized {
				t.Fatalf("unknown kid with the JWKS %s: %+v", mode, f)
			}
			if p.hits.Load() != before+1 {
				t.Fatal("no fetch was attempted")
			}
			if _, f := a.Authenticate(bearer(good)); f != nil {
				t.Errorf("the last good key was dropped: %v", f)
			}
		})
	}
	if !strings.Contains(logs.String(), "keeping the last good keys") {
		t.Errorf("failures not logged: %s", logs)
	}
	for _, tok := range []string{good, unknown} {
		assertNoSecret(t, logs.String(), tok)
	}
}

func TestJWKSHangs(t *testing.T) {
	clk := newClock()
	p := newIDP(t)
	p.setMode("hang")
	start := time.Now()
	a := jwksAuth(t, p, clk, nil, func(c *authn.JWTConfig) { c.FetchTimeout = confval.Duration(200 * time.Millisecond) })
	tok := mint(t, jwt.SigningMethodRS256, rsaKey(), "k1", claimsAt(clk.Now(), nil))
	clk.Advance(2 * time.Minute)
	if _, f := a.Authenticate(bearer(tok)); f == nil || f.Status != http.StatusUnauthorized {
		t.Fatalf("a hanging JWKS: %+v", f)
	}
	// Two bounded fetches (start and unknown kid), not a hang.
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestCloseDoesNotWaitForAHangingFetch: Close (a Caddy reload) cancels a
// background fetch instead of waiting out its timeout.
func TestCloseDoesNotWaitForAHangingFetch(t *testing.T) {
	clk := newClock()
	p := newIDP(t, jwk("k1", "RS256", &rsaKey().PublicKey))
	a := jwksAuth(t, p, clk, nil, func(c *authn.JWTConfig) {
		c.RefreshInterval = confval.Duration(10 * time.Millisecond)
		c.FetchTimeout = confval.Duration(time.Minute)
	})
	p.setMode("hang")
	deadline := time.After(10 * time.Second)
	for hanging := false; !hanging; {
		select {
		case mode := <-p.started:
			hanging = mode == "hang"
		case <-deadline:
			t.Fatal("no background fetch started")
		}
	}
	start := time.Now()
	a.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
}

func TestJWKSGarbageAtStartThenRecovers(t *testing.T) {
	clk := newClock()
	p := newIDP(t)
	p.setMode("garbage")
	a := jwksAuth(t, p, clk, nil, nil)
	tok := mint(t, jwt.SigningMethodES256, ecKey(), "k1", claimsAt(clk.Now(), jwt.MapClaims{"exp": clk.Now().Add(3 * time.Hour).Unix()}))
	if _, f := a.Authenticate(bearer(tok)); f == nil {
		t.Fatal("accepted with no keys")
	}
	p.setMode("")
	p.setKeys(jwk("k1", "ES256", &ecKey().PublicKey))
	clk.Advance(2 * time.Minute)
	if _, f := a.Authenticate(bearer(tok)); f != nil {
		t.Fatalf("not accepted once the JWKS recovered: %v", f)
	}
}

func TestJWKSBackgroundRefresh(t *testing.T) {
	clk := newClock()
	p := newIDP(t, jwk("k1", "RS256", &rsaKey().PublicKey))
	a := jwksAuth(t, p, clk, nil, func(c *authn.JWTConfig) { c.RefreshInterval = confval.Duration(10 * time.Millisecond) })
	p.waitFetches(t, 1) // the one at start
	p.setKeys(jwk("k2", "RS256", &rsaKey2().PublicKey))
	p.drain()
	// A fetch under way may have read the old keys; the next one reads the
	// new ones, and the one after starts only once that one is applied.
	p.waitFetches(t, 3)
	// The new key is known without an on-demand fetch (the clock has not moved).
	tok := mint(t, jwt.SigningMethodRS256, rsaKey2(), "k2", claimsAt(clk.Now(), nil))
	if _, f := a.Authenticate(bearer(tok)); f != nil {
		t.Fatalf("background refresh did not bring the new key: %v", f)
	}
	// The removed key is refused.
	old := mint(t, jwt.SigningMethodRS256, rsaKey(), "k1", claimsAt(clk.Now(), nil))
	if _, f := a.Authenticate(bearer(old)); f == nil {
		t.Error("a token of a removed key was accepted")
	}
}

func TestJWKSRemovedKeyPurgesCache(t *testing.T) {
	clk := newClock()
	p := newIDP(t, jwk("k1", "RS256", &rsaKey().PublicKey), jwk("k2", "RS256", &rsaKey2().PublicKey))
	a := jwksAuth(t, p, clk, nil, nil)
	exp := jwt.MapClaims{"exp": clk.Now().Add(3 * time.Hour).Unix()}
	old := mint(t, jwt.SigningMethodRS256, rsaKey(), "k1", claimsAt(clk.Now(), exp))
	if _, f := a.Authenticate(bearer(old)); f != nil {
		t.Fatal(f)
	}
	// k1 is withdrawn; a refresh (caused here by an unknown kid) notices.
	p.setKeys(jwk("k2", "RS256", &rsaKey2().PublicKey))
	clk.Advance(2 * time.Minute)
	_, _ = a.Authenticate(bearer(mint(t, jwt.SigningMethodRS256, rsaKey2(), "k3", claimsAt(clk.Now(), exp))))
	if _, f := a.Authenticate(bearer(old)); f == nil {
		t.Error("a cached token of a withdrawn key was still accepted")
	}
}

// TestJWKSRefusesSymmetricAndMislabelledKeys: a JWKS publishes public
// keys; an "oct" key there must never verify an HS256 token, and an RSA
// key labelled HS256 is skipped.
func TestJWKSRefusesSymmetricAndMislabelledKeys(t *testing.T) {
	clk := newClock()
	secret := []byte(hmacSecret)
	p := newIDP(t,
		map[string]any{"kty": "oct", "kid": "sym", "k": b64u(secret)},
		jwk("rsa-hs", "HS256", &rsaKey().PublicKey),
		jwk("ok", "RS256", &rsaKey2().PublicKey),
	)
	a := jwksAuth(t, p, clk, nil, func(c *authn.JWTConfig) {
		c.Algorithms = []string{"RS256", "HS256"}
		c.HMACSecret = strings.Repeat("z", 32)
	})
	for name, tok := range map[string]string{
		"oct key":                mint(t, jwt.SigningMethodHS256, secret, "sym", claimsAt(clk.Now(), nil)),
		"RSA key labelled HS256": mint(t, jwt.SigningMethodRS256, rsaKey(), "rsa-hs", claimsAt(clk.Now(), nil)),
	} {
		if _, f := a.Authenticate(bearer(tok)); f == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, f := a.Authenticate(bearer(mint(t, jwt.SigningMethodRS256, rsaKey2(), "ok", claimsAt(clk.Now(), nil)))); f != nil {
		t.Errorf("the valid key beside them was refused: %v", f)
	}
}

func TestOpenIDConnect(t *testing.T) {
	clk := newClock()
	p := newIDP(t, jwk("k1", "ES256", &ecKey().PublicKey))
	cfg := authn.Config{Schemes: map[string]*authn.Scheme{
		"oidc": {Type: "openIdConnect", OpenIDConnectURL: p.URL + "/.well-known/openid-configuration",
			JWT: &authn.JWTConfig{Audiences: []string{"a2a-agent"}}},
	}}
	a := newAuth(t, cfg, authn.Options{Now: clk.Now})
	ok := mint(t, jwt.SigningMethodES256, ecKey(), "k1", claimsAt(clk.Now(), jwt.MapClaims{"iss": p.URL}))
	id, f := a.Authenticate(bearer(ok))
	if f != nil {
		t.Fatalf("refused: %v", f)
	}
	if id.Scheme != "oidc" || id.Subject != "alice" || id.Owner() != "oidc:alice" {
		t.Errorf("identity %+v", id)
	}
	// The issuer is the discovered one.
	if _, f := a.Authenticate(bearer(mint(t, jwt.SigningMethodES256, ecKey(), "k1", claimsAt(clk.Now(), nil)))); f == nil ||
		!strings.Contains(f.Challenges[0], "invalid issuer") {
		t.Errorf("a token of another issuer: %+v", f)
	}

	// A discovery document whose issuer does not match its URL is refused:
	// no keys, every token fails.
	q := newIDP(t, jwk("k1", "ES256", &ecKey().PublicKey))
	q.mu.Lock()
	q.issuer = "https://impostor.example"
	q.mu.Unlock()
	cfg.Schemes["oidc"].OpenIDConnectURL = q.URL + "/.well-known/openid-configuration"
	logs := &logBuffer{}
	b := newAuth(t, cfg, authn.Options{Now: clk.Now, Logger: logs.logger()})
	tok := mint(t, jwt.SigningMethodES256, ecKey(), "k1", claimsAt(clk.Now(), jwt.MapClaims{"iss": "https://impostor.example"}))
	if _, f := b.Authenticate(bearer(tok)); f == nil {
		t.Error("a token accepted through a mismatched discovery document")
	}
	if !strings.Contains(logs.String(), "does not match the discovery URL") {
		t.Errorf("mismatch not logged: %s", logs)
	}
}

func TestOAuth2MetadataAndScopes(t *testing.T) {
	clk := newClock()
	p := newIDP(t, jwk("k1", "RS256", &rsaKey().PublicKey))
	a := newAuth(t, authn.Config{
		Schemes: map[string]*authn.Scheme{
			"oauth": {Type: "oauth2", MetadataURL: p.URL + "/.well-known/oauth-authorization-server",
				Flows: &authn.Flows{ClientCredentials: &authn.Flow{TokenURL: "https://idp.example/token",
					Scopes: map[string]string{"orders:read": "Read", "orders:write": "Write"}}},
				JWT: &authn.JWTConfig{Audiences: []string{"a2a-agent"}}},
		},
		Require: []a2a.SecurityRequirement{{"oauth": {"orders:read"}}},
	}, authn.Options{Now: clk.Now})
	withScope := func(scope string) string {
		return mint(t, jwt.SigningMethodRS256, rsaKey(), "k1", claimsAt(clk.Now(), jwt.MapClaims{"iss": p.URL, "scope": scope}))
	}
	if _, f := a.Authenticate(bearer(withScope("orders:read orders:write"))); f != nil {
		t.Errorf("refused: %v", f)
	}
	_, f := a.Authenticate(bearer(withScope("orders:write")))
	if f == nil || f.Status != http.StatusForbidden || f.Reason != authn.ReasonUnauthorized {
		t.Fatalf("missing scope: %+v; want a 403", f)
	}
	want := `Bearer realm="a2a", error="insufficient_scope", scope="orders:read"`
	if len(f.Challenges) != 1 || f.Challenges[0] != want || !strings.Contains(f.Message, "orders:read") {
		t.Errorf("failure %+v", f)
	}
	if e := f.RPCError(); e.Code != a2a.CodeUnauthorized || e.Reason != authn.ReasonUnauthorized {
		t.Errorf("RPCError %+v", e)
	}
}

// TestJWKSSkipsUnusableKeys: keys that cannot verify signatures safely are
// skipped; the usable ones beside them still work.
func TestJWKSSkipsUnusableKeys(t *testing.T) {
	clk := newClock()
	weak := must(rsaKeyBits(1024))
	rsaJWK := jwk("x", "", &rsaKey().PublicKey)
	ecJWK := jwk("x", "", &ecKey().PublicKey)
	with := func(base map[string]any, kid string, kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		m["kid"] = kid
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	bad := []map[string]any{
		with(rsaJWK, "enc", "use", "enc"),
		with(rsaJWK, "ops", "key_ops", []string{"encrypt"}),
		with(rsaJWK, "bad-n", "n", "!!!"),
		with(rsaJWK, "even-e", "e", b64u([]byte{2})),
		jwk("weak", "", &weak.PublicKey),
		with(ecJWK, "curve", "crv", "P-192"),
		with(ecJWK, "short-x", "x", b64u([]byte{1, 2, 3})),
		with(ecJWK, "off-curve", "y", b64u(make([]byte, 32))),
		{"kty": "OKP", "kid": "x25519", "crv": "X25519", "x": b64u(make([]byte, 32))},
		{"kty": "oct", "kid": "oct", "k": b64u([]byte(hmacSecret))},
		with(ecJWK, "alg-mismatch", "alg", "ES384"),
		{"kid": "no-kty"},
	}
	p := newIDP(t, append(bad, jwk("good", "ES256", &ecKey().PublicKey))...)
	logs := &logBuffer{}
	a := jwksAuth(t, p, clk, logs, func(c *authn.JWTConfig) {
		c.Algorithms = []string{"RS256", "ES256", "ES384", "EdDSA"}
	})
	if _, f := a.Authenticate(bearer(mint(t, jwt.SigningMethodES256, ecKey(), "good", claimsAt(clk.Now(), nil)))); f != nil {
		t.Fatalf("the usable key was refused: %v", f)
	}
	for _, k := range bad {
		kid, _ := k["kid"].(string)
		var tok string
		switch {
		case k["kty"] == "EC":
			tok = mint(t, jwt.SigningMethodES256, ecKey(), kid, claimsAt(clk.Now(), nil))
		case kid == "weak":
			tok = mint(t, jwt.SigningMethodRS256, weak, kid, claimsAt(clk.Now(), nil))
		default:
			tok = mint(t, jwt.SigningMethodRS256, rsaKey(), kid, claimsAt(clk.Now(), nil))
		}
		if _, f := a.Authenticate(bearer(tok)); f == nil {
			t.Errorf("a token under the unusable key %q was accepted", kid)
		}
	}
	if !strings.Contains(logs.String(), "skipping a JWK") {
		t.Errorf("skipped keys not logged: %s", logs)
	}

	// A JWKS with no usable key, or too many, is a failed fetch.
	for name, keys := range map[string][]map[string]any{
		"only unusable keys": bad,
		"too many keys":      slicesRepeat(jwk("k", "ES256", &ecKey().PublicKey), 300),
	} {
		q := newIDP(t, keys...)
		logs := &logBuffer{}
		b := jwksAuth(t, q, clk, logs, nil)
		// A token waits for the first fetch, which has then been logged.
		if _, f := b.Authenticate(bearer(mint(t, jwt.SigningMethodES256, ecKey(), "k", claimsAt(clk.Now(), nil)))); f == nil {
			t.Errorf("%s: a token was accepted", name)
		}
		if !strings.Contains(logs.String(), "tokens are refused until a fetch succeeds") {
			t.Errorf("%s: accepted as a key set: %s", name, logs)
		}
	}
}

func slicesRepeat(m map[string]any, n int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = m
	}
	return out
}

// A JWKS endpoint that hangs holds up nothing: not the Authenticator's
// start (a reload), not the valid tokens of another scheme that carry a
// kid, and it is asked once however many tokens name unknown keys.
func TestHangingJWKSHoldsUpNothing(t *testing.T) {
	clk := newClock()
	p := newIDP(t)
	p.setMode("hang") // until the test ends
	a := newAuth(t, authn.Config{
		Schemes: map[string]*authn.Scheme{
			"remote": {Type: "http", HTTPScheme: "bearer", JWT: &authn.JWTConfig{
				Issuer: "https://issuer.example", Audiences: []string{"a2a-agent"}, JWKSURL: p.URL + "/jwks",
				FetchTimeout: confval.Duration(time.Hour), RefreshInterval: confval.Duration(time.Hour), MinRefreshInterval: confval.Duration(time.Minute)}},
			"static": {Type: "http", HTTPScheme: "bearer", JWT: &authn.JWTConfig{
				Issuer: "https://issuer.example", Audiences: []string{"a2a-agent"}, PublicKeys: []string{publicPEM(&ecKey().PublicKey)}}},
		},
		Require: []a2a.SecurityRequirement{{"remote": nil}, {"static": nil}},
	}, authn.Options{Now: clk.Now})
	for range 5 {
		tok := mint(t, jwt.SigningMethodES256, ecKey(), "static-key", claimsAt(clk.Now(), nil))
		if _, f := a.Authenticate(bearer(tok)); f != nil {
			t.Fatalf("a valid token of the static scheme: %v", f)
		}
	}
	if n := p.hits.Load(); n != 1 {
		t.Errorf("the hanging JWKS was asked %d times, want once (the fetch under way)", n)
	}
}
