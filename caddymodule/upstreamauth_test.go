package caddymodule

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/internal/oauthtest"
)

// tokenUpstream is an upstream that records the Authorization header of
// each request, and every header value it got, and answers 401 to the
// tokens in refused.
type tokenUpstream struct {
	mu        sync.Mutex
	seen      []string // Authorization, in order
	values    []string // every header value of every request
	refused   map[string]bool
	refuseAll bool
}

func (u *tokenUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	defer u.mu.Unlock()
	auth := r.Header.Get("Authorization")
	u.seen = append(u.seen, auth)
	for _, vals := range r.Header {
		u.values = append(u.values, vals...)
	}
	if u.refuseAll || u.refused[auth] {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"ok":true}`)
}

// take returns what was seen since the last take.
func (u *tokenUpstream) take() (auth, values []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	auth, values = u.seen, u.values
	u.seen, u.values = nil, nil
	return auth, values
}

const tokenSkills = `upstream:
  url: %s
  oauth2:
    grant: %s
    token_url: %s
    client_id: '{env.UPSTREAM_CLIENT_ID}'
    client_secret: '{env.UPSTREAM_CLIENT_SECRET}'
    scopes: [orders]
skills:
  - id: order
    description: places an order
    request:
      method: POST
      path: /orders
      body: '{"item": args.item}'
      idempotency_key: true
  - id: note
    description: notes an order, with no idempotency key
    request:
      method: POST
      path: /notes
      body: '{"item": args.item}'
`

// TestIntegrationUpstreamOAuth2 runs a Caddy with four agents, each in
// front of an upstream that takes tokens: by client credentials, by a
// token exchange of the caller's JWT, from a token endpoint that is down,
// and from one that refuses the client, echoing its secret.
func TestIntegrationUpstreamOAuth2(t *testing.T) {
	const secret = "upstream-secret-0123"
	t.Setenv("UPSTREAM_CLIENT_ID", "agent")
	t.Setenv("UPSTREAM_CLIENT_SECRET", secret)
	jwks := newJWKSServer(t)
	credentials := oauthtest.New(t, "agent", secret, 3600)
	exchange := oauthtest.New(t, "agent", secret, 3600)
	refusing := oauthtest.New(t, "agent", "another secret", 3600)
	// A token endpoint that is down: it holds its port (a closed one may be
	// taken by the next server the test starts) and drops every
	// connection unanswered.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(down.Close)

	ccUp := &tokenUpstream{refused: map[string]bool{}}
	xUp := &tokenUpstream{refused: map[string]bool{}}
	var sites strings.Builder
	agents := map[string]*securedAgent{}
	for _, s := range []struct {
		name, grant, tokenURL string
		upstream              http.Handler
		security              string
	}{
		{"credentials", "client_credentials", credentials.URL, ccUp, ""},
		{"exchange", "token_exchange", exchange.URL, xUp, fmt.Sprintf(`
		security {
			api_key key header X-API-Key {
				key %s alice
			}
			bearer jwt {
				issuer https://issuer.test
				audience a2a-test
				jwks_url %s
			}
		}`, aliceKey, jwks.url)},
		{"down", "client_credentials", down.URL + "/token", &tokenUpstream{}, ""},
		{"refusing", "client_credentials", refusing.URL, &tokenUpstream{}, ""},
	} {
		up := httptest.NewServer(s.upstream)
		t.Cleanup(up.Close)
		port := freePort(t)
		skills := writeSkills(t, fmt.Sprintf(tokenSkills, up.URL, s.grant, s.tokenURL))
		fmt.Fprintf(&sites, `
:%d {
	bind 127.0.0.1
	a2a {
		skills "%s"
		url http://127.0.0.1:%d/
		name "%s"
		description "An upstream that takes tokens"%s
	}
}
`, port, skills, port, s.name, s.security)
		agents[s.name] = &securedAgent{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	}
	tester := newTester(t)
	initServer(t, tester, fmt.Sprintf("{\n\tadmin localhost:%d\n\tpersist_config off\n\tauto_https off\n}\n%s", adminPort, sites.String()))
	for _, a := range agents {
		a.tester, a.client = tester, tester.Client
	}
	// state is the task's state and status message.
	state := func(raw string) string {
		i := strings.Index(raw, `"state":"`)
		if i < 0 {
			return raw
		}
		return raw[i:]
	}

	t.Run("client credentials: one token for every call, a 401 sent again once, expiry", func(t *testing.T) {
		a := agents["credentials"]
		for range 2 {
			if _, _, raw := a.send("order", `{"item":"tea"}`, ""); !strings.Contains(raw, "TASK_STATE_COMPLETED") {
				t.Fatalf("not completed: %s", raw)
			}
		}
		if auth, _ := ccUp.take(); fmt.Sprint(auth) != "[Bearer tok-1 Bearer tok-1]" || credentials.Fetches() != 1 {
			t.Fatalf("the upstream saw %q after %d fetches; want tok-1 twice, one fetch", auth, credentials.Fetches())
		}
		// The upstream refuses tok-1: the call, which has an idempotency
		// key, is sent again with tok-2, which lives no longer than the
		// refresh margin, so the next call gets tok-3.
		ccUp.mu.Lock()
		ccUp.refused["Bearer tok-1"] = true
		ccUp.mu.Unlock()
		credentials.ExpiresIn.Store(30)
		for range 2 {
			if _, _, raw := a.send("order", `{"item":"tea"}`, ""); !strings.Contains(raw, "TASK_STATE_COMPLETED") {
				t.Fatalf("not completed: %s", raw)
			}
		}
		if auth, _ := ccUp.take(); fmt.Sprint(auth) != "[Bearer tok-1 Bearer tok-2 Bearer tok-3]" {
			t.Fatalf("the upstream saw %q; want tok-1 (refused), tok-2, then tok-3 once tok-2 was due", auth)
		}
		// Only once: the second 401 is the answer. The token that replaced
		// the refused one is kept a while, so that an upstream refusing
		// every token costs no token request per call.
		ccUp.mu.Lock()
		ccUp.refuseAll = true
		ccUp.mu.Unlock()
		credentials.ExpiresIn.Store(3600)
		for _, want := range []string{"[Bearer tok-4 Bearer tok-5]", "[Bearer tok-5]"} {
			if _, _, raw := a.send("order", `{"item":"tea"}`, ""); strings.Contains(raw, "TASK_STATE_COMPLETED") {
				t.Fatalf("completed although the upstream refuses every token: %s", raw)
			}
			if auth, _ := ccUp.take(); fmt.Sprint(auth) != want || credentials.Fetches() != 5 {
				t.Fatalf("the upstream saw %q after %d fetches; want %s after 5", auth, credentials.Fetches(), want)
			}
		}
	})

	t.Run("token exchange on behalf of the caller", func(t *testing.T) {
		a := agents["exchange"]
		jwt := jwks.token(t, "alice", time.Hour)
		_, _, raw := a.send("order", `{"item":"tea"}`, "", "Authorization", "Bearer "+jwt)
		if !strings.Contains(raw, "TASK_STATE_COMPLETED") {
			t.Fatalf("not completed: %s", raw)
		}
		auth, values := xUp.take()
		if want := "Bearer tok-1-for-" + jwt; len(auth) != 1 || auth[0] != want {
			t.Fatalf("the upstream saw %q; want the exchanged token", auth)
		}
		for _, v := range values {
			if strings.Contains(v, jwt) && v != "Bearer tok-1-for-"+jwt {
				t.Fatalf("the caller's own token reached the upstream: %q", v)
			}
		}
		if f := exchange.Form(0); f.Get("subject_token") != jwt ||
			f.Get("subject_token_type") != "urn:ietf:params:oauth:token-type:access_token" {
			t.Fatalf("the exchange sent %v", f)
		}
		// The same caller's token again: the exchanged token is kept.
		a.send("order", `{"item":"tea"}`, "", "Authorization", "Bearer "+jwt)
		if auth, _ := xUp.take(); len(auth) != 1 || exchange.Fetches() != 1 {
			t.Fatalf("second call: the upstream saw %q after %d exchanges, want one exchange", auth, exchange.Fetches())
		}
		// The upstream refuses the exchanged token: a call without an
		// idempotency key is not sent twice, and the next call has the
		// token exchanged anew.
		xUp.mu.Lock()
		xUp.refused["Bearer tok-1-for-"+jwt] = true
		xUp.mu.Unlock()
		for _, want := range []string{"TASK_STATE_FAILED", "TASK_STATE_COMPLETED"} {
			if _, _, raw := a.send("note", `{"item":"tea"}`, "", "Authorization", "Bearer "+jwt); !strings.Contains(raw, want) {
				t.Fatalf("note: %s, want %s", state(raw), want)
			}
		}
		if auth, _ := xUp.take(); fmt.Sprint(auth) != fmt.Sprintf("[Bearer tok-1-for-%s Bearer tok-2-for-%s]", jwt, jwt) {
			t.Fatalf("the upstream saw %q; want the refused token once, then the one exchanged anew", auth)
		}
		// A caller the agent admits by API key has no token to exchange.
		_, _, raw = a.send("order", `{"item":"tea"}`, "", "X-API-Key", aliceKey)
		want := `Skill \"order\" acts on behalf of its caller, who presented no bearer token the agent validated, so the request was not sent.`
		if !strings.Contains(raw, "TASK_STATE_FAILED") || !strings.Contains(raw, want) {
			t.Fatalf("an API key's caller: %s\nwant a failed task saying %s", state(raw), want)
		}
		if auth, _ := xUp.take(); len(auth) != 0 {
			t.Fatalf("the upstream got %q from a caller without a token", auth)
		}
	})

	// The caller is told no more: the token URL may hold a tenant's id,
	// the endpoint's error what it was sent.
	for name, tokenURL := range map[string]string{"down": down.URL, "refusing": refusing.URL} {
		t.Run("a token endpoint "+name, func(t *testing.T) {
			_, _, raw := agents[name].send("order", `{"item":"tea"}`, "")
			want := `Skill \"order\" could not get a token for the service, so the request was not sent.`
			if !strings.Contains(raw, "TASK_STATE_FAILED") || !strings.Contains(raw, want) {
				t.Fatalf("got %s\nwant a failed task saying %s", state(raw), want)
			}
			if strings.Contains(raw, secret) || strings.Contains(raw, tokenURL) || strings.Contains(raw, "invalid_client") {
				t.Fatalf("the answer shows the client secret, the token URL or the endpoint's error: %s", raw)
			}
		})
	}
}

