package authn_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/confval"
)

const hmacSecret = "an HMAC secret of at least 32 bytes, for tests"

// staticAuth verifies tokens with static RSA, P-256, P-384 and Ed25519
// public keys.
func staticAuth(t *testing.T, clk *clock, mutate func(*authn.JWTConfig)) *authn.Authenticator {
	t.Helper()
	cfg := &authn.JWTConfig{
		Issuer:    "https://issuer.example",
		Audiences: []string{"a2a-agent", "other-audience"},
		PublicKeys: []string{
			publicPEM(&rsaKey().PublicKey),
			publicPEM(&ecKey().PublicKey) + publicPEM(&ec384Key().PublicKey),
			publicPEM(edKey().Public()),
		},
	}
	if mutate != nil {
		mutate(cfg)
	}
	return newAuth(t, authn.Config{Schemes: map[string]*authn.Scheme{
		"jwt": {Type: "http", HTTPScheme: "bearer", JWT: cfg},
	}}, authn.Options{Now: clk.Now})
}

func TestJWTAlgorithms(t *testing.T) {
	clk := newClock()
	a := staticAuth(t, clk, nil)
	for _, tt := range []struct {
		method jwt.SigningMethod
		key    any
	}{
		{jwt.SigningMethodRS256, rsaKey()}, {jwt.SigningMethodRS512, rsaKey()}, {jwt.SigningMethodPS256, rsaKey()},
		{jwt.SigningMethodES256, ecKey()}, {jwt.SigningMethodES384, ec384Key()}, {jwt.SigningMethodEdDSA, edKey()},
	} {
		t.Run(tt.method.Alg(), func(t *testing.T) {
			tok := mint(t, tt.method, tt.key, "", claimsAt(clk.Now(), jwt.MapClaims{"sub": "alice-" + tt.method.Alg()}))
			id, f := a.Authenticate(bearer(tok))
			if f != nil {
				t.Fatalf("refused: %v", f)
			}
			if id.Subject != "alice-"+tt.method.Alg() || id.Type != a2a.SchemeHTTPAuth || id.Scheme != "jwt" {
				t.Errorf("identity %+v", id)
			}
		})
	}
}

func TestJWTIdentity(t *testing.T) {
	clk := newClock()
	a := staticAuth(t, clk, nil)
	tok := mint(t, jwt.SigningMethodRS256, rsaKey(), "", claimsAt(clk.Now(), jwt.MapClaims{
		"scope": "orders:read orders:write", "scp": []any{"orders:read", "admin"}, "tenant": "acme"}))
	id, f := a.Authenticate(bearer(tok))
	if f != nil {
		t.Fatal(f)
	}
	if want := []string{"orders:read", "orders:write", "admin"}; !reflect.DeepEqual(id.Scopes, want) {
		t.Errorf("scopes %v; want %v", id.Scopes, want)
	}
	if id.Claims["tenant"] != "acme" || id.Claims["iss"] != "https://issuer.example" {
		t.Errorf("claims %v", id.Claims)
	}
	if want := clk.Now().Add(time.Hour); !id.Expires.Equal(want) {
		t.Errorf("expires %v; want %v", id.Expires, want)
	}
	if id.Owner() != "jwt:alice" {
		t.Errorf("owner %q", id.Owner())
	}
}

