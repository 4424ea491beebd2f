// Package upstreamauth gets the access tokens an agent sends to its
// upstream: OAuth 2.0 client credentials (RFC 6749 §4.4) for the agent
// itself, or a token exchange (RFC 8693) of the caller's token for one
// scoped to the upstream. The client authenticates with a secret, or with
// an assertion it signs with its private key (private_key_jwt, RFC 7523).
// Tokens are cached until shortly before they expire, fetched one at a
// time per key (concurrent callers wait for the one fetch, each as long as
// its own context allows), and every error leaves the client secret, the
// key, the assertions and the tokens out.
//
// golang.org/x/oauth2 is not used: it has no token exchange, its cache
// holds waiters on a mutex that no context bounds, and its errors quote
// the token endpoint's body, which may echo the secret.
package upstreamauth

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/caddy-a2a/caddy-a2a/keys"
)

// The grants a Config may name.
const (
	GrantClientCredentials = "client_credentials"
	GrantTokenExchange     = "token_exchange"
)

// The ways a client authenticates to the token endpoint.
const (
	ClientSecretBasic = "basic" // HTTP Basic, each part form-encoded
	ClientSecretPost  = "post"  // client_id and client_secret in the form
	// PrivateKeyJWT: client_id and an assertion signed with the client's
	// private key in the form (RFC 7523 §2.2, OpenID Connect Core §9).
	PrivateKeyJWT = "private_key_jwt"
)

// Bounds of the token client.
const (
	// RefreshMargin is how long before its expires_in runs out a token is
	// fetched anew: a token that lives no longer serves one request.
	RefreshMargin = 30 * time.Second
	// DefaultLifetime is how long a token whose answer gives no expires_in
	// is kept; an upstream's 401 drops it sooner.
	DefaultLifetime = 5 * time.Minute
	// RenewCooldown is how long a token fetched to replace a refused one
	// is kept though the upstream refuses it too: that refusal is the
	// upstream's answer (a wrong audience, say), which another token would
	// not change, so an upstream that refuses every token costs one fetch
	// per RenewCooldown, not one per request.
	RenewCooldown = 30 * time.Second
	// MaxResponseBytes bounds a token endpoint's answer.
	MaxResponseBytes = 64 << 10
	// FetchTimeout bounds one request to the token endpoint.
	FetchTimeout = 10 * time.Second
	// AssertionLifetime is how long a client assertion is valid after it
	// is signed (its exp less its iat): long enough for the request to
	// reach a token endpoint whose clock runs a little ahead, short enough
	// that an assertion seen by another is of little use. Each fetch signs
	// a new one.
	AssertionLifetime = 60 * time.Second
	// MaxExchangedTokens and MaxExchangedBytes bound the tokens a
	// token-exchange client keeps, one per caller's token: past either,
	// the entry due for refresh soonest gives way.
	MaxExchangedTokens = 10_000
	MaxExchangedBytes  = 16 << 20
	// maxDetail bounds the token endpoint's error text quoted in an Error.
	maxDetail = 200
)

