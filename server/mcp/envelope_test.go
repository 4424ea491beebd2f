package mcp_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/a2atest"
	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/server/servertest"
)

// Two tools whose upstream requests carry the call's arguments as they are:
// which one ran, and with what, shows what the binding read.
const strictSkills = `
upstream:
  url: http://upstream.invalid
skills:
  - {id: order, description: Places an order., request: {method: POST, path: /order, body: args}}
  - {id: slowc, description: Something else., request: {method: POST, path: /slowc, body: args}}
`

// recordingUpstream answers every request in memory, noting its path and
// body.
type recordingUpstream struct {
	mu   sync.Mutex
	seen []upstreamRequest
}

type upstreamRequest struct {
	path string
	body []byte
}

func (u *recordingUpstream) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
	}
	u.mu.Lock()
	u.seen = append(u.seen, upstreamRequest{req.URL.Path, body})
	u.mu.Unlock()
	return servertest.Answering(`{"done":true}`).RoundTrip(req)
}

// take returns the requests seen since the last take.
func (u *recordingUpstream) take() []upstreamRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	seen := u.seen
	u.seen = nil
	return seen
}

// FuzzMCPStrictMembers: what the MCP binding runs for a body it takes is
// what a strict reader reads in it, one that refuses a member named twice
// and looks members up by their exact names, as a parser in front of the
// agent may: the tool, and its arguments as the upstream receives them. A
// body the strict reader refuses runs nothing. And the body with a
// look-alike of a member the binding's readers or the SDK's look up added
// (NAME beside name, "_meta" as "_META") is refused with -32600.
//
// The requests are 2026-07-28 ones, whose plain calls the binding reads
// and runs itself (mcpdirect.go) and whose other calls the SDK does, with
// the readers it uses for sessions too.
func FuzzMCPStrictMembers(f *testing.F) {
	upstream := &recordingUpstream{}
	h := servertest.MemoryHandler(f, "strict.yaml", strictSkills, upstream, func(cfg *server.Config) { withMCP(cfg) })
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	call := func(params string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + params + `}}`
	}
	for _, seed := range []string{
		call(`"name":"order","arguments":{"item":"tea","qty":2,"id":12345678901234567890},` + meta),
		call(`"name":"order","name":"slowc","arguments":{"item":"tea"},` + meta),
		call(`"name":"order","arguments":{"item":"tea"},"arguments":{"item":"gold"},` + meta),
		call(`"name":"order","arguments":{"item":"tea","item":"gold","x":{"a":1,"a":2}},` + meta),
		call(`"name":"order","NAME":"slowc","arguments":{"item":"tea"},` + meta),
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"order",` + meta + `},"params":{"name":"slowc",` + meta + `}}`,
		// with a progress token, which the SDK serves
		call(`"name":"slowc","arguments":{"n":[1,2,{"k":"v"}]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p"}`),
		call(`"name":"order","arguments":{},"requestState":"a2a-task:none","inputResponses":{"arguments":{"action":"accept","content":{"item":"tea"}}},` + meta),
	} {
		f.Add([]byte(seed))
	}
	post := func(body []byte) (int, map[string]any, []upstreamRequest) {
		// The headers say what a reader that keeps the last member reads:
		// without the check, that call would run.
		var lenient struct {
			Method string
			Params struct{ Name string }
		}
		_ = json.Unmarshal(body, &lenient)
		r := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		r.Header.Set("Mcp-Method", lenient.Method)
		r.Header.Set("Mcp-Name", lenient.Params.Name)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var answer map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &answer)
		return w.Code, answer, upstream.take()
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, _, ran := post(body)
		read, strictErr := a2atest.ReadStrict(body)
		if strictErr != nil {
			if len(ran) > 0 {
				t.Fatalf("ran %s with %s for a body a strict reader refuses (%v)", ran[0].path, ran[0].body, strictErr)
			}
			return
		}
		envelope, _ := read.(map[string]any)
		params, _ := envelope["params"].(map[string]any)
		if len(ran) > 0 {
			name, _ := params["name"].(string)
			args, given := params["arguments"]
			if !given || args == nil {
				args = map[string]any{}
			}
			if len(ran) != 1 || envelope["method"] != "tools/call" || ran[0].path != "/"+name ||
				!reflect.DeepEqual(exactly(t, ran[0].body), exactly(t, []byte(servertest.MustJSON(args)))) {
				t.Fatalf("ran %s with %s; the strict reader reads a call of %q with %s", ran[0].path, ran[0].body, name, servertest.MustJSON(args))
			}
		}

		// Each look-alike of a member the readers look up is refused.
		type lookedUp struct {
			obj   map[string]any
			names []string
		}
		objects := []lookedUp{{envelope, []string{"jsonrpc", "id", "method", "params"}},
			{params, []string{"name", "arguments", "_meta", "inputResponses", "requestState"}}}
		if m, ok := params["_meta"].(map[string]any); ok {
			objects = append(objects, lookedUp{m, []string{"io.modelcontextprotocol/protocolVersion",
				"io.modelcontextprotocol/clientCapabilities", "progressToken"}})
		}
		if answers, ok := params["inputResponses"].(map[string]any); ok {
			for _, answer := range answers {
				if m, ok := answer.(map[string]any); ok {
					objects = append(objects, lookedUp{m, []string{"_meta", "action", "content", "role", "roots"}})
				}
			}
		}
		for _, at := range objects {
			for _, name := range at.names {
				value, ok := at.obj[name]
				if !ok {
					continue
				}
				for _, alike := range a2atest.LookAlikes(name) {
					if _, taken := at.obj[alike]; taken {
						continue
					}
					at.obj[alike] = value
					changed := []byte(servertest.MustJSON(read))
					delete(at.obj, alike)
					status, answer, ran := post(changed)
					rpcErr, _ := answer["error"].(map[string]any)
					if status != http.StatusBadRequest || rpcErr["code"] != float64(a2a.CodeInvalidRequest) || len(ran) > 0 {
						t.Fatalf("with %q beside %q: HTTP %d, %v, %d upstream requests; want 400 and -32600, nothing run\n%s",
							alike, name, status, answer, len(ran), changed)
					}
				}
			}
		}
	})
}

