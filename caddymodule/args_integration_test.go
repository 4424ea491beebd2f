package caddymodule

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/caddy-a2a/caddy-a2a/cardgen"
)

const rulesSkills = `
skills:
  - id: order
    description: Places an order.
    arguments:
      code: {type: string, required: true, pattern: '^[A-Z]{3}$', min_length: 3, max_length: 3}
      address:
        type: object
        properties: {city: {type: string, required: true}, zip: string}
      tags: {type: array, items: {type: string, max_length: 4}, max_items: 2}
      metadata: {type: [object, string]}
      doc: file
    request: {method: POST, path: /orders, body_format: form, body: args}
`

// Through a real Caddy: the card and the MCP tool publish an argument's
// rules; a value that breaks one (a pattern, a nested required property,
// an item's length, a union's types) is refused over A2A as input-required
// and over MCP as a wrong type is, naming the argument and the rule, with
// no upstream request; a value that keeps them is sent, its object as
// deepObject in the form body, and a file, whose bytes a form cannot send,
// is refused (it recursed without end, taking Caddy down).
func TestIntegrationArgumentRules(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	a := newAgent(t, writeSkills(t, rulesSkills), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(body))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"done":true}`)
	}))
	a.loadWith(a.publicURL(), "Argument rules", "mcp")
	sent := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), bodies...)
	}

	resp, card := a.get(a.publicURL()+".well-known/agent-card.json", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(card, `"pattern":"^[A-Z]{3}$"`) ||
		!strings.Contains(card, `"required":["city"]`) || !strings.Contains(card, `"type":["object","string"]`) ||
		!strings.Contains(card, "code (string, required, 3–3 characters, pattern ^[A-Z]{3}$)") || !strings.Contains(card, cardgen.SkillArgumentsURI) {
		t.Errorf("the card does not publish the rules: HTTP %d %s", resp.StatusCode, card)
	}

	broken := []struct {
		name string
		args string
		why  string
	}{
		{"pattern", `{"code": "abc"}`, `code: it must match the pattern ^[A-Z]{3}$, not "abc"`},
		{"nested required", `{"code": "ABC", "address": {"zip": "75001"}}`, `address: it lacks address.city, which is required`},
		{"an item's length", `{"code": "ABC", "tags": ["ok", "too long"]}`, `tags: it holds tags[1], which must have at most 4 characters, not 8`},
		{"a union's types", `{"code": "ABC", "metadata": 7}`, `metadata: it must be an object or a string, not a number`},
	}
	for _, tc := range broken {
		t.Run("A2A "+tc.name, func(t *testing.T) {
			r := a.call("1.0", sendMessage("order", tc.args))
			if r.Error != nil {
				t.Fatalf("error %+v", r.Error)
			}
			var res struct {
				Task struct {
					Status struct {
						State   string `json:"state"`
						Message struct {
							Parts []struct {
								Text string `json:"text"`
							} `json:"parts"`
						} `json:"message"`
					} `json:"status"`
				} `json:"task"`
			}
			if err := json.Unmarshal(r.Result, &res); err != nil {
				t.Fatal(err)
			}
			st := res.Task.Status
			if st.State != "TASK_STATE_INPUT_REQUIRED" || len(st.Message.Parts) == 0 || !strings.Contains(st.Message.Parts[0].Text, tc.why) {
				t.Errorf("status %+v; want input-required saying %q", st, tc.why)
			}
		})
	}
	for _, version := range mcpVersions {
		t.Run("MCP "+version, func(t *testing.T) {
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(),
				&mcp.StreamableClientTransport{Endpoint: fmt.Sprintf("http://localhost:%d/mcp", a.port), DisableStandaloneSSE: true},
				&mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			list, err := cs.ListTools(t.Context(), nil)
			if err != nil || len(list.Tools) != 1 {
				t.Fatalf("tools %+v, error %v", list, err)
			}
			if schema, _ := json.Marshal(list.Tools[0].InputSchema); !strings.Contains(string(schema), `"maxItems":2`) ||
				!strings.Contains(string(schema), `"pattern":"^[A-Z]{3}$"`) {
				t.Errorf("input schema %s", schema)
			}
			for _, tc := range broken {
				var args map[string]any
				if err := json.Unmarshal([]byte(tc.args), &args); err != nil {
					t.Fatal(err)
				}
				res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "order", Arguments: args})
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				var text string
				if len(res.Content) > 0 {
					text = res.Content[0].(*mcp.TextContent).Text
				}
				if !res.IsError || !strings.Contains(text, tc.why) {
					t.Errorf("%s: isError %v, text %q; want it to say %q", tc.name, res.IsError, text, tc.why)
				}
			}
		})
	}
	if got := sent(); len(got) != 0 {
		t.Fatalf("the upstream got %q for values that break a rule", got)
	}

	r := a.call("1.0", sendMessage("order", `{"code": "ABC", "address": {"city": "Paris"}, "tags": ["a", "b"], "metadata": {"k": "v"}}`))
	if r.Error != nil || decodeTask10(t, r.Result).Status.State != "TASK_STATE_COMPLETED" {
		t.Fatalf("a call that keeps the rules: %s %+v", r.Result, r.Error)
	}
	if got := sent(); len(got) != 1 || got[0] != "address[city]=Paris&code=ABC&metadata[k]=v&tags=a&tags=b" {
		t.Errorf("the upstream got %q", got)
	}

	r = a.call("1.0", sendMessage("order", `{"code": "ABC", "doc": {"bytes": "aGk=", "name": "a.txt"}}`))
	if r.Error != nil {
		t.Fatalf("a file in a form body: %+v", r.Error)
	}
	if st := decodeTask10(t, r.Result).Status; st.State != "TASK_STATE_REJECTED" || !strings.Contains(string(r.Result), "the form field doc[bytes] holds a list") {
		t.Errorf("a file in a form body: %s", r.Result)
	}
	if got := sent(); len(got) != 1 {
		t.Errorf("the upstream got %q", got)
	}
}
