package mcp_test

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/server"
	mcpbinding "github.com/caddy-a2a/caddy-a2a/server/mcp"
	"github.com/caddy-a2a/caddy-a2a/server/servertest"
)

// The MCP protocol versions the binding serves: stateless, and with
// sessions.
const (
	mcpStateless = "2026-07-28"
	mcpStateful  = "2025-11-25"
)

var mcpVersions = []string{mcpStateless, mcpStateful}

// withKey adds an API key to every request of a client.
type withKey struct {
	key  string
	next http.RoundTripper
}

func (k withKey) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-API-Key", k.key)
	return k.next.RoundTrip(r)
}

// connectMCP connects the SDK's client to the agent's MCP endpoint at
// version, sending key ("" none) with every request.
func connectMCP(t *testing.T, a *servertest.Agent, version, key string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	httpClient := a.HTTP
	if key != "" {
		httpClient = &http.Client{Transport: withKey{key, a.HTTP.Transport}}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: a.URL + "/mcp", HTTPClient: httpClient},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connecting at %s: %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("connected at %s, want %s", got, version)
	}
	// 2026-07-28 is served without sessions, the versions before with.
	if stateful := cs.ID() != ""; stateful != (version < mcpStateless) {
		t.Fatalf("at %s, the session id is %q", version, cs.ID())
	}
	return cs
}

// connectSession opens a 2025-11-25 session without the client's own
// standalone stream, for a test that opens that stream itself
// (openStream) and watches it.
func connectSession(t *testing.T, a *servertest.Agent) (*mcp.ClientSession, error) {
	t.Helper()
	return mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: a.URL + "/mcp", HTTPClient: a.HTTP, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: mcpStateful})
}

// openStream opens cs's standalone stream (GET), which must be answered
// 200.
func openStream(t *testing.T, ctx context.Context, a *servertest.Agent, cs *mcp.ClientSession) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.URL+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", mcpStateful)
	req.Header.Set("Mcp-Session-Id", cs.ID())
	resp, err := a.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("GET %s/mcp: %s", a.URL, resp.Status)
	}
	return resp
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	return res
}

// texts are a result's text contents.
func texts(res *mcp.CallToolResult) []string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return out
}

func TestMCPListTools(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	// Older versions go as 2025-11-25 does, with sessions.
	for _, version := range append(mcpVersions, "2025-06-18", "2025-03-26") {
		t.Run(version, func(t *testing.T) {
			cs := connectMCP(t, a, version, "", nil)
			list, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			tools := map[string]*mcp.Tool{}
			for _, tool := range list.Tools {
				tools[tool.Name] = tool
			}
			for _, want := range []string{"weather", "avatar", "place_order", "fail", "echo", "count", "report"} {
				if tools[want] == nil {
					t.Errorf("tools/list lacks %s: %v", want, slices.Collect(func(yield func(string) bool) {
						for n := range tools {
							yield(n)
						}
					}))
				}
			}
			weather := tools["weather"]
			if weather == nil {
				return
			}
			schema, _ := json.Marshal(weather.InputSchema)
			if !strings.Contains(string(schema), `"required":["city"]`) || weather.Title != "Weather" ||
				!strings.HasPrefix(weather.Description, "Current weather") {
				t.Errorf("weather = %+v, schema %s", weather, schema)
			}
			if ann := weather.Annotations; ann == nil || !ann.ReadOnlyHint || !ann.IdempotentHint || ann.DestructiveHint == nil || *ann.DestructiveHint {
				t.Errorf("weather (GET) annotations = %+v", ann)
			}
			if ann := tools["place_order"].Annotations; ann == nil || ann.ReadOnlyHint {
				t.Errorf("place_order (POST) annotations = %+v", ann)
			}
			if schema, _ := json.Marshal(tools["fail"].InputSchema); string(schema) != `{"type":"object"}` {
				t.Errorf("a skill without arguments has input schema %s", schema)
			}
		})
	}
}

