package authn

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/confval"
)

// Scheme types, as the card names them (OpenAPI / A2A 0.3 "type").
const (
	TypeAPIKey        = "apiKey"
	TypeHTTP          = "http"
	TypeOAuth2        = "oauth2"
	TypeOpenIDConnect = "openIdConnect"
	TypeMutualTLS     = "mutualTLS"
)

// Defaults for zero values in the configuration.
const (
	DefaultRealm              = "a2a"
	DefaultCacheSize          = 10000
	DefaultCacheTTL           = 5 * time.Minute
	DefaultLeeway             = 30 * time.Second
	DefaultRefreshInterval    = 15 * time.Minute
	DefaultMinRefreshInterval = 30 * time.Second
	DefaultFetchTimeout       = 10 * time.Second
	DefaultIntrospectionTTL   = time.Minute
)

// Config declares how callers authenticate (spec 1.0 §7): the security
// schemes and the agent-wide requirement. The same declaration makes the
// card's securitySchemes and security (Authenticator.CardSchemes,
// CardRequirements) and drives the checks, so the card states exactly what
// is checked; skills may require more (security: in the skills file).
//
// It is the a2a handler's security block: the json names are the JSON
// configuration's, and a Caddyfile subdirective sets the field of the same
// name, or the one whose comment names it. Secrets, keys and URLs take
// {env.NAME} placeholders, read by New: an unset variable is an error,
// never an empty secret.
type Config struct {
	// Schemes by name: the names are the keys of the card's
	// securitySchemes, and what require and the skills file's security:
	// refer to. A name is 1 to 64 letters, digits, '_', '-' or '.';
	// anonymous is reserved. In the Caddyfile a scheme is declared by its
	// kind: api_key, basic, bearer, oauth2, openid_connect or mutual_tls.
	Schemes map[string]*Scheme `json:"schemes,omitempty"`

	// Require is the agent-wide requirement, an OR of ANDs, checked on
	// every request before its body is read: a request is admitted when it
	// satisfies every scheme of one entry, each with the scopes listed. An
	// empty entry admits callers that present no credentials (require
	// anonymous in the Caddyfile, where each require is one entry and a
	// block of lines ANDs them). Default: any one declared scheme. A
	// request that meets no entry gets 401 with a WWW-Authenticate
	// challenge per acceptable scheme, one whose credentials lack a scope
	// 403; both carry an A2A error (JSON-RPC -31401, -31403).
	Require []a2a.SecurityRequirement `json:"require,omitempty"`

	// Realm is the realm of the WWW-Authenticate challenges. Default: a2a.
	Realm string `json:"realm,omitempty"`

	// CacheSize bounds how many verified credentials (tokens, basic
	// logins, client certificates) are remembered, by a hash, so that a
	// repeated one is not verified again. Default: 10000; negative
	// disables the cache.
	CacheSize int `json:"cache_size,omitempty"`

	// CacheTTL is the longest a verified credential is remembered; never
	// past a token's exp or a certificate's notAfter. Default: 5m.
	CacheTTL confval.Duration `json:"cache_ttl,omitempty"`
}

