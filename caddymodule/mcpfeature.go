package caddymodule

// mcpFeature is the mcp block, MCPConfig (mcp.go): the MCP binding, and
// its protected resource metadata (mcpauth.go).
type mcpFeature struct{ noSteps }

func (mcpFeature) setting(h *Handler) setting { return setting{"mcp", setBlock(&h.MCP, parseMCP)} }

func (mcpFeature) validate(h *Handler) error { return checkBlock("mcp", h.MCP, (*MCPConfig).validate) }

func (mcpFeature) configure(a *assembly) (err error) {
	a.server.MCP = a.h.MCP.serverConfig()
	a.server.ResourceMetadata, err = a.h.resourceMetadata()
	return err
}

func (mcpFeature) start(a *assembly) error {
	a.h.endMCPStreamsOnShutdown(a.ctx)
	return nil
}

// cleanup closes the sessions once the calls still under way on them end
// (a reload does not wait for them).
func (mcpFeature) cleanup(h *Handler) error {
	if h.srv != nil {
		h.srv.CloseSessions()
	}
	return nil
}
