package mcp_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/server"
	mcpbinding "github.com/caddy-a2a/caddy-a2a/server/mcp"
	"github.com/caddy-a2a/caddy-a2a/server/servertest"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// artifactURIs matches the URI of an artifact, its ids escaped.
var artifactURIs = regexp.MustCompile(`^a2a://tasks/([A-Za-z0-9._~%-]+)/artifacts/([A-Za-z0-9._~%-]+)$`)

// The binary a file skill's upstream answers: not UTF-8, so it can only
// be a blob.
const pdfBytes = "%PDF-1.7\n\xff\xfe\x00"

// fileAgent serves skills whose upstream answers files, to callers with
// servertest's API keys (AliceKey, BobKey). Its task and artifact ids
// hold what a URI must escape. upstreamCalls counts the upstream's calls.
func fileAgent(t *testing.T) (a *servertest.Agent, upstreamCalls *atomic.Int64) {
	t.Helper()
	upstreamCalls = new(atomic.Int64)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upstreamCalls.Add(1)
		switch r.URL.Path {
		case "/doc":
			w.Header().Set("Content-Type", "application/pdf")
			w.Header().Set("Content-Disposition", `attachment; filename="r.pdf"`)
			io.WriteString(w, pdfBytes)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"url":"https://files.example/r.pdf","items":{"n":2}}`)
		}
	}))
	t.Cleanup(upstream.Close)
	auth, err := authn.New(authn.Config{Schemes: map[string]*authn.Scheme{"key": {Type: authn.TypeAPIKey, In: "header",
		Name: "X-API-Key", Keys: []authn.APIKey{{Key: servertest.AliceKey, Subject: "alice"}, {Key: servertest.BobKey, Subject: "bob"}}}}},
		authn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(auth.Close)
	var ids atomic.Int64
	manager := tasks.NewManager(tasks.Options{NewID: func(tasks.IDKind) string { return fmt.Sprintf("id/é x:+%%,%d", ids.Add(1)) }})
	t.Cleanup(manager.Close)
	a = servertest.NewAgentWith(t, `upstream: {url: `+upstream.URL+`}
skills:
  - {id: doc, description: d, request: {path: /doc}}
  - id: mixed
    description: d
    request: {path: /mixed}
    response:
      - when: "true"
        state: completed
        artifacts:
          - {name: link, file: {url: "{response.body.url}", media_type: application/pdf}}
          - {name: items, data: response.body.items}
          - {name: note, text: "two items"}
`, func(cfg *server.Config) { withMCP(cfg); cfg.Auth = auth; cfg.Tasks = manager })
	return a, upstreamCalls
}

// TestMCPArtifactResources: a file a call answers is embedded under its
// artifact's resource URI, which its owner reads again, at either
// version, without running the skill again; to anyone else, and for any
// other URI, the resource is not found.
func TestMCPArtifactResources(t *testing.T) {
	a, upstreamCalls := fileAgent(t)
	for _, version := range mcpVersions {
		t.Run(version, func(t *testing.T) {
			alice := connectMCP(t, a, version, servertest.AliceKey, nil)
			bob := connectMCP(t, a, version, servertest.BobKey, nil)

			caps := alice.InitializeResult().Capabilities
			if caps.Resources == nil || caps.Resources.Subscribe || caps.Resources.ListChanged {
				t.Errorf("resources capability: %+v, want declared, without subscribe or listChanged", caps.Resources)
			}
			templates, err := alice.ListResourceTemplates(t.Context(), nil)
			if err != nil || len(templates.ResourceTemplates) != 1 {
				t.Fatalf("resources/templates/list: %v %+v", err, templates)
			}
			if tmpl := templates.ResourceTemplates[0]; tmpl.URITemplate != "a2a://tasks/{taskId}/artifacts/{artifactId}" ||
				tmpl.Name == "" || tmpl.Title == "" || tmpl.Description == "" || tmpl.MIMEType != "" {
				t.Errorf("the template: %+v", tmpl)
			}
			if list, err := alice.ListResources(t.Context(), nil); err != nil || len(list.Resources) != 0 {
				t.Errorf("resources/list: %v %+v, want an empty list", err, list)
			}

			res := callTool(t, alice, "doc", nil)
			embedded, ok := res.Content[0].(*mcp.EmbeddedResource)
			if !ok || string(embedded.Resource.Blob) != pdfBytes || embedded.Resource.MIMEType != "application/pdf" ||
				embedded.Resource.Meta[mcpbinding.FilenameMeta] != "r.pdf" {
				t.Fatalf("doc's result: %+v", res.Content[0])
			}
			// The URI names the task, its ids escaped to unreserved
			// characters, as RFC 6570 expands them.
			uri := embedded.Resource.URI
			segments := artifactURIs.FindStringSubmatch(uri)
			if taskID, err := url.PathUnescape(segments[min(len(segments)-1, 1)]); len(segments) != 3 || err != nil ||
				taskID != res.Meta[mcpbinding.TaskIDMeta] {
				t.Errorf("doc's file is embedded as %s, which names no artifact of task %v", uri, res.Meta[mcpbinding.TaskIDMeta])
			}
			calls := upstreamCalls.Load()
			read, err := alice.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
			if err != nil || len(read.Contents) != 1 {
				t.Fatalf("resources/read %s by its owner: %v %+v", uri, err, read)
			}
			if c := read.Contents[0]; c.URI != uri || c.MIMEType != "application/pdf" || string(c.Blob) != pdfBytes ||
				c.Text != "" || c.Meta[mcpbinding.FilenameMeta] != "r.pdf" {
				t.Errorf("the file read again: %+v", c)
			}

			if version == mcpStateless {
				// On the wire: the blob in base64, for the caller's cache only.
				_, msg := postMCP(t, a, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":`+quote(uri)+`,`+withoutTasks+`}}`,
					"Mcp-Name", uri, "X-API-Key", servertest.AliceKey)
				res := resultOf(t, msg)
				contents, _ := res["contents"].([]any)
				if first, _ := contents[0].(map[string]any); res["cacheScope"] != "private" || len(contents) != 1 ||
					first["blob"] != base64.StdEncoding.EncodeToString([]byte(pdfBytes)) {
					t.Errorf("resources/read at %s: %v", version, msg)
				}
			}

			artifacts := readMixed(t, a, alice)
			want := map[string][2]string{"link": {"text/uri-list", "https://files.example/r.pdf"},
				"items": {"application/json", `{"n":2}`}, "note": {"text/plain", "two items"}}
			for name, uri := range artifacts {
				read, err := alice.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
				if err != nil || len(read.Contents) != 1 {
					t.Errorf("resources/read of %s (%s): %v %+v", name, uri, err, read)
					continue
				}
				if c := read.Contents[0]; c.URI != uri || c.MIMEType != want[name][0] || c.Text != want[name][1] || c.Blob != nil {
					t.Errorf("%s read: %+v, want %s %q", name, c, want[name][0], want[name][1])
				}
			}
			if got := upstreamCalls.Load() - calls; got != 1 { // mixed's call, no read's
				t.Errorf("the upstream was called %d times, want once (reads run no skill)", got)
			}

			for _, c := range []struct {
				what, uri string
				cs        *mcp.ClientSession
			}{
				{"another caller's", uri, bob},
				{"an unknown artifact", uri[:strings.LastIndex(uri, "/")+1] + "nope", alice},
				{"an unknown task", "a2a://tasks/nope/artifacts/nope", alice},
				{"a segment too many", strings.Replace(uri, "/artifacts/", "/artifacts/x/", 1), alice},
				{"a bad escape", "a2a://tasks/%zz/artifacts/x", alice},
				{"no artifact", "a2a://tasks/x/artifacts/", alice},
				{"a URI of no template", "test://nonexistent-resource-for-conformance-testing", alice},
			} {
				_, err := c.cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: c.uri})
				if rpcErr, ok := errors.AsType[*jsonrpc.Error](err); !ok || rpcErr.Code != jsonrpc.CodeInvalidParams ||
					!strings.Contains(string(rpcErr.Data), `"uri"`) {
					t.Errorf("%s (%s): %v, want the resource not found (%d)", c.what, c.uri, err, jsonrpc.CodeInvalidParams)
				}
			}
		})
	}
}

