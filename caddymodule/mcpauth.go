package caddymodule

import (
	"cmp"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/cardgen"
)

// MCP authorization (the MCP specification's, on RFC 9728 and RFC 8707):
// with MCP on and a scheme that takes bearer tokens, the agent publishes
// OAuth 2.0 Protected Resource Metadata for the MCP endpoint, its Bearer
// challenges name it, and its tokens must be for the MCP endpoint.

// mcpResource is the MCP endpoint's absolute URL: mcp's url, or the
// scheme and host of url with the endpoint's path; the resource MCP
// clients ask tokens for (RFC 8707) and that the protected resource
// metadata describes. endpoint is its path as the handler sees it when
// that differs (cardgen.ResourceMetadataURL). "" when MCP is off.
func (h *Handler) mcpResource() (resource, endpoint string) {
	switch {
	case h.MCP == nil:
		return "", ""
	case h.MCP.URL == "":
		return h.siteURL(h.MCP.PathOrDefault()), ""
	}
	return h.MCP.URL, h.MCP.PathOrDefault()
}

// resourceMetadataURL is where the protected resource metadata is served,
// which Bearer challenges name; "" when MCP is off.
func (h *Handler) resourceMetadataURL() (string, error) {
	resource, endpoint := h.mcpResource()
	if resource == "" {
		return "", nil
	}
	u, err := cardgen.ResourceMetadataURL(resource, endpoint)
	if err != nil {
		return "", fmt.Errorf("mcp: %w", err)
	}
	return u, nil
}

// checkMCPAudience holds every token scheme to tokens issued for the MCP
// endpoint, as MCP requires of a server (RFC 8707): a JWT whose aud does
// not name it is refused, so the configuration must list it.
func (h *Handler) checkMCPAudience() error {
	resource, _ := h.mcpResource()
	if resource == "" {
		return nil
	}
	if err := h.auth.CheckAudience(resource); err != nil {
		return fmt.Errorf("security: with mcp on, tokens must be for the MCP endpoint: %w", err)
	}
	return nil
}

// resourceMetadata is the protected resource metadata to serve: nil unless
// MCP is on and a scheme takes bearer tokens. It names the authorization
// servers of the token schemes and the scopes that the agent-wide and the
// skills' requirements ask of them; it is served with the card's cache
// headers.
func (h *Handler) resourceMetadata() (*cardgen.ResourceMetadata, error) {
	resource, endpoint := h.mcpResource()
	if resource == "" || !h.auth.TakesTokens() {
		return nil, nil
	}
	reqs := h.auth.CardRequirements()
	for _, sk := range h.skills.All() {
		reqs = append(reqs, sk.SecurityRequirements...)
	}
	servers := h.auth.AuthorizationServers()
	if len(servers) == 0 {
		h.logger.Warn("no token scheme names its authorization server (jwt issuer, openid_connect, oauth2 metadata_url): "+
			"the protected resource metadata lists none, and MCP clients cannot discover where to get a token",
			zap.String("resource", resource))
	}
	m, err := cardgen.NewResourceMetadata(cardgen.ProtectedResource{
		Resource:               resource,
		AuthorizationServers:   servers,
		ScopesSupported:        h.auth.TokenScopes(reqs),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           h.Name,
		ResourceDocumentation:  h.DocumentationURL,
	}, endpoint, cmp.Or(time.Duration(h.CardMaxAge), cardgen.DefaultMaxAge))
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	return m, nil
}
