package authn

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// The agent as an OAuth 2.0 protected resource: what its OAuth 2.0
// Protected Resource Metadata (RFC 9728) says of the token schemes, which
// MCP clients read to learn where to get a token, and the audience a token
// must be for (RFC 8707), which MCP requires a server to check.

// tokenTarget is what a token scheme knows of who issues its tokens and
// whom they are for.
type tokenTarget struct {
	// issuer is the authorization server's issuer identifier (RFC 8414):
	// the configured jwt.issuer, else the one its discovery URL is made
	// from; "" when neither says.
	issuer string
	// jwtAudiences are the aud values a JWT may carry; verifiesJWT says
	// whether the scheme verifies JWTs at all.
	verifiesJWT  bool
	jwtAudiences []string
	// introspectionAudiences likewise for the introspection answers.
	introspects            bool
	introspectionAudiences []string
}

// newTokenTarget reads it from the expanded configuration of a token
// scheme.
func newTokenTarget(sc *Scheme) *tokenTarget {
	t := &tokenTarget{verifiesJWT: sc.JWT != nil || sc.Type == TypeOpenIDConnect, introspects: sc.Introspection != nil}
	if sc.JWT != nil {
		t.issuer, t.jwtAudiences = sc.JWT.Issuer, slices.Clone(sc.JWT.Audiences)
	}
	if sc.Introspection != nil {
		t.introspectionAudiences = slices.Clone(sc.Introspection.Audiences)
	}
	if t.issuer == "" {
		switch sc.Type {
		case TypeOpenIDConnect:
			t.issuer = issuerOf(sc.OpenIDConnectURL)
		case TypeOAuth2:
			t.issuer = issuerOf(sc.MetadataURL)
		}
	}
	return t
}

// issuerOf is the issuer identifier a metadata or discovery URL is made
// from: RFC 8414 inserts the well-known segment between host and path,
// OpenID Connect Discovery appends it to the issuer. "" for any other URL.
func issuerOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.RawQuery != "" {
		return ""
	}
	for _, wellKnown := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		path, inserted := strings.CutPrefix(u.Path, wellKnown)
		if !inserted {
			path, inserted = strings.CutSuffix(u.Path, wellKnown)
		}
		if inserted && (path == "" || strings.HasPrefix(path, "/")) {
			return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: path}).String()
		}
	}
	return ""
}

// TakesTokens reports whether a scheme takes bearer tokens (http bearer,
// oauth2, openIdConnect): only then is the agent an OAuth 2.0 protected
// resource with metadata to publish.
func (a *Authenticator) TakesTokens() bool {
	return a != nil && slices.ContainsFunc(a.schemes, func(s *scheme) bool { return s.token != nil })
}

// AuthorizationServers are the issuer identifiers of the authorization
// servers whose tokens the token schemes take, in the order of the
// schemes' names, each once: what the protected resource metadata lists
// as authorization_servers. A scheme whose issuer is unknown (no
// jwt.issuer, no discovery URL) names none.
func (a *Authenticator) AuthorizationServers() []string {
	var out []string
	for _, s := range a.tokenSchemes() {
		if iss := s.token.issuer; iss != "" && !slices.Contains(out, iss) {
			out = append(out, iss)
		}
	}
	return out
}

// TokenScopes are the scopes reqs ask of token schemes, in order, each
// once: what the protected resource metadata lists as scopes_supported.
func (a *Authenticator) TokenScopes(reqs []a2a.SecurityRequirement) []string {
	var out []string
	for _, req := range reqs {
		for _, name := range slices.Sorted(maps.Keys(req)) {
			if s := a.schemeNamed(name); s == nil || s.token == nil {
				continue
			}
			for _, scope := range req[name] {
				if !slices.Contains(out, scope) {
					out = append(out, scope)
				}
			}
		}
	}
	return out
}

// CheckAudience holds every token scheme to tokens issued for resource
// (RFC 8707), as MCP requires of a server: a scheme that verifies JWTs
// must list resource among its audiences, and so must introspection
// audiences when they are set. Introspection without audiences, whose
// answers need not name one (RFC 7662), is logged as a warning. The error
// names each scheme and the line that fixes it.
func (a *Authenticator) CheckAudience(resource string) error {
	var errs []error
	for _, s := range a.tokenSchemes() {
		t := s.token
		if t.verifiesJWT && !slices.Contains(t.jwtAudiences, resource) {
			errs = append(errs, audienceError(s.name, "jwt", resource, t.jwtAudiences))
		}
		switch {
		case !t.introspects:
		case len(t.introspectionAudiences) == 0:
			a.log.Warn("introspection checks no audience: a token issued for another service is accepted when the answer names no aud",
				zap.String("scheme", s.name), zap.String("resource", resource))
		case !slices.Contains(t.introspectionAudiences, resource):
			errs = append(errs, audienceError(s.name, "introspection", resource, t.introspectionAudiences))
		}
	}
	return errors.Join(errs...)
}

func audienceError(scheme, block, resource string, audiences []string) error {
	have := "none"
	if len(audiences) > 0 {
		have = strings.Join(audiences, ", ")
	}
	return fmt.Errorf("scheme %q: %s audiences (%s) lack %s, the resource MCP clients ask tokens for (RFC 8707): "+
		"add it beside the others (Caddyfile: audience %s) so that tokens for this agent pass and tokens for other services do not",
		scheme, block, have, resource, resource)
}

func (a *Authenticator) tokenSchemes() []*scheme {
	if a == nil {
		return nil
	}
	var out []*scheme
	for _, s := range a.schemes {
		if s.token != nil {
			out = append(out, s)
		}
	}
	return out
}
