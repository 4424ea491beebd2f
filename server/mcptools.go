package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// MCPTaskIDMeta is the key, in a tools/call result's _meta, of the A2A
// task the call ran as: GetTask and ListTasks show it to the same caller.
const MCPTaskIDMeta = "a2a/taskId"

// mcpTools are the skills as MCP tools, defined once at provision.
type mcpTools struct {
	defs   []*mcp.Tool
	skills map[string]*mapping.Skill
	// restricted: a skill is not for every caller the agent admits, so
	// tools/list is filtered per caller; without one it costs nothing.
	restricted bool
	// structured are the skills whose tools declare an output schema,
	// and so promise structured content.
	structured map[*mapping.Skill]bool
}

// The longest MCP tool name.
const maxToolName = 128

// build defines a tool per skill (MCPTool).
func (t *mcpTools) build(h *Handler) error {
	t.skills, t.structured = make(map[string]*mapping.Skill), make(map[*mapping.Skill]bool)
	for _, sk := range h.skills.All() {
		def, err := MCPTool(sk)
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		t.defs = append(t.defs, def)
		t.skills[sk.ID] = sk
		if def.OutputSchema != nil {
			t.structured[sk] = true
		}
		t.restricted = t.restricted || sk.Extended || len(sk.SecurityRequirements) > 0
	}
	return nil
}

// MCPTool is the tool a skill is on the MCP endpoint: its id as the name,
// its argument schema as the input schema, its hints as the annotations.
func MCPTool(sk *mapping.Skill) (*mcp.Tool, error) {
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
	tool := &mcp.Tool{Name: sk.ID, Title: hints.Title, Description: sk.Description, InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: hints.ReadOnly, IdempotentHint: hints.Idempotent,
			DestructiveHint: &destructive, OpenWorldHint: hints.OpenWorld}}
	if hints.OutputSchema != nil {
		tool.OutputSchema = hints.OutputSchema
	}
	return tool, nil
}

// MCPResult is the tools/call result of a run of sk that ended in task, or
// that answered msg (a skill that returns a message), for a client that
// can answer a question for missing arguments (elicitation).
func MCPResult(sk *mapping.Skill, task *a2a.Task, msg *a2a.Message) *mcp.CallToolResult {
	switch {
	case task == nil:
		return toolResult("", msg, nil)
	case task.Status.State == a2a.TaskStateInputRequired:
		return inputRequest(task)
	}
	return endedResult(sk, task, sk != nil && sk.ToolHints().OutputSchema != nil)
}

func notToolNameRune(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.')
}

// addTo adds the tools to s, their calls served by b.
func (t *mcpTools) addTo(s *mcp.Server, b *mcpBinding) {
	for _, def := range t.defs {
		s.AddTool(def, b.callTool)
	}
	s.AddReceivingMiddleware(b.recordErrors)
	if t.restricted {
		s.AddReceivingMiddleware(b.filterTools)
	}
}

// recordErrors notes on the request the JSON-RPC error a method answers,
// the first one, for the observer of its call.
func (b *mcpBinding) recordErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) && rpcErr.Code != 0 {
			if in := b.request(req.GetExtra()); in != nil {
				in.rpcError.CompareAndSwap(0, rpcErr.Code)
			}
		}
		return res, err
	}
}

// filterTools leaves out of tools/list the tools the caller may not call.
func (b *mcpBinding) filterTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		list, ok := res.(*mcp.ListToolsResult)
		if err != nil || !ok {
			return res, err
		}
		var caller *authn.Identity
		if in := b.request(req.GetExtra()); in != nil {
			caller = in.caller
		}
		kept := *list
		kept.Tools = make([]*mcp.Tool, 0, len(list.Tools))
		for _, tool := range list.Tools {
			if b.h.authorize(caller, b.tools.skills[tool.Name]) == nil {
				kept.Tools = append(kept.Tools, tool)
			}
		}
		return &kept, nil
	}
}

