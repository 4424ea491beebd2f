// Package oauthtest is, for tests, an OAuth 2.0 token endpoint on
// loopback: client credentials (RFC 6749 §4.4) and token exchange
// (RFC 8693), with the client authenticated by a secret, by HTTP Basic or
// in the form (RFC 6749 §2.3.1), or by an assertion signed with its
// private key (private_key_jwt, RFC 7523). It numbers the tokens it issues
// and records what it was asked.
package oauthtest

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/caddy-a2a/caddy-a2a/keys"
)

// Server is a token endpoint. Its tokens are tok-N, or tok-N-for-SUBJECT
// for an exchange of SUBJECT, and live ExpiresIn seconds.
type Server struct {
	// URL is the token endpoint's.
	URL              string
	ClientID, Secret string
	// ClientKey, when set, is the client's public key: the client
	// authenticates by private_key_jwt, with no secret.
	ClientKey crypto.PublicKey
	// ExpiresIn is the expires_in of the next answers.
	ExpiresIn atomic.Int64
	// Gate, when set before the first request, holds each answer until
	// it is closed.
	Gate chan struct{}

	fetches atomic.Int32
	mu      sync.Mutex
	forms   []url.Values
	// assertions are the verified client assertions, one per token
	// issued (zero for a client with a secret).
	assertions []Assertion
	jtis       map[string]bool // of the assertions taken
}

// Assertion is a client assertion the endpoint verified.
type Assertion struct {
	Header jose.Header
	Claims jwt.Claims
}

// New starts a token endpoint for one client, closed when the test ends.
func New(t testing.TB, clientID, secret string, expiresIn int64) *Server {
	s := &Server{ClientID: clientID, Secret: secret}
	s.ExpiresIn.Store(expiresIn)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/token"
	return s
}

// NewWithKey starts a token endpoint for one client that authenticates
// by private_key_jwt, its assertions verified with pub; closed when the
// test ends.
func NewWithKey(t testing.TB, clientID string, pub crypto.PublicKey, expiresIn int64) *Server {
	s := New(t, clientID, "", expiresIn)
	s.ClientKey = pub
	return s
}

// ServeHTTP answers a token request. A client it does not know gets
// RFC 6749's invalid_client, whose description echoes the secret it was
// sent, as careless servers do.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.Gate != nil {
		<-s.Gate
	}
	w.Header().Set("Content-Type", "application/json")
	_ = r.ParseForm()
	assertion, refusal := s.authenticate(r)
	if refusal != "" {
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": refusal})
		return
	}
	subject := r.PostForm.Get("subject_token")
	switch grant := r.PostForm.Get("grant_type"); {
	case grant == "client_credentials":
	case grant == "urn:ietf:params:oauth:grant-type:token-exchange" && subject != "":
	default:
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "unsupported_grant_type"})
		return
	}
	s.mu.Lock()
	s.forms = append(s.forms, r.PostForm)
	s.assertions = append(s.assertions, assertion)
	s.mu.Unlock()
	tok := fmt.Sprintf("tok-%d", s.fetches.Add(1))
	if subject != "" {
		tok += "-for-" + subject
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": s.ExpiresIn.Load()})
}

// authenticate says why the client is refused, or "", and what its
// assertion said, if it sent one.
func (s *Server) authenticate(r *http.Request) (Assertion, string) {
	if s.ClientKey != nil || r.PostForm.Has("client_assertion") {
		a, refusal := s.checkAssertion(r.PostForm)
		if refusal != "" {
			// As careless servers do, the refusal echoes the assertion.
			refusal = "bad assertion " + r.PostForm.Get("client_assertion") + ": " + refusal
		}
		return a, refusal
	}
	id, secret, basic := r.BasicAuth()
	if basic {
		// RFC 6749 §2.3.1: each part is form-encoded.
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != s.ClientID || secret != s.Secret {
		return Assertion{}, "bad secret " + secret
	}
	return Assertion{}, ""
}

// checkAssertion verifies a client assertion as RFC 7523 §3 asks: signed
// by the client's key, issued by and about the client, for this endpoint,
// unexpired, and not seen before. It says why not, or "".
func (s *Server) checkAssertion(form url.Values) (Assertion, string) {
	if s.ClientKey == nil {
		return Assertion{}, "this client has no key: it authenticates with its secret"
	}
	if got := form.Get("client_assertion_type"); got != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		return Assertion{}, fmt.Sprintf("client_assertion_type %q", got)
	}
	if id := form.Get("client_id"); id != "" && id != s.ClientID {
		return Assertion{}, fmt.Sprintf("client_id %q is not the assertion's client", id)
	}
	algs := make([]jose.SignatureAlgorithm, len(keys.Algorithms))
	for i, alg := range keys.Algorithms {
		algs[i] = jose.SignatureAlgorithm(alg)
	}
	tok, err := jwt.ParseSigned(form.Get("client_assertion"), algs)
	if err != nil {
		return Assertion{}, "not a signed JWT: " + err.Error()
	}
	a := Assertion{Header: tok.Headers[0]}
	if err := tok.Claims(s.ClientKey, &a.Claims); err != nil {
		return Assertion{}, "its signature is not the client's: " + err.Error()
	}
	if err := a.Claims.ValidateWithLeeway(jwt.Expected{Issuer: s.ClientID, Subject: s.ClientID,
		AnyAudience: jwt.Audience{s.URL}, Time: time.Now()}, 0); err != nil {
		return Assertion{}, "its claims: " + err.Error()
	}
	if a.Claims.Expiry == nil || a.Claims.ID == "" {
		return Assertion{}, "it has no exp or no jti"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jtis[a.Claims.ID] {
		return Assertion{}, "its jti was used before"
	}
	if s.jtis == nil {
		s.jtis = map[string]bool{}
	}
	s.jtis[a.Claims.ID] = true
	return a, ""
}

// KeyPEM is key's PKCS #8 PEM encoding.
func KeyPEM(t testing.TB, key crypto.Signer) string {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// SelfSigned is a self-signed certificate of key, and its PEM encoding.
func SelfSigned(t testing.TB, key crypto.Signer) (*x509.Certificate, string) {
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agent"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// Fetches is how many tokens it issued.
func (s *Server) Fetches() int { return int(s.fetches.Load()) }

// AssertionOf is the client assertion of the i-th token it issued.
func (s *Server) AssertionOf(i int) Assertion {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.assertions[i]
}

// Form is the form of the i-th token it issued.
func (s *Server) Form(i int) url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.forms[i]
}
