// Package pushtest is for tests of push notifications: a webhook receiver on
// loopback that passes on what it gets, and the check of a notification's
// JWT that a receiver makes.
package pushtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/caddy-a2a/caddy-a2a/keys"
)

// Notification is one POST a Receiver got.
type Notification struct {
	Path   string
	Header http.Header
	Body   []byte
}

// Receiver is a webhook on loopback.
type Receiver struct {
	// URL is the receiver's base URL; any path under it reaches it.
	URL string
	// Got carries each notification as it arrives.
	Got <-chan Notification
}

// NewReceiver starts a receiver that answers its first POSTs with
// statuses, in order, and every later one with 200. It stops when the test
// ends.
func NewReceiver(t testing.TB, statuses ...int) *Receiver {
	got := make(chan Notification, 64)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- Notification{r.URL.Path, r.Header.Clone(), body}
		if i := int(n.Add(1)) - 1; i < len(statuses) {
			w.WriteHeader(statuses[i])
		}
	}))
	t.Cleanup(srv.Close)
	return &Receiver{URL: srv.URL, Got: got}
}

// Next returns the next notification, failing the test if none comes.
func (r *Receiver) Next(t testing.TB) Notification {
	t.Helper()
	select {
	case n := <-r.Got:
		return n
	case <-time.After(15 * time.Second):
		t.Fatal("no push notification arrived")
	}
	return Notification{}
}

// Verify checks a notification's JWT as a receiver does: the signature by
// kid against the agent's JWKS, the issuer, the audience (the receiver's
// URL), iat and exp, the task and the hash of the body. It returns the
// token's header and claims.
func Verify(t testing.TB, jwks []byte, token, issuer, aud, taskID string, body []byte) (map[string]any, jwt.MapClaims) {
	t.Helper()
	var set struct{ Keys []json.RawMessage }
	if err := json.Unmarshal(jwks, &set); err != nil {
		t.Fatalf("the JWKS: %v", err)
	}
	claims := jwt.MapClaims{}
	tok, err := jwt.ParseWithClaims(token, claims, func(tok *jwt.Token) (any, error) {
		for _, raw := range set.Keys {
			if k, err := keys.ParseJWK(raw); err == nil && k.ID == tok.Header["kid"] {
				return k.Public, nil
			}
		}
		return nil, fmt.Errorf("kid %v is not in the agent's JWKS", tok.Header["kid"])
	}, jwt.WithIssuer(issuer), jwt.WithAudience(aud), jwt.WithIssuedAt(), jwt.WithExpirationRequired())
	if err != nil {
		t.Fatalf("the notification's JWT: %v", err)
	}
	sum := sha256.Sum256(body)
	if claims["taskId"] != taskID || claims["request_body_sha256"] != hex.EncodeToString(sum[:]) || claims["jti"] == "" {
		t.Errorf("claims %v, want task %s, a jti and the body's hash", claims, taskID)
	}
	return tok.Header, claims
}