func TestMCPCallTool(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	for _, version := range mcpVersions {
		t.Run(version, func(t *testing.T) {
			cs := connectMCP(t, a, version, "", nil)

			t.Run("json", func(t *testing.T) {
				res := callTool(t, cs, "weather", map[string]any{"city": "Paris"})
				got := texts(res)
				if res.IsError || len(got) != 2 || !strings.HasPrefix(got[0], "Paris: ") || !strings.Contains(got[1], `"city":"Paris"`) {
					t.Fatalf("result = %+v, texts %q", res, got)
				}
				if m, ok := res.StructuredContent.(map[string]any); !ok || m["city"] != "Paris" {
					t.Errorf("structured content = %#v", res.StructuredContent)
				}
				// The call is a task the same caller reads over A2A.
				taskID, _ := res.Meta[mcpbinding.TaskIDMeta].(string)
				ans := a.Call("1.0", "GetTask", map[string]any{"id": taskID})
				if ans.Error != nil || servertest.StateOf(ans.Result) != "TASK_STATE_COMPLETED" {
					t.Errorf("GetTask %q = %+v", taskID, ans)
				}
			})
			t.Run("text", func(t *testing.T) {
				res := callTool(t, cs, "echo", map[string]any{"tags": []string{"a", "b"}})
				if got := texts(res); res.IsError || len(got) == 0 || !strings.Contains(strings.Join(got, " "), "/echo") {
					t.Errorf("result = %+v, texts %q", res, got)
				}
			})
			t.Run("file", func(t *testing.T) {
				res := callTool(t, cs, "avatar", map[string]any{"id": 1})
				var image *mcp.ImageContent
				for _, c := range res.Content {
					if ic, ok := c.(*mcp.ImageContent); ok {
						image = ic
					}
				}
				if res.IsError || image == nil || image.MIMEType != "image/png" || len(image.Data) == 0 {
					t.Errorf("result = %+v", res)
				}
			})
			t.Run("upstream failure", func(t *testing.T) {
				res := callTool(t, cs, "fail", nil)
				if got := texts(res); !res.IsError || len(got) != 1 || !strings.Contains(got[0], "boom") {
					t.Errorf("result = %+v, texts %q", res, got)
				}
			})
			t.Run("arguments not an object", func(t *testing.T) {
				res := callTool(t, cs, "weather", []int{1})
				if got := texts(res); !res.IsError || len(got) != 1 || !strings.Contains(got[0], "object") {
					t.Errorf("result = %+v, texts %q", res, got)
				}
			})
			t.Run("bad argument", func(t *testing.T) {
				res := callTool(t, cs, "user", map[string]any{"id": "one"})
				if got := texts(res); !res.IsError || len(got) == 0 || !strings.Contains(got[0], "id") {
					t.Errorf("result = %+v, texts %q", res, got)
				}
			})
			t.Run("unknown tool", func(t *testing.T) {
				if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "nope"}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
					t.Errorf("error = %v", err)
				}
			})
		})
	}
}

func TestMCPAuth(t *testing.T) {
	a := servertest.NewAuthAgent(t, nil, withMCP)
	t.Run("unauthenticated", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, a.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := a.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || len(resp.Header.Values("WWW-Authenticate")) == 0 {
			t.Errorf("HTTP %d, challenges %q", resp.StatusCode, resp.Header.Values("WWW-Authenticate"))
		}
	})
	for _, version := range mcpVersions {
		t.Run(version, func(t *testing.T) {
			alice := connectMCP(t, a.Agent, version, servertest.AliceKey, nil)
			bob := connectMCP(t, a.Agent, version, servertest.BobKey, nil)
			names := func(cs *mcp.ClientSession) []string {
				list, err := cs.ListTools(t.Context(), nil)
				if err != nil {
					t.Fatal(err)
				}
				if version == mcpStateless && list.CacheScope != "private" {
					t.Errorf("a list filtered for its caller has cacheScope %q, want private", list.CacheScope)
				}
				var out []string
				for _, tool := range list.Tools {
					out = append(out, tool.Name)
				}
				return out
			}
			if got := names(alice); slices.Contains(got, "admin") || !slices.Contains(got, "secret") {
				t.Errorf("alice's tools: %v", got)
			}
			if got := names(bob); !slices.Contains(got, "admin") {
				t.Errorf("bob's tools: %v", got)
			}
			if _, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "admin"}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
				t.Errorf("alice calling admin: %v", err)
			}
			res := callTool(t, bob, "admin", nil)
			taskID, _ := res.Meta[mcpbinding.TaskIDMeta].(string)
			if res.IsError || taskID == "" {
				t.Fatalf("bob calling admin: %+v", res)
			}
			if ans := a.As(servertest.BobKey, "GetTask", map[string]any{"id": taskID}); ans.Error != nil {
				t.Errorf("bob's GetTask of his call's task: %s", ans.Raw)
			}
			if ans := a.As(servertest.AliceKey, "GetTask", map[string]any{"id": taskID}); ans.Error == nil || ans.Error.Code != a2a.CodeTaskNotFound {
				t.Errorf("alice's GetTask of bob's task: %s", ans.Raw)
			}
		})
	}
	t.Run("a session is its opener's", func(t *testing.T) {
		alice := connectMCP(t, a.Agent, mcpStateful, servertest.AliceKey, nil)
		for key, want := range map[string]int{servertest.AliceKey: http.StatusOK, servertest.BobKey: http.StatusForbidden} {
			req, _ := http.NewRequest(http.MethodPost, a.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", mcpStateful)
			req.Header.Set("Mcp-Session-Id", alice.ID())
			req.Header.Set("X-API-Key", key)
			resp, err := a.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("alice's session with the key of %s: HTTP %d, want %d", key[:3], resp.StatusCode, want)
			}
		}
	})
}

