package caddymodule

import (
	"fmt"
	"slices"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
)

// The Caddyfile syntax of the security and extended_card blocks. Each
// subdirective sets the field its setting names; the fields, in authn's
// configuration, document the options.

// schemeKinds are the subdirectives that declare a scheme.
var schemeKinds = []string{"api_key", "basic", "bearer", "oauth2", "openid_connect", "mutual_tls"}

// parseSecurity reads the security block.
func parseSecurity(d *caddyfile.Dispenser, where string) (*SecurityConfig, error) {
	if err := noArgs(d, where); err != nil {
		return nil, err
	}
	s := &SecurityConfig{Config: authn.Config{Schemes: map[string]*authn.Scheme{}}}
	settings := []setting{
		{"realm", setString(&s.Realm)},
		{"cache_size", func(d *caddyfile.Dispenser, at string) (err error) {
			s.CacheSize, err = intArg(d, at) // negative disables the cache
			return err
		}},
		{"cache_ttl", setDuration(&s.CacheTTL)},
		{"protect_card", setFlag(&s.ProtectCard)},
		{"require", func(d *caddyfile.Dispenser, at string) error {
			req, err := parseRequire(d, at)
			if err == nil {
				s.Require = append(s.Require, req)
			}
			return err
		}},
	}
	for _, kind := range schemeKinds {
		settings = append(settings, setting{kind, func(d *caddyfile.Dispenser, _ string) error {
			name, sc, err := parseScheme(d, where, kind)
			if err != nil {
				return err
			}
			if _, dup := s.Schemes[name]; dup {
				return d.Errf("%s: scheme %q is declared twice", where, name)
			}
			s.Schemes[name] = sc
			return nil
		}})
	}
	if err := parseSettings(d, where, append(slices.Clone(schemeKinds), "require"), settings); err != nil {
		return nil, err
	}
	if len(s.Schemes) == 0 {
		return nil, d.Errf("%s: no scheme: declare one with %s", where, oneOf(schemeKinds))
	}
	return s, nil
}

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
func parseScheme(d *caddyfile.Dispenser, parent, kind string) (string, *authn.Scheme, error) {
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
	sc := &authn.Scheme{}
	settings := []setting{{"description", setString(&sc.Description)}}
	switch kind {
	case "api_key":
		sc.Type, sc.In, sc.Name = authn.TypeAPIKey, args[1], args[2]
		settings = append(settings, setting{"key", apiKey(sc, false)}, setting{"key_sha256", apiKey(sc, true)})
	case "basic":
		sc.Type, sc.HTTPScheme = authn.TypeHTTP, "basic"
		settings = append(settings, setting{"user", func(d *caddyfile.Dispenser, at string) error {
			a := d.RemainingArgs()
			if len(a) < 2 {
				return d.Errf("%s: want <username> <bcrypt hash> [<scope>...]", at)
			}
			sc.Users = append(sc.Users, authn.User{Username: a[0], Password: a[1], Scopes: a[2:]})
			return nil
		}})
	case "bearer":
		sc.Type, sc.HTTPScheme = authn.TypeHTTP, "bearer"
		settings = append(settings, setting{"bearer_format", setString(&sc.BearerFormat)})
	case "oauth2":
		sc.Type = authn.TypeOAuth2
		settings = append(settings, setting{"flow", func(d *caddyfile.Dispenser, at string) (err error) {
			sc.Flows, err = parseFlow(d, at)
			return err
		}}, setting{"metadata_url", setString(&sc.MetadataURL)})
	case "openid_connect":
		// Discovery gives the keys; the audience is still required, and
		// authn says so.
		sc.Type, sc.OpenIDConnectURL, sc.JWT = authn.TypeOpenIDConnect, args[1], &authn.JWTConfig{}
	case "mutual_tls":
		sc.Type, sc.MTLS = authn.TypeMutualTLS, &authn.MTLSConfig{}
		m := sc.MTLS
		settings = append(settings, setting{"trusted_ca", addStrings(&m.TrustedCAs)}, setting{"trusted_proxies", addStrings(&m.TrustedProxies)},
			setting{"cert_header", setString(&m.CertHeader)}, setting{"subject_from", addStrings(&m.SubjectFrom)})
	}
	if kind == "bearer" || kind == "oauth2" || kind == "openid_connect" {
		settings = append(settings, setting{"introspection", func(d *caddyfile.Dispenser, at string) (err error) {
			sc.Introspection, err = parseIntrospection(d, at)
			return err
		}}, setting{"allow_insecure_http", setFlag(&sc.AllowInsecureHTTP)})
		settings = append(settings, tokenSettings(sc)...)
	}
	where := fmt.Sprintf("%s: %s %s", parent, kind, args[0])
	err := parseSettings(d, where, []string{"key", "key_sha256", "user", "public_key", "trusted_ca"}, settings)
	return args[0], sc, err
}

