package mcp

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// inputID names, among a result's input requests, the one that asks
// for a skill's arguments.
const inputID = "arguments"

// statePrefix begins the request state of a call that asks for input:
// the task the answer goes to follows. maxRequestState bounds what a
// retry may send back.
const (
	statePrefix     = "a2a-task:"
	maxRequestState = 256
)

// askInput answers a call whose task asks for input: an elicitation in
// form mode with the schema of what is missing and the task in the
// request state; the client answers by calling again (2026-07-28), or the
// SDK asks it and calls again for it (before). A call whose arguments are
// invalid, or whose client cannot answer, gets an error result that says
// what is missing or wrong, and its task is canceled: the caller calls
// again, and its abandoned tasks do not hold its share of the store.
func (b *binding) askInput(ctx context.Context, in *inbound, req *sdk.CallToolRequest, task *a2a.Task, owner string, invalid bool) *sdk.CallToolResult {
	if caps := req.ClientCapabilities(); invalid || caps == nil || caps.Elicitation == nil {
		b.cancelTask(owner, task.ID)
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

func (w *inputWait) arm(b *binding, in *inbound, taskID, owner string) {
	w.disarm()
	w.taskID, w.owner = taskID, owner
	w.stops = []func() bool{time.AfterFunc(b.tasks.MaxInputWait(), w.cancel).Stop,
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
func asksForClient(req sdk.Request) bool {
	ss, ok := req.GetSession().(*sdk.ServerSession)
	if !ok {
		return false
	}
	params := ss.InitializeParams()
	return params != nil && params.ProtocolVersion < statelessVersion
}

// boundInputWaits is the sessions' server's middleware that gives each
// tools/call its inputWait, and cancels the task of a call that ended
// while it waited for input.
func (b *binding) boundInputWaits(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method != "tools/call" || !asksForClient(req) {
			return next(ctx, method, req)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		w := &inputWait{cancel: cancel}
		res, err := next(context.WithValue(ctx, inputWaitKey{}, w), method, req)
		if taskID, owner := w.taskID, w.owner; taskID != "" {
			w.disarm()
			b.cancelTask(owner, taskID)
			if err == nil { // it asked again, which the SDK passes on as an empty result
				res = toolError(taskID, "The skill asked for more input after the answer; the task is canceled: call the tool again with every argument.")
			}
		}
		return res, err
	}
}

// inputRequest is the result that asks for the input task waits for: the
// skill's missing arguments, by their schema, or a reply in words.
func inputRequest(task *a2a.Task) *sdk.CallToolResult {
	schema := mapping.AskedSchema(task.Status.Message)
	if schema == nil {
		schema = freeReplySchema
	}
	return &sdk.CallToolResult{Meta: sdk.Meta{TaskIDMeta: task.ID},
		InputRequests: sdk.InputRequestMap{inputID: &sdk.ElicitParams{Mode: "form", Message: askText(task.Status.Message, true),
			RequestedSchema: schema}},
		RequestState: statePrefix + task.ID}
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
func (b *binding) resume(ctx context.Context, in *inbound, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	// On a session the wait for the answer ends only once the answer is
	// taken: on an error before, the call's task is canceled, since the SDK
	// will not ask again (boundInputWaits).
	answered := func() {
		if w, ok := ctx.Value(inputWaitKey{}).(*inputWait); ok {
			w.disarm()
		}
	}
	state := req.Params.RequestState
	taskID, ok := strings.CutPrefix(state, statePrefix)
	if !ok || len(state) > maxRequestState {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState is not one this server gave"}
	}
	answer, _ := req.Params.InputResponses[inputID].(*sdk.ElicitResult)
	if answer == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "inputResponses has no answer to " + inputID}
	}
	owner := in.caller.Owner()
	noHistory := int32(0)
	task, err := b.tasks.Get(owner, taskID, &noHistory)
	if err != nil {
		return nil, b.refused(req.Params.Name, err)
	}
	if server.SkillOf(task) != req.Params.Name {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState names a task of another tool"}
	}
	switch answer.Action {
	case "accept":
	case "decline", "cancel":
		answered()
		if _, err := b.tasks.Cancel(owner, taskID); err != nil {
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
	msg := a2a.Message{MessageID: b.tasks.NewID(tasks.MessageID), TaskID: taskID, ContextID: task.ContextID,
		Role: a2a.RoleUser, Parts: []a2a.Part{part}}
	answered()
	return b.send(ctx, in, req, &msg)
}

// cancelTask cancels a call's task that waits for input no more: a refusal
// means it moved on (most often, it was canceled already).
func (b *binding) cancelTask(owner, taskID string) {
	if _, err := b.tasks.Cancel(owner, taskID); err != nil {
		b.log.Debug("task update refused", zap.String("task", taskID), zap.Error(err))
	}
}