// Config is one upstream's token client.
type Config struct {
	Grant        string // GrantClientCredentials or GrantTokenExchange
	TokenURL     string // https, or http to a loopback address
	ClientID     string
	ClientSecret string
	Scopes       []string
	// ClientAuth is how the client authenticates: ClientSecretBasic (the
	// default, when "") or ClientSecretPost (RFC 6749 §2.3.1) with
	// ClientSecret, or PrivateKeyJWT with PrivateKey.
	ClientAuth string
	// PrivateKey signs the client assertions of PrivateKeyJWT
	// (ParsePrivateKey reads one); it passes keys.Check.
	PrivateKey crypto.Signer
	// SigningAlg is the assertions' JWS alg; "" means the key's
	// keys.DefaultAlgorithm (RS256 for RSA, ES256/ES384/ES512 by curve,
	// EdDSA for Ed25519). It must fit the key (keys.CheckAlgorithm).
	SigningAlg string
	// KeyID, when set, is the assertions' kid header: how a provider
	// holding several of the client's keys knows which one signed.
	KeyID string
	// Certificate, when set, is PrivateKey's X.509 certificate
	// (ParseCertificate reads one): the assertions name it by its
	// thumbprints, x5t (SHA-1) and x5t#S256 (SHA-256), as Microsoft Entra
	// ID, which knows the client by the certificate uploaded, wants.
	Certificate *x509.Certificate
	// Audience is sent as the audience parameter and, when it is an
	// absolute URI, as the resource parameter too (RFC 8707; RFC 8693
	// §2.1 defines both).
	Audience string
	// Transport carries the requests to the token endpoint; nil means a
	// transport of the client's own.
	Transport http.RoundTripper
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Check says what is wrong with a Config, or nil. Its messages never
// quote the secret.
func (c *Config) Check() error {
	if c.Grant != GrantClientCredentials && c.Grant != GrantTokenExchange {
		return fmt.Errorf("grant must be %s or %s, not %q", GrantClientCredentials, GrantTokenExchange, c.Grant)
	}
	if c.TokenURL == "" {
		return errors.New("token_url is required")
	}
	if err := checkTokenURL(c.TokenURL); err != nil {
		return fmt.Errorf("token_url %w", err)
	}
	switch {
	case c.ClientID == "":
		return errors.New("client_id is required")
	case c.ClientAuth == PrivateKeyJWT:
		return c.checkKey()
	case c.ClientAuth != "" && c.ClientAuth != ClientSecretBasic && c.ClientAuth != ClientSecretPost:
		return fmt.Errorf("client_auth must be %s, %s or %s, not %q", ClientSecretBasic, ClientSecretPost, PrivateKeyJWT, c.ClientAuth)
	case c.ClientSecret == "":
		return errors.New("client_secret is required")
	case c.PrivateKey != nil || c.SigningAlg != "" || c.KeyID != "" || c.Certificate != nil:
		return fmt.Errorf("a private key, a certificate, signing_alg and key_id are for client_auth %s, which sends no client_secret", PrivateKeyJWT)
	}
	return nil
}

// checkKey checks the settings of PrivateKeyJWT. Its messages never quote
// the key.
func (c *Config) checkKey() error {
	switch {
	case c.ClientSecret != "":
		return &SettingError{"client_secret", fmt.Errorf("is not sent with client_auth %s: give the private key alone", PrivateKeyJWT)}
	case c.PrivateKey == nil:
		return fmt.Errorf("client_auth %s needs the private key that signs its assertions", PrivateKeyJWT)
	}
	if err := keys.Check(c.PrivateKey.Public()); err != nil {
		return &SettingError{"private_key", err}
	}
	if _, err := c.signingAlg(); err != nil {
		return &SettingError{"signing_alg", err}
	}
	if c.Certificate != nil && !keys.Equal(c.Certificate.PublicKey, c.PrivateKey.Public()) {
		return &SettingError{"certificate", errors.New("is not the private key's: its public key is another")}
	}
	return nil
}

// SettingError is a Check error about one setting, named as in the
// skills file, so that a loader can point at its line.
type SettingError struct {
	Setting string
	Err     error
}

func (e *SettingError) Error() string { return e.Setting + ": " + e.Err.Error() }

func (e *SettingError) Unwrap() error { return e.Err }

// signingAlg is the assertions' alg: SigningAlg, or the key's default.
func (c *Config) signingAlg() (string, error) {
	pub := c.PrivateKey.Public()
	if c.SigningAlg == "" {
		return keys.DefaultAlgorithm(pub)
	}
	return c.SigningAlg, keys.CheckAlgorithm(c.SigningAlg, pub)
}

// ParsePrivateKey reads the first private key in PEM data: PKCS #8
// "PRIVATE KEY", PKCS #1 "RSA PRIVATE KEY" or SEC 1 "EC PRIVATE KEY",
// under the keys policy (RSA of keys.MinRSABits or more, ECDSA on P-256,
// P-384 or P-521, Ed25519). Its errors never quote the data.
func ParsePrivateKey(data []byte) (crypto.Signer, error) {
	k, err := keys.ParsePEM(data)
	if err != nil {
		return nil, err
	}
	if k.Private == nil {
		return nil, errors.New("it holds a public key; the client signs with its private key")
	}
	return k.Private, nil
}

// ParseCertificate reads the first "CERTIFICATE" block of PEM data.
func ParseCertificate(data []byte) (*x509.Certificate, error) {
	for rest := data; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return nil, errors.New("no PEM certificate found (want a block -----BEGIN CERTIFICATE-----)")
		}
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
	}
}

