package authn

import (
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
	"github.com/caddy-a2a/caddy-a2a/keys"
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

// Config declares the security schemes of an agent and the agent-wide
// requirement. The same declaration produces the card's securitySchemes and
// security fields (Authenticator.CardSchemes, CardRequirements) and drives
// the checks, so the card states exactly what is enforced.
type Config struct {
	// Schemes by name; the names are the keys of the card's securitySchemes
	// and what requirements refer to. A name is letters, digits, '_', '-'
	// and '.'; "anonymous" is reserved.
	Schemes map[string]*Scheme

	// Require is the agent-wide requirement, an OR of ANDs: a request is
	// admitted when it satisfies every scheme (with the scopes listed) of
	// at least one entry. When empty, any one declared scheme alone is
	// enough. An empty entry ({}) admits callers that present no
	// credentials at all.
	Require []a2a.SecurityRequirement

	// Realm is the realm of the WWW-Authenticate challenges. Default "a2a".
	Realm string

	// CacheSize bounds how many verified credentials (tokens, basic
	// credentials, client certificates) are remembered. Default 10000;
	// negative disables the cache.
	CacheSize int

	// CacheTTL is the longest a verified credential is reused without
	// verifying it again; a token's own expiry shortens it. Default 5m.
	CacheTTL time.Duration
}

// Scheme is one way a caller can authenticate. Type says which fields apply.
type Scheme struct {
	// Type is apiKey, http, oauth2, openIdConnect or mutualTLS.
	Type        string
	Description string

	// apiKey: In is header, query or cookie; Name is the header, query
	// parameter or cookie name. Keys are the accepted keys.
	In   string
	Name string
	Keys []APIKey

	// http: HTTPScheme is basic or bearer. Basic checks Users; bearer
	// checks tokens with JWT and/or Introspection.
	HTTPScheme   string
	BearerFormat string
	Users        []User

	// Token validation for http bearer, oauth2 and openIdConnect. A token
	// shaped like a JWT is verified locally when JWT is set; any other
	// token is introspected when Introspection is set.
	JWT           *JWTConfig
	Introspection *IntrospectionConfig

	// oauth2: exactly one flow, for the card; its scopes are the scopes
	// requirements may name. MetadataURL (RFC 8414) is shown on the card
	// and, when JWT names no key source, gives the issuer and the JWKS.
	Flows       *Flows
	MetadataURL string

	// openIdConnect: the discovery document that gives the issuer and the
	// JWKS. JWT.Audiences is required.
	OpenIDConnectURL string

	// mutualTLS: see MTLSConfig.
	MTLS *MTLSConfig

	// AllowInsecureHTTP permits http:// URLs for the JWKS, discovery and
	// introspection on hosts other than loopback. Keys fetched over plain
	// HTTP can be replaced by anyone on the path.
	AllowInsecureHTTP bool
}

// APIKey is one accepted key and the identity it stands for.
type APIKey struct {
	// Key is the key itself (at least 16 characters), or a {env.NAME}
	// placeholder. Only its SHA-256 digest is kept after loading.
	Key string
	// SHA256 is the hex SHA-256 digest of the key, instead of Key.
	SHA256 string
	// Subject names the caller. Required.
	Subject string
	// Scopes are granted to the caller.
	Scopes []string
}

// User is one basic-auth account.
type User struct {
	Username string
	// Password is the bcrypt hash of the password ($2a$, $2b$, $2y$), as
	// `caddy hash-password` prints it, or that hash base64-encoded, as
	// Caddy's basic_auth also accepts. {env.NAME} placeholders expand.
	Password string
	Scopes   []string
}

// JWTConfig validates JWTs: signature against an allowlist of algorithms
// and a key source, then exp, nbf, iat (with leeway), iss and aud.
type JWTConfig struct {
	// Issuer is the required iss. With openIdConnect or an oauth2
	// metadata URL it defaults to the discovered issuer and, when set,
	// must equal it.
	Issuer string
	// Audiences: the token's aud must contain one of them. Required when
	// the keys come from a JWKS (jwks_url or discovery), since such keys
	// sign tokens for many services.
	Audiences []string
	// Algorithms allowed. Default: RS256..512, PS256..512, ES256..512 and
	// EdDSA, plus HS256..512 when HMACSecret is set. HS* needs HMACSecret;
	// "none" is never allowed.
	Algorithms []string
	// Leeway for exp, nbf and iat. Default 30s.
	Leeway time.Duration

	// Key sources; at least one unless discovery provides a JWKS.
	JWKSURL string
	// PublicKeys are PEM texts or file paths: PKIX or PKCS#1 public keys
	// or certificates. RSA keys must have at least 2048 bits.
	PublicKeys []string
	// HMACSecret enables HS256/384/512; at least 32 bytes. {env.NAME}
	// placeholders expand.
	HMACSecret string

	// SubjectClaim names the claim that identifies the caller. Default "sub".
	SubjectClaim string

	// RefreshInterval is how often the JWKS is fetched in the background.
	// Default 15m.
	RefreshInterval time.Duration
	// MinRefreshInterval is the least time between two fetches caused by
	// an unknown kid or by failures. Default 30s.
	MinRefreshInterval time.Duration
	// FetchTimeout bounds one fetch of the JWKS or discovery document.
	// Default 10s.
	FetchTimeout time.Duration
}

// IntrospectionConfig checks opaque tokens with an RFC 7662 endpoint.
type IntrospectionConfig struct {
	URL string
	// ClientID and ClientSecret authenticate this server to the endpoint
	// (client_secret_basic). {env.NAME} placeholders expand.
	ClientID     string
	ClientSecret string
	// Audiences, when set: an answer that names an aud must name one of them.
	Audiences []string
	// SubjectClaim names the field that identifies the caller. Default
	// "sub", then "client_id", then "username".
	SubjectClaim string
	// CacheTTL is the longest an active answer is reused; the token's exp
	// shortens it. Default 1m.
	CacheTTL time.Duration
	// Timeout bounds one introspection call. Default 10s.
	Timeout time.Duration
}

// Flows holds the one OAuth 2.0 flow an oauth2 scheme declares, in the
// card's own types.
type Flows = a2a.OAuthFlows

// Flow is one OAuth 2.0 flow, as the card shows it.
type Flow = a2a.OAuthFlow

// MTLSConfig says which client certificates are accepted and where the
// caller's name comes from.
type MTLSConfig struct {
	// TrustedCAs are PEM texts or file paths of the CAs a client
	// certificate must chain to. Without them, only a certificate that the
	// TLS server itself verified (Caddy's client_auth with trusted CAs) or
	// that a trusted proxy passed on is accepted.
	TrustedCAs []string
	// TrustedProxies are the addresses (IPs or CIDRs) of proxies in front
	// whose CertHeader is believed. Both or neither are set.
	TrustedProxies []string
	// CertHeader carries the client certificate from a trusted proxy:
	// URL-encoded PEM (nginx $ssl_client_escaped_cert, AWS ALB), base64
	// DER (Traefik), or Envoy's X-Forwarded-Client-Cert with Cert="...".
	CertHeader string
	// SubjectFrom is the order in which the caller's name is taken from
	// the certificate: uri, dns, email (SANs), cn, dn. Default: uri, dns,
	// email, cn.
	SubjectFrom []string
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

var schemeName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// hmacAlgorithms are the symmetric JWS algorithms, which HMACSecret
// enables.
var hmacAlgorithms = []string{"HS256", "HS384", "HS512"}

// validAlgorithms are the JWS algorithms a token may use.
var validAlgorithms = append(slices.Clone(keys.Algorithms), hmacAlgorithms...)

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
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	tokens := false
	switch s.Type {
	case TypeAPIKey:
		if !slices.Contains([]string{"header", "query", "cookie"}, s.In) {
			add("in: %q is not header, query or cookie", s.In)
		}
		if strings.TrimSpace(s.Name) == "" {
			add("name: required")
		}
		if len(s.Keys) == 0 {
			add("keys: at least one key is required")
		}
		for i, k := range s.Keys {
			switch {
			case k.Key == "" && k.SHA256 == "":
				add("keys[%d]: key or sha256 is required", i)
			case k.Key != "" && k.SHA256 != "":
				add("keys[%d]: key and sha256 are exclusive", i)
			case k.SHA256 != "" && !isHexDigest(k.SHA256):
				add("keys[%d].sha256: not 64 hex digits", i)
			}
			if strings.TrimSpace(k.Subject) == "" {
				add("keys[%d].subject: required", i)
			}
		}
	case TypeHTTP:
		switch strings.ToLower(s.HTTPScheme) {
		case "basic":
			if len(s.Users) == 0 {
				add("users: at least one user is required")
			}
			seen := map[string]bool{}
			for i, u := range s.Users {
				if u.Username == "" || strings.Contains(u.Username, ":") {
					add("users[%d].username: required, without ':'", i)
				}
				if seen[u.Username] {
					add("users[%d].username: %q appears twice", i, u.Username)
				}
				seen[u.Username] = true
				if u.Password == "" {
					add("users[%d].password: a bcrypt hash is required", i)
				}
			}
		case "bearer":
			tokens = true
			if s.JWT == nil && s.Introspection == nil {
				add("a bearer scheme needs jwt or introspection")
			}
		default:
			add("scheme: %q is not basic or bearer", s.HTTPScheme)
		}
	case TypeOAuth2:
		tokens = true
		errs = append(errs, validateFlows(s.Flows)...)
		if s.MetadataURL != "" {
			if err := checkURL(s.MetadataURL, s.AllowInsecureHTTP); err != nil {
				add("metadata_url: %v", err)
			}
		}
		if s.JWT == nil && s.Introspection == nil {
			add("an oauth2 scheme needs jwt or introspection")
		}
		if s.JWT != nil && !s.JWT.hasKeySource() && s.MetadataURL == "" {
			add("jwt: no key source: set jwks_url, public_keys, hmac_secret or metadata_url")
		}
	case TypeOpenIDConnect:
		tokens = true
		if err := checkURL(s.OpenIDConnectURL, s.AllowInsecureHTTP); err != nil {
			add("openid_connect_url: %v", err)
		}
		if s.JWT == nil || len(s.JWT.Audiences) == 0 {
			add("jwt.audiences: required for openIdConnect")
		}
	case TypeMutualTLS:
		if s.MTLS != nil {
			errs = append(errs, s.MTLS.validate()...)
		}
	default:
		add("type: %q is not apiKey, http, oauth2, openIdConnect or mutualTLS", s.Type)
	}
	if tokens {
		if s.JWT != nil {
			errs = append(errs, s.JWT.validate(s)...)
		}
		if in := s.Introspection; in != nil {
			if err := checkURL(in.URL, s.AllowInsecureHTTP); err != nil {
				add("introspection.url: %v", err)
			}
			if in.CacheTTL < 0 || in.Timeout < 0 {
				add("introspection: negative duration")
			}
		}
	} else if s.JWT != nil || s.Introspection != nil {
		add("jwt and introspection apply only to bearer, oauth2 and openIdConnect schemes")
	}
	if s.Type != TypeMutualTLS && s.MTLS != nil {
		add("mtls applies only to mutualTLS schemes")
	}
	return errs
}

func (j *JWTConfig) hasKeySource() bool {
	return j.JWKSURL != "" || len(j.PublicKeys) > 0 || j.HMACSecret != ""
}

func (j *JWTConfig) validate(s *Scheme) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("jwt."+format, args...)) }
	discovered := s.Type == TypeOpenIDConnect || (s.Type == TypeOAuth2 && s.MetadataURL != "" && !j.hasKeySource())
	if !j.hasKeySource() && !discovered {
		add("keys: set jwks_url, public_keys or hmac_secret")
	}
	if (j.JWKSURL != "" || discovered) && len(j.Audiences) == 0 {
		add("audiences: required when keys come from a JWKS")
	}
	if j.JWKSURL != "" {
		if err := checkURL(j.JWKSURL, s.AllowInsecureHTTP); err != nil {
			add("jwks_url: %v", err)
		}
	}
	hmac := false
	for _, alg := range j.Algorithms {
		if !slices.Contains(validAlgorithms, alg) {
			add("algorithms: %q is not one of %s", alg, strings.Join(validAlgorithms, ", "))
		}
		if strings.HasPrefix(alg, "HS") {
			hmac = true
		}
	}
	if hmac && j.HMACSecret == "" {
		add("algorithms: HS* algorithms need hmac_secret")
	}
	if len(j.Algorithms) > 0 && !hmac && j.HMACSecret != "" {
		add("hmac_secret: set, but no HS* algorithm is allowed")
	}
	if j.Leeway < 0 || j.RefreshInterval < 0 || j.MinRefreshInterval < 0 || j.FetchTimeout < 0 {
		add("negative duration")
	}
	if j.Leeway > 5*time.Minute {
		add("leeway: at most 5m")
	}
	return errs
}