// callTool runs the skill named by a tools/call as a blocking
// SendMessage runs it: the arguments as one data part of a new message
// for the skill, from the caller, in the task store. A call that answers
// an input request goes on with the task it asked for.
func (b *mcpBinding) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	in := b.request(req.Extra)
	if in == nil {
		return nil, errors.New("the call's HTTP request has ended")
	}
	return b.runCall(ctx, in, req)
}

// runCall runs req, a tools/call carried by in.
func (b *mcpBinding) runCall(ctx context.Context, in *mcpRequest, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if req.Params.RequestState != "" {
		return b.resume(ctx, in, req)
	}
	args := req.Params.Arguments
	switch first := firstByte(args); first {
	case 0, 'n': // none, or null
		args = json.RawMessage("{}")
	case '{':
	default:
		return toolError("", "the arguments must be a JSON object"), nil
	}
	msg := a2a.Message{MessageID: b.h.tasks.NewID(tasks.MessageID), Role: a2a.RoleUser,
		Parts: []a2a.Part{a2a.DataPart(args)}, Metadata: map[string]any{mapping.MetadataSkillKey: req.Params.Name}}
	return b.send(ctx, in, req, &msg)
}

// firstByte is the first byte of a JSON value that is not white space, 0
// for none.
func firstByte(v []byte) byte {
	for _, c := range v {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c
		}
	}
	return 0
}

// send runs a message of a tools/call to the end of its skill's run
// (completed, failed, or asking for input) and answers the call. The
// call's end (the client cancels it or goes away) cancels the task.
func (b *mcpBinding) send(ctx context.Context, in *mcpRequest, req *mcp.CallToolRequest, msg *a2a.Message) (*mcp.CallToolResult, error) {
	h := b.h
	token := req.Params.GetProgressToken()
	adm, err := h.admit(in.r, a2a.V10, &a2a.SendMessageRequest{Message: *msg}, in.caller, token != nil)
	if err != nil {
		return nil, b.refused(req.Params.Name, err)
	}
	if adm.reply != nil {
		return toolResult("", &a2a.Message{Parts: adm.reply.Parts}, nil), nil
	}
	run := adm.run.run
	owner := in.caller.Owner()
	cancel := func() { _, _ = h.tasks.Cancel(owner, run.Task.ID) }
	stopCall := context.AfterFunc(ctx, cancel)
	defer stopCall()
	if ctx != in.r.Context() { // the SDK's session context
		stopRequest := context.AfterFunc(in.r.Context(), cancel)
		defer stopRequest()
	}
	if sub := run.Subscription; sub != nil {
		done := make(chan struct{})
		go func() {
			defer close(done)
			b.notifyProgress(ctx, req.Session, token, sub)
		}()
		defer func() {
			// The events published until now are sent before the result.
			sub.Close()
			<-done
		}()
	}
	task, err := h.execute(adm.run)
	if err != nil {
		return nil, b.refused(req.Params.Name, err)
	}
	if task == nil { // the task moved on (was canceled) while the skill ran
		if task, err = h.tasks.Get(owner, run.Task.ID, nil); err != nil {
			return nil, b.refused(req.Params.Name, err)
		}
	}
	if task.Status.State == a2a.TaskStateInputRequired {
		return b.askInput(ctx, in, req, task, owner, msg.TaskID == "" && invalidArguments(adm.run.skill, msg)), nil
	}
	sk := adm.run.skill
	return endedResult(sk, task, b.tools.structured[sk]), nil
}

// endedResult is taskResult for a run of sk, whose tool promises
// structured content when structured (it declares an output schema): an
// answer that is no single data object is then an error, as a client may
// require the content.
func endedResult(sk *mapping.Skill, task *a2a.Task, structured bool) *mcp.CallToolResult {
	res := taskResult(task)
	if structured && !res.IsError && res.StructuredContent == nil {
		return toolError(task.ID, fmt.Sprintf("Skill %q answered no single data object, which its output schema describes.", sk.ID))
	}
	return res
}

