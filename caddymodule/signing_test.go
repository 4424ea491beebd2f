package caddymodule

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
	"github.com/caddy-a2a/caddy-a2a/keys"
)

// keyFile writes a new private key for alg as PKCS #8 PEM into dir.
func keyFile(t *testing.T, dir, name, alg string) string {
	t.Helper()
	_, data, err := cardgen.GenerateKey(alg)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// signingHandler is a handler with signing, not yet provisioned.
func signingHandler(s *SigningConfig) *Handler {
	return &Handler{
		Skills:      filepath.Join("..", "examples", "skills.yaml"),
		Upstream:    "http://127.0.0.1:9",
		URL:         "https://agent.example.com/a2a/",
		Name:        "Café <Agent> ✓",
		Description: "Signed by a test",
		Signing:     s,
	}
}

func newTestContext(t *testing.T) caddy.Context {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	return ctx
}

func serveGet(t *testing.T, h *Handler, path string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	if err := h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil), nil); err != nil {
		t.Fatal(err)
	}
	return w
}

func protectedHeader(t *testing.T, card []byte, i int) map[string]string {
	t.Helper()
	var c struct{ Signatures []struct{ Protected string } }
	if err := json.Unmarshal(card, &c); err != nil || len(c.Signatures) <= i {
		t.Fatalf("the card has no signature %d: %v", i, err)
	}
	b, err := base64.RawURLEncoding.DecodeString(c.Signatures[i].Protected)
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]string
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestProvisionSigning: the card is served signed, the JWKS is served with
// cache headers at jwks_path, and the card verifies with it.
func TestProvisionSigning(t *testing.T) {
	t.Setenv("DEMO_API_KEY", testAPIKey)
	dir := t.TempDir()
	pemData, err := os.ReadFile(keyFile(t, dir, "env.pem", cardgen.EdDSA))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("A2A_TEST_SIGNING_KEY", string(pemData))

	tests := []struct {
		name     string
		signing  *SigningConfig
		jwksPath string
		jku      string
		kid      string
	}{
		{
			name:     "key file, defaults",
			signing:  &SigningConfig{Keys: []SigningKey{{Key: keyFile(t, dir, "k1.pem", cardgen.ES256), ID: "k1"}}},
			jwksPath: "/.well-known/jwks.json",
			jku:      "https://agent.example.com/.well-known/jwks.json",
			kid:      "k1",
		},
		{
			name: "PEM from the environment, chosen among keys, jwks path and url set",
			signing: &SigningConfig{
				Keys: []SigningKey{
					{Key: keyFile(t, dir, "k2.pem", cardgen.ES384), ID: "k2"},
					{Key: "{env.A2A_TEST_SIGNING_KEY}", ID: "env", Algorithm: cardgen.EdDSA},
				},
				Active:   "env",
				JWKSPath: "/keys.json",
				JWKSURL:  "https://keys.example.com/agent.json",
			},
			jwksPath: "/keys.json",
			jku:      "https://keys.example.com/agent.json",
			kid:      "env",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := signingHandler(tt.signing)
			h.CardMaxAge = caddy.Duration(time.Minute)
			if err := h.Provision(newTestContext(t)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = h.Cleanup() })

			card := serveGet(t, h, "/.well-known/agent-card.json").Body.Bytes()
			jw := serveGet(t, h, tt.jwksPath)
			if jw.Code != http.StatusOK || jw.Header().Get("Content-Type") != cardgen.JWKSContentType ||
				jw.Header().Get("Cache-Control") != "public, max-age=60" || jw.Header().Get("Etag") == "" {
				t.Fatalf("GET %s: %d %v %s", tt.jwksPath, jw.Code, jw.Header(), jw.Body)
			}
			keys, err := cardgen.ParseJWKS(jw.Body.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			r, err := cardgen.Verify(card, keys, cardgen.VerifyOptions{})
			if err != nil || !r.OK(false) {
				t.Fatalf("the served card does not verify with the served JWKS: %v %+v", err, r)
			}
			if h := protectedHeader(t, card, 0); h["kid"] != tt.kid || h["jku"] != tt.jku || h["typ"] != "JOSE" {
				t.Errorf("protected header %v, want kid %s and jku %s", h, tt.kid, tt.jku)
			}
			if !bytes.Contains(card, []byte(`"name":"Café <Agent> ✓"`)) {
				t.Errorf("the card's name is escaped: %s", card)
			}
		})
	}
}

