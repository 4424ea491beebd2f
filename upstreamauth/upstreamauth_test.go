package upstreamauth_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/internal/oauthtest"
	"github.com/caddy-a2a/caddy-a2a/upstreamauth"
)

const (
	clientID = "agent"
	secret   = "s3cr3t-Value+/="
)

func newIdP(t *testing.T, expiresIn int64) *oauthtest.Server {
	return oauthtest.New(t, clientID, secret, expiresIn)
}

// clock is a clock the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newClient(t *testing.T, cfg upstreamauth.Config) *upstreamauth.Client {
	t.Helper()
	if cfg.Grant == "" {
		cfg.Grant = upstreamauth.GrantClientCredentials
	}
	if cfg.ClientID == "" {
		cfg.ClientID, cfg.ClientSecret = clientID, secret
	}
	c, err := upstreamauth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClientCredentialsCachedUntilTheMargin(t *testing.T) {
	p := newIdP(t, 3600)
	clk := &clock{now: time.Unix(1_000_000, 0)}
	c := newClient(t, upstreamauth.Config{TokenURL: p.URL, Scopes: []string{"read", "write"},
		Audience: "https://api.example.com", Now: clk.Now})
	ctx := context.Background()
	for range 3 {
		if tok, err := c.Token(ctx, upstreamauth.Subject{}); err != nil || tok != "tok-1" {
			t.Fatalf("Token = %q, %v; want tok-1", tok, err)
		}
	}
	f := p.Form(0)
	for k, want := range map[string]string{"grant_type": "client_credentials", "scope": "read write",
		"audience": "https://api.example.com", "resource": "https://api.example.com"} {
		if got := f.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if f.Has("client_secret") {
		t.Error("the secret is in the form: it belongs in the Basic header")
	}
	post := newClient(t, upstreamauth.Config{TokenURL: p.URL, ClientAuth: upstreamauth.ClientSecretPost})
	if tok, err := post.Token(ctx, upstreamauth.Subject{}); err != nil || tok != "tok-2" || p.Form(1).Get("client_secret") != secret {
		t.Fatalf("client_secret_post: %q, %v, form %v", tok, err, p.Form(1))
	}
	clk.add(time.Hour - upstreamauth.RefreshMargin - time.Second)
	if tok, _ := c.Token(ctx, upstreamauth.Subject{}); tok != "tok-1" {
		t.Fatalf("before the margin: %q, want tok-1", tok)
	}
	clk.add(time.Second)
	if tok, _ := c.Token(ctx, upstreamauth.Subject{}); tok != "tok-3" {
		t.Fatalf("at the margin: %q, want tok-3", tok)
	}
}

func TestShortLivedTokenServesOneRequest(t *testing.T) {
	p := newIdP(t, int64(upstreamauth.RefreshMargin/time.Second))
	c := newClient(t, upstreamauth.Config{TokenURL: p.URL})
	a, _ := c.Token(context.Background(), upstreamauth.Subject{})
	b, _ := c.Token(context.Background(), upstreamauth.Subject{})
	if a != "tok-1" || b != "tok-2" {
		t.Fatalf("tokens %q, %q; want tok-1, tok-2", a, b)
	}
}

func TestOneFetchForConcurrentCallers(t *testing.T) {
	p := newIdP(t, 3600)
	p.Gate = make(chan struct{})
	c := newClient(t, upstreamauth.Config{TokenURL: p.URL})
	var wg sync.WaitGroup
	toks := make([]string, 20)
	for i := range toks {
		wg.Go(func() { toks[i], _ = c.Token(context.Background(), upstreamauth.Subject{}) })
	}
	// A caller whose context ends stops waiting; the fetch goes on.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Token(ctx, upstreamauth.Subject{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a canceled caller: %v, want context.Canceled", err)
	}
	close(p.Gate)
	wg.Wait()
	for _, tok := range toks {
		if tok != "tok-1" {
			t.Fatalf("tokens %v: want all tok-1", toks)
		}
	}
	if n := p.Fetches(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
}

func TestTokenExchangePerCaller(t *testing.T) {
	p := newIdP(t, 3600)
	c := newClient(t, upstreamauth.Config{Grant: upstreamauth.GrantTokenExchange, TokenURL: p.URL, Audience: "orders"})
	ctx := context.Background()
	if _, err := c.Token(ctx, upstreamauth.Subject{}); !errors.Is(err, upstreamauth.ErrNoSubject) {
		t.Fatalf("no caller's token: %v, want ErrNoSubject", err)
	}
	alice, _ := c.Token(ctx, upstreamauth.Subject{Token: "alice-token"})
	bob, _ := c.Token(ctx, upstreamauth.Subject{Token: "bob-token"})
	again, _ := c.Token(ctx, upstreamauth.Subject{Token: "alice-token"})
	if alice != "tok-1-for-alice-token" || bob != "tok-2-for-bob-token" || again != alice {
		t.Fatalf("tokens %q, %q, %q", alice, bob, again)
	}
	f := p.Form(0)
	for k, want := range map[string]string{"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
		"subject_token": "alice-token", "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
		"requested_token_type": "urn:ietf:params:oauth:token-type:access_token", "audience": "orders"} {
		if got := f.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if f.Has("resource") {
		t.Error("a logical audience (not a URI) was sent as resource too")
	}
}

// A token exchanged for the caller's is kept no longer than the caller's
// is valid, however long the provider says it lives: past that, the next
// request exchanges again (which a provider refuses for a token that has
// run out). One whose caller's token has run out already serves no later
// request.
func TestExchangedTokenKeptNoLongerThanTheCallers(t *testing.T) {
	p := newIdP(t, 3600)
	clk := &clock{now: time.Unix(1_000_000, 0)}
	c := newClient(t, upstreamauth.Config{Grant: upstreamauth.GrantTokenExchange, TokenURL: p.URL, Now: clk.Now})
	ctx := context.Background()
	alice := upstreamauth.Subject{Token: "alice-token", Expires: clk.Now().Add(10 * time.Minute)}
	for _, step := range []struct {
		wait    time.Duration
		subject upstreamauth.Subject
		want    string
	}{
		{0, alice, "tok-1-for-alice-token"},
		{10*time.Minute - time.Second, alice, "tok-1-for-alice-token"},
		{time.Second, alice, "tok-2-for-alice-token"},
		{0, alice, "tok-3-for-alice-token"},
		// A caller's token of unknown expiry: the provider's lifetime.
		{0, upstreamauth.Subject{Token: "bob-token"}, "tok-4-for-bob-token"},
		{time.Hour - upstreamauth.RefreshMargin - time.Second, upstreamauth.Subject{Token: "bob-token"}, "tok-4-for-bob-token"},
	} {
		clk.add(step.wait)
		if got, err := c.Token(ctx, step.subject); err != nil || got != step.want {
			t.Fatalf("after %v more: %q, %v; want %q", step.wait, got, err, step.want)
		}
	}
}

// A subject reaching a client-credentials client is never sent: the one
// token is the agent's own, shared by every caller.
func TestClientCredentialsSendNoSubject(t *testing.T) {
	p := newIdP(t, 3600)
	c := newClient(t, upstreamauth.Config{TokenURL: p.URL})
	alice, _ := c.Token(context.Background(), upstreamauth.Subject{Token: "alice-token"})
	bob, _ := c.Token(context.Background(), upstreamauth.Subject{Token: "bob-token"})
	if alice != "tok-1" || bob != "tok-1" || p.Form(0).Has("subject_token") {
		t.Fatalf("tokens %q, %q after the form %v; want tok-1 for both, no subject_token", alice, bob, p.Form(0))
	}
}

func TestErrorsNameTheEndpointNeverTheSecret(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	echo := newIdP(t, 3600)
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"access_token":"`+strings.Repeat("a", upstreamauth.MaxResponseBytes)+`"}`)
	}))
	defer big.Close()
	mac := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"access_token":"abc","token_type":"mac"}`)
	}))
	defer mac.Close()
	for _, tc := range []struct {
		name, url, wrongSecret, want string
	}{
		{"down", down.URL, "", "could not get a token for the service from " + down.URL + ": it cannot be reached"},
		{"refuses, echoing the secret", echo.URL, "wrong-" + secret,
			"could not get a token for the service from " + echo.URL + ": it answered HTTP 401 (invalid_client: bad secret ***)"},
		{"too large", big.URL, "", "its answer is larger than 64 KiB"},
		{"not bearer", mac.URL, "", `its token_type is "mac", not Bearer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := upstreamauth.Config{Grant: upstreamauth.GrantClientCredentials, TokenURL: tc.url, ClientID: clientID, ClientSecret: secret}
			if tc.wrongSecret != "" {
				cfg.ClientSecret = tc.wrongSecret
			}
			c, err := upstreamauth.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Token(context.Background(), upstreamauth.Subject{})
			var te *upstreamauth.Error
			if !errors.As(err, &te) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one holding %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), url.QueryEscape(secret)) {
				t.Fatalf("the error shows the secret: %v", err)
			}
		})
	}
}

func TestConfigChecks(t *testing.T) {
	for _, tc := range []struct {
		cfg  upstreamauth.Config
		want string
	}{
		{upstreamauth.Config{Grant: "password"}, "grant must be"},
		{upstreamauth.Config{Grant: "client_credentials", TokenURL: "http://idp.example.com/token"}, "token_url must be https:// (http:// only to a loopback address)"},
		{upstreamauth.Config{Grant: "client_credentials", TokenURL: "https://idp/token"}, "client_id is required"},
		{upstreamauth.Config{Grant: "client_credentials", TokenURL: "http://127.0.0.1:9/token", ClientID: "a"}, "client_secret is required"},
		{upstreamauth.Config{Grant: "client_credentials", TokenURL: "https://idp/token", ClientID: "a", ClientSecret: "b", ClientAuth: "jwt"},
			`client_auth must be basic, post or private_key_jwt, not "jwt"`},
	} {
		if err := tc.cfg.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	ok := upstreamauth.Config{Grant: "token_exchange", TokenURL: "http://[::1]:8080/token", ClientID: "a", ClientSecret: "b"}
	if err := ok.Check(); err != nil {
		t.Errorf("loopback http: %v", err)
	}
}

// refusingAPI is an upstream that records the Authorization and body of
// each request, and answers 401 to the tokens in refuse.
type refusingAPI struct {
	mu     sync.Mutex
	seen   []string
	refuse map[string]bool
}

func (a *refusingAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	auth := r.Header.Get("Authorization")
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen = append(a.seen, strings.TrimPrefix(auth, "Bearer ")+" "+string(body))
	if a.refuse[strings.TrimPrefix(auth, "Bearer ")] {
		w.WriteHeader(http.StatusUnauthorized)
	}
}

// refuseToo adds tokens to those refused.
func (a *refusingAPI) refuseToo(tokens ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, tok := range tokens {
		a.refuse[tok] = true
	}
}

// take returns what was seen since the last take.
func (a *refusingAPI) take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	seen := a.seen
	a.seen = nil
	return seen
}

// newRefusingAPI starts an upstream refusing tokens, and a transport to it
// with a client of p whose clock is clk.
func newRefusingAPI(t *testing.T, p *oauthtest.Server, clk *clock, tokens ...string) (*refusingAPI, func(ctx context.Context) int) {
	api := &refusingAPI{refuse: map[string]bool{}}
	api.refuseToo(tokens...)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	rt := &upstreamauth.Transport{Base: http.DefaultTransport, Client: newClient(t, upstreamauth.Config{TokenURL: p.URL, Now: clk.Now})}
	return api, func(ctx context.Context) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("payload"))
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
}

// A request that may be sent twice is sent once more, body replayed, with
// the token that replaces the one refused. That token refused too is the
// upstream's answer for RenewCooldown: an upstream that refuses every
// token costs a fetch per RenewCooldown, not one per request.
func TestTransportResendsARefusedRequestOnce(t *testing.T) {
	p := newIdP(t, 3600)
	clk := &clock{now: time.Unix(1_000_000, 0)}
	api, send := newRefusingAPI(t, p, clk, "tok-1")
	resend := upstreamauth.WithResend(context.Background())
	for _, step := range []struct {
		name       string
		refuse     []string
		wait       time.Duration
		status     int
		seen       []string
		fetchesNow int
	}{
		{"tok-1 refused: tok-2", nil, 0, http.StatusOK, []string{"tok-1 payload", "tok-2 payload"}, 2},
		{"tok-2 refused: the answer", []string{"tok-2"}, 0, http.StatusUnauthorized, []string{"tok-2 payload"}, 2},
		{"again, no fetch", nil, upstreamauth.RenewCooldown - time.Second, http.StatusUnauthorized, []string{"tok-2 payload"}, 2},
		{"after the cooldown, once more", []string{"tok-3"}, time.Second, http.StatusUnauthorized, []string{"tok-2 payload", "tok-3 payload"}, 3},
		{"and the cooldown again", nil, 0, http.StatusUnauthorized, []string{"tok-3 payload"}, 3},
	} {
		api.refuseToo(step.refuse...)
		clk.add(step.wait)
		got := send(resend)
		if seen := api.take(); got != step.status || fmt.Sprint(seen) != fmt.Sprint(step.seen) || p.Fetches() != step.fetchesNow {
			t.Fatalf("%s: status %d after %q, %d fetches; want %d after %q, %d fetches",
				step.name, got, seen, p.Fetches(), step.status, step.seen, step.fetchesNow)
		}
	}
}

// lateRefusal is a transport whose 401 answers' bodies end only once the
// token fetches under way are done: the fetch that replaces a refused
// token is then over before the transport asks for a token to resend with.
type lateRefusal struct{ client *upstreamauth.Client }

func (l lateRefusal) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		resp.Body = awaitingBody{resp.Body, l.client}
	}
	return resp, err
}

type awaitingBody struct {
	io.ReadCloser
	client *upstreamauth.Client
}

func (b awaitingBody) Read(p []byte) (int, error) {
	b.client.AwaitFetches()
	return b.ReadCloser.Read(p)
}

// The token that replaces a refused one is the one the request is sent
// again with, even when it lives too short a time to be cached and its
// fetch is over before the resend: no second fetch, no third token.
func TestTransportResendsWithTheShortLivedRenewal(t *testing.T) {
	p := newIdP(t, 3600)
	api := &refusingAPI{refuse: map[string]bool{}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	client := newClient(t, upstreamauth.Config{TokenURL: p.URL})
	rt := &upstreamauth.Transport{Base: lateRefusal{client}, Client: client}
	send := func() int {
		t.Helper()
		req, _ := http.NewRequestWithContext(upstreamauth.WithResend(context.Background()), http.MethodPost, srv.URL, strings.NewReader("payload"))
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	send()
	api.take()
	api.refuseToo("tok-1")
	p.ExpiresIn.Store(int64(upstreamauth.RefreshMargin / time.Second))
	if got := send(); got != http.StatusOK {
		t.Fatalf("status %d, want 200", got)
	}
	if seen, want := api.take(), []string{"tok-1 payload", "tok-2 payload"}; fmt.Sprint(seen) != fmt.Sprint(want) || p.Fetches() != 2 {
		t.Fatalf("upstream saw %q after %d fetches; want %q after 2", seen, p.Fetches(), want)
	}
}

// A request not marked WithResend is sent once: its 401 is the answer,
// and the next request has the token that replaces the one refused.
func TestTransportSendsOtherRequestsOnce(t *testing.T) {
	p := newIdP(t, 3600)
	api, send := newRefusingAPI(t, p, &clock{now: time.Unix(1_000_000, 0)}, "tok-1")
	ctx := context.Background()
	if got := send(ctx); got != http.StatusUnauthorized {
		t.Fatalf("status %d, want the 401", got)
	}
	if got := send(ctx); got != http.StatusOK {
		t.Fatalf("next request: status %d, want 200", got)
	}
	if seen, want := api.take(), []string{"tok-1 payload", "tok-2 payload"}; fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("upstream saw %q, want %q", seen, want)
	}
}

// memoryEndpoint is a token endpoint in memory: it answers each exchange
// with a token naming its subject, living expiresIn (3600 when "") as
// written, and counts the requests.
type memoryEndpoint struct {
	fetches   atomic.Int32
	expiresIn string
}

func (m *memoryEndpoint) RoundTrip(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	req.Body.Close()
	form, _ := url.ParseQuery(string(body))
	m.fetches.Add(1)
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"access_token":"for-` + form.Get("subject_token") + `","token_type":"Bearer","expires_in":` + cmp.Or(m.expiresIn, "3600") + `}`))}, nil
}