// invalidArguments reports whether a call's arguments hold a value its
// skill cannot use (a wrong type, a value out of its enum): an error the
// caller is to correct, not input for its user to give.
func invalidArguments(sk *mapping.Skill, msg *a2a.Message) bool {
	if sk == nil {
		return false
	}
	_, problems := sk.GatherArguments(mapping.Call{Message: msg})
	return slices.ContainsFunc(problems, func(p mapping.ArgumentProblem) bool { return p.Why != "" })
}

// refused is the protocol error of a call the engine refused: a tool
// the caller may not use is one it does not know, as tools/list hides it.
func (b *mcpBinding) refused(tool string, err error) error {
	if _, ok := errors.AsType[*authn.Failure](err); ok {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", tool)}
	}
	if e, ok := errors.AsType[*a2a.Error](err); ok {
		return mcpError(e)
	}
	b.h.log.Warn("an MCP tool call failed", zap.String("tool", tool), zap.Error(err))
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the call could not be run"}
}

// The codes of the engine's refusals that ask the caller to come back
// later, or to free what it holds, rather than report a fault (-32603,
// which A2A answers them with, telling them apart by their reason): codes
// a server defines, in the range JSON-RPC 2.0 keeps for them, clear of
// those MCP and its SDKs use (-32000 to -32002, -32020 to -32022, -32042).
const (
	// MCPCodeResourceExhausted: a quota of the task store is full
	// (RESOURCE_EXHAUSTED), the caller's own or everyone's; the call did
	// not run.
	MCPCodeResourceExhausted = -32029
	// MCPCodeUnavailable: the task store cannot be reached, or the agent
	// is shutting down (UNAVAILABLE). The error's data says whether the
	// skill ran (metadata skillRan), and names its task when there is one.
	MCPCodeUnavailable = -32053
)

// mcpError is the engine's protocol error e as an MCP client reads it:
// MCP errors carry no typed details, so its message says all that A2A's
// message and details say (the parameter, the text that names the limit
// and what to do), and its data holds the reason and metadata for a
// program to read; a refusal that asks to come back later has a code of
// its own.
func mcpError(e *a2a.Error) *jsonrpc.Error {
	code, msg := int64(e.Code), e.Message
	switch e.Reason {
	case "RESOURCE_EXHAUSTED":
		code, msg = MCPCodeResourceExhausted, "Resource exhausted"
	case "UNAVAILABLE":
		code, msg = MCPCodeUnavailable, "Unavailable"
	}
	details := []string{e.Field, e.Description}
	if advice := mcpUnavailableText(e); advice != "" {
		details = []string{advice}
	}
	for _, detail := range details {
		if detail != "" {
			msg += ": " + detail
		}
	}
	out := &jsonrpc.Error{Code: code, Message: msg}
	if e.Reason != "" || len(e.Metadata) > 0 {
		out.Data, _ = json.Marshal(struct {
			Reason   string            `json:"reason,omitempty"`
			Metadata map[string]string `json:"metadata,omitempty"`
		}{e.Reason, e.Metadata}) // strings only: cannot fail
	}
	return out
}

// mcpUnavailableText is what an MCP client is told of an UNAVAILABLE
// refusal that says whether the skill ran: A2A's text advises sending the
// same message again, which finds the task, where a call made again is a
// new call, and runs the skill again. "" for another error.
func mcpUnavailableText(e *a2a.Error) string {
	taskID := e.Metadata["taskId"]
	switch ran := e.Metadata[tasks.SkillRan]; {
	case e.Reason != "UNAVAILABLE":
		return ""
	case ran == "true":
		return fmt.Sprintf("the task store failed while the outcome of task %s was being stored, so it is not known yet. "+
			"The skill ran: calling the tool again runs it again. Read the task over A2A instead (GetTask %s) once its outcome is stored",
			taskID, taskID)
	case ran == "false" && taskID != "":
		return fmt.Sprintf("the task store failed while task %s was being created; its skill has not run, so calling the tool again is safe", taskID)
	case ran == "false":
		return "the agent is shutting down, and the skill has not run: call the tool again (another replica, or this agent once restarted, takes it)"
	}
	return ""
}

