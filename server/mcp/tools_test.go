package mcp_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	mcpbinding "github.com/caddy-a2a/caddy-a2a/server/mcp"
	"github.com/caddy-a2a/caddy-a2a/server/servertest"
)

// Files become embedded resources or resource links, sound audio, and
// the one data object the structured content.
func TestMCPFileResults(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/doc":
			w.Header().Set("Content-Type", "application/pdf")
			w.Header().Set("Content-Disposition", `attachment; filename="r.pdf"`)
			io.WriteString(w, "%PDF-1.7")
		case "/sound":
			w.Header().Set("Content-Type", "audio/wav")
			io.WriteString(w, "RIFF")
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"url":"https://files.example/r.pdf","items":[1,2]}`)
		}
	}))
	t.Cleanup(upstream.Close)
	a := servertest.NewAgentWith(t, `upstream: {url: `+upstream.URL+`}
skills:
  - {id: doc, description: d, request: {path: /doc}, response: [{when: "true", state: completed, artifacts: [{name: doc, file: {}}]}]}
  - {id: sound, description: d, request: {path: /sound}, response: [{when: "true", state: completed, artifacts: [{name: s, file: {}}]}]}
  - id: link
    description: d
    request: {path: /link}
    response:
      - when: "true"
        state: completed
        artifacts:
          - {name: link, file: {url: "{response.body.url}", media_type: application/pdf}}
          - {name: items, data: response.body.items}
`, withMCP)
	cs := connectMCP(t, a, mcpStateless, "", nil)

	res := callTool(t, cs, "doc", nil)
	if r, ok := res.Content[0].(*mcp.EmbeddedResource); !ok || r.Resource.MIMEType != "application/pdf" ||
		string(r.Resource.Blob) != "%PDF-1.7" || r.Resource.Meta[mcpbinding.FilenameMeta] != "r.pdf" {
		t.Errorf("doc: %+v", res.Content[0])
	}
	res = callTool(t, cs, "sound", nil)
	if s, ok := res.Content[0].(*mcp.AudioContent); !ok || s.MIMEType != "audio/wav" || string(s.Data) != "RIFF" {
		t.Errorf("sound: %+v", res.Content[0])
	}
	res = callTool(t, cs, "link", nil)
	if l, ok := res.Content[0].(*mcp.ResourceLink); !ok || l.URI != "https://files.example/r.pdf" || l.MIMEType != "application/pdf" {
		t.Errorf("link: %+v", res.Content[0])
	}
	// The data is an array, not an object: no structured content.
	if got := texts(res); res.StructuredContent != nil || len(got) != 1 || got[0] != "[1,2]" {
		t.Errorf("link's data: %#v, texts %q", res.StructuredContent, got)
	}
}

// TestMCPOutputSchema: a skill's declared output schema is its tool's,
// and a call whose answer is not one data object is an error result,
// since its client may require the structured content the tool promises.
func TestMCPOutputSchema(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/list" {
			io.WriteString(w, `[1,2]`)
			return
		}
		io.WriteString(w, `{"id":7}`)
	}))
	t.Cleanup(upstream.Close)
	a := servertest.NewAgentWith(t, `upstream: {url: `+upstream.URL+`}
skills:
  - {id: item, description: d, request: {path: /item}, mcp: {output_schema: {type: object, properties: {id: {type: integer}}}}}
  - {id: list, description: d, request: {path: /list}, mcp: {output_schema: {type: object}}}
`, withMCP)
	for _, version := range mcpVersions {
		t.Run(version, func(t *testing.T) {
			cs := connectMCP(t, a, version, "", nil)
			list, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if schema, _ := json.Marshal(list.Tools[0].OutputSchema); string(schema) != `{"properties":{"id":{"type":"integer"}},"type":"object"}` {
				t.Errorf("item's output schema: %s", schema)
			}
			res := callTool(t, cs, "item", nil)
			if structured, _ := json.Marshal(res.StructuredContent); res.IsError || string(structured) != `{"id":7}` {
				t.Errorf("item: isError %v, structured content %s", res.IsError, structured)
			}
			if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list"}); err != nil || !res.IsError ||
				!strings.Contains(strings.Join(texts(res), " "), "no single data object") {
				t.Errorf("list, whose answer is an array: %v %+v", err, res)
			}
		})
	}
	// The dry run's result (MCPResult) follows the same rule.
	list := a.Skills.ByID("list")
	task := &a2a.Task{ID: "t", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted},
		Artifacts: []a2a.Artifact{{Parts: []a2a.Part{a2a.DataPart([]any{1.0, 2.0})}}}}
	if res := mcpbinding.Result(list, task, nil); !res.IsError {
		t.Errorf("MCPResult of list's array: %+v", res)
	}
}