// TestJWTBadInput: every one of these is a 401 with an RFC 6750
// invalid_token challenge, and none quotes the token.
func TestJWTBadInput(t *testing.T) {
	clk := newClock()
	now := clk.Now()
	good := func(extra jwt.MapClaims) string {
		return mint(t, jwt.SigningMethodRS256, rsaKey(), "", claimsAt(now, extra))
	}
	parts := strings.Split(good(nil), ".")
	forged := func(payload jwt.MapClaims) string {
		b, _ := json.Marshal(claimsAt(now, payload))
		return parts[0] + "." + base64.RawURLEncoding.EncodeToString(b) + "." + parts[2]
	}
	flipped := []byte(parts[2])
	if flipped[10] == 'A' {
		flipped[10] = 'B'
	} else {
		flipped[10] = 'A'
	}
	none := must(jwt.NewWithClaims(jwt.SigningMethodNone, claimsAt(now, nil)).SignedString(jwt.UnsafeAllowNoneSignatureType))
	hsWithPublicKey := mint(t, jwt.SigningMethodHS256, []byte(publicPEM(&rsaKey().PublicKey)), "", claimsAt(now, nil))

	tests := []struct {
		name, token, reason string
	}{
		{"alg none", none, "invalid signature"},
		{"HS256 signed with the RSA public key", hsWithPublicKey, "invalid signature"},
		{"tampered payload", forged(jwt.MapClaims{"sub": "admin"}), "invalid signature"},
		{"tampered signature", parts[0] + "." + parts[1] + "." + string(flipped), "invalid signature"},
		{"signature removed", parts[0] + "." + parts[1] + ".", "invalid signature"},
		{"another key", mint(t, jwt.SigningMethodRS256, rsaKey2(), "", claimsAt(now, nil)), "invalid signature"},
		{"expired", good(jwt.MapClaims{"exp": now.Add(-time.Minute).Unix()}), "token expired"},
		{"not yet valid", good(jwt.MapClaims{"nbf": now.Add(time.Minute).Unix()}), "token not yet valid"},
		{"issued in the future", good(jwt.MapClaims{"iat": now.Add(time.Minute).Unix()}), "token issued in the future"},
		{"no exp", good(jwt.MapClaims{"exp": nil}), "a required claim is missing"},
		{"exp not a number", good(jwt.MapClaims{"exp": "tomorrow"}), "invalid token"},
		{"wrong iss", good(jwt.MapClaims{"iss": "https://evil.example"}), "invalid issuer"},
		{"no iss", good(jwt.MapClaims{"iss": nil}), "invalid issuer"},
		{"wrong aud", good(jwt.MapClaims{"aud": "someone-else"}), "invalid audience"},
		{"no aud", good(jwt.MapClaims{"aud": nil}), "a required claim is missing"},
		{"no subject", good(jwt.MapClaims{"sub": nil}), "the token names no subject"},
		{"critical header", func() string {
			tk := jwt.NewWithClaims(jwt.SigningMethodRS256, claimsAt(now, nil))
			tk.Header["crit"] = []string{"exp"}
			return must(tk.SignedString(rsaKey()))
		}(), "unsupported critical header"},
		{"two segments", parts[0] + "." + parts[1], "malformed token"},
		{"four segments", good(nil) + ".x", "malformed token"},
		{"malformed base64", parts[0] + "." + parts[1][:len(parts[1])-1] + "+/" + "." + parts[2], "malformed token"},
		{"base64 of the wrong length", parts[0] + "." + parts[1] + "x." + parts[2], "malformed token"},
		{"padded base64", parts[0] + "==." + parts[1] + "." + parts[2], "malformed token"},
		{"header not JSON", base64.RawURLEncoding.EncodeToString([]byte("{oops")) + "." + parts[1] + "." + parts[2], "malformed token"},
		{"characters outside b64token", parts[0] + ".\"" + parts[1] + "\"." + parts[2], "malformed token"},
		{"oversized token", good(jwt.MapClaims{"pad": strings.Repeat("x", 10<<10)}), "the credentials are too large"},
		{"opaque token", "d3a0f1c2b4e5a6978877", "malformed token"},
	}
	a := staticAuth(t, clk, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, f := a.Authenticate(bearer(tt.token))
			if f == nil || f.Status != http.StatusUnauthorized || id != nil {
				t.Fatalf("Authenticate = %+v, %+v; want a 401", id, f)
			}
			want := `Bearer realm="a2a", error="invalid_token", error_description="` + tt.reason + `"`
			if len(f.Challenges) != 1 || f.Challenges[0] != want {
				t.Errorf("challenges %q; want %q", f.Challenges, want)
			}
			assertNoSecret(t, failureText(f), tt.token)
			if e := f.RPCError(); e.Code != a2a.CodeUnauthenticated || e.Reason != authn.ReasonUnauthenticated {
				t.Errorf("RPCError %+v", e)
			}
		})
	}
}

