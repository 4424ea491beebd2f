package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// recordErrors notes on the request the JSON-RPC error a method answers,
// the first one, for the observer of its call.
func (b *binding) recordErrors(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) && rpcErr.Code != 0 {
			if in := inboundOf(req.GetExtra()); in != nil {
				in.fail(rpcErr.Code)
			}
		}
		return res, err
	}
}

// callTool runs the skill named by a tools/call as a blocking
// SendMessage runs it: the arguments as one data part of a new message
// for the skill, from the caller, in the task store. A call that answers
// an input request goes on with the task it asked for.
func (b *binding) callTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	// A session's handlers may start after the request that carries the
	// call has ended (its client left, or it was answered): nobody is
	// left to run it for.
	in := inboundOf(req.Extra)
	if in == nil || in.r.Context().Err() != nil {
		return nil, errors.New("the call's HTTP request has ended")
	}
	return b.runCall(ctx, in, req)
}

// runCall runs req, a tools/call carried by in.
func (b *binding) runCall(ctx context.Context, in *inbound, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	// A tool that runs only as a task refuses a call that cannot run as
	// one; to a caller that may not use it, it stays unknown (refused).
	if sk := b.tools.skills[req.Params.Name]; sk != nil && sk.ToolHints().Task == mapping.TaskRequired && asTask(ctx) == nil &&
		b.h.Permits(in.caller, sk) {
		return nil, errTasksUndeclared(fmt.Sprintf("tool %q runs only as a task: it", req.Params.Name))
	}
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
	if sk := b.tools.skills[req.Params.Name]; sk != nil && len(req.Params.InputResponses) > 0 {
		var err error
		if args, err = withAnswers(sk, args, req.Params.InputResponses); err != nil {
			return nil, err
		}
	}
	msg := a2a.Message{MessageID: b.tasks.NewID(tasks.MessageID), Role: a2a.RoleUser,
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
func (b *binding) send(ctx context.Context, in *inbound, req *sdk.CallToolRequest, msg *a2a.Message) (*sdk.CallToolResult, error) {
	token := req.Params.GetProgressToken()
	admitted, err := b.h.Send(in.r, in.caller, msg, token != nil)
	if err != nil {
		return nil, b.refused(req.Params.Name, err)
	}
	if admitted.Reply != nil {
		return Result(nil, nil, admitted.Reply), nil
	}
	run := admitted.Task
	if call := asTask(ctx); call != nil {
		if runs, asksAtOnce := taskRun(admitted.Skill, msg, run.Task.History); runs {
			return nil, b.startTask(call, admitted, req.Params.Name, asksAtOnce)
		}
	}
	owner := in.caller.Owner()
	cancel := func() { _, _ = b.tasks.Cancel(owner, run.Task.ID) }
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
	task, err := admitted.Execute()
	if err != nil {
		return nil, b.refused(req.Params.Name, err)
	}
	if task == nil { // the task moved on (was canceled) while the skill ran
		if task, err = b.tasks.Get(owner, run.Task.ID, nil); err != nil {
			return nil, b.refused(req.Params.Name, err)
		}
	}
	if task.Status.State == a2a.TaskStateInputRequired {
		return b.askInput(ctx, in, req, task, owner, msg.TaskID == "" && invalidArguments(admitted.Skill, msg)), nil
	}
	return Result(admitted.Skill, task, nil), nil
}

// startTask runs a call's task without the call, as a SendMessage that
// returns immediately, and notes it in call.handle: the client polls it
// (tasks.go). A run that asks for missing arguments does so before any
// upstream call: it is run to that question first, so that the handle, and
// the next tasks/get, show what the task asks.
func (b *binding) startTask(call *taskCall, admitted server.Run, tool string, asksAtOnce bool) error {
	call.handle = admitted.Task.Task
	if !asksAtOnce {
		go func() { _, _ = admitted.Execute() }()
		return nil
	}
	task, err := admitted.Execute()
	if err != nil {
		return b.refused(tool, err)
	}
	if task != nil {
		call.handle = task
	}
	return nil
}

// invalidArguments reports whether a call's arguments hold a value its
// skill cannot use (a wrong type, a value out of its enum): an error the
// caller is to correct, not input for its user to give.
func invalidArguments(sk *mapping.Skill, msg *a2a.Message) bool {
	return sk != nil && anyInvalid(argumentProblems(sk, msg, nil))
}

func anyInvalid(problems []mapping.ArgumentProblem) bool {
	return slices.ContainsFunc(problems, func(p mapping.ArgumentProblem) bool { return p.Why != "" })
}

// argumentProblems are what is missing or wrong in the arguments that msg,
// after the task's history, gives sk.
func argumentProblems(sk *mapping.Skill, msg *a2a.Message, history []a2a.Message) []mapping.ArgumentProblem {
	_, problems := sk.GatherArguments(mapping.Call{Message: msg, History: history})
	return problems
}

// refused is the protocol error of a call the engine refused: a tool
// the caller may not use is one it does not know, as tools/list hides it.
func (b *binding) refused(tool string, err error) error {
	if _, ok := errors.AsType[*authn.Failure](err); ok {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", tool)}
	}
	if e, ok := errors.AsType[*a2a.Error](err); ok {
		return errorOf(e)
	}
	b.log.Warn("an MCP tool call failed", zap.String("tool", tool), zap.Error(err))
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the call could not be run"}
}

// The codes of the engine's refusals that ask the caller to come back
// later, or to free what it holds, rather than report a fault (-32603,
// which A2A answers them with, telling them apart by their reason): codes
// a server defines, in the range JSON-RPC 2.0 keeps for them, clear of
// those MCP and its SDKs use (-32000 to -32002, -32020 to -32022, -32042).
const (
	// CodeResourceExhausted: a quota of the task store is full
	// (RESOURCE_EXHAUSTED), the caller's own or everyone's; the call did
	// not run.
	CodeResourceExhausted = -32029
	// CodeUnavailable: the task store cannot be reached, or the agent
	// is shutting down (UNAVAILABLE). The error's data says whether the
	// skill ran (metadata skillRan), and names its task when there is one.
	CodeUnavailable = -32053
)

// errorOf is the engine's protocol error e as an MCP client reads it:
// MCP errors carry no typed details, so its message says all that A2A's
// message and details say (the parameter, the text that names the limit
// and what to do), and its data holds the reason and metadata for a
// program to read; a refusal that asks to come back later has a code of
// its own.
func errorOf(e *a2a.Error) *jsonrpc.Error {
	code, msg := int64(e.Code), e.Message
	switch e.Reason {
	case "RESOURCE_EXHAUSTED":
		code, msg = CodeResourceExhausted, "Resource exhausted"
	case "UNAVAILABLE":
		code, msg = CodeUnavailable, "Unavailable"
	}
	details := []string{e.Field, e.Description}
	if advice := unavailableText(e); advice != "" {
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

// unavailableText is what an MCP client is told of an UNAVAILABLE
// refusal that says whether the skill ran: A2A's text advises sending the
// same message again, which finds the task, where a call made again is a
// new call, and runs the skill again. "" for another error.
func unavailableText(e *a2a.Error) string {
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

// notifyProgress sends a progress notification for each status message
// and artifact update of a call's task, until its events end.
func (b *binding) notifyProgress(ctx context.Context, session *sdk.ServerSession, token any, sub *tasks.Subscription) {
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
		if err := session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token,
			Progress: float64(n), Message: text}); err != nil {
			b.log.Debug("an MCP progress notification was not sent")
		}
	}
}
