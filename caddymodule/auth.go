package caddymodule

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	compose "github.com/caddy-a2a/caddy-a2a/agent"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// SecurityConfig is the security block: how callers authenticate, as
// authn.Config declares it (its fields, documented there, stand in this
// block), and whether the card asks the same. Callers are authenticated
// against the security schemes the card declares (spec 1.0 §7): every
// JSON-RPC request must meet the agent-wide requirement, each caller owns
// the tasks it creates and sees no others, and skills may require more.
// Without it, every caller is anonymous. The card's securitySchemes
// and security requirement are made from it, so the card states exactly
// what is checked. An authenticated caller's subject, scheme and scopes are
// the placeholders {http.auth.user.id}, {http.auth.user.scheme} and
// {http.auth.user.scopes} (space-separated).
type SecurityConfig struct {
	authn.Config

	// ProtectCard makes GET of the Agent Card ask for what A2A requests
	// ask. Default: the card is public, as clients need it to learn how to
	// authenticate.
	ProtectCard bool `json:"protect_card,omitempty"`
}

// ExtendedCardConfig is what the extended Agent Card (GetExtendedAgentCard,
// for authenticated callers only) adds to the public one, which announces
// it. It needs security. Besides these
// fields, it lists the skills marked extended: true in the skills file,
// which the public card leaves out. It is signed like the public card.
type ExtendedCardConfig struct {
	// Description replaces the agent's description.
	Description string `json:"description,omitempty"`
	// DocumentationURL replaces the documentation URL.
	DocumentationURL string `json:"documentation_url,omitempty"`
}

// securityFeature is the security block: the authenticator, made before
// the skills load so that their requirements are checked against its
// schemes.
type securityFeature struct{ noSteps }

func (securityFeature) setting(h *Handler) setting {
	return setting{"security", setBlock(&h.Security, parseSecurity)}
}

func (securityFeature) validate(h *Handler) error {
	return checkBlock("security", h.Security, (*SecurityConfig).validate)
}

func (securityFeature) authenticate(a *assembly) error { return a.h.provisionSecurity() }

// configure has the server authenticate callers, and warns when the
// site's access log would write API keys in clear.
func (securityFeature) configure(a *assembly) error {
	h := a.h
	if h.auth != nil {
		a.server.Auth = placeholders{h.auth}
		a.server.ProtectCard = h.Security.ProtectCard
	}
	srv, _ := a.ctx.Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	newAccessLogAdvice(h.Security).warn(srv, h.logger)
	return nil
}

func (securityFeature) cleanup(h *Handler) error {
	h.auth.Close()
	h.auth = nil
	return nil
}

// extendedCardFeature is the extended_card block: the extended card's
// document, signed like the public card.
type extendedCardFeature struct{ noSteps }

func (extendedCardFeature) setting(h *Handler) setting {
	return setting{"extended_card", setBlock(&h.ExtendedCard, parseExtendedCard)}
}

func (extendedCardFeature) validate(h *Handler) error {
	e := h.ExtendedCard
	if e == nil {
		return nil
	}
	if h.Security == nil {
		return errors.New("extended_card: the extended card is served to authenticated callers only: configure security")
	}
	if e.DocumentationURL != "" {
		if err := checkAbsoluteURL(e.DocumentationURL); err != nil {
			return fmt.Errorf("extended_card: documentation_url: %w", err)
		}
	}
	return nil
}

func (extendedCardFeature) configure(a *assembly) error {
	if a.h.ExtendedCard == nil {
		return nil
	}
	a.agent.Extended = &compose.ExtendedCard{Description: a.h.ExtendedCard.Description,
		DocumentationURL: a.h.ExtendedCard.DocumentationURL}
	return nil
}

// validate checks what needs neither files, environment nor network.
func (s *SecurityConfig) validate() error {
	if len(s.Schemes) == 0 {
		return errors.New("declare at least one scheme")
	}
	return s.Config.Validate()
}

// provisionSecurity sets up the authenticator (nil without a security
// block): keys hashed and loaded, JWKS and discovery documents fetched;
// with MCP on, Bearer challenges that name the protected resource metadata
// and token schemes held to the MCP endpoint's audience (mcpauth.go).
// Cleanup closes it.
func (h *Handler) provisionSecurity() error {
	if h.Security == nil {
		return nil
	}
	metadata, err := h.resourceMetadataURL()
	if err != nil {
		return err
	}
	auth, err := authn.New(h.Security.Config, authn.Options{Logger: h.logger, ResourceMetadata: metadata,
		ClientAddress: clientIP})
	if err != nil {
		return fmt.Errorf("security: %w", err)
	}
	h.auth = auth
	return h.checkMCPAudience()
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