func TestJWTMissingOrOtherCredentials(t *testing.T) {
	a := staticAuth(t, newClock(), nil)
	for name, r := range map[string]*http.Request{
		"none":         request(),
		"basic":        request("Authorization", basicHeader("bob", "pw")),
		"empty bearer": request("Authorization", "Bearer "),
	} {
		id, f := a.Authenticate(r)
		if f == nil || f.Status != http.StatusUnauthorized || id != nil {
			t.Fatalf("%s: Authenticate = %+v, %+v; want a 401", name, id, f)
		}
	}
	// Without a token there is no error attribute (RFC 6750 §3.1).
	_, f := a.Authenticate(request())
	if len(f.Challenges) != 1 || f.Challenges[0] != `Bearer realm="a2a"` || f.Message != "authentication required" {
		t.Errorf("failure %+v", f)
	}
	h := http.Header{}
	f.SetHeaders(h)
	if h.Get("WWW-Authenticate") != `Bearer realm="a2a"` {
		t.Errorf("SetHeaders: %v", h)
	}
}

func TestJWTAlgorithmAllowlist(t *testing.T) {
	clk := newClock()
	a := staticAuth(t, clk, func(c *authn.JWTConfig) { c.Algorithms = []string{"ES256"} })
	if _, f := a.Authenticate(bearer(mint(t, jwt.SigningMethodES256, ecKey(), "", claimsAt(clk.Now(), nil)))); f != nil {
		t.Errorf("ES256 refused: %v", f)
	}
	if _, f := a.Authenticate(bearer(mint(t, jwt.SigningMethodRS256, rsaKey(), "", claimsAt(clk.Now(), nil)))); f == nil {
		t.Error("RS256 accepted though only ES256 is allowed")
	}
}

func TestJWTLeeway(t *testing.T) {
	clk := newClock()
	a := staticAuth(t, clk, func(c *authn.JWTConfig) { c.Leeway = confval.Duration(time.Minute) })
	tok := mint(t, jwt.SigningMethodRS256, rsaKey(), "", claimsAt(clk.Now(), jwt.MapClaims{"exp": clk.Now().Add(-30 * time.Second).Unix()}))
	if _, f := a.Authenticate(bearer(tok)); f != nil {
		t.Errorf("a token 30s past exp was refused with a 1m leeway: %v", f)
	}
}

func TestJWTHMAC(t *testing.T) {
	clk := newClock()
	cfg := &authn.JWTConfig{
		Issuer:     "https://issuer.example",
		HMACSecret: "{env.JWT_SECRET}",
		PublicKeys: []string{publicPEM(&rsaKey().PublicKey)},
	}
	a := newAuth(t, authn.Config{Schemes: map[string]*authn.Scheme{"jwt": {Type: "http", HTTPScheme: "bearer", JWT: cfg}}},
		authn.Options{Now: clk.Now, LookupEnv: func(string) (string, bool) { return hmacSecret, true }})
	if _, f := a.Authenticate(bearer(mint(t, jwt.SigningMethodHS256, []byte(hmacSecret), "", claimsAt(clk.Now(), nil)))); f != nil {
		t.Errorf("HS256 with the secret refused: %v", f)
	}
	if _, f := a.Authenticate(bearer(mint(t, jwt.SigningMethodRS256, rsaKey(), "", claimsAt(clk.Now(), nil)))); f != nil {
		t.Errorf("RS256 beside the secret refused: %v", f)
	}
	// The public key is public: it must never serve as an HMAC secret.
	forged := mint(t, jwt.SigningMethodHS256, []byte(publicPEM(&rsaKey().PublicKey)), "", claimsAt(clk.Now(), nil))
	if _, f := a.Authenticate(bearer(forged)); f == nil {
		t.Error("an HS256 token signed with the RSA public key was accepted")
	}

	// Without a secret, HS256 is refused even with the right secret.
	b := staticAuth(t, clk, nil)
	if _, f := b.Authenticate(bearer(mint(t, jwt.SigningMethodHS256, []byte(hmacSecret), "", claimsAt(clk.Now(), nil)))); f == nil {
		t.Error("HS256 accepted without a configured secret")
	}
}

