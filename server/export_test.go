package server

// MCPBySDK makes h's MCP endpoint leave every request to the SDK, also
// the plain tools/call that it answers itself.
func MCPBySDK(h *Handler) {
	for _, b := range h.bindings {
		if m, ok := b.(*mcpBinding); ok {
			m.bySDK = true
		}
	}
}
