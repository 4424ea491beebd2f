package caddymodule

// mcpFeature is the mcp block, MCPConfig (mcp.go): the MCP binding, and
// its protected resource metadata (mcpauth.go).
type mcpFeature struct{ noSteps }

func (mcpFeature) setting(h *Handler) setting { return setting{"mcp", setBlock(&h.MCP, parseMCP)} }

func (mcpFeature) validate(h *Handler) error { return checkBlock("mcp", h.MCP, (*MCPConfig).validate) }

func (mcpFeature) configure(a *assembly) (err error) {
	if a.h.MCP != nil {
		a.server.Bindings = append(a.server.Bindings, a.h.MCP.binding())
	}
	a.server.ResourceMetadata, err = a.h.resourceMetadata()
	return err
}
