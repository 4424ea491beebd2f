package caddymodule

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// SecurityConfig declares how callers authenticate (spec 1.0 §7): the
// security schemes and the agent-wide requirement. The card's
// securitySchemes and security requirement are made from it, so the card
// states exactly what is checked; skills may require more (security: in
// the skills file). Secrets, keys and URLs take {env.NAME} placeholders,
// read at provision: an unset variable is an error, never an empty secret.
// An authenticated caller's subject, scheme and scopes are the
// placeholders {http.auth.user.id}, {http.auth.user.scheme} and
// {http.auth.user.scopes} (space-separated).
type SecurityConfig struct {
	// Schemes by name: the names are the keys of the card's
	// securitySchemes, and what require and the skills file's security:
	// refer to. A name is 1 to 64 letters, digits, '_', '-' or '.';
	// anonymous is reserved. At least one is required. In the Caddyfile a
	// scheme is declared by its kind: api_key, basic, bearer, oauth2,
	// openid_connect or mutual_tls.
	Schemes map[string]*SecurityScheme `json:"schemes,omitempty"`

	// Require is the agent-wide requirement, an OR of ANDs, checked on
	// every JSON-RPC request before its body is read: a request is
	// admitted when it satisfies every scheme of one entry, each with the
	// scopes listed. An empty entry admits callers that present no
	// credentials (require anonymous in the Caddyfile, where each require
	// is one entry and a block of lines ANDs them). Default: any one
	// declared scheme. A request that meets no entry gets 401 with a
	// WWW-Authenticate challenge per acceptable scheme, one whose
	// credentials lack a scope 403; both carry a JSON-RPC error (-31401,
	// -31403).
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
	CacheTTL caddy.Duration `json:"cache_ttl,omitempty"`

	// ProtectCard makes GET of the Agent Card ask for what JSON-RPC
	// requests ask. Default: the card is public, as clients need it to
	// learn how to authenticate.
	ProtectCard bool `json:"protect_card,omitempty"`
}

// SecurityScheme is one way a caller can authenticate. Type says which
// fields apply.
type SecurityScheme struct {
	// Type is apiKey, http, oauth2, openIdConnect or mutualTLS, as the
	// card names it. In the Caddyfile: api_key, basic or bearer (http),
	// oauth2, openid_connect, mutual_tls.
	Type string `json:"type"`

	// Description is shown on the card.
	Description string `json:"description,omitempty"`

	// In is where an apiKey is sent: header, query or cookie.
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
	Users []BasicUser `json:"users,omitempty"`

	// JWT verifies the tokens of a bearer, oauth2 or openIdConnect scheme
	// that are JWTs. In the Caddyfile its options stand in the scheme's
	// block.
	JWT *JWTConfig `json:"jwt,omitempty"`

	// Introspection checks the other tokens of a bearer or oauth2 scheme.
	// A bearer or oauth2 scheme needs JWT or Introspection.
	Introspection *IntrospectionConfig `json:"introspection,omitempty"`

	// Flows is the one OAuth 2.0 flow of an oauth2 scheme, for the card;
	// its scopes are those requirements may ask for.
	Flows *OAuthFlows `json:"flows,omitempty"`

	// MetadataURL is the RFC 8414 authorization server metadata of an
	// oauth2 scheme, shown on the card. Without a key source in JWT, it
	// gives the issuer and the JWKS.
	MetadataURL string `json:"metadata_url,omitempty"`

	// OpenIDConnectURL is the discovery document of an openIdConnect
	// scheme, which gives the issuer and the JWKS; JWT's audiences are
	// required.
	OpenIDConnectURL string `json:"openid_connect_url,omitempty"`

	// MTLS says which client certificates a mutualTLS scheme accepts.
	MTLS *MTLSConfig `json:"mtls,omitempty"`

	// AllowInsecureHTTP permits http:// JWKS, discovery and introspection
	// URLs on hosts other than loopback; otherwise they must be https.
	// Keys fetched over plain HTTP can be replaced by anyone on the path.
	AllowInsecureHTTP bool `json:"allow_insecure_http,omitempty"`
}

