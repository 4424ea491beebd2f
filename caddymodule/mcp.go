package caddymodule

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// MCPConfig serves the skills as the tools of an MCP server (Streamable
// HTTP; protocol 2026-07-28 without sessions, the versions before with
// them) on the same engine, task store, authentication, limits and
// observer as the A2A bindings. docs/mcp.md says what each skill becomes.
// In the Caddyfile: mcp [<path> [<url>]] [{ … }].
type MCPConfig struct {
	// Path is the endpoint's request path, as the handler sees it (after
	// any handle_path). Default: /mcp.
	Path string `json:"path,omitempty"`

	// URL is the endpoint's public, absolute URL: the resource MCP clients
	// ask bearer tokens for, and that tokens must name. Its path must end
	// with path, exactly; what comes before is the prefix a proxy or
	// handle_path removes, and the protected resource metadata is served
	// below it. No query, fragment or user information. Default: the
	// scheme and host of url, with path (set it when the agent is served
	// under a prefix).
	URL string `json:"url,omitempty"`

	// SessionTimeout closes a session (protocol 2025-11-25 and earlier)
	// that has had no request for this long. Default: 5m.
	SessionTimeout caddy.Duration `json:"session_timeout,omitempty"`

	// MaxSessions caps the sessions open at once. Past it, a caller that
	// holds at least two fewer than the caller holding the most still
	// opens one, and that caller's least recently used session is closed;
	// any other is answered 503 with Retry-After until one closes or times
	// out. When the agent declares security schemes, anonymous callers
	// together hold at most half of max_sessions and of max_session_bytes,
	// so that the rest stays for authenticated callers. Requests at
	// 2026-07-28 need no session. Default: 1000.
	MaxSessions int `json:"max_sessions,omitempty"`

	// MaxSessionBytes bounds the memory the sessions hold together, with
	// the same rules as max_sessions: each counts 8 KiB and three times
	// what it keeps of its initialize request (an initialize is at most
	// 16 KiB). Default: 32 MiB; at least 56 KiB, what one session may
	// hold.
	MaxSessionBytes int64 `json:"max_session_bytes,omitempty"`

	// MaxSessionsPerCaller caps the sessions one caller holds open: an
	// authenticated caller (its owner), or one client address of the
	// anonymous ones. Past it, that caller is answered 429 with
	// Retry-After until one of its sessions closes. Default: a tenth
	// of max_sessions, at least 1.
	MaxSessionsPerCaller int `json:"max_sessions_per_caller,omitempty"`

	// MaxSessionBytesPerCaller bounds the memory of one caller's sessions,
	// as max_sessions_per_caller bounds their count. Default: a tenth of
	// max_session_bytes; at least 56 KiB.
	MaxSessionBytesPerCaller int64 `json:"max_session_bytes_per_caller,omitempty"`

	// AnyHostOnLoopback takes requests that arrive on a loopback address
	// with any Host header. By default such a request must name a loopback
	// host, which stops DNS rebinding (a web page whose name resolves to
	// 127.0.0.1 reaching a local agent); set it when a proxy on the same
	// machine forwards requests to Caddy on loopback with their public
	// Host.
	AnyHostOnLoopback bool `json:"any_host_on_loopback,omitempty"`
}

func (c *MCPConfig) validate() error {
	switch {
	case c.Path != "" && c.Path[0] != '/':
		return fmt.Errorf("path: %q must start with /", c.Path)
	case c.SessionTimeout < 0:
		return fmt.Errorf("session_timeout: %s is negative", time.Duration(c.SessionTimeout))
	case c.MaxSessions < 0:
		return fmt.Errorf("max_sessions: %d is negative", c.MaxSessions)
	case c.MaxSessionsPerCaller < 0:
		return fmt.Errorf("max_sessions_per_caller: %d is negative", c.MaxSessionsPerCaller)
	case c.MaxSessionBytes != 0 && c.MaxSessionBytes < server.MinMCPSessionBytes:
		return fmt.Errorf("max_session_bytes: %d is less than one session may hold (%d)", c.MaxSessionBytes, server.MinMCPSessionBytes)
	case c.MaxSessionBytesPerCaller != 0 && c.MaxSessionBytesPerCaller < server.MinMCPSessionBytes:
		return fmt.Errorf("max_session_bytes_per_caller: %d is less than one session may hold (%d)",
			c.MaxSessionBytesPerCaller, server.MinMCPSessionBytes)
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
		if _, err := cardgen.ResourceMetadataURL(c.URL, c.path()); err != nil {
			return fmt.Errorf("url: %w", err)
		}
	}
	return nil
}

// path is the endpoint's path as the handler sees it.
func (c *MCPConfig) path() string { return cmp.Or(c.Path, server.DefaultMCPPath) }

// serverConfig is the endpoint as the server takes it.
func (c *MCPConfig) serverConfig() server.MCPConfig {
	return server.MCPConfig{Path: c.Path, SessionTimeout: time.Duration(c.SessionTimeout),
		MaxSessions: c.MaxSessions, MaxSessionBytes: c.MaxSessionBytes,
		MaxSessionsPerCaller: c.MaxSessionsPerCaller, MaxSessionBytesPerCaller: c.MaxSessionBytesPerCaller,
		AnyHostOnLoopback: c.AnyHostOnLoopback}
}

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
			c.SessionTimeout, err = durationArg(d, at)
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