// Scheme is one way a caller can authenticate. Type says which fields
// apply.
type Scheme struct {
	// Type is apiKey, http, oauth2, openIdConnect or mutualTLS, as the card
	// names it. In the Caddyfile: api_key, basic or bearer (http), oauth2,
	// openid_connect, mutual_tls.
	Type string `json:"type"`

	// Description is shown on the card.
	Description string `json:"description,omitempty"`

	// In is where an apiKey is sent: header, query or cookie. In the
	// Caddyfile, In and Name follow the scheme's name: api_key <name>
	// header X-API-Key.
	In string `json:"in,omitempty"`

	// Name is the header, query parameter or cookie of an apiKey.
	Name string `json:"name,omitempty"`

	// Keys are the keys an apiKey scheme accepts. At least one.
	Keys []APIKey `json:"keys,omitempty"`

	// HTTPScheme is basic or bearer, for an http scheme.
	HTTPScheme string `json:"scheme,omitempty"`

	// BearerFormat is the card's hint at what a bearer token is. Default:
	// JWT when only JWTs are accepted.
	BearerFormat string `json:"bearer_format,omitempty"`

	// Users are the accounts of a basic scheme. At least one.
	Users []User `json:"users,omitempty"`

	// JWT verifies the tokens of a bearer, oauth2 or openIdConnect scheme
	// that are shaped like JWTs. In the Caddyfile its options stand in the
	// scheme's block.
	JWT *JWTConfig `json:"jwt,omitempty"`

	// Introspection checks the other tokens of a bearer, oauth2 or
	// openIdConnect scheme. A bearer or oauth2 scheme needs JWT or
	// Introspection.
	Introspection *IntrospectionConfig `json:"introspection,omitempty"`

	// Flows is the one OAuth 2.0 flow of an oauth2 scheme, for the card;
	// its scopes are those requirements may ask for. In the Caddyfile:
	// flow <type> { ... }, with scope <scope> [<description>] for each
	// scope.
	Flows *Flows `json:"flows,omitempty"`

	// MetadataURL is the RFC 8414 authorization server metadata of an
	// oauth2 scheme, shown on the card. Without a key source in JWT, it
	// gives the issuer and the JWKS.
	MetadataURL string `json:"metadata_url,omitempty"`

	// OpenIDConnectURL is the discovery document of an openIdConnect
	// scheme, which gives the issuer and the JWKS; JWT's audiences are
	// required. In the Caddyfile it follows the scheme's name:
	// openid_connect <name> <url>.
	OpenIDConnectURL string `json:"openid_connect_url,omitempty"`

	// MTLS says which client certificates a mutualTLS scheme accepts. In
	// the Caddyfile its options stand in the scheme's block.
	MTLS *MTLSConfig `json:"mtls,omitempty"`

	// AllowInsecureHTTP permits http:// JWKS, discovery and introspection
	// URLs on hosts other than loopback; otherwise they must be https.
	// Keys fetched over plain HTTP can be replaced by anyone on the path.
	AllowInsecureHTTP bool `json:"allow_insecure_http,omitempty"`
}

// APIKey is a key an apiKey scheme accepts and the caller it names. In the
// Caddyfile: key <key> <subject> [<scopes...>], or key_sha256 with the
// digest.
type APIKey struct {
	// Key is the key, at least 16 characters, or an {env.NAME}
	// placeholder. Only its SHA-256 is kept once loaded.
	Key string `json:"key,omitempty"`

	// SHA256 is the hex SHA-256 of the key, in place of Key, so that the
	// configuration never holds the key: printf %s "$KEY" | sha256sum.
	SHA256 string `json:"sha256,omitempty"`

	// Subject names the caller. Required.
	Subject string `json:"subject"`

	// Scopes are granted to the caller.
	Scopes []string `json:"scopes,omitempty"`
}

// User is an account of a basic scheme. In the Caddyfile: user <username>
// <bcrypt hash> [<scopes...>].
type User struct {
	// Username, without ':'. Required.
	Username string `json:"username"`

	// Password is the bcrypt hash of the password ($2a$, $2b$, $2y$), as
	// caddy hash-password prints it, or that hash base64-encoded, as
	// Caddy's basic_auth also takes it; an {env.NAME} placeholder expands.
	// Costs under 10 are logged as weak.
	Password string `json:"password"`

	// Scopes are granted to the user.
	Scopes []string `json:"scopes,omitempty"`
}

// JWTConfig verifies JWTs: the signature, by an allowed algorithm and a
// configured or discovered key, then exp (required), nbf and iat with the
// leeway, iss and aud. Tokens with a crit header are refused.
type JWTConfig struct {
	// Issuer is the iss tokens must carry. With openIdConnect or an oauth2
	// metadata_url it defaults to the discovered issuer, and when set must
	// equal it.
	Issuer string `json:"issuer,omitempty"`

	// Audiences: a token's aud must name one of them (Caddyfile:
	// audience). Required whenever the keys come from a JWKS (jwks_url or
	// discovery), whose keys sign tokens for many services.
	Audiences []string `json:"audiences,omitempty"`

	// Algorithms allowed. Default: RS256/384/512, PS256/384/512,
	// ES256/384/512 and EdDSA, and HS256/384/512 only with hmac_secret.
	// none is never accepted.
	Algorithms []string `json:"algorithms,omitempty"`

	// Leeway for exp, nbf and iat; at most 5m. Default: 30s.
	Leeway confval.Duration `json:"leeway,omitempty"`

	// JWKSURL is a JWK Set to take keys from. One key source (jwks_url,
	// public_keys or hmac_secret) is required unless discovery gives a
	// JWKS.
	JWKSURL string `json:"jwks_url,omitempty"`

	// PublicKeys are PEM files, or PEM text in {env.NAME}, of PKIX or
	// PKCS #1 public keys or certificates; RSA keys need 2048 bits
	// (Caddyfile: public_key).
	PublicKeys []string `json:"public_keys,omitempty"`

	// HMACSecret, at least 32 bytes, is the only way to allow
	// HS256/384/512.
	HMACSecret string `json:"hmac_secret,omitempty"`

	// SubjectClaim is the claim that names the caller. Default: sub.
	SubjectClaim string `json:"subject_claim,omitempty"`

	// RefreshInterval is how often the JWKS is fetched again in the
	// background; sooner, with backoff, after a failure. Default: 15m.
	RefreshInterval confval.Duration `json:"refresh_interval,omitempty"`

	// MinRefreshInterval is the least time between two fetches for tokens
	// with an unknown kid or after failures. Default: 30s.
	MinRefreshInterval confval.Duration `json:"min_refresh_interval,omitempty"`

	// FetchTimeout bounds one fetch of the JWKS or a discovery document.
	// Default: 10s.
	FetchTimeout confval.Duration `json:"fetch_timeout,omitempty"`
}

