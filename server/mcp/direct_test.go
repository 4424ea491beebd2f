package mcp_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/server"
	mcpbinding "github.com/caddy-a2a/caddy-a2a/server/mcp"
	"github.com/caddy-a2a/caddy-a2a/server/servertest"
)

// postMCP sends body to the agent's MCP endpoint as a 2026-07-28 client
// does, with header pairs added (an empty value removes the header), and
// returns the answer's Content-Type and its JSON-RPC message: the body,
// or the SSE event that answers the request.
func postMCP(t *testing.T, a *servertest.Agent, body string, header ...string) (string, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, a.URL+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	_ = json.Unmarshal([]byte(body), &env)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", mcpStateless)
	req.Header.Set("Mcp-Method", env.Method)
	req.Header.Set("Mcp-Name", env.Params.Name)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	if host := req.Header.Get("Host"); host != "" {
		req.Host = host
	}
	resp, err := a.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	contentType := resp.Header.Get("Content-Type")
	if resp.StatusCode != http.StatusOK {
		// A JSON-RPC error keeps its body beside the status.
		msg := map[string]any{}
		if strings.HasPrefix(contentType, "application/json") {
			_ = json.Unmarshal(raw, &msg)
		}
		msg["httpStatus"] = float64(resp.StatusCode)
		return contentType, msg
	}
	if strings.HasPrefix(contentType, "text/event-stream") {
		for line := range strings.Lines(string(raw)) {
			if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok && strings.Contains(data, `"id"`) {
				raw = []byte(data)
			}
		}
	}
	var msg map[string]any
	if err := json.Unmarshal(raw, &msg); err != nil {
		t.Fatalf("the answer is not JSON-RPC: %v\n%s", err, raw)
	}
	return contentType, msg
}

// withoutTaskIDs is msg with the task ids it holds (each call makes its
// own task) replaced by TASK, and the round its request state names by
// ROUND.
func withoutTaskIDs(msg map[string]any) map[string]any {
	raw, _ := json.Marshal(msg)
	var ids, rounds []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if id, ok := v[mcpbinding.TaskIDMeta].(string); ok {
				ids = append(ids, id)
			}
			if state, ok := v["requestState"].(string); ok {
				_, round, _ := strings.Cut(state, "/")
				rounds = append(rounds, round)
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(msg)
	s := string(raw)
	for _, round := range rounds {
		s = strings.ReplaceAll(s, round, "ROUND")
	}
	for _, id := range ids {
		s = strings.ReplaceAll(s, id, "TASK")
	}
	var out map[string]any
	_ = json.Unmarshal([]byte(s), &out)
	return out
}

// TestMCPDirectAnswersAsTheSDK: a plain stateless tools/call, which the
// binding answers itself, gets the answer the SDK gives the same call, in
// JSON rather than SSE; what is not plain goes to the SDK.
func TestMCPDirectAnswersAsTheSDK(t *testing.T) {
	direct := servertest.NewAgent(t, withMCP)
	bySDK := servertest.NewAgent(t, withMCPBySDK)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	asking := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	call := func(id, name, args, meta string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `,` + meta + `}}`
	}
	for _, tc := range []struct {
		name, body string
		header     []string
		// direct: the binding answers it itself.
		direct bool
	}{
		{"data", call(`1`, "weather", `{"city":"Paris"}`, meta), nil, true},
		{"string id", call(`"a-b"`, "weather", `{"city":"Tokyo"}`, meta), nil, true},
		{"message", call(`2`, "echo", `{"tags":["a"]}`, meta), nil, true},
		{"upstream failure", call(`3`, "fail", `{}`, meta), nil, true},
		{"no arguments", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fail",` + meta + `}}`, nil, true},
		{"arguments not an object", call(`5`, "weather", `[1]`, meta), nil, true},
		{"missing argument, elicitation declared", call(`6`, "place_order", `{"item":"tea"}`, asking), nil, true},
		{"missing argument, no elicitation", call(`7`, "place_order", `{"item":"tea"}`, meta), nil, true},
		{"wrong argument type", call(`8`, "place_order", `{"item":"tea","quantity":"many"}`, asking), nil, true},
		{"unknown tool", call(`9`, "nope", `{}`, meta), nil, false},
		{"progress token", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"weather","arguments":{"city":"Oslo"},` +
			`"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, nil, false},
		{"no capabilities", call(`11`, "weather", `{"city":"Paris"}`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`), nil, false},
		{"version in _meta differs", call(`12`, "weather", `{"city":"Paris"}`,
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}`), nil, false},
		{"Mcp-Name differs", call(`13`, "weather", `{"city":"Paris"}`, meta), []string{"Mcp-Name", "fail"}, false},
		{"no Mcp-Method", call(`14`, "weather", `{"city":"Paris"}`, meta), []string{"Mcp-Method", ""}, false},
		{"Accept without SSE", call(`15`, "weather", `{"city":"Paris"}`, meta), []string{"Accept", "application/json"}, false},
		{"null id", call(`null`, "weather", `{"city":"Paris"}`, meta), nil, false},
		{"batch", `[` + call(`16`, "weather", `{"city":"Paris"}`, meta) + `]`, nil, false},
	} {
		compareWithSDK(t, direct, bySDK, tc.name, tc.body, tc.header, tc.direct)
	}

	// A tool the caller may not use is one it does not know: answered as an
	// unknown tool is, status included.
	authDirect := servertest.NewAuthAgent(t, nil, withMCP)
	authSDK := servertest.NewAuthAgent(t, nil, withMCPBySDK)
	forbidden := call(`17`, "admin", `{}`, meta)
	compareWithSDK(t, authDirect.Agent, authSDK.Agent, "forbidden tool", forbidden, []string{"X-API-Key", servertest.AliceKey}, true)
	if _, msg := postMCP(t, authDirect.Agent, forbidden, "X-API-Key", servertest.AliceKey); msg["httpStatus"] != float64(http.StatusBadRequest) {
		t.Errorf("a forbidden tool: %v, want HTTP 400", msg)
	}
}

// compareWithSDK posts body to direct and to bySDK, and fails unless both
// answer alike (status and message) and direct answered it itself as
// wantDirect says.
func compareWithSDK(t *testing.T, direct, bySDK *servertest.Agent, name, body string, header []string, wantDirect bool) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		gotType, got := postMCP(t, direct, body, header...)
		wantType, want := postMCP(t, bySDK, body, header...)
		if got, want := withoutTaskIDs(got), withoutTaskIDs(want); !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Errorf("answered\n%s\nwhere the SDK answers\n%s", g, w)
		}
		if wantDirect && want["httpStatus"] != nil {
			return // an error is JSON from either: the type cannot tell which answered
		}
		if isDirect := gotType == "application/json" && wantType != gotType; isDirect != wantDirect {
			t.Errorf("answered as %q (the SDK as %q): direct = %v, want %v", gotType, wantType, isDirect, wantDirect)
		}
	})
}

