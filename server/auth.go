package server

import (
	"fmt"
	"net/http"

	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/mapping"
)

// Authenticator says who is calling and what they may do.
// *authn.Authenticator is one; an adapter may wrap it, for example to
// publish the identity to its own logs.
type Authenticator interface {
	// Authenticate checks a request against the agent-wide requirement:
	// the caller's identity (nil for an anonymous caller the requirement
	// admits), or why the request is refused.
	Authenticate(r *http.Request) (*authn.Identity, *authn.Failure)
	// CompileRequirements resolves a skill's requirements; New calls it
	// once per skill, so that requests only check.
	CompileRequirements(reqs []a2a.SecurityRequirement) (*authn.Requirements, error)
	// Authorize checks an identity against compiled requirements.
	Authorize(id *authn.Identity, reqs *authn.Requirements) *authn.Failure
	// Challenge is the 401 for an anonymous caller of something only
	// authenticated callers get.
	Challenge() *authn.Failure
}

// authenticate identifies the caller; without an Authenticator every
// caller is anonymous.
func (h *Handler) authenticate(r *http.Request) (*authn.Identity, *authn.Failure) {
	if h.auth == nil {
		return nil, nil
	}
	return h.auth.Authenticate(r)
}

// authorize checks the caller against the skill a message is for, before
// anything is created or sent: the skill's own requirement, and for a
// skill listed on the extended card only, an authenticated caller.
func (h *Handler) authorize(id *authn.Identity, sk *mapping.Skill) *authn.Failure {
	switch {
	case sk == nil || h.auth == nil:
		return nil
	case sk.Extended && id == nil:
		return h.auth.Challenge()
	}
	return h.auth.Authorize(id, h.skillRequirements[sk])
}

// compileSkillRequirements resolves every skill's requirements once, so
// that a request only checks them. Without an authenticator a skill's
// requirement could not be checked: such a skill is refused rather than
// left open.
func compileSkillRequirements(auth Authenticator, skills *mapping.Skills) (map[*mapping.Skill]*authn.Requirements, error) {
	out := make(map[*mapping.Skill]*authn.Requirements)
	for _, sk := range skills.All() {
		switch {
		case auth == nil && (len(sk.SecurityRequirements) > 0 || sk.Extended):
			return nil, fmt.Errorf("server: skill %q declares security or extended, but no authenticator is configured", sk.ID)
		case auth == nil || len(sk.SecurityRequirements) == 0:
			continue
		}
		reqs, err := auth.CompileRequirements(sk.SecurityRequirements)
		if err != nil {
			return nil, fmt.Errorf("server: skill %q: security: %w", sk.ID, err)
		}
		out[sk] = reqs
	}
	return out, nil
}

// refuse answers an authentication or authorization failure: 401 or 403,
// a WWW-Authenticate challenge per acceptable scheme, and an error body in
// the caller's form (never an SSE stream, whatever the method), so that a
// client can read why. A JSON-RPC id is null when the request was refused
// unread.
func (h *Handler) refuse(w http.ResponseWriter, c *Exchange, f *authn.Failure) {
	h.writeError(w, f.Status, c, h.refusal(w.Header(), f))
}

// refusal notes an authentication or authorization failure of any binding
// (logged, observed), adds its challenges to hdr (HTTP headers, or gRPC
// metadata) and returns the protocol error to answer. A Bearer challenge
// names the protected resource metadata when the agent serves it (the
// authenticator builds it so: authn.Options.ResourceMetadata), on every
// binding: MCP clients follow it to an authorization server, and A2A
// clients, which read the card's schemes instead, ignore the parameter
// (RFC 9110 §11.2: unknown auth-params are ignored).
func (h *Handler) refusal(hdr http.Header, f *authn.Failure) *a2a.Error {
	h.log.Debug("request refused", zap.Int("status", f.Status), zap.String("reason", f.Reason), zap.String("detail", f.Detail))
	if h.obs != nil {
		h.obs.AuthFailure(f)
	}
	f.SetHeaders(hdr)
	return f.RPCError()
}

// callerOf is what the skill's expressions see of the caller as caller.*,
// and, for a skill that exchanges it, the bearer token of r the agent
// validated: a call keeps no copy of a token it does not need.
func callerOf(id *authn.Identity, r *http.Request, sk *mapping.Skill) mapping.Caller {
	if id == nil {
		return mapping.Caller{}
	}
	c := mapping.Caller{Subject: id.Subject, Scopes: id.Scopes, Claims: id.Claims}
	if sk != nil && sk.ExchangesTokens() {
		c.Token, c.TokenExpires = authn.BearerToken(r, id)
	}
	return c
}

// forwarded copies the caller's headers that the skill passes on to its
// upstream, and no others: a run may outlive the request.
func forwarded(r *http.Request, sk *mapping.Skill) http.Header {
	if sk == nil || len(sk.ForwardHeaders) == 0 {
		return nil
	}
	out := make(http.Header, len(sk.ForwardHeaders))
	for _, name := range sk.ForwardHeaders {
		if vals := r.Header[name]; len(vals) > 0 {
			out[name] = append([]string(nil), vals...)
		}
	}
	return out
}

// Interface guard
var _ Authenticator = (*authn.Authenticator)(nil)