// IntrospectionConfig checks opaque tokens with an RFC 7662 endpoint. In
// the Caddyfile: introspection <url> { ... }.
type IntrospectionConfig struct {
	// URL of the introspection endpoint. Required.
	URL string `json:"url"`

	// ClientID authenticates this agent to the endpoint, with
	// ClientSecret (client_secret_basic).
	ClientID string `json:"client_id,omitempty"`

	// ClientSecret goes with ClientID; use an {env.NAME} placeholder.
	ClientSecret string `json:"client_secret,omitempty"`

	// Audiences: an answer that names an aud must name one of them
	// (Caddyfile: audience).
	Audiences []string `json:"audiences,omitempty"`

	// SubjectClaim is the answer's field that names the caller. Default:
	// sub, then client_id (as client_id:<id>), then username (as
	// username:<name>), so that a client never takes a user's name.
	SubjectClaim string `json:"subject_claim,omitempty"`

	// CacheTTL is the longest an active answer is reused; the token's exp
	// shortens it. Default: 1m.
	CacheTTL confval.Duration `json:"cache_ttl,omitempty"`

	// Timeout bounds one call. Default: 10s.
	Timeout confval.Duration `json:"timeout,omitempty"`
}

// Flows holds the one OAuth 2.0 flow an oauth2 scheme declares, in the
// card's own types, whose json names are the proto's.
type Flows = a2a.OAuthFlows

// Flow is one OAuth 2.0 flow, as the card shows it.
type Flow = a2a.OAuthFlow

// MTLSConfig says which client certificates a mutualTLS scheme accepts and
// how the caller is named. The site must ask for client certificates
// (tls { client_auth { ... } }) unless a trusted proxy passes them on.
type MTLSConfig struct {
	// TrustedCAs are PEM files, or PEM text in {env.NAME}, of the CAs a
	// client certificate must chain to (Caddyfile: trusted_ca). Without
	// them, only a certificate the TLS server itself verified (Caddy's
	// client_auth with trusted CAs) or a trusted proxy passed on counts.
	TrustedCAs []string `json:"trusted_cas,omitempty"`

	// TrustedProxies are the IPs or CIDRs of proxies in front whose
	// cert_header is believed; from anywhere else the header fails the
	// request. Set with CertHeader.
	TrustedProxies []string `json:"trusted_proxies,omitempty"`

	// CertHeader carries the client certificate from a trusted proxy:
	// URL-encoded PEM (nginx $ssl_client_escaped_cert, AWS ALB), base64
	// DER (Traefik) or Envoy's X-Forwarded-Client-Cert.
	CertHeader string `json:"cert_header,omitempty"`

	// SubjectFrom orders where the caller's name comes from: uri, dns and
	// email (SANs), cn, dn. Default: uri dns email cn.
	SubjectFrom []string `json:"subject_from,omitempty"`
}

func orDefault(d confval.Duration, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return time.Duration(d)
}

var schemeName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// kind is one way to authenticate. Its file declares it: what a scheme of
// that kind checks in its configuration, how it is set up, and what the
// card shows of it; and registers it (registerKind).
type kind struct {
	// typ, and httpScheme (lower case) for an http scheme, are the Type
	// and HTTPScheme of its schemes.
	typ, httpScheme string
	// card is its type on the card.
	card a2a.SecuritySchemeType
	// priority orders the credentials of one request (see Identity).
	priority int
	// tokens says it takes bearer tokens, checked by JWT and Introspection.
	tokens bool
	// validate checks its own fields, without files, environment or
	// network.
	validate func(s *Scheme) []error
	// build sets s up from its configuration.
	build func(b *builder, s *scheme, sc *Scheme) error
	// cardFields sets what the card shows of it besides its type and
	// description; nil when nothing.
	cardFields func(sc *Scheme, out *a2a.SecurityScheme)
}