// readMixed calls mixed as alice, and returns the URIs of its task's
// artifacts by name, from the task as A2A's GetTask answers it.
func readMixed(t *testing.T, a *servertest.Agent, alice *mcp.ClientSession) map[string]string {
	t.Helper()
	taskID, _ := callTool(t, alice, "mixed", nil).Meta[mcpbinding.TaskIDMeta].(string)
	req, err := http.NewRequest(http.MethodPost, a.URL+"/", strings.NewReader(servertest.RPCBody("GetTask", map[string]any{"id": taskID})))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("X-API-Key", servertest.AliceKey)
	resp, err := a.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Result struct {
			Artifacts []struct{ ArtifactID, Name string }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || len(answer.Result.Artifacts) != 3 {
		t.Fatalf("GetTask %s: %v %+v", taskID, err, answer)
	}
	uris := map[string]string{}
	for _, art := range answer.Result.Artifacts {
		uris[art.Name] = mcpbinding.ArtifactURI(taskID, art.ArtifactID)
	}
	return uris
}

// A file that is in no artifact of a stored task (a skill's message, or
// a result shown without a store, as the dry run's) is embedded under a
// URI that only names it: there is no resource to read it from.
func TestMCPFileOutsideArtifacts(t *testing.T) {
	file := a2a.Part{Kind: a2a.PartRaw, Raw: []byte(pdfBytes), MediaType: "application/pdf", Filename: "r.pdf"}
	for what, res := range map[string]*mcp.CallToolResult{
		"a message":              mcpbinding.Result(nil, nil, &a2a.Message{Parts: []a2a.Part{file}}),
		"an artifact without id": mcpbinding.Result(nil, &a2a.Task{ID: "t", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}, Artifacts: []a2a.Artifact{{Parts: []a2a.Part{file}}}}, nil),
		"an artifact of no task": mcpbinding.Result(nil, &a2a.Task{Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}, Artifacts: []a2a.Artifact{{ArtifactID: "a", Parts: []a2a.Part{file}}}}, nil),
	} {
		if r, ok := res.Content[0].(*mcp.EmbeddedResource); !ok || r.Resource.URI != "a2a:file/r.pdf" {
			t.Errorf("%s: %+v", what, res.Content[0])
		}
	}
}