// apiKey reads `key <key> <subject> [<scope>...]`, or key_sha256 with the
// key's digest.
func apiKey(sc *authn.Scheme, digest bool) func(*caddyfile.Dispenser, string) error {
	return func(d *caddyfile.Dispenser, at string) error {
		a := d.RemainingArgs()
		if len(a) < 2 {
			return d.Errf("%s: want <key> <subject> [<scope>...]", at)
		}
		k := authn.APIKey{Subject: a[1], Scopes: a[2:]}
		if digest {
			k.SHA256 = a[0]
		} else {
			k.Key = a[0]
		}
		sc.Keys = append(sc.Keys, k)
		return nil
	}
}

// tokenSettings are the JWT options of a scheme that takes tokens; they
// stand in the scheme's block, and the first one read makes sc.JWT.
func tokenSettings(sc *authn.Scheme) []setting {
	j := sc.JWT
	if j == nil {
		j = &authn.JWTConfig{}
	}
	settings := []setting{
		{"issuer", setString(&j.Issuer)},
		{"audience", addStrings(&j.Audiences)},
		{"algorithms", addStrings(&j.Algorithms)},
		{"leeway", setDuration(&j.Leeway)},
		{"jwks_url", setString(&j.JWKSURL)},
		{"public_key", addStrings(&j.PublicKeys)},
		{"hmac_secret", setString(&j.HMACSecret)},
		{"subject_claim", setString(&j.SubjectClaim)},
		{"refresh_interval", setDuration(&j.RefreshInterval)},
		{"min_refresh_interval", setDuration(&j.MinRefreshInterval)},
		{"fetch_timeout", setDuration(&j.FetchTimeout)},
	}
	for i, s := range settings {
		settings[i].read = func(d *caddyfile.Dispenser, at string) error {
			sc.JWT = j
			return s.read(d, at)
		}
	}
	return settings
}

// parseIntrospection reads `introspection <url> { ... }`.
func parseIntrospection(d *caddyfile.Dispenser, where string) (*authn.IntrospectionConfig, error) {
	u, err := oneArg(d, where)
	if err != nil {
		return nil, err
	}
	in := &authn.IntrospectionConfig{URL: u}
	return in, parseSettings(d, where, nil, []setting{
		{"client_id", setString(&in.ClientID)},
		{"client_secret", setString(&in.ClientSecret)},
		{"audience", addStrings(&in.Audiences)},
		{"subject_claim", setString(&in.SubjectClaim)},
		{"cache_ttl", setDuration(&in.CacheTTL)},
		{"timeout", setDuration(&in.Timeout)},
	})
}

// parseFlow reads `flow <type> { ... }`, the one flow of an oauth2 scheme.
func parseFlow(d *caddyfile.Dispenser, where string) (*authn.Flows, error) {
	name, err := oneArg(d, where)
	if err != nil {
		return nil, err
	}
	typ, ok := a2a.ParseOAuthFlowType(name)
	if !ok {
		names := make([]string, len(a2a.OAuthFlowTypes))
		for i, t := range a2a.OAuthFlowTypes {
			names[i] = t.ProtoName()
		}
		return nil, d.Errf("%s: '%s' is not %s", where, name, oneOf(names))
	}
	f := &a2a.OAuthFlow{Scopes: map[string]string{}}
	flows := &authn.Flows{}
	flows.Set(typ, f)
	return flows, parseSettings(d, where, []string{"scope"}, []setting{
		{"token_url", setString(&f.TokenURL)},
		{"authorization_url", setString(&f.AuthorizationURL)},
		{"device_authorization_url", setString(&f.DeviceAuthorizationURL)},
		{"refresh_url", setString(&f.RefreshURL)},
		{"scope", func(d *caddyfile.Dispenser, at string) error {
			a := d.RemainingArgs()
			if len(a) < 1 || len(a) > 2 {
				return d.Errf("%s: want <scope> [<description>]", at)
			}
			if _, dup := f.Scopes[a[0]]; dup {
				return d.Errf("%s: %q is declared twice", at, a[0])
			}
			f.Scopes[a[0]] = strings.Join(a[1:], "")
			return nil
		}},
		{"pkce_required", setFlag(&f.PKCERequired)},
	})
}

// parseExtendedCard reads `extended_card [{ ... }]`.
func parseExtendedCard(d *caddyfile.Dispenser, where string) (*ExtendedCardConfig, error) {
	if err := noArgs(d, where); err != nil {
		return nil, err
	}
	e := new(ExtendedCardConfig)
	return e, parseSettings(d, where, nil, []setting{
		{"description", setString(&e.Description)},
		{"documentation_url", setString(&e.DocumentationURL)},
	})
}