// The card's shapes: the union card (1.0 and 0.3 members, ProtoJSON
// scopes: three payloads, three signatures), strict 1.0 (no 0.3 members:
// the served card is the spec payload, so one signature serves both, and
// the pruned payload differs only by empty values), and bare scopes (what
// a2a-go v2.3.1 reads; only the served form is signed). Each verifies with
// the served JWK Set.
func TestCardShapes(t *testing.T) {
	t.Setenv("DEMO_API_KEY", testAPIKey)
	tests := []struct {
		name        string
		format      string
		bare        bool
		has, hasNot []string
		signatures  int
		forms       []cardgen.Form // each must verify alone
	}{
		{"union", "", false, []string{`"protocolVersion":"0.3.0"`, `"preferredTransport"`, `{"schemes":{"key":{}}}`}, nil, 3,
			[]cardgen.Form{cardgen.FormSpec, cardgen.FormPruned, cardgen.FormServed}},
		// The served card is the spec payload; the pruned one differs by
		// the empty scopes only.
		{"strict", cardFormatStrict, false, []string{`"supportedInterfaces"`, `{"schemes":{"key":{}}}`},
			[]string{`"protocolVersion":"0.3.0"`, `"preferredTransport"`, `"additionalInterfaces"`, `"security":`}, 2,
			[]cardgen.Form{cardgen.FormSpec, cardgen.FormPruned, cardgen.FormServed}},
		{"bare scopes", "", true, []string{`{"schemes":{"key":[]}}`, `"protocolVersion":"0.3.0"`}, []string{`"list"`}, 1,
			[]cardgen.Form{cardgen.FormServed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := signingHandler(&SigningConfig{Keys: []SigningKey{{Key: keyFile(t, t.TempDir(), "k.pem", cardgen.EdDSA), ID: "k"}}})
			h.Security = keyScheme()
			h.CardFormat, h.CardBareScopes = tt.format, tt.bare
			if err := h.Validate(); err != nil {
				t.Fatal(err)
			}
			if err := h.Provision(newTestContext(t)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = h.Cleanup() })
			card := serveGet(t, h, "/.well-known/agent-card.json").Body.Bytes()
			for _, want := range tt.has {
				if !bytes.Contains(card, []byte(want)) {
					t.Errorf("the card lacks %s: %s", want, card)
				}
			}
			for _, unwanted := range tt.hasNot {
				if bytes.Contains(card, []byte(unwanted)) {
					t.Errorf("the card holds %s: %s", unwanted, card)
				}
			}
			keys, err := cardgen.ParseJWKS(serveGet(t, h, "/.well-known/jwks.json").Body.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range tt.forms {
				r, err := cardgen.Verify(card, keys, cardgen.VerifyOptions{Forms: []cardgen.Form{f}})
				if err != nil || r.Count(cardgen.Verified) != 1 || len(r.Signatures) != tt.signatures {
					t.Errorf("form %s: %d of %d signatures verify (%v), want 1 of %d", f, r.Count(cardgen.Verified), len(r.Signatures), err, tt.signatures)
				}
			}
		})
	}

	h := signingHandler(&SigningConfig{Forms: []string{"spec"}})
	h.CardBareScopes = true
	if err := h.Validate(); err == nil || !strings.Contains(err.Error(), "card_bare_scopes") {
		t.Errorf("bare scopes with only the spec form signed: %v, want an error naming card_bare_scopes", err)
	}
	h = signingHandler(nil)
	h.CardFormat = "proto"
	if err := h.Validate(); err == nil || !strings.Contains(err.Error(), "card_format") {
		t.Errorf("card_format proto: %v, want an error naming card_format", err)
	}
}

