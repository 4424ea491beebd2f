package mcp_test

import (
	"github.com/caddy-a2a/caddy-a2a/server"
	mcpbinding "github.com/caddy-a2a/caddy-a2a/server/mcp"
)

func withMCP(cfg *server.Config) { withMCPConfig(cfg, mcpbinding.Config{}) }

func withMCPConfig(cfg *server.Config, mc mcpbinding.Config) {
	cfg.Bindings = append(cfg.Bindings, mcpbinding.New(mc))
}

// withMCPBySDK serves MCP with every request left to the SDK.
func withMCPBySDK(cfg *server.Config) {
	cfg.Bindings = append(cfg.Bindings, mcpbinding.NewBySDK(mcpbinding.Config{}))
}
