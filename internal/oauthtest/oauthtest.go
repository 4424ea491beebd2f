// Package oauthtest is, for tests, an OAuth 2.0 token endpoint on
// loopback: client credentials (RFC 6749 §4.4) and token exchange
// (RFC 8693), with the client authenticated by HTTP Basic or in the form
// (RFC 6749 §2.3.1). It numbers the tokens it issues and records what it
// was asked.
package oauthtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// Server is a token endpoint. Its tokens are tok-N, or tok-N-for-SUBJECT
// for an exchange of SUBJECT, and live ExpiresIn seconds.
type Server struct {
	// URL is the token endpoint's.
	URL              string
	ClientID, Secret string
	// ExpiresIn is the expires_in of the next answers.
	ExpiresIn atomic.Int64
	// Gate, when set before the first request, holds each answer until
	// it is closed.
	Gate chan struct{}

	fetches atomic.Int32
	mu      sync.Mutex
	forms   []url.Values
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

// ServeHTTP answers a token request. A client it does not know gets
// RFC 6749's invalid_client, whose description echoes the secret it was
// sent, as careless servers do.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.Gate != nil {
		<-s.Gate
	}
	w.Header().Set("Content-Type", "application/json")
	_ = r.ParseForm()
	id, secret, basic := r.BasicAuth()
	if basic {
		// RFC 6749 §2.3.1: each part is form-encoded.
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != s.ClientID || secret != s.Secret {
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": "bad secret " + secret})
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
	s.mu.Unlock()
	tok := fmt.Sprintf("tok-%d", s.fetches.Add(1))
	if subject != "" {
		tok += "-for-" + subject
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": s.ExpiresIn.Load()})
}

// Fetches is how many tokens it issued.
func (s *Server) Fetches() int { return int(s.fetches.Load()) }

// Form is the form of the i-th token it issued.
func (s *Server) Form(i int) url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.forms[i]
}
