package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// TaskIDMeta is the key, in a tools/call result's _meta, of the A2A
// task the call ran as: GetTask and ListTasks show it to the same caller.
const TaskIDMeta = "a2a/taskId"

// tools are the skills as MCP tools, defined once at provision.
type tools struct {
	defs   []*sdk.Tool
	skills map[string]*mapping.Skill
	// restricted: a skill is not for every caller the agent admits, so
	// tools/list is filtered per caller; without one it costs nothing.
	restricted bool
}

// The longest MCP tool name.
const maxToolName = 128

// build defines a tool per skill (tool).
func (t *tools) build(skills *mapping.Skills) error {
	t.skills = make(map[string]*mapping.Skill)
	for _, sk := range skills.All() {
		def, err := tool(sk)
		if err != nil {
			return err
		}
		t.defs = append(t.defs, def)
		t.skills[sk.ID] = sk
		t.restricted = t.restricted || sk.Extended || len(sk.SecurityRequirements) > 0
	}
	return nil
}

// tool is the tool a skill is on the MCP endpoint: its id as the name,
// its argument schema as the input schema, its hints as the annotations.
func tool(sk *mapping.Skill) (*sdk.Tool, error) {
	if len(sk.ID) > maxToolName || strings.ContainsFunc(sk.ID, notToolNameRune) {
		return nil, fmt.Errorf("mcp: skill %q: its id is not an MCP tool name (at most %d letters, digits, '_', '-' and '.')",
			sk.ID, maxToolName)
	}
	schema := sk.ArgumentSchema()
	if schema == nil {
		schema = map[string]any{"type": "object"}
	}
	hints := sk.ToolHints()
	destructive := hints.Destructive
	def := &sdk.Tool{Name: sk.ID, Title: hints.Title, Description: sk.Description, InputSchema: schema,
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: hints.ReadOnly, IdempotentHint: hints.Idempotent,
			DestructiveHint: &destructive, OpenWorldHint: hints.OpenWorld}}
	if hints.OutputSchema != nil {
		def.OutputSchema = hints.OutputSchema
	}
	return def, nil
}

// Result is the tools/call result of a run of sk that ended in task, or
// that answered msg (a skill that returns a message), for a client that
// can answer a question for missing arguments (elicitation): what the
// binding answers, and the dry run shows of the task its run ended in. A
// call whose task asks for input is answered so by a client that can
// elicit (askInput).
func Result(sk *mapping.Skill, task *a2a.Task, msg *a2a.Message) *sdk.CallToolResult {
	switch {
	case task == nil:
		return toolResult("", msg, nil)
	case task.Status.State == a2a.TaskStateInputRequired:
		return inputRequest(task, true)
	}
	return endedResult(sk, task)
}

func notToolNameRune(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.')
}

// addTo adds the tools to s, their calls served by b.
func (t *tools) addTo(s *sdk.Server, b *binding) {
	for _, def := range t.defs {
		s.AddTool(def, b.callTool)
	}
	s.AddReceivingMiddleware(b.recordErrors)
	if t.restricted {
		s.AddReceivingMiddleware(b.filterTools)
	}
}

// filterTools leaves out of tools/list the tools the caller may not call.
func (b *binding) filterTools(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		list, ok := res.(*sdk.ListToolsResult)
		if err != nil || !ok {
			return res, err
		}
		var caller *authn.Identity
		if in := inboundOf(req.GetExtra()); in != nil {
			caller = in.caller
		}
		kept := *list
		// The list is this caller's: no cache shared with others may
		// keep it (2026-07-28's cacheScope).
		kept.CacheScope = "private"
		kept.Tools = make([]*sdk.Tool, 0, len(list.Tools))
		for _, tool := range list.Tools {
			if b.h.Permits(caller, b.tools.skills[tool.Name]) {
				kept.Tools = append(kept.Tools, tool)
			}
		}
		return &kept, nil
	}
}

// endedResult is taskResult for a run of sk, whose tool promises
// structured content when it declares an output schema: an answer that is
// no single data object is then an error, as a client may require the
// content.
func endedResult(sk *mapping.Skill, task *a2a.Task) *sdk.CallToolResult {
	res := taskResult(task)
	if !res.IsError && res.StructuredContent == nil && sk != nil && sk.ToolHints().OutputSchema != nil {
		return toolError(task.ID, fmt.Sprintf("Skill %q answered no single data object, which its output schema describes.", sk.ID))
	}
	return res
}

// stoppedText is tasks.StoppedText for an MCP client, which calls the
// tool again where an A2A client sends a new message.
const stoppedText = "The agent stopped while this call ran, so whether its work was done is unknown; calling the tool again runs it again."