// exactly reads JSON as the skill's arguments are read: numbers as
// float64, but integers beyond 2^53 exactly.
func exactly(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := jsonx.UnmarshalKeepingIntegers(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// The check refuses each way a body could be read otherwise by a strict
// reader, at every place the binding's readers look, and nothing else:
// look-alikes in another method's params or in free-form members, integers
// past 2^53 (the arguments keep them exact).
func TestMCPStrictMembersCheck(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, tc := range []struct {
		name, body string
		refused    string // what the error says; "" when the body is taken
	}{
		{"jsonrpc twice", `{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"tools/list"}`, `the request names the member "jsonrpc" twice`},
		{"a look-alike of method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call"}`, `Method differs from "method" only in case`},
		{"a look-alike of _meta", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather","arguments":{"city":"Paris"},` + meta + `,"_META":{}}}`,
			`params._META differs from "_meta" only in case`},
		{"a look-alike of progressToken", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather","_meta":{"progressToken":1,"progresstoken":2}}}`,
			`params._meta.progresstoken differs from "progressToken"`},
		{"a look-alike in an answer to an input request", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather",` +
			`"inputResponses":{"arguments":{"action":"decline","Action":"accept"}},"requestState":"a2a-task:x",` + meta + `}}`,
			`params.inputResponses.arguments.Action differs from "action"`},
		{"a member twice in a batch", `[{"jsonrpc":"2.0","id":1,"method":"ping","id":2}]`, `[0] names the member "id" twice`},
		{"a string that is not UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"weather\",\"arguments\":{\"city\":\"\xff\"}," + meta + "}}",
			"not valid UTF-8"},
		{"a number beyond a float64", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather","arguments":{"city":"Paris","n":1e400},` + meta + `}}`,
			`params.arguments.n holds the number 1e400`},
		{"look-alikes in the arguments, and an integer past 2^53", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather",` +
			`"arguments":{"city":"Paris","City":"Oslo","n":12345678901234567890},` + meta + `}}`, ""},
		{"look-alikes in another method's params", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"c","Cursor":"d"}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, msg := postMCP(t, a, tc.body)
			rpcErr, _ := msg["error"].(map[string]any)
			message, _ := rpcErr["message"].(string)
			switch {
			case tc.refused == "" && rpcErr["code"] == float64(a2a.CodeInvalidRequest):
				t.Errorf("refused: %v", msg)
			case tc.refused != "" && (msg["httpStatus"] != float64(http.StatusBadRequest) || rpcErr["code"] != float64(a2a.CodeInvalidRequest) ||
				!strings.Contains(message, tc.refused)):
				t.Errorf("answer %v; want 400, -32600 saying %q", msg, tc.refused)
			}
		})
	}
}
