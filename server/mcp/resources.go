package mcp

// Resources: what a REST gateway really has to read is what its calls
// answered, so each artifact of a task is a resource of one template,
// a2a://tasks/{taskId}/artifacts/{artifactId}, that only the task's owner
// reads, for as long as the store keeps the task. A tool result embeds a
// file under that URI (tools.go), so that a client can read it again after
// dropping its bytes. Reading runs no skill; resources/list answers an
// empty list, as no resource exists but through a task.

import (
	"cmp"
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// The template of a task's artifacts (RFC 6570), and the parts of its
// URIs around the ids.
const (
	artifactURIPrefix = "a2a://tasks/"
	artifactsSegment  = "/artifacts/"
	artifactTemplate  = artifactURIPrefix + "{taskId}" + artifactsSegment + "{artifactId}"
)

// FilenameMeta is the key, in a file's resource contents' _meta, of the
// file's name, which its URI (the artifact's) does not carry.
const FilenameMeta = "a2a/filename"

// artifactResources is the template's definition. It declares no media
// type: an artifact's parts have each their own.
var artifactResources = &sdk.ResourceTemplate{Name: "task-artifact", Title: "Task artifact", URITemplate: artifactTemplate,
	Description: "An artifact of one of your tasks (the task a tool call ran as, named in its result's _meta as a2a/taskId): " +
		"its files as blobs with their media types, its text, its data as JSON. Only the task's owner reads it, " +
		"while the agent keeps the task."}

// addResources serves the template on s, its reads by b.
func (b *binding) addResources(s *sdk.Server) {
	s.AddResourceTemplate(artifactResources, b.readArtifact)
}

// artifactURI is the URI of a task's artifact: each id percent-encoded
// but for RFC 3986's unreserved characters, as RFC 6570 expands a simple
// variable, so that no id can add a segment or fail to match the template.
func artifactURI(taskID, artifactID string) string {
	return artifactURIPrefix + escapeUnreserved(taskID) + artifactsSegment + escapeUnreserved(artifactID)
}

// escapeUnreserved percent-encodes every byte of s but the unreserved
// characters. (QueryEscape leaves only those, and writes a space as +.)
func escapeUnreserved(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }

// parseArtifactURI is the task and artifact a URI of the template names;
// ok is false for one that names none.
func parseArtifactURI(uri string) (taskID, artifactID string, ok bool) {
	rest, ok := strings.CutPrefix(uri, artifactURIPrefix)
	if !ok {
		return "", "", false
	}
	task, artifact, ok := strings.Cut(rest, artifactsSegment)
	if !ok || task == "" || artifact == "" || strings.Contains(task, "/") || strings.Contains(artifact, "/") {
		return "", "", false
	}
	taskID, err := url.PathUnescape(task)
	if err != nil {
		return "", "", false
	}
	artifactID, err = url.PathUnescape(artifact)
	return taskID, artifactID, err == nil
}

// readArtifact answers a resources/read of an artifact of the caller's
// task: any other URI, an unknown task or artifact, and another caller's
// task are not found alike, so that a caller learns nothing of others'
// tasks.
func (b *binding) readArtifact(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	in := inboundOf(req.Extra)
	if in == nil {
		return nil, errors.New("mcp: resources/read: its HTTP request was not carried to the handler")
	}
	uri := req.Params.URI
	taskID, artifactID, ok := parseArtifactURI(uri)
	if !ok {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	noHistory := int32(0)
	task, err := b.tasks.Get(in.caller.Owner(), taskID, &noHistory)
	switch {
	case isCode(err, a2a.CodeTaskNotFound):
		return nil, sdk.ResourceNotFoundError(uri)
	case err != nil:
		return nil, b.refused("", err)
	}
	i := slices.IndexFunc(task.Artifacts, func(art a2a.Artifact) bool { return art.ArtifactID == artifactID })
	if i < 0 {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	parts := task.Artifacts[i].Parts
	res := &sdk.ReadResourceResult{Contents: make([]*sdk.ResourceContents, 0, len(parts)),
		// The caller's own: no cache shared with others may keep it.
		Cacheable: sdk.Cacheable{CacheScope: "private"}}
	for j := range parts {
		if c := partResource(uri, &parts[j]); c != nil {
			res.Contents = append(res.Contents, c)
		}
	}
	return res, nil
}

// partResource is one part of an artifact as the contents of its
// resource uri: a file's bytes as a blob with its media type, text as
// text, data as JSON text, and a file by URL as its URL (text/uri-list);
// nil for a part that has none.
func partResource(uri string, p *a2a.Part) *sdk.ResourceContents {
	switch p.Kind {
	case a2a.PartRaw:
		return fileResource(uri, p)
	case a2a.PartText:
		return &sdk.ResourceContents{URI: uri, MIMEType: cmp.Or(p.MediaType, "text/plain"), Text: p.Text}
	case a2a.PartData:
		if text, ok := dataText(p); ok {
			return &sdk.ResourceContents{URI: uri, MIMEType: "application/json", Text: text}
		}
	case a2a.PartURL:
		return &sdk.ResourceContents{URI: uri, MIMEType: "text/uri-list", Text: p.URL}
	}
	return nil
}

// fileResource is a file with bytes as the contents of resource uri.
func fileResource(uri string, p *a2a.Part) *sdk.ResourceContents {
	c := &sdk.ResourceContents{URI: uri, MIMEType: p.MediaType, Blob: p.Raw}
	if p.Filename != "" {
		c.Meta = sdk.Meta{FilenameMeta: p.Filename}
	}
	return c
}