// mcpStoppedText is tasks.StoppedText for an MCP client, which calls the
// tool again where an A2A client sends a new message.
const mcpStoppedText = "The agent stopped while this call ran, so whether its work was done is unknown; calling the tool again runs it again."

// taskResult is the result of a call whose task ended (or stopped
// otherwise than for input): its status message and artifacts when it
// completed, else an error result with the status text.
func taskResult(task *a2a.Task) *mcp.CallToolResult {
	if task.Status.State != a2a.TaskStateCompleted {
		text := messageText(task.Status.Message)
		switch text {
		case "":
			text = "the task ended " + task.Status.State.String()
		case tasks.StoppedText:
			text = mcpStoppedText
		}
		return toolError(task.ID, text)
	}
	return toolResult(task.ID, task.Status.Message, task.Artifacts)
}

// toolError is an error result saying text.
func toolError(taskID, text string) *mcp.CallToolResult {
	res := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	if taskID != "" {
		res.Meta = mcp.Meta{MCPTaskIDMeta: taskID}
	}
	return res
}

// toolResult is a result made of a message's parts, then the artifacts':
// text as text, data as its JSON text (and the one data object as the
// structured content), files as images, audio, embedded resources or
// resource links.
func toolResult(taskID string, msg *a2a.Message, artifacts []a2a.Artifact) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Content: []mcp.Content{}}
	if taskID != "" {
		res.Meta = mcp.Meta{MCPTaskIDMeta: taskID}
	}
	data := 0
	add := func(p *a2a.Part) {
		if c := partContent(p); c != nil {
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
			add(&msg.Parts[i])
		}
	}
	for i := range artifacts {
		for j := range artifacts[i].Parts {
			add(&artifacts[i].Parts[j])
		}
	}
	return res
}

// partContent is one part as MCP content; nil for a part that has none.
func partContent(p *a2a.Part) mcp.Content {
	switch p.Kind {
	case a2a.PartText:
		return &mcp.TextContent{Text: p.Text}
	case a2a.PartData:
		text, err := a2a.AppendJSON(nil, p.Data)
		if err != nil {
			return nil
		}
		return &mcp.TextContent{Text: string(text)}
	case a2a.PartURL:
		name := p.Filename
		if name == "" {
			name = p.URL
		}
		return &mcp.ResourceLink{URI: p.URL, Name: name, MIMEType: p.MediaType}
	case a2a.PartRaw:
		mediaType, _, _ := mime.ParseMediaType(p.MediaType)
		switch {
		case strings.HasPrefix(mediaType, "image/"):
			return &mcp.ImageContent{Data: p.Raw, MIMEType: p.MediaType}
		case strings.HasPrefix(mediaType, "audio/"):
			return &mcp.AudioContent{Data: p.Raw, MIMEType: p.MediaType}
		}
		uri := "a2a:file"
		if p.Filename != "" {
			uri += "/" + p.Filename
		}
		return &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: uri, MIMEType: p.MediaType, Blob: p.Raw}}
	}
	return nil
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

// mcpInputID names, among a result's input requests, the one that asks
// for a skill's arguments.
const mcpInputID = "arguments"

// mcpStatePrefix begins the request state of a call that asks for input:
// the task the answer goes to follows. maxRequestState bounds what a
// retry may send back.
const (
	mcpStatePrefix  = "a2a-task:"
	maxRequestState = 256
)

// askInput answers a call whose task asks for input: an elicitation in
// form mode with the schema of what is missing and the task in the
// request state; the client answers by calling again (2026-07-28), or the
// SDK asks it and calls again for it (before). A call whose arguments are
// invalid, or whose client cannot answer, gets an error result that says
// what is missing or wrong, and its task is canceled: the caller calls
// again, and its abandoned tasks do not hold its share of the store.
func (b *mcpBinding) askInput(ctx context.Context, in *mcpRequest, req *mcp.CallToolRequest, task *a2a.Task, owner string, invalid bool) *mcp.CallToolResult {
	if caps := req.ClientCapabilities(); invalid || caps == nil || caps.Elicitation == nil {
		if _, err := b.h.tasks.Cancel(owner, task.ID); err != nil {
			b.h.logLateUpdate(task.ID, err)
		}
		return toolError(task.ID, askText(task.Status.Message, false))
	}
	if w, ok := ctx.Value(inputWaitKey{}).(*inputWait); ok {
		w.arm(b, in, task.ID, owner)
	}
	return inputRequest(task)
}

