package caddymodule

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// SecurityConfig declares how callers authenticate: the security schemes
// and the agent-wide requirement (authn.Config, whose fields it takes in
// the JSON), which both the Agent Card shows and every JSON-RPC request
// is checked against. Skills may require more (security: in the skills
// file).
type SecurityConfig struct {
	authn.Config

	// ProtectCard makes GET of the Agent Card ask for what JSON-RPC
	// requests ask. Default: the card is public, as clients need it to
	// learn how to authenticate.
	ProtectCard bool `json:"protect_card,omitempty"`
}

// ExtendedCardConfig is what the extended Agent Card (GetExtendedAgentCard,
// for authenticated callers only) adds to the public one. Besides these
// fields, it lists the skills marked extended: true in the skills file,
// which the public card leaves out.
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
	return s.Config.Validate()
}

// provisionSecurity sets up the authenticator (nil without a security
// block): keys hashed and loaded, JWKS and discovery documents fetched.
// Cleanup closes it.
func (h *Handler) provisionSecurity(ctx caddy.Context) error {
	if h.Security == nil {
		return nil
	}
	auth, err := authn.New(h.Security.Config, authn.Options{Logger: ctx.Slogger()})
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
	}
	return id, f
}

// Interface guard
var _ server.Authenticator = placeholders{}