func TestMCPTransportLimits(t *testing.T) {
	a := servertest.NewAgent(t, func(cfg *server.Config) {
		withMCPConfig(cfg, mcpbinding.Config{Path: "/tools"})
		cfg.MaxRequestBytes = 1024
	})
	post := func(path, body string, header ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, a.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", mcpStateless)
		req.Header.Set("Mcp-Method", "tools/list")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		req.Host = cmp.Or(req.Header.Get("Host"), req.Host)
		resp, err := a.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	if resp := post("/tools", list); resp.StatusCode != http.StatusOK {
		t.Errorf("tools/list: HTTP %d", resp.StatusCode)
	}
	if resp := post("/tools", list[:len(list)-1]+`,"pad":"`+strings.Repeat("x", 1024)+`"}`); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a body past the cap: HTTP %d", resp.StatusCode)
	}
	if resp := post("/tools", list, "Origin", "https://elsewhere.example", "Sec-Fetch-Site", "cross-site"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-origin request: HTTP %d", resp.StatusCode)
	}
	// DNS rebinding: a name that is not loopback's, on a loopback connection.
	if resp := post("/tools", list, "Host", "agent.example"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a request for another host on loopback: HTTP %d", resp.StatusCode)
	}
	// Another path is JSON-RPC's, as before.
	if resp := post("/mcp", list); resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("/mcp: HTTP %d, %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

func TestMCPConfigErrors(t *testing.T) {
	cfg := servertest.NewAgent(t, nil).Config
	longID := strings.Repeat("a", 129)
	long, err := mapping.Parse("t.yaml", []byte("upstream: {url: http://up}\nskills:\n  - {id: "+longID+", description: d, request: {path: /x}}\n"),
		mapping.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mcp    mcpbinding.Config
		skills *mapping.Skills
		want   string
	}{
		{"relative path", mcpbinding.Config{Path: "mcp"}, nil, "must start with /"},
		{"card path", mcpbinding.Config{Path: server.CardPath}, nil, "card path"},
		{"negative timeout", mcpbinding.Config{SessionTimeout: -1}, nil, "negative"},
		{"negative cap", mcpbinding.Config{MaxSessions: -1}, nil, "negative"},
		{"negative cap per caller", mcpbinding.Config{MaxSessionsPerCaller: -1}, nil, "max_sessions_per_caller: -1 is negative"},
		{"skill id too long", mcpbinding.Config{}, long, `skill "` + longID + `": its id is not an MCP tool name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			withMCPConfig(&c, tc.mcp)
			if tc.skills != nil {
				c.Skills = tc.skills
			}
			_, err := server.New(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// An MCP call is observed by its binding and its MCP method, and with no
// A2A version: MCP speaks none.
func TestMCPObserved(t *testing.T) {
	obs := make(servertest.Observations, 64)
	a := servertest.NewAgent(t, func(cfg *server.Config) { withMCP(cfg); cfg.Observer = obs })
	cs := connectMCP(t, a, mcpStateless, "", nil)
	obs.Expect(t, "start MCP mcp/other ", "end mcp/other  0 span=mcp/other") // server/discover
	callTool(t, cs, "weather", map[string]any{"city": "Paris"})
	obs.Expect(t, "start MCP tools/call ", "annotate weather true", "detach span=tools/call",
		"ended weather completed", "run weather true", "end tools/call  0 span=tools/call")
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	obs.Expect(t, "start MCP tools/list ", "end tools/list  0 span=tools/list")

	// A JSON-RPC error ends the call with its code, in a 400 answer
	// (2026-07-28) as in a 200 one (a session's).
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "nope"}); err == nil {
		t.Fatal("an unknown tool was called")
	}
	obs.Expect(t, "start MCP tools/call ", "end tools/call  -32602 span=tools/call")

	// An answer the SDK refuses ends the call with an error code.
	req, _ := http.NewRequest(http.MethodPost, a.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "text/plain")
	if resp, err := a.HTTP.Do(req); err != nil || resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}
	obs.Expect(t, "start MCP tools/list ", "end tools/list  -32600 span=tools/list")

	session, err := connectSession(t, a)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	if _, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: "nope"}); err == nil {
		t.Fatal("an unknown tool was called in a session")
	}
	// Last, since a session's requests (its handshake, and the stream it
	// opens for the server's requests) start and end in no set order
	// around the call's.
	for got := ""; !strings.HasPrefix(got, "end tools/call "); {
		select {
		case got = <-obs:
			if strings.HasPrefix(got, "end tools/call ") && got != "end tools/call  -32602 span=tools/call" {
				t.Errorf("observed %q; want the call in a session ended with -32602", got)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the call in a session was not observed")
		}
	}
}

// A refusal is observed with its own code, as the other bindings' are.
func TestMCPRefusalObserved(t *testing.T) {
	obs := make(servertest.Observations, 64)
	a := servertest.NewAuthAgent(t, nil, func(cfg *server.Config) { withMCP(cfg); cfg.Observer = obs })
	req, _ := http.NewRequest(http.MethodPost, a.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	obs.Expect(t, `auth  "no credentials"`, "end unknown  -31401 span=")
}