// checkTokenURL wants https, or http to a loopback address (a token
// endpoint on the same machine or in the same pod): the secret travels
// in the request.
func checkTokenURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "" || u.Opaque != "":
		return errors.New("is not an absolute URL")
	case u.User != nil || u.Fragment != "":
		return errors.New("may not hold a user, a password or a fragment")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	}
	return errors.New("must be https:// (http:// only to a loopback address)")
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Client gets and caches the tokens of one upstream. It is safe for
// concurrent use.
type Client struct {
	cfg       Config
	form      url.Values  // the parameters every request sends
	basic     string      // the Authorization header of client_secret_basic, or ""
	signer    jose.Signer // signs the client assertions of private_key_jwt, or nil
	transport http.RoundTripper
	now       func() time.Time

	mu      sync.Mutex
	tokens  map[[sha256.Size]byte]*entry
	flights map[[sha256.Size]byte]*flight
	bytes   int
}

type entry struct {
	token     string
	refreshAt time.Time
	// renewal: fetched to replace a token the upstream refused, at fetched.
	renewal bool
	fetched time.Time
}

// flight is one fetch under way; done closes when tok or err is set.
type flight struct {
	done    chan struct{}
	renewal bool
	tok     string
	err     error
}

// New checks cfg and makes its client.
func New(cfg Config) (*Client, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, transport: cfg.Transport, now: cfg.Now,
		tokens: map[[sha256.Size]byte]*entry{}, flights: map[[sha256.Size]byte]*flight{}}
	if c.transport == nil {
		c.transport = &http.Transport{
			DialContext:         (&net.Dialer{Timeout: FetchTimeout, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: FetchTimeout,
		}
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.form = url.Values{}
	if cfg.Grant == GrantTokenExchange {
		c.form.Set("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange")
		c.form.Set("subject_token_type", accessTokenType)
		c.form.Set("requested_token_type", accessTokenType)
	} else {
		c.form.Set("grant_type", "client_credentials")
	}
	if len(cfg.Scopes) > 0 {
		c.form.Set("scope", strings.Join(cfg.Scopes, " "))
	}
	if cfg.Audience != "" {
		c.form.Set("audience", cfg.Audience)
		if u, err := url.Parse(cfg.Audience); err == nil && u.IsAbs() {
			c.form.Set("resource", cfg.Audience)
		}
	}
	switch cfg.ClientAuth {
	case PrivateKeyJWT:
		// RFC 7523 §3.2 makes client_id optional beside an assertion;
		// Entra ID requires it, and the others accept it.
		c.form.Set("client_id", cfg.ClientID)
		c.form.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		alg, _ := cfg.signingAlg() // Check passed
		opts := (&jose.SignerOptions{}).WithType("JWT")
		if cfg.KeyID != "" {
			opts = opts.WithHeader("kid", cfg.KeyID)
		}
		if cert := cfg.Certificate; cert != nil {
			sha1Sum, sha256Sum := sha1.Sum(cert.Raw), sha256.Sum256(cert.Raw)
			opts = opts.WithHeader("x5t", base64.RawURLEncoding.EncodeToString(sha1Sum[:])).
				WithHeader("x5t#S256", base64.RawURLEncoding.EncodeToString(sha256Sum[:]))
		}
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(alg), Key: cfg.PrivateKey}, opts)
		if err != nil {
			return nil, fmt.Errorf("the private key cannot sign %s assertions: %w", alg, err)
		}
		c.signer = signer
	case ClientSecretPost:
		c.form.Set("client_id", cfg.ClientID)
		c.form.Set("client_secret", cfg.ClientSecret)
	default:
		// RFC 6749 §2.3.1: each part form-encoded before it is joined.
		c.basic = "Basic " + base64.StdEncoding.EncodeToString(
			[]byte(url.QueryEscape(cfg.ClientID)+":"+url.QueryEscape(cfg.ClientSecret)))
	}
	return c, nil
}