// TestJWTCache: a verified token is remembered until it expires, and
// the cache is keyed by the whole token.
func TestJWTCache(t *testing.T) {
	clk := newClock()
	a := staticAuth(t, clk, nil)
	tok := mint(t, jwt.SigningMethodRS256, rsaKey(), "", claimsAt(clk.Now(), jwt.MapClaims{"exp": clk.Now().Add(2 * time.Minute).Unix()}))
	first, f := a.Authenticate(bearer(tok))
	if f != nil {
		t.Fatal(f)
	}
	second, f := a.Authenticate(bearer(tok))
	if f != nil || second != first {
		t.Errorf("a repeated token was not served from the cache: %v", f)
	}
	// A token that differs in its last character is not the cached one.
	if _, f := a.Authenticate(bearer(tok[:len(tok)-1] + string(tok[len(tok)-1]^1))); f == nil {
		t.Error("a changed token passed as the cached one")
	}
	// Past exp (and the leeway), the cached entry is gone and the token fails.
	clk.Advance(3 * time.Minute)
	if _, f := a.Authenticate(bearer(tok)); f == nil || !strings.Contains(f.Challenges[0], "token expired") {
		t.Errorf("an expired cached token: %+v", f)
	}
}

// TestStaticKeyFormats: public keys as PKIX, PKCS#1 or a certificate,
// inline or from a file.
func TestStaticKeyFormats(t *testing.T) {
	clk := newClock()
	dir := t.TempDir()
	pkcs1 := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&rsaKey().PublicKey)}))
	ca := newCA(t, "signer")
	certFile := filepath.Join(dir, "signer.pem")
	if err := os.WriteFile(certFile, []byte(ca.pem), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tt := range map[string]struct {
		src    string
		method jwt.SigningMethod
		key    any
	}{
		"PKCS#1":           {pkcs1, jwt.SigningMethodRS256, rsaKey()},
		"certificate file": {certFile, jwt.SigningMethodES256, ca.key},
	} {
		a := newAuth(t, authn.Config{Schemes: map[string]*authn.Scheme{"jwt": {Type: "http", HTTPScheme: "bearer",
			JWT: &authn.JWTConfig{PublicKeys: []string{tt.src}}}}}, authn.Options{Now: clk.Now})
		if _, f := a.Authenticate(bearer(mint(t, tt.method, tt.key, "", claimsAt(clk.Now(), nil)))); f != nil {
			t.Errorf("%s: %v", name, f)
		}
	}
	privateKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: must(x509.MarshalPKCS8PrivateKey(ecKey()))}))
	for name, src := range map[string]string{
		"a private key":  privateKey,
		"no PEM":         filepath.Join(dir, "signer.pem") + ".missing",
		"broken PEM":     "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
		"unsupported EC": publicPEM(&must(ecdsa.GenerateKey(elliptic.P224(), rand.Reader)).PublicKey),
	} {
		a, err := authn.New(authn.Config{Schemes: map[string]*authn.Scheme{"jwt": {Type: "http", HTTPScheme: "bearer",
			JWT: &authn.JWTConfig{PublicKeys: []string{src}}}}}, authn.Options{})
		if err == nil {
			a.Close()
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "BEGIN") {
			t.Errorf("%s: the error quotes the key material: %v", name, err)
		}
	}
}