// TestIntegrationUpstreamOAuth2PrivateKeyJWT runs a Caddy with an agent
// whose token client authenticates by private_key_jwt, its key and
// certificate in files beside the skills file (the assertions name the
// certificate by its thumbprints), in front of an upstream that refuses a request
// without a token. Tokens live no longer than the refresh margin, so each
// call fetches one with a new assertion, which the token endpoint, which
// refuses a replayed jti, takes.
func TestIntegrationUpstreamOAuth2PrivateKeyJWT(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	idp := oauthtest.NewWithKey(t, "agent", key.Public(), 30)
	upstream := &tokenUpstream{refused: map[string]bool{"": true}}
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	skills := writeSkills(t, fmt.Sprintf(`upstream:
  url: %s
  oauth2:
    grant: client_credentials
    token_url: %s
    client_id: agent
    client_auth: private_key_jwt
    private_key_file: agent-key.pem
    certificate_file: agent-cert.pem
    key_id: agent-key-1
skills:
  - id: order
    description: places an order
    request:
      method: POST
      path: /orders
      body: '{"item": args.item}'
`, up.URL, idp.URL))
	cert, certPEM := oauthtest.SelfSigned(t, key)
	for name, data := range map[string]string{"agent-key.pem": oauthtest.KeyPEM(t, key), "agent-cert.pem": certPEM} {
		if err := os.WriteFile(filepath.Join(filepath.Dir(skills), name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	thumbprint := sha256.Sum256(cert.Raw)
	port := freePort(t)
	tester := newTester(t)
	initServer(t, tester, fmt.Sprintf(`{
	admin localhost:%d
	persist_config off
	auto_https off
}
:%d {
	bind 127.0.0.1
	a2a {
		skills "%s"
		url http://127.0.0.1:%d/
		name "keyed"
		description "An upstream whose tokens the agent gets with its private key"
	}
}
`, adminPort, port, skills, port))
	a := &securedAgent{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port), tester: tester, client: tester.Client}
	for range 2 {
		if _, _, raw := a.send("order", `{"item":"tea"}`, ""); !strings.Contains(raw, "TASK_STATE_COMPLETED") {
			t.Fatalf("not completed: %s", raw)
		}
	}
	if auth, _ := upstream.take(); fmt.Sprint(auth) != "[Bearer tok-1 Bearer tok-2]" {
		t.Fatalf("the upstream saw %q; want tok-1, then tok-2", auth)
	}
	for i := range 2 {
		got := idp.AssertionOf(i).Header
		if x5t := got.ExtraHeaders["x5t#S256"]; got.KeyID != "agent-key-1" || got.Algorithm != "ES256" ||
			x5t != base64.RawURLEncoding.EncodeToString(thumbprint[:]) {
			t.Errorf("assertion %d: kid %q, alg %s, x5t#S256 %v; want agent-key-1, ES256, the certificate's", i+1, got.KeyID, got.Algorithm, x5t)
		}
	}
}
