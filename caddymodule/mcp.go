package caddymodule

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/confval"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/server/mcp"
)

// MCPConfig serves the skills as the tools of an MCP server (Streamable
// HTTP; protocol 2026-07-28 without sessions, the versions before with
// them) on the same engine, task store, authentication, limits and
// observer as the A2A bindings. docs/mcp.md says what each skill becomes.
// In the Caddyfile: mcp [<path> [<url>]] [{ … }].
type MCPConfig struct {
	mcp.Config

	// URL is the endpoint's public, absolute URL: the resource MCP clients
	// ask bearer tokens for, and that tokens must name. Its path must end
	// with path, exactly; what comes before is the prefix a proxy or
	// handle_path removes, and the protected resource metadata is served
	// below it. No query, fragment or user information. Default: the
	// scheme and host of url, with path (set it when the agent is served
	// under a prefix).
	URL string `json:"url,omitempty"`
}

func (c *MCPConfig) validate() error {
	if err := c.Validate(); err != nil {
		return err
	}
	if c.URL != "" {
		if err := checkAbsoluteURL(c.URL); err != nil {
			return fmt.Errorf("url: %w", err)
		}
		// The URL is the resource tokens are asked for (RFC 8707): no
		// query or fragment, and no credentials.
		if u, _ := url.Parse(c.URL); u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
			return errors.New("url: must have no user information, query or fragment")
		}
		if _, err := cardgen.ResourceMetadataURL(c.URL, c.PathOrDefault()); err != nil {
			return fmt.Errorf("url: %w", err)
		}
	}
	return nil
}

// binding is the MCP endpoint as the server serves it.
func (c *MCPConfig) binding() server.NewBinding { return mcp.New(c.Config) }

// parseMCP reads mcp [<path> [<url>]] [{ session_timeout <duration>; max_sessions <count>;
// max_session_bytes <size>; max_sessions_per_caller <count>; max_session_bytes_per_caller <size>;
// any_host_on_loopback }].
func parseMCP(d *caddyfile.Dispenser, at string) (*MCPConfig, error) {
	args := d.RemainingArgs()
	if len(args) > 2 {
		return nil, d.Errf("%s: want at most two arguments (the path and the public URL), got %d", at, len(args))
	}
	c := new(MCPConfig)
	if len(args) >= 1 {
		c.Path = args[0]
	}
	if len(args) == 2 {
		c.URL = args[1]
	}
	err := parseBlock(d, at, nil, func(sub, at string) error {
		var err error
		switch sub {
		case "session_timeout":
			var timeout caddy.Duration
			timeout, err = durationArg(d, at)
			c.SessionTimeout = confval.Duration(timeout)
		case "max_sessions":
			c.MaxSessions, err = countArg(d, at)
		case "max_session_bytes":
			c.MaxSessionBytes, err = sizeArg(d, at)
		case "max_sessions_per_caller":
			c.MaxSessionsPerCaller, err = countArg(d, at)
		case "max_session_bytes_per_caller":
			c.MaxSessionBytesPerCaller, err = sizeArg(d, at)
		case "any_host_on_loopback":
			c.AnyHostOnLoopback, err = flagArg(d, at)
		default:
			return unknownSubdirective(mcpSubdirectives)
		}
		return err
	})
	return c, err
}

// mcpSubdirectives are the subdirectives of the mcp block.
var mcpSubdirectives = []string{"session_timeout", "max_sessions", "max_session_bytes", "max_sessions_per_caller",
	"max_session_bytes_per_caller", "any_host_on_loopback"}