// APIKey is a key an apiKey scheme accepts and the caller it names. In
// the Caddyfile: key <key> <subject> [<scopes...>], or key_sha256 with the
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

// BasicUser is an account of a basic scheme. In the Caddyfile: user
// <username> <bcrypt hash> [<scopes...>].
type BasicUser struct {
	// Username, without ':'. Required.
	Username string `json:"username"`

	// Password is the bcrypt hash of the password, as caddy hash-password
	// prints it, or base64-encoded as basic_auth also takes it; an
	// {env.NAME} placeholder expands. Costs under 10 are logged as weak.
	Password string `json:"password"`

	// Scopes are granted to the user.
	Scopes []string `json:"scopes,omitempty"`
}

// JWTConfig verifies JWTs: the signature, by an allowed algorithm and a
// configured or discovered key, then exp (required), nbf and iat with the
// leeway, iss and aud. Tokens with a crit header are refused.
type JWTConfig struct {
	// Issuer is the iss tokens must carry. With openIdConnect or an
	// oauth2 metadata_url it defaults to the discovered issuer, and when
	// set must equal it.
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
	Leeway caddy.Duration `json:"leeway,omitempty"`

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
	RefreshInterval caddy.Duration `json:"refresh_interval,omitempty"`

	// MinRefreshInterval is the least time between two fetches for tokens
	// with an unknown kid or after failures. Default: 30s.
	MinRefreshInterval caddy.Duration `json:"min_refresh_interval,omitempty"`

	// FetchTimeout bounds one fetch of the JWKS or a discovery document.
	// Default: 10s.
	FetchTimeout caddy.Duration `json:"fetch_timeout,omitempty"`
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
	// sub, then client_id, then username.
	SubjectClaim string `json:"subject_claim,omitempty"`

	// CacheTTL is the longest an active answer is reused; the token's exp
	// shortens it. Default: 1m.
	CacheTTL caddy.Duration `json:"cache_ttl,omitempty"`

	// Timeout bounds one call. Default: 10s.
	Timeout caddy.Duration `json:"timeout,omitempty"`
}

// OAuthFlows holds exactly one flow. In the Caddyfile: flow <type> { ... }.
type OAuthFlows struct {
	AuthorizationCode *OAuthFlow `json:"authorization_code,omitempty"`
	ClientCredentials *OAuthFlow `json:"client_credentials,omitempty"`
	DeviceCode        *OAuthFlow `json:"device_code,omitempty"`
	Implicit          *OAuthFlow `json:"implicit,omitempty"`
	Password          *OAuthFlow `json:"password,omitempty"`
}

// OAuthFlow is an OAuth 2.0 flow, as the card shows it.
type OAuthFlow struct {
	// AuthorizationURL is required by the authorization_code and implicit
	// flows.
	AuthorizationURL string `json:"authorization_url,omitempty"`

	// DeviceAuthorizationURL is required by the device_code flow.
	DeviceAuthorizationURL string `json:"device_authorization_url,omitempty"`

	// TokenURL is required by every flow but implicit.
	TokenURL string `json:"token_url,omitempty"`

	// RefreshURL is where tokens are refreshed.
	RefreshURL string `json:"refresh_url,omitempty"`

	// Scopes the flow grants, with their descriptions (Caddyfile: scope
	// <scope> [<description>]).
	Scopes map[string]string `json:"scopes,omitempty"`

	// PKCERequired tells clients that PKCE is required.
	PKCERequired bool `json:"pkce_required,omitempty"`
}

