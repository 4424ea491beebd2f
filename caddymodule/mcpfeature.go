package caddymodule

import (
	"cmp"
	"time"

	compose "github.com/caddy-a2a/caddy-a2a/agent"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
)

// mcpFeature is the mcp block, MCPConfig (mcp.go): the MCP binding, and
// its protected resource metadata (mcpauth.go).
type mcpFeature struct{ noSteps }

func (mcpFeature) setting(h *Handler) setting { return setting{"mcp", setBlock(&h.MCP, parseMCP)} }

func (mcpFeature) validate(h *Handler) error { return checkBlock("mcp", h.MCP, (*MCPConfig).validate) }

// configure adds the binding, and the MCP endpoint as the protected
// resource whose metadata is served when a scheme takes bearer tokens.
func (mcpFeature) configure(a *assembly) error {
	if a.h.MCP == nil {
		return nil
	}
	a.server.Bindings = append(a.server.Bindings, a.h.MCP.binding())
	resource, endpoint := a.h.mcpResource()
	a.agent.Resource = &compose.Resource{URL: resource, Endpoint: endpoint,
		MaxAge: cmp.Or(time.Duration(a.h.CardMaxAge), cardgen.DefaultMaxAge)}
	return nil
}