// inputWaitKey holds, in a call's context, its *inputWait.
type inputWaitKey struct{}

// inputWait bounds a call on a session (protocol 2025-11-25 and before)
// while it waits for the answer to its input request, which the SDK asks
// the client itself (elicitation/create) and awaits with no deadline: the
// call ends after the task's own wait for input (tasks.MaxInputWait), as
// the server shuts down, or as its HTTP request ends, and its task is then
// canceled, so that a client that never answers holds neither a request
// nor a live task. boundInputWaits makes one per call.
type inputWait struct {
	cancel        context.CancelFunc // the call's
	taskID, owner string             // the task waiting, while it waits
	stops         []func() bool      // what ends the wait early
}

func (w *inputWait) arm(b *mcpBinding, in *mcpRequest, taskID, owner string) {
	w.disarm()
	w.taskID, w.owner = taskID, owner
	w.stops = []func() bool{time.AfterFunc(b.h.tasks.MaxInputWait(), w.cancel).Stop,
		context.AfterFunc(b.shutdown, w.cancel), context.AfterFunc(in.r.Context(), w.cancel)}
}

// disarm notes that the wait is over: the answer came (resume), or the
// call ended.
func (w *inputWait) disarm() {
	for _, stop := range w.stops {
		stop()
	}
	w.taskID, w.stops = "", nil
}

// asksForClient reports whether the SDK asks the client itself for the
// input a call's result requests: on a session negotiated at a version
// before 2026-07-28, as the SDK decides.
func asksForClient(req mcp.Request) bool {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok {
		return false
	}
	params := ss.InitializeParams()
	return params != nil && params.ProtocolVersion < mcpStatelessVersion
}

// boundInputWaits is the sessions' server's middleware that gives each
// tools/call its inputWait, and cancels the task of a call that ended
// while it waited for input.
func (b *mcpBinding) boundInputWaits(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" || !asksForClient(req) {
			return next(ctx, method, req)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		w := &inputWait{cancel: cancel}
		res, err := next(context.WithValue(ctx, inputWaitKey{}, w), method, req)
		if taskID, owner := w.taskID, w.owner; taskID != "" {
			w.disarm()
			if _, cancelErr := b.h.tasks.Cancel(owner, taskID); cancelErr != nil {
				b.h.logLateUpdate(taskID, cancelErr)
			}
			if err == nil { // it asked again, which the SDK passes on as an empty result
				res = toolError(taskID, "The skill asked for more input after the answer; the task is canceled: call the tool again with every argument.")
			}
		}
		return res, err
	}
}

// inputRequest is the result that asks for the input task waits for: the
// skill's missing arguments, by their schema, or a reply in words.
func inputRequest(task *a2a.Task) *mcp.CallToolResult {
	schema := mapping.AskedSchema(task.Status.Message)
	if schema == nil {
		schema = freeReplySchema
	}
	return &mcp.CallToolResult{Meta: mcp.Meta{MCPTaskIDMeta: task.ID},
		InputRequests: mcp.InputRequestMap{mcpInputID: &mcp.ElicitParams{Mode: "form", Message: askText(task.Status.Message, true),
			RequestedSchema: schema}},
		RequestState: mcpStatePrefix + task.ID}
}