const accessTokenType = "urn:ietf:params:oauth:token-type:access_token"

// OnBehalf says the client exchanges the caller's token: Token needs it.
func (c *Client) OnBehalf() bool { return c.cfg.Grant == GrantTokenExchange }

// ErrNoSubject is Token's error when a token exchange has no caller's
// token to exchange.
var ErrNoSubject = errors.New("the caller presented no bearer token the agent validated, and this upstream's token is exchanged for it")

// Subject is the caller's bearer token that a token exchange trades for
// the upstream's, and when it expires (zero: not known). A token
// exchanged for it is kept no longer than it is valid: the upstream never
// acts for a caller whose own token has run out on a token the agent
// kept.
type Subject struct {
	Token   string
	Expires time.Time
}

// Token returns an access token for the upstream: the cached one, or one
// fetched now. subject is the caller's token for a token exchange, and
// ignored otherwise: it is never sent, nor does it key the one token of
// client credentials. A caller waits for a fetch under way rather than
// starting another, as long as ctx allows; the fetch itself is bounded by
// FetchTimeout, not by ctx, so that one caller giving up fails no other.
func (c *Client) Token(ctx context.Context, subject Subject) (string, error) {
	if !c.OnBehalf() {
		subject = Subject{}
	} else if subject.Token == "" {
		return "", ErrNoSubject
	}
	key := c.key(subject)
	c.mu.Lock()
	if e := c.tokens[key]; e != nil && c.now().Before(e.refreshAt) {
		c.mu.Unlock()
		return e.token, nil
	}
	f := c.flight(key, subject, false)
	c.mu.Unlock()
	return c.wait(ctx, f)
}

// wait is f's token, or an error once ctx is done.
func (c *Client) wait(ctx context.Context, f *flight) (string, error) {
	select {
	case <-f.done:
		return f.tok, f.err
	case <-ctx.Done():
		return "", &Error{TokenURL: c.cfg.TokenURL, Reason: "no token before the request's time ran out", err: context.Cause(ctx)}
	}
}

// flight is the fetch of key's token under way, or one started now; c.mu
// is held.
func (c *Client) flight(key [sha256.Size]byte, subject Subject, renewal bool) *flight {
	f := c.flights[key]
	if f == nil {
		f = &flight{done: make(chan struct{}), renewal: renewal}
		c.flights[key] = f
		go c.fetch(key, subject, f)
	}
	return f
}

// refused tells the client that the upstream answered 401 to token, and
// reports whether another token is to be tried (renewed) or the refusal
// is the upstream's answer. A token still cached is dropped and another
// fetched at once, unless it was itself fetched to replace a refused
// token less than RenewCooldown ago. A token that is no longer the cached
// one has been replaced already; one never cached (it lives no longer
// than RefreshMargin) was fresh. The fetch under way, if any, is returned:
// its token is the one to try, since a token too short-lived to be cached
// is in no later Token's answer.
func (c *Client) refused(subject Subject, token string) (f *flight, renewed bool) {
	if !c.OnBehalf() {
		subject = Subject{}
	}
	key := c.key(subject)
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.tokens[key]
	switch {
	case e == nil:
		f = c.flights[key]
		return f, f != nil
	case e.token != token:
		return nil, true
	case e.renewal && c.now().Sub(e.fetched) < RenewCooldown:
		return nil, false
	}
	c.drop(key, e)
	return c.flight(key, subject, true), true
}

// key is the cache key: a hash of the caller's token for an exchange (so
// that the map holds no caller's token), the one key otherwise.
func (c *Client) key(subject Subject) [sha256.Size]byte {
	if !c.OnBehalf() {
		return [sha256.Size]byte{}
	}
	return sha256.Sum256([]byte(subject.Token))
}