// MTLSConfig says which client certificates a mutualTLS scheme accepts
// and how the caller is named. The site must ask for client certificates
// (tls { client_auth { ... } }).
type MTLSConfig struct {
	// TrustedCAs are PEM files, or PEM text in {env.NAME}, of the CAs a
	// client certificate must chain to (Caddyfile: trusted_ca). Without
	// them, only a certificate Caddy itself verified counts.
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

// ExtendedCardConfig is what the extended Agent Card (GetExtendedAgentCard,
// for authenticated callers only) adds to the public one. Besides these
// fields, it lists the skills marked extended: true in the skills file,
// which the public card leaves out. It is signed like the public card.
type ExtendedCardConfig struct {
	// Description replaces the agent's description.
	Description string `json:"description,omitempty"`
	// DocumentationURL replaces the documentation URL.
	DocumentationURL string `json:"documentation_url,omitempty"`
}

// validate checks what needs neither files, environment nor network.
func (s *SecurityConfig) validate() error {
	if len(s.Schemes) == 0 {
		return errors.New("declare at least one scheme")
	}
	cfg := s.authnConfig()
	return cfg.Validate()
}

// authnConfig is the configuration as authn takes it. APIKey, BasicUser,
// OAuthFlow and MTLSConfig differ from authn's types only in their tags,
// so they convert; a field authn adds or changes stops the build here.
func (s *SecurityConfig) authnConfig() authn.Config {
	cfg := authn.Config{
		Schemes:   make(map[string]*authn.Scheme, len(s.Schemes)),
		Require:   s.Require,
		Realm:     s.Realm,
		CacheSize: s.CacheSize,
		CacheTTL:  time.Duration(s.CacheTTL),
	}
	for name, sc := range s.Schemes {
		cfg.Schemes[name] = sc.authnScheme()
	}
	return cfg
}

// authnScheme is one scheme as authn takes it; nil stays nil, for
// authn's validation to name.
func (s *SecurityScheme) authnScheme() *authn.Scheme {
	if s == nil {
		return nil
	}
	out := &authn.Scheme{
		Type:              s.Type,
		Description:       s.Description,
		In:                s.In,
		Name:              s.Name,
		HTTPScheme:        s.HTTPScheme,
		BearerFormat:      s.BearerFormat,
		MetadataURL:       s.MetadataURL,
		OpenIDConnectURL:  s.OpenIDConnectURL,
		MTLS:              (*authn.MTLSConfig)(s.MTLS),
		AllowInsecureHTTP: s.AllowInsecureHTTP,
	}
	for _, k := range s.Keys {
		out.Keys = append(out.Keys, authn.APIKey(k))
	}
	for _, u := range s.Users {
		out.Users = append(out.Users, authn.User(u))
	}
	if j := s.JWT; j != nil {
		out.JWT = &authn.JWTConfig{
			Issuer:             j.Issuer,
			Audiences:          j.Audiences,
			Algorithms:         j.Algorithms,
			Leeway:             time.Duration(j.Leeway),
			JWKSURL:            j.JWKSURL,
			PublicKeys:         j.PublicKeys,
			HMACSecret:         j.HMACSecret,
			SubjectClaim:       j.SubjectClaim,
			RefreshInterval:    time.Duration(j.RefreshInterval),
			MinRefreshInterval: time.Duration(j.MinRefreshInterval),
			FetchTimeout:       time.Duration(j.FetchTimeout),
		}
	}
	if in := s.Introspection; in != nil {
		out.Introspection = &authn.IntrospectionConfig{
			URL:          in.URL,
			ClientID:     in.ClientID,
			ClientSecret: in.ClientSecret,
			Audiences:    in.Audiences,
			SubjectClaim: in.SubjectClaim,
			CacheTTL:     time.Duration(in.CacheTTL),
			Timeout:      time.Duration(in.Timeout),
		}
	}
	if f := s.Flows; f != nil {
		out.Flows = &authn.Flows{
			AuthorizationCode: (*authn.Flow)(f.AuthorizationCode),
			ClientCredentials: (*authn.Flow)(f.ClientCredentials),
			DeviceCode:        (*authn.Flow)(f.DeviceCode),
			Implicit:          (*authn.Flow)(f.Implicit),
			Password:          (*authn.Flow)(f.Password),
		}
	}
	return out
}

// provisionSecurity sets up the authenticator (nil without a security
// block): keys hashed and loaded, JWKS and discovery documents fetched.
// Cleanup closes it.
func (h *Handler) provisionSecurity() error {
	if h.Security == nil {
		return nil
	}
	auth, err := authn.New(h.Security.authnConfig(), authn.Options{Logger: h.logger})
	if err != nil {
		return fmt.Errorf("security: %w", err)
	}
	h.auth = auth
	return nil
}

// checkExtended refuses skills marked extended when no extended card lists
// them: they would be on no card at all.
func (h *Handler) checkExtended(skills *mapping.Skills) error {
	if h.ExtendedCard != nil {
		return nil
	}
	for _, sk := range skills.All() {
		if sk.Extended {
			return fmt.Errorf("skills file %s: skill %q is extended: true, but the a2a block has no extended_card", h.Skills, sk.ID)
		}
	}
	return nil
}

// extendedCardConfig is the extended card's part of the configuration:
// the public card's, with every skill and the extended card's overrides.
func (h *Handler) extendedCardConfig() cardgen.Config {
	cfg := h.cardConfig()
	cfg.Skills, cfg.SkillArguments = nil, nil
	for _, sk := range h.skills.All() {
		cfg.AddSkill(sk.AgentSkill(), sk.ArgumentSchema())
	}
	if e := h.ExtendedCard; e.Description != "" {
		cfg.Description = e.Description
	}
	if e := h.ExtendedCard; e.DocumentationURL != "" {
		cfg.DocumentationURL = e.DocumentationURL
	}
	return cfg
}

// placeholders publishes the caller's identity as Caddy placeholders, as
// Caddy's own authentication handler does: {http.auth.user.id} (the
// subject, which access logs record as user_id), {http.auth.user.scheme}
// and {http.auth.user.scopes} (space-separated). Handlers that run after
// the response is written (a deferred header, the log) can use them.
type placeholders struct{ *authn.Authenticator }

func (p placeholders) Authenticate(r *http.Request) (*authn.Identity, *authn.Failure) {
	id, f := p.Authenticator.Authenticate(r)
	if id != nil {
		if repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
			repl.Set("http.auth.user.id", id.Subject)
			repl.Set("http.auth.user.scheme", id.Scheme)
			repl.Set("http.auth.user.scopes", strings.Join(id.Scopes, " "))
		}
		caddyhttp.SetVar(r.Context(), varCaller, id.Subject)
	}
	return id, f
}