// askText is what a call whose task asks for input (msg) tells an MCP
// client: what is missing or wrong, in the skill's words, then what the
// client can do, where A2A's text says to reply on the task, which an MCP
// client cannot: answer the input request (elicit), or else call the tool
// again with the arguments.
func askText(msg *a2a.Message, elicit bool) string {
	what, names := mapping.AskedInput(msg)
	switch {
	case elicit:
		return what + " Answer this request to go on, or decline it to cancel the call."
	case len(names) > 0:
		return what + " Call the tool again with " + mapping.ArgumentsExample(names) + " in its arguments."
	}
	return what + " This client cannot answer (it declared no elicitation capability): the call ends here."
}

// freeReplySchema asks for a reply in words, when the skill names no
// arguments it needs: the reply goes to the task as a text part.
var freeReplySchema = map[string]any{"type": "object", "required": []string{freeReply},
	"properties": map[string]any{freeReply: map[string]any{"type": "string"}}}

const freeReply = "reply"

// resume goes on with a call that answers an input request: the answer
// becomes the next message of the task (its owner's only), a refusal
// cancels the task.
func (b *mcpBinding) resume(ctx context.Context, in *mcpRequest, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	// On a session the wait for the answer ends only once the answer is
	// taken: on an error before, the call's task is canceled, since the SDK
	// will not ask again (boundInputWaits).
	answered := func() {
		if w, ok := ctx.Value(inputWaitKey{}).(*inputWait); ok {
			w.disarm()
		}
	}
	state := req.Params.RequestState
	taskID, ok := strings.CutPrefix(state, mcpStatePrefix)
	if !ok || len(state) > maxRequestState {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState is not one this server gave"}
	}
	answer, _ := req.Params.InputResponses[mcpInputID].(*mcp.ElicitResult)
	if answer == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "inputResponses has no answer to " + mcpInputID}
	}
	owner := in.caller.Owner()
	noHistory := int32(0)
	task, err := b.h.tasks.Get(owner, taskID, &noHistory)
	if err != nil {
		return nil, b.refused(req.Params.Name, err)
	}
	if skillOf(task) != req.Params.Name {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState names a task of another tool"}
	}
	switch answer.Action {
	case "accept":
	case "decline", "cancel":
		answered()
		if _, err := b.h.tasks.Cancel(owner, taskID); err != nil {
			return nil, b.refused(req.Params.Name, err)
		}
		return toolError(taskID, "The arguments were not given ("+answer.Action+"): the task is canceled."), nil
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("the answer's action %q is none of accept, decline and cancel", answer.Action)}
	}
	part := a2a.DataPart(answer.Content)
	if reply, ok := answer.Content[freeReply].(string); ok && len(answer.Content) == 1 && mapping.AskedSchema(task.Status.Message) == nil {
		part = a2a.TextPart(reply)
	}
	msg := a2a.Message{MessageID: b.h.tasks.NewID(tasks.MessageID), TaskID: taskID, ContextID: task.ContextID,
		Role: a2a.RoleUser, Parts: []a2a.Part{part}}
	answered()
	return b.send(ctx, in, req, &msg)
}

// notifyProgress sends a progress notification for each status message
// and artifact update of a call's task, until its events end.
func (b *mcpBinding) notifyProgress(ctx context.Context, session *mcp.ServerSession, token any, sub *tasks.Subscription) {
	n := 0
	for ev := range sub.Events() {
		var text string
		switch {
		case ev.StatusUpdate != nil:
			text = messageText(ev.StatusUpdate.Status.Message)
			if text == "" {
				continue
			}
		case ev.ArtifactUpdate != nil:
			text = artifactText(&ev.ArtifactUpdate.Artifact)
		default:
			continue
		}
		n++
		if err := session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
			Progress: float64(n), Message: text}); err != nil {
			b.h.log.Debug("an MCP progress notification was not sent")
		}
	}
}

// artifactText says what an artifact update brings: its text, or its
// data as JSON.
func artifactText(art *a2a.Artifact) string {
	var b strings.Builder
	for i := range art.Parts {
		if c, ok := partContent(&art.Parts[i]).(*mcp.TextContent); ok {
			b.WriteString(c.Text)
		}
	}
	if b.Len() == 0 {
		return "artifact " + art.Name
	}
	return b.String()
}