// TestProvisionSigningErrors: every bad signing configuration fails at load
// time with a message that names the key and the problem.
func TestProvisionSigningErrors(t *testing.T) {
	t.Setenv("DEMO_API_KEY", testAPIKey)
	dir := t.TempDir()
	ec := keyFile(t, dir, "ec.pem", cardgen.ES256)
	ed := keyFile(t, dir, "ed.pem", cardgen.EdDSA)
	x, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(x)
	if err != nil {
		t.Fatal(err)
	}
	x25519 := filepath.Join(dir, "x25519.pem")
	if err := os.WriteFile(x25519, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	weak, err := rsa.GenerateKey(rand.Reader, 1024) // below keys.MinRSABits
	if err != nil {
		t.Fatal(err)
	}
	weakDER, err := x509.MarshalPKCS8PrivateKey(weak)
	if err != nil {
		t.Fatal(err)
	}
	inlineWeak := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: weakDER}))
	const secret = "not-a-key-but-a-secret"
	t.Setenv("A2A_TEST_GARBAGE", secret)
	t.Setenv("A2A_TEST_EMPTY", "")

	tests := []struct {
		name string
		s    SigningConfig
		want string
	}{
		{"missing key file", SigningConfig{Keys: []SigningKey{{Key: missing}}},
			"signing: key 1: key file: open " + missing + ": no such file or directory"},
		{"unsupported key type", SigningConfig{Keys: []SigningKey{{Key: x25519}}},
			"signing: key 1: key file " + x25519 + ": unsupported key: ECDH"},
		{"algorithm that does not match the key", SigningConfig{Keys: []SigningKey{{Key: ec, ID: "k", Algorithm: cardgen.ES384}}},
			`signing: key "k": algorithm ES384 does not match the key (ECDSA P-256)`},
		{"RSA algorithm on an Ed25519 key", SigningConfig{Keys: []SigningKey{{Key: ed, ID: "k", Algorithm: cardgen.PS256}}},
			`signing: key "k": algorithm PS256 does not match the key (Ed25519)`},
		{"duplicate kids", SigningConfig{Keys: []SigningKey{{Key: ec, ID: "k"}, {Key: ed, ID: "k"}}, Active: "k"},
			`signing: key "k" (key 2) has the same kid as key 1; every kid must be unique`},
		{"the same key twice", SigningConfig{Keys: []SigningKey{{Key: ec}, {Key: ec}}},
			"has the same kid as key 1"},
		{"no active key among several", SigningConfig{Keys: []SigningKey{{Key: ec, ID: "a"}, {Key: ed, ID: "b"}}},
			`"a", "b" can all sign: name the one that does (active)`},
		{"unknown active key", SigningConfig{Keys: []SigningKey{{Key: ec, ID: "a"}}, Active: "b"},
			`the active key "b" is not configured (keys: "a")`},
		{"empty placeholder", SigningConfig{Keys: []SigningKey{{Key: "{env.A2A_TEST_EMPTY}"}}},
			"signing: key 1: {env.A2A_TEST_EMPTY} is empty (is the environment variable set?)"},
		{"placeholder neither PEM nor file", SigningConfig{Keys: []SigningKey{{Key: "{env.A2A_TEST_GARBAGE}"}}},
			"signing: key 1: {env.A2A_TEST_GARBAGE} is neither PEM text nor a readable file: no such file or directory"},
		{"refused inline PEM", SigningConfig{Keys: []SigningKey{{Key: inlineWeak}}},
			"signing: key 1: inline PEM key: "},
		{"no key", SigningConfig{Active: "a"}, "signing: no key: configure a key or generate_key"},
		{"unknown algorithm", SigningConfig{Keys: []SigningKey{{Key: ec, Algorithm: "HS256"}}},
			`signing: key 1: algorithm "HS256" is not one of ES256, ES384, RS256, PS256, EdDSA`},
		{"relative jwks_path", SigningConfig{Keys: []SigningKey{{Key: ec}}, JWKSPath: "jwks.json"},
			`signing: jwks_path "jwks.json" must start with / and not be a card path`},
		{"jwks_path on the card", SigningConfig{Keys: []SigningKey{{Key: ec}}, JWKSPath: "/.well-known/agent-card.json"},
			"must start with / and not be a card path"},
		{"relative jwks_url", SigningConfig{Keys: []SigningKey{{Key: ec}}, JWKSURL: "/jwks.json"},
			"signing: jwks_url: not an absolute http or https URL"},
		{"unknown form", SigningConfig{Keys: []SigningKey{{Key: ec}}, Forms: []string{"compact"}},
			`signing: forms: unknown form "compact"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := signingHandler(&tt.s)
			err := h.Provision(newTestContext(t))
			_ = h.Cleanup()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v\nwant one containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Errorf("the error shows key material or a placeholder's value: %.200s", err)
			}
		})
	}
}

func TestRunVerifyCardUsage(t *testing.T) {
	var out bytes.Buffer
	for _, tt := range []struct {
		args           []string
		forms, timeout string
		want           string
	}{
		{nil, "", "10s", "want one argument"},
		{[]string{"a", "b"}, "", "10s", "want one argument"},
		{[]string{"card.json"}, "spec,raw", "10s", `--forms: unknown form "raw"`},
		{[]string{"card.json"}, "", "soon", `--timeout: "soon" is not a positive duration`},
	} {
		code, err := runVerifyCard(&out, tt.args, "", false, tt.forms, tt.timeout)
		if code != 2 || err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: exit %d, %v; want 2 and %q", tt.args, code, err, tt.want)
		}
	}
	code, err := runVerifyCard(&out, []string{filepath.Join(t.TempDir(), "none.json")}, "", false, "", "10s")
	if code != 1 || err == nil {
		t.Errorf("a missing card: exit %d, %v", code, err)
	}
}

// signedAgent is a Caddy running the a2a handler with a signing block.
type signedAgent struct {
	t        *testing.T
	tester   *caddytest.Tester
	port     int
	skills   string
	upstream string
	storage  string
}

func startSignedAgent(t *testing.T) *signedAgent {
	t.Helper()
	adminPortOnce.Do(func() { adminPort = freePort(t) })
	t.Setenv("DEMO_API_KEY", testAPIKey)
	skills, err := filepath.Abs(filepath.Join("..", "examples", "skills.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	upstream := httptest.NewServer(demoapi.New(demoapi.Options{APIKey: testAPIKey}))
	t.Cleanup(upstream.Close)
	return &signedAgent{
		t: t,
		tester: caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{
			AdminPort:          adminPort,
			TestRequestTimeout: 30 * time.Second,
			LoadRequestTimeout: 30 * time.Second,
		}),
		port:     freePort(t),
		skills:   skills,
		upstream: upstream.URL,
		storage:  t.TempDir(),
	}
}

func (a *signedAgent) url() string { return fmt.Sprintf("http://localhost:%d/", a.port) }

// load (re)loads the config with the given signing block body.
func (a *signedAgent) load(description, signing string) {
	a.t.Helper()
	a.loadBlocks(description, signing, "")
}

// loadBlocks (re)loads the config with the given signing block body and
// more of the a2a block after it.
func (a *signedAgent) loadBlocks(description, signing, more string) {
	a.t.Helper()
	initServer(a.t, a.tester, fmt.Sprintf(`{
	admin localhost:%d
	persist_config off
	storage file_system %s
}

:%d {
	bind 127.0.0.1
	a2a {
		skills "%s"
		upstream %s
		url %s
		name "Café <Agent> ✓"
		description "%s"
		signing {
%s
		}
		%s
	}
}
`, adminPort, a.storage, a.port, a.skills, a.upstream, a.url(), description, signing, more))
}

func (a *signedAgent) get(path string) []byte {
	a.t.Helper()
	resp, err := a.tester.Client.Get(strings.TrimSuffix(a.url(), "/") + path)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		a.t.Fatalf("GET %s: %d %v: %s", path, resp.StatusCode, err, b)
	}
	return b
}

// TestIntegrationKeyRotation rotates the signing key across `caddy reload`s
// the documented way, with a client that fetched the JWKS once, before the
// rotation, and never again: it verifies every card served along the way.
func TestIntegrationKeyRotation(t *testing.T) {
	a := startSignedAgent(t)
	dir := t.TempDir()
	oldKey, newKey := keyFile(t, dir, "old.pem", cardgen.ES256), keyFile(t, dir, "new.pem", cardgen.EdDSA)

	a.load("Before the rotation", fmt.Sprintf("\t\t\tkey %s old", oldKey))
	before := a.get("/.well-known/agent-card.json")

	steps := []struct {
		name, signing, kid string
		published          int
	}{
		{"new key announced", fmt.Sprintf("\t\t\tkey %s old\n\t\t\tkey %s new\n\t\t\tactive old", oldKey, newKey), "old", 2},
		{"new key active", fmt.Sprintf("\t\t\tkey %s old\n\t\t\tkey %s new\n\t\t\tactive new", oldKey, newKey), "new", 2},
		{"old key removed", fmt.Sprintf("\t\t\tkey %s new", newKey), "new", 1},
	}
	var cached *cardgen.KeySet
	for i, st := range steps {
		a.load(fmt.Sprintf("Step %d", i+1), st.signing)
		if i == 0 {
			// The client fetches the key set once, as soon as the new key
			// is published, and keeps it.
			var err error
			if cached, err = cardgen.ParseJWKS(a.get(cardgen.DefaultJWKSPath)); err != nil {
				t.Fatal(err)
			}
		}
		card := a.get("/.well-known/agent-card.json")
		r, err := cardgen.Verify(card, cached, cardgen.VerifyOptions{})
		if err != nil || !r.OK(false) {
			t.Fatalf("%s: the cached JWKS does not verify the card: %v %+v", st.name, err, r)
		}
		if h := protectedHeader(t, card, 0); h["kid"] != st.kid || h["jku"] != strings.TrimSuffix(a.url(), "/")+cardgen.DefaultJWKSPath {
			t.Errorf("%s: protected header %v, want kid %s", st.name, h, st.kid)
		}
		live, err := cardgen.ParseJWKS(a.get(cardgen.DefaultJWKSPath))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(live.Keys()); n != st.published {
			t.Errorf("%s: %d keys published, want %d", st.name, n, st.published)
		}
		// The verification command, keys from the card's jku.
		var out bytes.Buffer
		if code, err := runVerifyCard(&out, []string{a.url()}, "", false, "", "10s"); code != 0 {
			t.Errorf("%s: %s exits %d: %v\n%s", st.name, verifyCommand, code, err, out.String())
		}
	}
	// A card signed before the rotation, checked against the key set of
	// after it: its key was retired, so it is unverified, not invalid.
	final, err := cardgen.ParseJWKS(a.get(cardgen.DefaultJWKSPath))
	if err != nil {
		t.Fatal(err)
	}
	r, err := cardgen.Verify(before, final, cardgen.VerifyOptions{})
	if err != nil || r.Count(cardgen.Unverified) != len(r.Signatures) {
		t.Errorf("a card signed by the retired key: %v %+v", err, r)
	}
}

// TestIntegrationGeneratedKey: generate_key makes a key at first start,
// keeps it in Caddy's storage and signs with the same key after a reload.
func TestIntegrationGeneratedKey(t *testing.T) {
	a := startSignedAgent(t)
	a.load("First start", "\t\t\tgenerate_key")
	stored := filepath.Join(a.storage, "caddy-a2a", "signing-keys", fmt.Sprintf("localhost_%d", a.port), "default-es256.pem")
	pemData, err := os.ReadFile(stored)
	if err != nil {
		t.Fatalf("the generated key is not in storage: %v", err)
	}
	k, err := keys.ParsePEM(pemData)
	if err != nil {
		t.Fatal(err)
	}
	kid, err := keys.Thumbprint(k.Public)
	if err != nil {
		t.Fatal(err)
	}
	first := protectedHeader(t, a.get("/.well-known/agent-card.json"), 0)
	if first["kid"] != kid || first["alg"] != cardgen.ES256 {
		t.Fatalf("protected header %v, want kid %s (the stored key's thumbprint)", first, kid)
	}

	a.load("After a reload", "\t\t\tgenerate_key")
	card := a.get("/.well-known/agent-card.json")
	if h := protectedHeader(t, card, 0); h["kid"] != kid {
		t.Errorf("after the reload the card is signed by %q, want the stored key %q", h["kid"], kid)
	}
	keys, err := cardgen.ParseJWKS(a.get(cardgen.DefaultJWKSPath))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := cardgen.Verify(card, keys, cardgen.VerifyOptions{}); err != nil || !r.OK(false) {
		t.Errorf("the card does not verify: %v %+v", err, r)
	}
	again, err := os.ReadFile(stored)
	if err != nil || !bytes.Equal(again, pemData) {
		t.Errorf("the stored key changed across the reload")
	}
}
