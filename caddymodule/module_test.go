package caddymodule

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-a2a/caddy-a2a/confval"
	"github.com/caddy-a2a/caddy-a2a/push"
	mcpbinding "github.com/caddy-a2a/caddy-a2a/server/mcp"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// validHandler is the smallest configuration Validate accepts.
func validHandler() *Handler {
	return &Handler{
		Skills:      "skills.yaml",
		URL:         "https://agent.example.com/a2a",
		Name:        "Agent",
		Description: "Does things",
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(h *Handler)
		want   string // a substring of the error; "" for none
	}{
		{"minimal", func(*Handler) {}, ""},
		{"everything set", func(h *Handler) {
			h.Upstream = "http://127.0.0.1:9090"
			h.Provider = &Provider{Organization: "Org", URL: "https://example.org"}
			h.DocumentationURL = "https://example.org/docs"
			h.IconURL = "https://example.org/icon.png"
			h.MaxRequestBody = 1 << 20
			h.Heartbeat = caddy.Duration(1)
			h.CardMaxAge = caddy.Duration(1)
			h.Tasks = &TasksConfig{Config: tasks.Config{MaxTasks: 1, MaxAge: 1, StreamBuffer: 1}}
		}, ""},
		{"zero limits take defaults", func(h *Handler) { h.Tasks = &TasksConfig{} }, ""},

		{"no skills", func(h *Handler) { h.Skills = "" }, "skills: the skills file is required"},
		{"no url", func(h *Handler) { h.URL = "" }, "url: the public URL of the A2A endpoint is required"},
		{"no name", func(h *Handler) { h.Name = "" }, "name: the agent's name is required"},
		{"no description", func(h *Handler) { h.Description = "" }, "description: the agent's description is required"},

		{"relative url", func(h *Handler) { h.URL = "/a2a" }, "url: not an absolute http or https URL"},
		{"url without host", func(h *Handler) { h.URL = "http:///a2a" }, "url: not an absolute"},
		{"url with another scheme", func(h *Handler) { h.URL = "ftp://example.com/" }, "url: not an absolute"},
		{"url not parsable", func(h *Handler) { h.URL = "http://[::1" }, "url: not an absolute"},
		{"upstream without a scheme", func(h *Handler) { h.Upstream = "127.0.0.1:9090" }, "upstream: not an absolute"},
		{"relative documentation_url", func(h *Handler) { h.DocumentationURL = "docs" }, "documentation_url: not an absolute"},
		{"relative icon_url", func(h *Handler) { h.IconURL = "icon.png" }, "icon_url: not an absolute"},
		{"provider without organization", func(h *Handler) {
			h.Provider = &Provider{URL: "https://example.org"}
		}, "provider: the organization is required"},
		{"provider without url", func(h *Handler) {
			h.Provider = &Provider{Organization: "Org"}
		}, "provider: the provider's URL is required"},
		{"provider with a relative url", func(h *Handler) {
			h.Provider = &Provider{Organization: "Org", URL: "example.org"}
		}, "provider: not an absolute"},

		{"negative max_request_body", func(h *Handler) { h.MaxRequestBody = -1 }, "max_request_body: -1 is negative"},
		{"negative heartbeat", func(h *Handler) { h.Heartbeat = -caddy.Duration(1e9) }, "heartbeat: -1s is negative"},
		{"negative card_max_age", func(h *Handler) { h.CardMaxAge = -caddy.Duration(1e9) }, "card_max_age: -1s is negative"},
		{"negative max_tasks", func(h *Handler) { h.Tasks = &TasksConfig{Config: tasks.Config{MaxTasks: -1}} }, "tasks: max_tasks -1 is negative"},
		{"negative resend_window", func(h *Handler) {
			h.Tasks = &TasksConfig{Config: tasks.Config{ResendWindow: new(confval.Duration(-60e9))}}
		},
			"tasks: resend_window -1m0s is negative (0 turns it off)"},
		{"negative max_resend_keys", func(h *Handler) { h.Tasks = &TasksConfig{Config: tasks.Config{MaxResendKeys: -1}} }, "tasks: max_resend_keys -1 is negative"},
		{"negative max_age", func(h *Handler) {
			h.Tasks = &TasksConfig{Config: tasks.Config{MaxAge: -confval.Duration(1e9)}}
		}, "tasks: max_age -1s is negative"},
		{"negative stream_buffer", func(h *Handler) {
			h.Tasks = &TasksConfig{Config: tasks.Config{StreamBuffer: -1}}
		}, "tasks: stream_buffer -1 is negative"},
		{"negative read_body_timeout", func(h *Handler) { h.ReadBodyTimeout = -caddy.Duration(1e9) }, "read_body_timeout: -1s is negative"},
		{"negative write_timeout", func(h *Handler) { h.WriteTimeout = -caddy.Duration(1e9) }, "write_timeout: -1s is negative"},
		{"negative max_input_wait", func(h *Handler) {
			h.Tasks = &TasksConfig{Config: tasks.Config{MaxInputWait: -confval.Duration(1e9)}}
		}, "tasks: max_input_wait -1s is negative"},
		{"negative max_bytes", func(h *Handler) { h.Tasks = &TasksConfig{Config: tasks.Config{MaxBytes: -1}} }, "tasks: max_bytes -1 is negative"},
		{"negative max_task_bytes", func(h *Handler) { h.Tasks = &TasksConfig{Config: tasks.Config{MaxTaskBytes: -1}} }, "tasks: max_task_bytes -1 is negative"},
		{"redis without an address", func(h *Handler) { h.Tasks = &TasksConfig{Redis: &RedisConfig{}} },
			"tasks: redis: at least one address is required"},
		{"redis and a store module", func(h *Handler) {
			h.Tasks = &TasksConfig{Redis: &RedisConfig{Addresses: []string{"127.0.0.1:6379"}}, StoreRaw: []byte(`{"module":"memory"}`)}
		}, "tasks: redis and store both name a store: keep one"},
		{"push", func(h *Handler) {
			h.Signing = &SigningConfig{GenerateKey: &GeneratedKey{}}
			h.Push = &PushConfig{Config: push.Config{AllowedNetworks: []string{"10.0.0.0/8"}}}
		}, ""},
		{"push without signing", func(h *Handler) { h.Push = &PushConfig{} }, "push: notifications are signed with a key the agent's JWKS publishes: configure signing"},
		{"push with a bad network", func(h *Handler) {
			h.Signing = &SigningConfig{GenerateKey: &GeneratedKey{}}
			h.Push = &PushConfig{Config: push.Config{AllowedNetworks: []string{"10.0.0.1"}}}
		}, `push: allowed_networks: "10.0.0.1" is not a CIDR range`},
		{"push with a bad origin", func(h *Handler) {
			h.Signing = &SigningConfig{GenerateKey: &GeneratedKey{}}
			h.Push = &PushConfig{Config: push.Config{AllowedOrigins: []string{"hooks.example.com"}}}
		}, `push: allowed_origins: "hooks.example.com" is not an absolute URL`},
		{"push with a negative timeout", func(h *Handler) {
			h.Signing = &SigningConfig{GenerateKey: &GeneratedKey{}}
			h.Push = &PushConfig{Config: push.Config{Timeout: -1}}
		}, "push: timeout, initial_backoff and max_backoff must not be negative"},
		{"redis with a negative timeout", func(h *Handler) {
			h.Tasks = &TasksConfig{Redis: &RedisConfig{Addresses: []string{"127.0.0.1:6379"}, Timeout: -caddy.Duration(1e9)}}
		}, "tasks: redis: timeout -1s is negative"},
		{"mcp", func(h *Handler) {
			h.MCP = &MCPConfig{Config: mcpbinding.Config{Path: "/tools", SessionTimeout: 1, MaxSessions: 1}}
		}, ""},
		{"mcp with a relative path", func(h *Handler) { h.MCP = &MCPConfig{Config: mcpbinding.Config{Path: "tools"}} }, `mcp: path: "tools" must start with /`},
		{"mcp with a negative session_timeout", func(h *Handler) { h.MCP = &MCPConfig{Config: mcpbinding.Config{SessionTimeout: -1e9}} },
			"mcp: session_timeout: -1s is negative"},
		{"mcp with negative max_sessions", func(h *Handler) { h.MCP = &MCPConfig{Config: mcpbinding.Config{MaxSessions: -1}} }, "mcp: max_sessions: -1 is negative"},
		{"mcp with negative max_sessions_per_caller", func(h *Handler) { h.MCP = &MCPConfig{Config: mcpbinding.Config{MaxSessionsPerCaller: -1}} },
			"mcp: max_sessions_per_caller: -1 is negative"},
		{"mcp with max_session_bytes below one session", func(h *Handler) { h.MCP = &MCPConfig{Config: mcpbinding.Config{MaxSessionBytes: 1 << 10}} },
			"mcp: max_session_bytes: 1024 is less than one session may hold (57344)"},
		{"mcp with max_session_bytes_per_caller below one session", func(h *Handler) { h.MCP = &MCPConfig{Config: mcpbinding.Config{MaxSessionBytesPerCaller: -1}} },
			"mcp: max_session_bytes_per_caller: -1 is less than one session may hold (57344)"},
		{"mcp under a prefix", func(h *Handler) { h.MCP = &MCPConfig{URL: "https://agents.example/orders/mcp"} }, ""},
		{"mcp with a relative url", func(h *Handler) { h.MCP = &MCPConfig{URL: "/orders/mcp"} },
			"mcp: url: not an absolute http or https URL"},
		{"mcp with a url that is not its path's", func(h *Handler) {
			h.MCP = &MCPConfig{Config: mcpbinding.Config{Path: "/tools"}, URL: "https://agents.example/orders/mcp"}
		}, `mcp: url: cardgen: resource metadata: the path of resource "https://agents.example/orders/mcp" does not end with the endpoint's path "/tools"`},
		{"mcp with a url whose path only ends as its path's", func(h *Handler) { h.MCP = &MCPConfig{URL: "https://agents.example/ordersmcp"} },
			`does not end with the endpoint's path "/mcp"`},
		{"mcp with a url that ends in a slash its path does not", func(h *Handler) { h.MCP = &MCPConfig{URL: "https://agents.example/orders/mcp/"} },
			`does not end with the endpoint's path "/mcp"`},
		{"mcp with a url with a query", func(h *Handler) { h.MCP = &MCPConfig{URL: "https://agents.example/orders/mcp?tenant=1"} },
			"mcp: url: must have no user information, query or fragment"},
		{"mcp with a url with a password", func(h *Handler) { h.MCP = &MCPConfig{URL: "https://u:secret@agents.example/mcp"} },
			"mcp: url: must have no user information, query or fragment"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := validHandler()
			tc.modify(h)
			err := h.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("Validate: no error; want one containing %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("Validate: %q\ndoes not contain %q", err, tc.want)
			}
		})
	}
}

// TestValidateHidesURLs: a URL may carry credentials, so errors name the
// field, not the value.
func TestValidateHidesURLs(t *testing.T) {
	for _, upstream := range []string{"user:s3cret@api.internal", "http://user:s3cret@[::1"} {
		h := validHandler()
		h.Upstream = upstream
		err := h.Validate()
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Validate with upstream %q: %v; want an error without the credentials", upstream, err)
		}
	}
}