// kinds are the ways to authenticate, in the card's order of scheme types
// (http schemes by name), so that errors list them alike however the
// files that register them are ordered.
var kinds []*kind

// registerKind adds k to kinds; each kind's file calls it from init.
func registerKind(k *kind) {
	i, _ := slices.BinarySearchFunc(kinds, k, func(a, b *kind) int {
		return cmp.Or(cmp.Compare(a.card, b.card), strings.Compare(a.httpScheme, b.httpScheme))
	})
	kinds = slices.Insert(kinds, i, k)
}

// kind is s's kind, or an error that names the valid types or, for http,
// the valid schemes.
func (s *Scheme) kind() (*kind, error) {
	var types, httpSchemes []string
	for _, k := range kinds {
		if s.Type == k.typ && (k.httpScheme == "" || strings.EqualFold(s.HTTPScheme, k.httpScheme)) {
			return k, nil
		}
		if k.httpScheme != "" {
			httpSchemes = append(httpSchemes, k.httpScheme)
		}
		if !slices.Contains(types, k.typ) {
			types = append(types, k.typ)
		}
	}
	if s.Type == TypeHTTP {
		return nil, fmt.Errorf("scheme: %q is not %s", s.HTTPScheme, oneOf(httpSchemes, "or"))
	}
	return nil, fmt.Errorf("type: %q is not %s", s.Type, oneOf(types, "or"))
}

// oneOf lists names as "a, b or c" (conjunction or), "a, b and c" (and).
func oneOf(names []string, conjunction string) string {
	last := len(names) - 1
	if last <= 0 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:last], ", ") + " " + conjunction + " " + names[last]
}

// Validate checks the configuration without reading files, environment or
// network, so it can run in a Caddy Validate step. New runs it too.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if strings.ContainsAny(c.Realm, "\"\\\r\n") {
		add("authn: realm: must not contain quotes, backslashes or line breaks")
	}
	if c.CacheTTL < 0 {
		add("authn: cache_ttl: negative")
	}
	for _, name := range slices.Sorted(maps.Keys(c.Schemes)) {
		s := c.Schemes[name]
		field := fmt.Sprintf("authn: scheme %q", name)
		if !schemeName.MatchString(name) {
			add("%s: a name is 1 to 64 letters, digits, '_', '-' or '.'", field)
		}
		if name == "anonymous" {
			add("%s: the name is reserved (`require anonymous` in the Caddyfile)", field)
		}
		if s == nil {
			add("%s: empty", field)
			continue
		}
		for _, err := range s.validate() {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
		}
	}
	if len(c.Schemes) == 0 && len(c.Require) > 0 {
		add("authn: require: no schemes are declared")
	}
	for i, req := range c.Require {
		for _, name := range slices.Sorted(maps.Keys(req)) {
			if _, ok := c.Schemes[name]; !ok {
				add("authn: require[%d]: scheme %q is not declared", i, name)
			}
		}
	}
	return errors.Join(errs...)
}

func (s *Scheme) validate() []error {
	var errs []error
	k, err := s.kind()
	if err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, k.validate(s)...)
	}
	if k != nil && k.tokens {
		errs = append(errs, s.validateTokens()...)
	} else if s.JWT != nil || s.Introspection != nil {
		var takers []string
		for _, k := range kinds {
			if k.tokens {
				takers = append(takers, cmp.Or(k.httpScheme, k.typ))
			}
		}
		errs = append(errs, fmt.Errorf("jwt and introspection apply only to %s schemes", oneOf(takers, "and")))
	}
	if s.Type != TypeMutualTLS && s.MTLS != nil {
		errs = append(errs, errors.New("mtls applies only to mutualTLS schemes"))
	}
	return errs
}

// checkURL wants an absolute https URL, or http to a loopback host (or
// anywhere when insecure is allowed).
func checkURL(raw string, allowHTTP bool) error {
	if raw == "" {
		return errors.New("required")
	}
	if strings.Contains(raw, "{env.") {
		return nil // checked again once expanded
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL")
	}
	switch {
	case u.Host == "":
		return fmt.Errorf("%q is not an absolute URL", raw)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && (allowHTTP || isLoopback(u.Hostname())):
		return nil
	case u.Scheme == "http":
		return fmt.Errorf("%q: https is required (allow_insecure_http permits http)", raw)
	}
	return fmt.Errorf("%q: scheme must be https", raw)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}