func validateFlows(f *Flows) []error {
	if f == nil {
		return []error{errors.New("flows: exactly one flow is required")}
	}
	if n := f.Len(); n != 1 {
		return []error{fmt.Errorf("flows: exactly one flow is required, got %d", n)}
	}
	var errs []error
	for t, flow := range f.All() {
		for _, u := range t.URLs(flow) {
			if u.URL == "" && !u.Required {
				continue
			}
			if err := checkURL(u.URL, true); err != nil {
				errs = append(errs, fmt.Errorf("flows.%s.%s: %w", t.ProtoName(), u.ProtoName, err))
			}
		}
	}
	return errs
}

var subjectSources = []string{"uri", "dns", "email", "cn", "dn"}

func (m *MTLSConfig) validate() []error {
	var errs []error
	if (len(m.TrustedProxies) > 0) != (m.CertHeader != "") {
		errs = append(errs, errors.New("mtls: trusted_proxies and cert_header go together"))
	}
	for i, p := range m.TrustedProxies {
		if _, err := parsePrefix(p); err != nil {
			errs = append(errs, fmt.Errorf("mtls.trusted_proxies[%d]: %w", i, err))
		}
	}
	for _, s := range m.SubjectFrom {
		if !slices.Contains(subjectSources, s) {
			errs = append(errs, fmt.Errorf("mtls.subject_from: %q is not one of %s", s, strings.Join(subjectSources, ", ")))
		}
	}
	return errs
}

// parsePrefix reads a CIDR or a single address.
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
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

func isHexDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
