package caddymodule

import (
	"fmt"

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