// expires_in is any JSON number of seconds, a fraction cut off.
func TestExpiresInAnyJSONNumber(t *testing.T) {
	for _, tc := range []struct {
		expiresIn string
		lifetime  time.Duration // 0: refused
	}{
		{"3600", time.Hour},
		{"3600.0", time.Hour},
		{"1e3", 1000 * time.Second},
		{"3.6E+3", time.Hour},
		{"59.9", 59 * time.Second},
		{"-1", 0},
		{"-0.5", 0},
		{"1e19", 0},
		{"1e400", 0},
	} {
		t.Run(tc.expiresIn, func(t *testing.T) {
			endpoint := &memoryEndpoint{expiresIn: tc.expiresIn}
			clk := &clock{now: time.Unix(1_000_000, 0)}
			c := newClient(t, upstreamauth.Config{TokenURL: "https://idp.example.com/token", Transport: endpoint, Now: clk.Now})
			_, err := c.Token(context.Background(), upstreamauth.Subject{})
			if tc.lifetime == 0 {
				if err == nil || !strings.Contains(err.Error(), "its expires_in is not a number of seconds") {
					t.Fatalf("error %v, want expires_in refused", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			clk.add(tc.lifetime - upstreamauth.RefreshMargin - time.Nanosecond)
			c.Token(context.Background(), upstreamauth.Subject{})
			kept := endpoint.fetches.Load() == 1
			clk.add(time.Nanosecond)
			c.Token(context.Background(), upstreamauth.Subject{})
			if !kept || endpoint.fetches.Load() != 2 {
				t.Fatalf("kept until the margin: %v; fetched again at it: %v; want both", kept, endpoint.fetches.Load() == 2)
			}
		})
	}
}

// Exchanged tokens are bounded in count: past MaxExchangedTokens, the one
// due for refresh soonest gives way, and only it is fetched again.
func TestExchangedTokensBounded(t *testing.T) {
	endpoint := &memoryEndpoint{}
	clk := &clock{now: time.Unix(1_000_000, 0)}
	c := newClient(t, upstreamauth.Config{Grant: upstreamauth.GrantTokenExchange, TokenURL: "https://idp.example.com/token",
		Transport: endpoint, Now: clk.Now})
	ctx := context.Background()
	for i := range upstreamauth.MaxExchangedTokens + 1 {
		if _, err := c.Token(ctx, upstreamauth.Subject{Token: fmt.Sprintf("caller-%d", i)}); err != nil {
			t.Fatal(err)
		}
		clk.add(time.Millisecond) // caller-0's token is due first
	}
	before := endpoint.fetches.Load()
	if tok, _ := c.Token(ctx, upstreamauth.Subject{Token: "caller-1"}); tok != "for-caller-1" || endpoint.fetches.Load() != before {
		t.Fatalf("caller-1: %q after %d fetches; want it kept", tok, endpoint.fetches.Load()-before)
	}
	if tok, _ := c.Token(ctx, upstreamauth.Subject{Token: "caller-0"}); tok != "for-caller-0" || endpoint.fetches.Load() != before+1 {
		t.Fatalf("caller-0: %q after %d fetches; want it fetched again, having given way", tok, endpoint.fetches.Load()-before)
	}
	// Once they are all due for refresh, the next token past the bound
	// sweeps them all.
	clk.add(time.Hour)
	if _, err := c.Token(ctx, upstreamauth.Subject{Token: "caller-last"}); err != nil || c.Cached() != 1 {
		t.Fatalf("after the next token, %d cached (%v); want 1: those due for refresh swept", c.Cached(), err)
	}
}
