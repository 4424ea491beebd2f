package authn_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/caddy-a2a/caddy-a2a/authn"
)

// Keys are generated once per test binary: RSA generation is slow.
var (
	rsaKey   = sync.OnceValue(func() *rsa.PrivateKey { return must(rsa.GenerateKey(rand.Reader, 2048)) })
	rsaKey2  = sync.OnceValue(func() *rsa.PrivateKey { return must(rsa.GenerateKey(rand.Reader, 2048)) })
	ecKey    = sync.OnceValue(func() *ecdsa.PrivateKey { return must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader)) })
	ec384Key = sync.OnceValue(func() *ecdsa.PrivateKey { return must(ecdsa.GenerateKey(elliptic.P384(), rand.Reader)) })
	edKey    = sync.OnceValue(func() ed25519.PrivateKey {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			panic(err)
		}
		return k
	})
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1_800_000_000, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// mint signs claims with key; kid goes into the header when not empty.
func mint(t testing.TB, method jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("signing a test token: %v", err)
	}
	return s
}

// claimsAt are valid claims at now for subject alice.
func claimsAt(now time.Time, extra jwt.MapClaims) jwt.MapClaims {
	c := jwt.MapClaims{
		"iss": "https://issuer.example",
		"aud": "a2a-agent",
		"sub": "alice",
		"iat": now.Unix(),
		"nbf": now.Unix(),
		"exp": now.Add(time.Hour).Unix(),
	}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	return c
}