func (c *Client) fetch(key [sha256.Size]byte, subject Subject, f *flight) {
	ctx, cancel := context.WithTimeout(context.Background(), FetchTimeout)
	defer cancel()
	tok, lifetime, err := c.request(ctx, subject.Token)
	// The token's life counts from its answer, read before the waiters
	// wake: none may see a clock earlier than the one its refresh time is
	// set from (a test moves its clock as soon as Token returns).
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.flights, key)
	f.tok, f.err = tok, err
	close(f.done)
	if err != nil {
		return
	}
	if old := c.tokens[key]; old != nil {
		c.drop(key, old)
	}
	refreshAt := now.Add(lifetime - RefreshMargin)
	if !subject.Expires.IsZero() && subject.Expires.Before(refreshAt) {
		refreshAt = subject.Expires
	}
	if !refreshAt.After(now) {
		return // serves the requests that waited for it, and no later one
	}
	c.put(key, &entry{token: tok, refreshAt: refreshAt, renewal: f.renewal, fetched: now})
}

// entryBytes is what an entry costs, about: its token, key and the map's share.
func entryBytes(e *entry) int { return len(e.token) + 2*sha256.Size + 64 }

// put caches e. Past a bound, one pass drops every entry due for
// refresh, which no Token returns any more, and finds the one due soonest
// of the others, which gives way if that was not enough.
func (c *Client) put(key [sha256.Size]byte, e *entry) {
	c.tokens[key] = e
	c.bytes += entryBytes(e)
	if !c.OnBehalf() {
		return
	}
	now := c.now()
	for len(c.tokens) > MaxExchangedTokens || c.bytes > MaxExchangedBytes {
		var soonest [sha256.Size]byte
		var victim *entry
		for k, v := range c.tokens {
			switch {
			case !now.Before(v.refreshAt):
				c.drop(k, v)
			case victim == nil || v.refreshAt.Before(victim.refreshAt):
				soonest, victim = k, v
			}
		}
		if victim != nil && (len(c.tokens) > MaxExchangedTokens || c.bytes > MaxExchangedBytes) {
			c.drop(soonest, victim)
		}
	}
}

func (c *Client) drop(key [sha256.Size]byte, e *entry) {
	delete(c.tokens, key)
	c.bytes -= entryBytes(e)
}

// assertion is a new client assertion (RFC 7523 §3): the client is its
// issuer and subject, the token endpoint its audience, and its jti is
// fresh, so that a provider refusing replays takes it.
func (c *Client) assertion() (string, error) {
	now := c.now()
	return jwt.Signed(c.signer).Claims(jwt.Claims{
		Issuer:    c.cfg.ClientID,
		Subject:   c.cfg.ClientID,
		Audience:  jwt.Audience{c.cfg.TokenURL},
		ID:        rand.Text(),
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		Expiry:    jwt.NewNumericDate(now.Add(AssertionLifetime)),
	}).Serialize()
}