// taskResult is the result of a call whose task ended (or stopped
// otherwise than for input): its status message and artifacts when it
// completed, else an error result with the status text.
func taskResult(task *a2a.Task) *sdk.CallToolResult {
	if task.Status.State != a2a.TaskStateCompleted {
		text := messageText(task.Status.Message)
		switch text {
		case "":
			text = "the task ended " + task.Status.State.String()
		case tasks.StoppedText:
			text = stoppedText
		}
		return toolError(task.ID, text)
	}
	return toolResult(task.ID, task.Status.Message, task.Artifacts)
}

// toolError is an error result saying text.
func toolError(taskID, text string) *sdk.CallToolResult {
	res := &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: text}}}
	if taskID != "" {
		res.Meta = sdk.Meta{TaskIDMeta: taskID}
	}
	return res
}

// toolResult is a result made of a message's parts, then the artifacts':
// text as text, data as its JSON text (and the one data object as the
// structured content), files as images, audio, embedded resources or
// resource links.
func toolResult(taskID string, msg *a2a.Message, artifacts []a2a.Artifact) *sdk.CallToolResult {
	res := &sdk.CallToolResult{Content: []sdk.Content{}}
	if taskID != "" {
		res.Meta = sdk.Meta{TaskIDMeta: taskID}
	}
	data := 0
	add := func(p *a2a.Part, artifactID string) {
		if c := partContent(p, taskID, artifactID); c != nil {
			res.Content = append(res.Content, c)
		}
		if p.Kind == a2a.PartData {
			if data++; data == 1 && isObject(p.Data) {
				res.StructuredContent = p.Data
			} else {
				res.StructuredContent = nil // not one data object
			}
		}
	}
	if msg != nil {
		for i := range msg.Parts {
			add(&msg.Parts[i], "")
		}
	}
	for i := range artifacts {
		for j := range artifacts[i].Parts {
			add(&artifacts[i].Parts[j], artifacts[i].ArtifactID)
		}
	}
	return res
}

// partContent is one part as MCP content; nil for a part that has none. A
// file with bytes that is no image or audio is embedded under the URI of
// its artifact, artifactID of task taskID, which resources/read reads
// again (resources.go); a file of a message, which is kept in no
// artifact, under a URI that only names it.
func partContent(p *a2a.Part, taskID, artifactID string) sdk.Content {
	switch p.Kind {
	case a2a.PartText:
		return &sdk.TextContent{Text: p.Text}
	case a2a.PartData:
		if text, ok := dataText(p); ok {
			return &sdk.TextContent{Text: text}
		}
	case a2a.PartURL:
		name := p.Filename
		if name == "" {
			name = p.URL
		}
		return &sdk.ResourceLink{URI: p.URL, Name: name, MIMEType: p.MediaType}
	case a2a.PartRaw:
		mediaType, _, _ := mime.ParseMediaType(p.MediaType)
		switch {
		case strings.HasPrefix(mediaType, "image/"):
			return &sdk.ImageContent{Data: p.Raw, MIMEType: p.MediaType}
		case strings.HasPrefix(mediaType, "audio/"):
			return &sdk.AudioContent{Data: p.Raw, MIMEType: p.MediaType}
		}
		uri := "a2a:file"
		switch {
		case taskID != "" && artifactID != "":
			uri = artifactURI(taskID, artifactID)
		case p.Filename != "":
			uri += "/" + p.Filename
		}
		return &sdk.EmbeddedResource{Resource: fileResource(uri, p)}
	}
	return nil
}

// dataText is a data part's value as JSON text; ok is false for a value
// that has none.
func dataText(p *a2a.Part) (text string, ok bool) {
	out, err := jsonx.AppendValue(nil, p.Data)
	return string(out), err == nil
}

// isObject reports whether a data part's value is a JSON object.
func isObject(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		return true
	case json.RawMessage:
		return firstByte(v) == '{'
	}
	return false
}

// messageText is the text of a message's text parts.
func messageText(msg *a2a.Message) string {
	if msg == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range msg.Parts {
		if p.Kind == a2a.PartText {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// artifactText says what an artifact update brings: its text, or its
// data as JSON.
func artifactText(art *a2a.Artifact) string {
	var b strings.Builder
	for i := range art.Parts {
		if c, ok := partContent(&art.Parts[i], "", "").(*sdk.TextContent); ok {
			b.WriteString(c.Text)
		}
	}
	if b.Len() == 0 {
		return "artifact " + art.Name
	}
	return b.String()
}