// TestMCPHostOnLoopback: a request that comes to a loopback address
// naming another host is refused, also a tools/call the binding answers
// itself, unless the operator says a proxy forwards such requests.
func TestMCPHostOnLoopback(t *testing.T) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	bodies := map[string]string{
		"tools/list": `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`,
		"tools/call": `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"weather","arguments":{"city":"Paris"},` + meta + `}}`,
	}
	for _, anyHost := range []bool{false, true} {
		a := servertest.NewAgent(t, func(cfg *server.Config) { withMCPConfig(cfg, mcpbinding.Config{AnyHostOnLoopback: anyHost}) })
		for method, body := range bodies {
			for _, host := range []string{"localhost", "127.0.0.1:8080", "[::1]:80", "agent.example", "agent.example:443"} {
				_, msg := postMCP(t, a, body, "Host", host)
				refused := msg["httpStatus"] == float64(http.StatusForbidden)
				want := !anyHost && strings.HasPrefix(host, "agent.")
				if refused != want {
					t.Errorf("any_host_on_loopback %v, %s for Host %s: refused = %v, want %v (%v)", anyHost, method, host, refused, want, msg)
				}
			}
		}
	}
}

// A body nested deeper than a2a.MaxJSONDepth is refused before any parser
// reads it, at every protocol version: both the binding's and the SDK's
// parsers recurse once per level, and a few megabytes of "[" would
// overflow the stack, which no recover catches.
func TestMCPDeepNesting(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	call := func(arguments string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather",` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},` +
			`"arguments":` + arguments + `}}`
	}
	nested := func(n int) string { return strings.Repeat(`{"a":`, n) + `{}` + strings.Repeat(`}`, n) }
	for _, version := range []string{mcpStateless, mcpStateful} {
		for _, body := range []string{call(strings.Repeat("[", server.DefaultMaxRequestBytes-300)), call(nested(a2a.MaxJSONDepth))} {
			_, msg := postMCP(t, a, body, "Mcp-Protocol-Version", version)
			e, _ := msg["error"].(map[string]any)
			if msg["httpStatus"] != float64(http.StatusBadRequest) || e["code"] != float64(-32600) ||
				!strings.Contains(fmt.Sprint(e["message"]), fmt.Sprintf("nests deeper than %d levels", a2a.MaxJSONDepth)) {
				t.Errorf("%s, %d bytes: %v; want a 400 with -32600 naming the depth", version, len(body), msg)
			}
		}
	}
	// Within the bound, the call goes on.
	_, msg := postMCP(t, a, call(`{"city":"Paris","x":`+nested(a2a.MaxJSONDepth-5)+`}`))
	if res, _ := msg["result"].(map[string]any); res == nil || res["isError"] == true {
		t.Errorf("arguments within the bound: %v", msg)
	}
}