// request asks the token endpoint for a token, and reads its lifetime.
func (c *Client) request(ctx context.Context, subject string) (string, time.Duration, error) {
	form := c.form
	var assertion string
	if subject != "" || c.signer != nil {
		form = maps.Clone(c.form)
		if subject != "" {
			form.Set("subject_token", subject)
		}
	}
	if c.signer != nil {
		var err error
		if assertion, err = c.assertion(); err != nil {
			return "", 0, c.fail("the client assertion could not be signed", err, subject)
		}
		form.Set("client_assertion", assertion)
	}
	// fail's error leaves out what this request sent.
	fail := func(reason string, cause error) *Error { return c.fail(reason, cause, subject, assertion) }
	body := form.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.TokenURL, strings.NewReader(body))
	if err != nil {
		return "", 0, fail("the request could not be made", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if c.basic != "" {
		req.Header.Set("Authorization", c.basic)
	}
	resp, err := c.transport.RoundTrip(req) // no redirects: the secret goes to the token endpoint only
	if err != nil {
		return "", 0, fail("it cannot be reached", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	switch {
	case err != nil:
		return "", 0, fail("its answer was cut short", err)
	case len(raw) > MaxResponseBytes:
		return "", 0, fail(fmt.Sprintf("its answer is larger than %d KiB", MaxResponseBytes>>10), nil)
	}
	var answer struct {
		AccessToken      string      `json:"access_token"`
		TokenType        string      `json:"token_type"`
		ExpiresIn        json.Number `json:"expires_in"`
		Error            string      `json:"error"`
		ErrorDescription string      `json:"error_description"`
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	decodeErr := json.Unmarshal(raw, &answer)
	if resp.StatusCode != http.StatusOK {
		reason := fmt.Sprintf("it answered HTTP %d", resp.StatusCode)
		if decodeErr == nil && answer.Error != "" {
			// RFC 6749 §5.2's error code and description: the description
			// may echo what was sent, so the secret is taken out first.
			detail := answer.Error
			if answer.ErrorDescription != "" {
				detail += ": " + answer.ErrorDescription
			}
			reason += " (" + oneLine(c.redact(detail, subject, assertion), maxDetail) + ")"
		}
		return "", 0, fail(reason, nil)
	}
	switch {
	case decodeErr != nil:
		return "", 0, fail(fmt.Sprintf("its answer is not a JSON token response (%s)", mediaType), nil)
	case answer.AccessToken == "":
		return "", 0, fail("its answer holds no access_token", nil)
	case !isHeaderToken(answer.AccessToken):
		return "", 0, fail("its access_token is not printable ASCII without spaces", nil)
	case answer.TokenType != "" && !strings.EqualFold(answer.TokenType, "bearer"):
		return "", 0, fail(fmt.Sprintf("its token_type is %q, not Bearer", oneLine(answer.TokenType, 40)), nil)
	}
	lifetime := DefaultLifetime
	if answer.ExpiresIn != "" {
		// Any JSON number (3600, 3600.0, 3.6e3), cut to whole seconds.
		secs, err := strconv.ParseFloat(string(answer.ExpiresIn), 64)
		if err != nil || !(secs >= 0 && secs < math.MaxInt64) {
			return "", 0, fail("its expires_in is not a number of seconds", nil)
		}
		lifetime = time.Duration(min(int64(secs), int64(365*24*time.Hour/time.Second))) * time.Second
	}
	return answer.AccessToken, lifetime, nil
}

// Error is a token that could not be had. Its text names the token
// endpoint and why, never the secret or a token.
type Error struct {
	TokenURL string
	Reason   string
	err      error
}

func (e *Error) Error() string {
	return fmt.Sprintf("could not get a token for the service from %s: %s", e.TokenURL, e.Reason)
}

func (e *Error) Unwrap() error { return e.err }

// fail makes an Error; cause is wrapped with the secret and what the
// request sent (the caller's token, the client assertion) taken out of its
// text (a transport error may quote a request).
func (c *Client) fail(reason string, cause error, sent ...string) *Error {
	if cause != nil {
		cause = errors.New(c.redact(cause.Error(), sent...))
	}
	return &Error{TokenURL: c.cfg.TokenURL, Reason: reason, err: cause}
}

// redact takes the secret and what the request sent out of s, as written
// and as form-encoded.
func (c *Client) redact(s string, sent ...string) string {
	for _, secret := range append([]string{c.cfg.ClientSecret}, sent...) {
		if secret == "" {
			continue
		}
		s = strings.ReplaceAll(s, secret, "***")
		s = strings.ReplaceAll(s, url.QueryEscape(secret), "***")
	}
	return s
}

// oneLine folds white space and cuts s to limit bytes.
func oneLine(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= limit {
		return s
	}
	for limit > 0 && !utf8.RuneStart(s[limit]) {
		limit--
	}
	return s[:limit] + "…"
}

// isHeaderToken reports whether s can stand in an Authorization header
// as it is: printable ASCII, no spaces.
func isHeaderToken(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r >= 0x7f }) < 0
}