// parseSecurity reads the security block.
func parseSecurity(d *caddyfile.Dispenser) (*SecurityConfig, error) {
	if d.NextArg() {
		return nil, d.Errf("security: unexpected argument '%s'; the schemes go in a block", d.Val())
	}
	s := &SecurityConfig{Config: authn.Config{Schemes: map[string]*authn.Scheme{}}}
	seen := make(map[string]bool)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		sub := d.Val()
		once := !slices.Contains([]string{"api_key", "basic", "bearer", "oauth2", "openid_connect", "mutual_tls", "require"}, sub)
		if once && seen[sub] {
			return nil, d.Errf("security: %s is set more than once", sub)
		}
		seen[sub] = true

		var err error
		switch sub {
		case "realm":
			s.Realm, err = arg(d, "security: realm")
		case "cache_size":
			var v string
			if v, err = arg(d, "security: cache_size"); err == nil {
				if s.CacheSize, err = strconv.Atoi(v); err != nil {
					err = d.Errf("security: cache_size: '%s' is not an integer (negative disables the cache)", v)
				}
			}
		case "cache_ttl":
			s.CacheTTL, err = durationOf(d, "security: cache_ttl")
		case "protect_card":
			if d.NextArg() {
				return nil, d.Errf("security: protect_card takes no argument")
			}
			s.ProtectCard = true
		case "require":
			var req a2a.SecurityRequirement
			if req, err = parseRequire(d); err == nil {
				s.Require = append(s.Require, req)
			}
		case "api_key", "basic", "bearer", "oauth2", "openid_connect", "mutual_tls":
			var name string
			var sc *authn.Scheme
			if name, sc, err = parseScheme(d, sub); err == nil {
				if _, dup := s.Schemes[name]; dup {
					return nil, d.Errf("security: scheme %q is declared twice", name)
				}
				s.Schemes[name] = sc
			}
		default:
			return nil, d.Errf("security: unknown subdirective '%s'", sub)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(s.Schemes) == 0 {
		return nil, d.Err("security: no scheme: declare one with api_key, basic, bearer, oauth2, openid_connect or mutual_tls")
	}
	return s, nil
}

// parseRequire reads one alternative of the agent-wide requirement:
// `require <scheme> [<scope>...]`, `require anonymous`, or a block of
// `<scheme> [<scope>...]` lines, all needed.
func parseRequire(d *caddyfile.Dispenser) (a2a.SecurityRequirement, error) {
	req := a2a.SecurityRequirement{}
	add := func(args []string) error {
		if _, dup := req[args[0]]; dup {
			return d.Errf("security: require: scheme %q is named twice", args[0])
		}
		req[args[0]] = append([]string{}, args[1:]...)
		return nil
	}
	args := d.RemainingArgs()
	switch {
	case len(args) == 1 && args[0] == "anonymous":
		if d.NextBlock(d.Nesting()) {
			return nil, d.Err("security: require anonymous takes no block")
		}
		return req, nil
	case len(args) > 0:
		if d.NextBlock(d.Nesting()) {
			return nil, d.Err("security: require: give the schemes on the line or in a block, not both")
		}
		return req, add(args)
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		line := append([]string{d.Val()}, d.RemainingArgs()...)
		if line[0] == "anonymous" {
			return nil, d.Err("security: require: anonymous stands alone: `require anonymous`")
		}
		if err := add(line); err != nil {
			return nil, err
		}
	}
	if len(req) == 0 {
		return nil, d.Err("security: require: want <scheme> [<scope>...], a block of them, or anonymous")
	}
	return req, nil
}

// parseScheme reads one scheme declaration; kind is its subdirective.
func parseScheme(d *caddyfile.Dispenser, kind string) (string, *authn.Scheme, error) {
	args := d.RemainingArgs()
	want, n := "<name>", 1
	switch kind {
	case "api_key":
		want, n = "<name> header|query|cookie <parameter>", 3
	case "openid_connect":
		want, n = "<name> <discovery url>", 2
	}
	if len(args) != n {
		return "", nil, d.Errf("security: %s: want %s, got %d arguments", kind, want, len(args))
	}
	name := args[0]
	where := fmt.Sprintf("security: %s %s", kind, name)
	sc := &authn.Scheme{}
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
		sc.Type, sc.OpenIDConnectURL = authn.TypeOpenIDConnect, args[1]
	case "mutual_tls":
		sc.Type, sc.MTLS = authn.TypeMutualTLS, &authn.MTLSConfig{}
	}
	tokens := kind == "bearer" || kind == "oauth2" || kind == "openid_connect"
	seen := make(map[string]bool)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		sub := d.Val()
		repeatable := sub == "key" || sub == "key_sha256" || sub == "user" || sub == "public_key" || sub == "trusted_ca"
		if seen[sub] && !repeatable {
			return "", nil, d.Errf("%s: %s is set more than once", where, sub)
		}
		seen[sub] = true
		at := where + ": " + sub

		var err error
		switch {
		case sub == "description":
			sc.Description, err = arg(d, at)
		case kind == "api_key" && (sub == "key" || sub == "key_sha256"):
			a := d.RemainingArgs()
			if len(a) < 2 {
				return "", nil, d.Errf("%s: want <key> <subject> [<scope>...]", at)
			}
			k := authn.APIKey{Subject: a[1], Scopes: a[2:]}
			if sub == "key" {
				k.Key = a[0]
			} else {
				k.SHA256 = a[0]
			}
			sc.Keys = append(sc.Keys, k)
		case kind == "basic" && sub == "user":
			a := d.RemainingArgs()
			if len(a) < 2 {
				return "", nil, d.Errf("%s: want <username> <bcrypt hash> [<scope>...]", at)
			}
			sc.Users = append(sc.Users, authn.User{Username: a[0], Password: a[1], Scopes: a[2:]})
		case kind == "bearer" && sub == "bearer_format":
			sc.BearerFormat, err = arg(d, at)
		case kind == "oauth2" && sub == "flow":
			sc.Flows, err = parseFlow(d, at)
		case kind == "oauth2" && sub == "metadata_url":
			sc.MetadataURL, err = arg(d, at)
		case tokens && sub == "introspection":
			sc.Introspection, err = parseIntrospection(d, at)
		case tokens && sub == "allow_insecure_http":
			if d.NextArg() {
				return "", nil, d.Errf("%s takes no argument", at)
			}
			sc.AllowInsecureHTTP = true
		case tokens:
			if sc.JWT == nil {
				sc.JWT = &authn.JWTConfig{}
			}
			err = tokenOption(d, at, sub, sc.JWT)
		case kind == "mutual_tls" && sub == "trusted_ca":
			var a []string
			if a, err = args1(d, at); err == nil {
				sc.MTLS.TrustedCAs = append(sc.MTLS.TrustedCAs, a...)
			}
		case kind == "mutual_tls" && sub == "trusted_proxies":
			sc.MTLS.TrustedProxies, err = args1(d, at)
		case kind == "mutual_tls" && sub == "cert_header":
			sc.MTLS.CertHeader, err = arg(d, at)
		case kind == "mutual_tls" && sub == "subject_from":
			sc.MTLS.SubjectFrom, err = args1(d, at)
		default:
			return "", nil, d.Errf("%s: unknown subdirective '%s'", where, sub)
		}
		if err != nil {
			return "", nil, err
		}
	}
	if kind == "openid_connect" && sc.JWT == nil {
		// Discovery gives the keys; the audience is still required, and
		// authn says so.
		sc.JWT = &authn.JWTConfig{}
	}
	return name, sc, nil
}

// tokenOption reads one JWT validation option of a bearer, oauth2 or
// openid_connect scheme.
func tokenOption(d *caddyfile.Dispenser, at, sub string, j *authn.JWTConfig) error {
	var err error
	switch sub {
	case "issuer":
		j.Issuer, err = arg(d, at)
	case "audience":
		j.Audiences, err = args1(d, at)
	case "algorithms":
		j.Algorithms, err = args1(d, at)
	case "leeway":
		j.Leeway, err = durationOf(d, at)
	case "jwks_url":
		j.JWKSURL, err = arg(d, at)
	case "public_key":
		var a []string
		if a, err = args1(d, at); err == nil {
			j.PublicKeys = append(j.PublicKeys, a...)
		}
	case "hmac_secret":
		j.HMACSecret, err = arg(d, at)
	case "subject_claim":
		j.SubjectClaim, err = arg(d, at)
	case "refresh_interval":
		j.RefreshInterval, err = durationOf(d, at)
	case "min_refresh_interval":
		j.MinRefreshInterval, err = durationOf(d, at)
	case "fetch_timeout":
		j.FetchTimeout, err = durationOf(d, at)
	default:
		return d.Errf("%s: unknown subdirective", at)
	}
	return err
}