// Interface guard
var _ server.Authenticator = placeholders{}

// parseSecurity reads the security block.
func parseSecurity(d *caddyfile.Dispenser, where string) (*SecurityConfig, error) {
	if err := noArgs(d, where); err != nil {
		return nil, err
	}
	s := &SecurityConfig{Schemes: map[string]*SecurityScheme{}}
	err := parseBlock(d, where, slices.Concat(schemeKinds, []string{"require"}), func(sub, at string) error {
		var err error
		switch sub {
		case "realm":
			s.Realm, err = oneArg(d, at)
		case "cache_size":
			s.CacheSize, err = intArg(d, at) // negative disables the cache
		case "cache_ttl":
			s.CacheTTL, err = durationArg(d, at)
		case "protect_card":
			s.ProtectCard, err = flagArg(d, at)
		case "require":
			var req a2a.SecurityRequirement
			if req, err = parseRequire(d, at); err == nil {
				s.Require = append(s.Require, req)
			}
		default:
			if !slices.Contains(schemeKinds, sub) {
				return unknownSubdirective(slices.Concat(securitySubdirectives, schemeKinds))
			}
			var name string
			var sc *SecurityScheme
			if name, sc, err = parseScheme(d, where, sub); err == nil {
				if _, dup := s.Schemes[name]; dup {
					return d.Errf("%s: scheme %q is declared twice", where, name)
				}
				s.Schemes[name] = sc
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(s.Schemes) == 0 {
		return nil, d.Errf("%s: no scheme: declare one with api_key, basic, bearer, oauth2, openid_connect or mutual_tls", where)
	}
	return s, nil
}

// schemeKinds are the subdirectives that declare a scheme.
var schemeKinds = []string{"api_key", "basic", "bearer", "oauth2", "openid_connect", "mutual_tls"}

// parseRequire reads one alternative of the agent-wide requirement:
// `require <scheme> [<scope>...]`, `require anonymous`, or a block of
// `<scheme> [<scope>...]` lines, all needed.
func parseRequire(d *caddyfile.Dispenser, at string) (a2a.SecurityRequirement, error) {
	req := a2a.SecurityRequirement{}
	add := func(args []string) error {
		if _, dup := req[args[0]]; dup {
			return d.Errf("%s: scheme %q is named twice", at, args[0])
		}
		req[args[0]] = append([]string{}, args[1:]...)
		return nil
	}
	args := d.RemainingArgs()
	switch {
	case len(args) == 1 && args[0] == "anonymous":
		if d.NextBlock(d.Nesting()) {
			return nil, d.Errf("%s anonymous takes no block", at)
		}
		return req, nil
	case len(args) > 0:
		if d.NextBlock(d.Nesting()) {
			return nil, d.Errf("%s: give the schemes on the line or in a block, not both", at)
		}
		return req, add(args)
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		line := append([]string{d.Val()}, d.RemainingArgs()...)
		if line[0] == "anonymous" {
			return nil, d.Errf("%s: anonymous stands alone: `require anonymous`", at)
		}
		if err := add(line); err != nil {
			return nil, err
		}
	}
	if len(req) == 0 {
		return nil, d.Errf("%s: want <scheme> [<scope>...], a block of them, or anonymous", at)
	}
	return req, nil
}

// parseScheme reads one scheme declaration; kind is its subdirective.
func parseScheme(d *caddyfile.Dispenser, parent, kind string) (string, *SecurityScheme, error) {
	args := d.RemainingArgs()
	want, n := "<name>", 1
	switch kind {
	case "api_key":
		want, n = "<name> header|query|cookie <parameter>", 3
	case "openid_connect":
		want, n = "<name> <discovery url>", 2
	}
	if len(args) != n {
		return "", nil, d.Errf("%s: %s: want %s, got %d arguments", parent, kind, want, len(args))
	}
	name := args[0]
	sc := &SecurityScheme{}
	switch kind {
	case "api_key":
		sc.Type, sc.In, sc.Name = authn.TypeAPIKey, args[1], args[2]
	case "basic":
		sc.Type, sc.HTTPScheme = authn.TypeHTTP, "basic"
	case "bearer":
		sc.Type, sc.HTTPScheme = authn.TypeHTTP, "bearer"
	case "oauth2":
		sc.Type = authn.TypeOAuth2
	case "openid_connect":
		// Discovery gives the keys; the audience is still required, and
		// authn says so.
		sc.Type, sc.OpenIDConnectURL, sc.JWT = authn.TypeOpenIDConnect, args[1], &JWTConfig{}
	case "mutual_tls":
		sc.Type, sc.MTLS = authn.TypeMutualTLS, &MTLSConfig{}
	}
	tokens := kind == "bearer" || kind == "oauth2" || kind == "openid_connect"
	where := fmt.Sprintf("%s: %s %s", parent, kind, name)
	err := parseBlock(d, where, []string{"key", "key_sha256", "user", "public_key", "trusted_ca"}, func(sub, at string) error {
		var err error
		switch {
		case sub == "description":
			sc.Description, err = oneArg(d, at)
		case kind == "api_key" && (sub == "key" || sub == "key_sha256"):
			a := d.RemainingArgs()
			if len(a) < 2 {
				return d.Errf("%s: want <key> <subject> [<scope>...]", at)
			}
			k := APIKey{Subject: a[1], Scopes: a[2:]}
			if sub == "key" {
				k.Key = a[0]
			} else {
				k.SHA256 = a[0]
			}
			sc.Keys = append(sc.Keys, k)
		case kind == "basic" && sub == "user":
			a := d.RemainingArgs()
			if len(a) < 2 {
				return d.Errf("%s: want <username> <bcrypt hash> [<scope>...]", at)
			}
			sc.Users = append(sc.Users, BasicUser{Username: a[0], Password: a[1], Scopes: a[2:]})
		case kind == "bearer" && sub == "bearer_format":
			sc.BearerFormat, err = oneArg(d, at)
		case kind == "oauth2" && sub == "flow":
			sc.Flows, err = parseFlow(d, at)
		case kind == "oauth2" && sub == "metadata_url":
			sc.MetadataURL, err = oneArg(d, at)
		case tokens && sub == "introspection":
			sc.Introspection, err = parseIntrospection(d, at)
		case tokens && sub == "allow_insecure_http":
			sc.AllowInsecureHTTP, err = flagArg(d, at)
		case tokens && slices.Contains(tokenSubdirectives, sub):
			if sc.JWT == nil {
				sc.JWT = &JWTConfig{}
			}
			err = tokenOption(d, sub, at, sc.JWT)
		case kind == "mutual_tls" && sub == "trusted_ca":
			var a []string
			if a, err = someArgs(d, at); err == nil {
				sc.MTLS.TrustedCAs = append(sc.MTLS.TrustedCAs, a...)
			}
		case kind == "mutual_tls" && sub == "trusted_proxies":
			sc.MTLS.TrustedProxies, err = someArgs(d, at)
		case kind == "mutual_tls" && sub == "cert_header":
			sc.MTLS.CertHeader, err = oneArg(d, at)
		case kind == "mutual_tls" && sub == "subject_from":
			sc.MTLS.SubjectFrom, err = someArgs(d, at)
		default:
			return unknownSubdirective(schemeSubdirectives(kind))
		}
		return err
	})
	if err != nil {
		return "", nil, err
	}
	return name, sc, nil
}

// schemeSubdirectives are the subdirectives of a scheme of kind.
func schemeSubdirectives(kind string) []string {
	names := []string{"description"}
	switch kind {
	case "api_key":
		names = append(names, "key", "key_sha256")
	case "basic":
		names = append(names, "user")
	case "bearer":
		names = append(names, "bearer_format")
	case "oauth2":
		names = append(names, "flow", "metadata_url")
	case "mutual_tls":
		names = append(names, "trusted_ca", "trusted_proxies", "cert_header", "subject_from")
	}
	if kind == "bearer" || kind == "oauth2" || kind == "openid_connect" {
		names = append(append(names, "introspection", "allow_insecure_http"), tokenSubdirectives...)
	}
	return names
}

// securitySubdirectives are the security block's own subdirectives; a
// scheme kind (schemeKinds) opens a scheme.
var securitySubdirectives = []string{"realm", "cache_size", "cache_ttl", "protect_card", "require"}

// tokenSubdirectives are the token validation options of the schemes that
// take tokens.
var tokenSubdirectives = []string{"issuer", "audience", "algorithms", "leeway", "jwks_url", "public_key",
	"hmac_secret", "subject_claim", "refresh_interval", "min_refresh_interval", "fetch_timeout"}

// tokenOption reads one JWT validation option of a bearer, oauth2 or
// openid_connect scheme. It is the last thing a subdirective there can
// be, so an unknown one is named as a token option.
func tokenOption(d *caddyfile.Dispenser, sub, at string, j *JWTConfig) error {
	var err error
	switch sub {
	case "issuer":
		j.Issuer, err = oneArg(d, at)
	case "audience":
		j.Audiences, err = someArgs(d, at)
	case "algorithms":
		j.Algorithms, err = someArgs(d, at)
	case "leeway":
		j.Leeway, err = durationArg(d, at)
	case "jwks_url":
		j.JWKSURL, err = oneArg(d, at)
	case "public_key":
		var a []string
		if a, err = someArgs(d, at); err == nil {
			j.PublicKeys = append(j.PublicKeys, a...)
		}
	case "hmac_secret":
		j.HMACSecret, err = oneArg(d, at)
	case "subject_claim":
		j.SubjectClaim, err = oneArg(d, at)
	case "refresh_interval":
		j.RefreshInterval, err = durationArg(d, at)
	case "min_refresh_interval":
		j.MinRefreshInterval, err = durationArg(d, at)
	case "fetch_timeout":
		j.FetchTimeout, err = durationArg(d, at)
	default:
		return unknownSubdirective(tokenSubdirectives)
	}
	return err
}

// parseIntrospection reads `introspection <url> { ... }`.
func parseIntrospection(d *caddyfile.Dispenser, where string) (*IntrospectionConfig, error) {
	u, err := oneArg(d, where)
	if err != nil {
		return nil, err
	}
	in := &IntrospectionConfig{URL: u}
	err = parseBlock(d, where, nil, func(sub, at string) error {
		var err error
		switch sub {
		case "client_id":
			in.ClientID, err = oneArg(d, at)
		case "client_secret":
			in.ClientSecret, err = oneArg(d, at)
		case "audience":
			in.Audiences, err = someArgs(d, at)
		case "subject_claim":
			in.SubjectClaim, err = oneArg(d, at)
		case "cache_ttl":
			in.CacheTTL, err = durationArg(d, at)
		case "timeout":
			in.Timeout, err = durationArg(d, at)
		default:
			return unknownSubdirective(introspectionSubdirectives)
		}
		return err
	})
	return in, err
}

// parseFlow reads `flow <type> { ... }`, the one flow of an oauth2 scheme.
func parseFlow(d *caddyfile.Dispenser, where string) (*OAuthFlows, error) {
	typ, err := oneArg(d, where)
	if err != nil {
		return nil, err
	}
	f := &OAuthFlow{Scopes: map[string]string{}}
	flows := &OAuthFlows{}
	switch typ {
	case "authorization_code":
		flows.AuthorizationCode = f
	case "client_credentials":
		flows.ClientCredentials = f
	case "device_code":
		flows.DeviceCode = f
	case "implicit":
		flows.Implicit = f
	case "password":
		flows.Password = f
	default:
		return nil, d.Errf("%s: '%s' is not authorization_code, client_credentials, device_code, implicit or password", where, typ)
	}
	err = parseBlock(d, where, []string{"scope"}, func(sub, at string) error {
		var err error
		switch sub {
		case "token_url":
			f.TokenURL, err = oneArg(d, at)
		case "authorization_url":
			f.AuthorizationURL, err = oneArg(d, at)
		case "device_authorization_url":
			f.DeviceAuthorizationURL, err = oneArg(d, at)
		case "refresh_url":
			f.RefreshURL, err = oneArg(d, at)
		case "scope":
			a := d.RemainingArgs()
			if len(a) < 1 || len(a) > 2 {
				return d.Errf("%s: want <scope> [<description>]", at)
			}
			if _, dup := f.Scopes[a[0]]; dup {
				return d.Errf("%s: %q is declared twice", at, a[0])
			}
			f.Scopes[a[0]] = strings.Join(a[1:], "")
		case "pkce_required":
			f.PKCERequired, err = flagArg(d, at)
		default:
			return unknownSubdirective(flowSubdirectives)
		}
		return err
	})
	return flows, err
}

// parseExtendedCard reads `extended_card [{ ... }]`.
func parseExtendedCard(d *caddyfile.Dispenser, where string) (*ExtendedCardConfig, error) {
	if err := noArgs(d, where); err != nil {
		return nil, err
	}
	e := new(ExtendedCardConfig)
	err := parseBlock(d, where, nil, func(sub, at string) error {
		var err error
		switch sub {
		case "description":
			e.Description, err = oneArg(d, at)
		case "documentation_url":
			e.DocumentationURL, err = oneArg(d, at)
		default:
			return unknownSubdirective(extendedCardSubdirectives)
		}
		return err
	})
	return e, err
}

// introspectionSubdirectives are the subdirectives of an introspection block.
var introspectionSubdirectives = []string{"client_id", "client_secret", "audience", "subject_claim", "cache_ttl", "timeout"}

// flowSubdirectives are the subdirectives of an oauth2 flow block.
var flowSubdirectives = []string{"token_url", "authorization_url", "device_authorization_url", "refresh_url", "scope", "pkce_required"}

// extendedCardSubdirectives are the subdirectives of the extended_card block.
var extendedCardSubdirectives = []string{"description", "documentation_url"}