func publicPEM(pub crypto.PublicKey) string {
	der := must(x509.MarshalPKIXPublicKey(pub))
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func b64u(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// jwk encodes a public key as a JWK.
func jwk(kid, alg string, pub crypto.PublicKey) map[string]any {
	m := map[string]any{"kid": kid, "use": "sig"}
	if alg != "" {
		m["alg"] = alg
	}
	switch k := pub.(type) {
	case *rsa.PublicKey:
		m["kty"], m["n"], m["e"] = "RSA", b64u(k.N.Bytes()), b64u(big.NewInt(int64(k.E)).Bytes())
	case *ecdsa.PublicKey:
		size := (k.Curve.Params().BitSize + 7) / 8
		raw := must(k.Bytes()) // 0x04 || X || Y
		m["kty"], m["crv"] = "EC", k.Curve.Params().Name
		m["x"], m["y"] = b64u(raw[1:1+size]), b64u(raw[1+size:])
	case ed25519.PublicKey:
		m["kty"], m["crv"], m["x"] = "OKP", "Ed25519", b64u(k)
	}
	return m
}

// idp is an identity provider on loopback: OIDC discovery, RFC 8414
// metadata, a JWKS and an RFC 7662 introspection endpoint.
type idp struct {
	*httptest.Server
	mu       sync.Mutex
	keys     []map[string]any
	mode     string // "", "500", "garbage", "huge", "hang"
	issuer   string // discovery issuer; default the server URL
	tokens   map[string]map[string]any
	hits     atomic.Int64 // JWKS fetches
	intro    atomic.Int64 // introspection calls
	fetched  chan struct{}
	started  chan string   // the mode of each JWKS request, as it starts
	release  chan struct{} // closed at cleanup: ends hanging handlers
	clientID string
	secret   string
}

func newIDP(t testing.TB, keys ...map[string]any) *idp {
	t.Helper()
	p := &idp{keys: keys, tokens: map[string]map[string]any{}, fetched: make(chan struct{}, 1000), started: make(chan string, 1000),
		release: make(chan struct{}), clientID: "agent", secret: "s3cret:with/odd chars"}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("/.well-known/oauth-authorization-server", p.discovery)
	mux.HandleFunc("/jwks", p.jwks)
	mux.HandleFunc("/introspect", p.introspect)
	p.Server = httptest.NewServer(mux)
	t.Cleanup(func() {
		close(p.release)
		p.Close()
	})
	return p
}

func (p *idp) setKeys(keys ...map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys = keys
}

func (p *idp) setMode(m string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
}

func (p *idp) setToken(tok string, answer map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tokens[tok] = answer
}

func (p *idp) discovery(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	iss := p.issuer
	p.mu.Unlock()
	if iss == "" {
		iss = p.URL
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"issuer": iss, "jwks_uri": p.URL + "/jwks"})
}

func (p *idp) jwks(w http.ResponseWriter, r *http.Request) {
	p.hits.Add(1)
	defer func() {
		select {
		case p.fetched <- struct{}{}:
		default:
		}
	}()
	p.mu.Lock()
	mode, keys := p.mode, p.keys
	p.mu.Unlock()
	select {
	case p.started <- mode:
	default:
	}
	switch mode {
	case "500":
		http.Error(w, "down", http.StatusInternalServerError)
	case "garbage":
		_, _ = w.Write([]byte("<html>not json"))
	case "huge":
		_, _ = w.Write([]byte(`{"keys":[`))
		_, _ = w.Write(bytes.Repeat([]byte(" "), 2<<20))
		_, _ = w.Write([]byte(`]}`))
	case "hang":
		select {
		case <-r.Context().Done():
		case <-p.release:
		}
	default:
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": keys})
	}
}

func (p *idp) introspect(w http.ResponseWriter, r *http.Request) {
	p.intro.Add(1)
	p.mu.Lock()
	mode := p.mode
	p.mu.Unlock()
	switch mode {
	case "500":
		http.Error(w, "down", http.StatusInternalServerError)
		return
	case "garbage":
		_, _ = w.Write([]byte("{not json"))
		return
	case "hang":
		select {
		case <-r.Context().Done():
		case <-p.release:
		}
		return
	}
	id, secret, _ := r.BasicAuth()
	// RFC 6749 §2.3.1: the client form-encodes its credentials.
	if r.Method != http.MethodPost || id != p.clientID || secret != url.QueryEscape(p.secret) {
		http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	answer, found := p.tokens[r.PostForm.Get("token")]
	p.mu.Unlock()
	if !found {
		answer = map[string]any{"active": false}
	}
	_ = json.NewEncoder(w).Encode(answer)
}

// waitFetches waits until the JWKS has been fetched n more times.
func (p *idp) waitFetches(t testing.TB, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for range n {
		select {
		case <-p.fetched:
		case <-timeout:
			t.Fatalf("the JWKS was not fetched %d times within 10s", n)
		}
	}
}

// drain forgets the fetch notifications so far.
func (p *idp) drain() {
	for {
		select {
		case <-p.fetched:
		default:
			return
		}
	}
}

func newAuth(t testing.TB, cfg authn.Config, opts authn.Options) *authn.Authenticator {
	t.Helper()
	a, err := authn.New(cfg, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(a.Close)
	return a
}

// request builds a request with the given header pairs.
func request(headers ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "https://agent.example/", nil)
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Add(headers[i], headers[i+1])
	}
	return r
}

func bearer(tok string) *http.Request { return request("Authorization", "Bearer "+tok) }

// logBuffer is a logger whose output a test can search.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *zap.Logger {
	enc := zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(l), zap.DebugLevel))
}

// failureText is everything a Failure could show or log.
func failureText(f *authn.Failure) string {
	if f == nil {
		return ""
	}
	return strings.Join(append([]string{f.Error(), f.Message, f.Detail, f.Reason}, f.Challenges...), "\n")
}

// assertNoSecret fails when text quotes secret or any long part of it.
func assertNoSecret(t testing.TB, text, secret string) {
	t.Helper()
	if secret == "" {
		return
	}
	for part := range strings.FieldsFuncSeq(secret, func(r rune) bool { return r == '.' || r == ' ' }) {
		if len(part) >= 8 && strings.Contains(text, part) {
			t.Errorf("a credential appears in %q", text)
			return
		}
	}
}

func rsaKeyBits(bits int) (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, bits) }