// parseIntrospection reads `introspection <url> { ... }`.
func parseIntrospection(d *caddyfile.Dispenser, at string) (*authn.IntrospectionConfig, error) {
	u, err := arg(d, at)
	if err != nil {
		return nil, err
	}
	in := &authn.IntrospectionConfig{URL: u}
	seen := make(map[string]bool)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		sub := d.Val()
		if seen[sub] {
			return nil, d.Errf("%s: %s is set more than once", at, sub)
		}
		seen[sub] = true
		sat := at + ": " + sub
		switch sub {
		case "client_id":
			in.ClientID, err = arg(d, sat)
		case "client_secret":
			in.ClientSecret, err = arg(d, sat)
		case "audience":
			in.Audiences, err = args1(d, sat)
		case "subject_claim":
			in.SubjectClaim, err = arg(d, sat)
		case "cache_ttl":
			in.CacheTTL, err = durationOf(d, sat)
		case "timeout":
			in.Timeout, err = durationOf(d, sat)
		default:
			return nil, d.Errf("%s: unknown subdirective '%s'", at, sub)
		}
		if err != nil {
			return nil, err
		}
	}
	return in, nil
}

// parseFlow reads `flow <type> { ... }`, the one flow of an oauth2 scheme.
func parseFlow(d *caddyfile.Dispenser, at string) (*authn.Flows, error) {
	typ, err := arg(d, at)
	if err != nil {
		return nil, err
	}
	f := &authn.Flow{Scopes: map[string]string{}}
	flows := &authn.Flows{}
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
		return nil, d.Errf("%s: '%s' is not authorization_code, client_credentials, device_code, implicit or password", at, typ)
	}
	seen := make(map[string]bool)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		sub := d.Val()
		if seen[sub] && sub != "scope" {
			return nil, d.Errf("%s: %s is set more than once", at, sub)
		}
		seen[sub] = true
		sat := at + ": " + sub
		switch sub {
		case "token_url":
			f.TokenURL, err = arg(d, sat)
		case "authorization_url":
			f.AuthorizationURL, err = arg(d, sat)
		case "device_authorization_url":
			f.DeviceAuthorizationURL, err = arg(d, sat)
		case "refresh_url":
			f.RefreshURL, err = arg(d, sat)
		case "scope":
			a := d.RemainingArgs()
			if len(a) < 1 || len(a) > 2 {
				return nil, d.Errf("%s: want <scope> [<description>]", sat)
			}
			if _, dup := f.Scopes[a[0]]; dup {
				return nil, d.Errf("%s: %q is declared twice", sat, a[0])
			}
			f.Scopes[a[0]] = strings.Join(a[1:], "")
		case "pkce_required":
			if d.NextArg() {
				return nil, d.Errf("%s takes no argument", sat)
			}
			f.PKCERequired = true
		default:
			return nil, d.Errf("%s: unknown subdirective '%s'", at, sub)
		}
		if err != nil {
			return nil, err
		}
	}
	return flows, nil
}

// parseExtendedCard reads `extended_card [{ ... }]`.
func parseExtendedCard(d *caddyfile.Dispenser) (*ExtendedCardConfig, error) {
	if d.NextArg() {
		return nil, d.Errf("extended_card: unexpected argument '%s'; the settings go in a block", d.Val())
	}
	e := new(ExtendedCardConfig)
	seen := make(map[string]bool)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		sub := d.Val()
		if seen[sub] {
			return nil, d.Errf("extended_card: %s is set more than once", sub)
		}
		seen[sub] = true
		var err error
		switch sub {
		case "description":
			e.Description, err = arg(d, "extended_card: description")
		case "documentation_url":
			e.DocumentationURL, err = arg(d, "extended_card: documentation_url")
		default:
			return nil, d.Errf("extended_card: unknown subdirective '%s'", sub)
		}
		if err != nil {
			return nil, err
		}
	}
	return e, nil
}

// arg reads the one argument of the current line; at names it in errors.
func arg(d *caddyfile.Dispenser, at string) (string, error) {
	a := d.RemainingArgs()
	if len(a) != 1 {
		return "", d.Errf("%s: want exactly one argument, got %d", at, len(a))
	}
	return a[0], nil
}

// args1 reads the one or more arguments of the current line.
func args1(d *caddyfile.Dispenser, at string) ([]string, error) {
	a := d.RemainingArgs()
	if len(a) == 0 {
		return nil, d.Errf("%s: want at least one argument", at)
	}
	return a, nil
}

// durationOf reads a positive duration.
func durationOf(d *caddyfile.Dispenser, at string) (authn.Duration, error) {
	v, err := arg(d, at)
	if err != nil {
		return 0, err
	}
	dur, err := caddy.ParseDuration(v)
	if err != nil || dur <= 0 {
		return 0, d.Errf("%s: '%s' is not a positive duration", at, v)
	}
	return authn.Duration(dur), nil
}
