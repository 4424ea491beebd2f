package mcp

// The tasks extension (SEP-2663, io.modelcontextprotocol/tasks) at
// protocol 2026-07-28: a tools/call of a skill that can run long answers
// a task handle at once, for a client that declares the extension on the
// request, and the client follows the task with tasks/get, answers its
// input requests with tasks/update and ends it with tasks/cancel. The MCP
// task is the A2A task: the same id, in the same store, with the same
// owner and quotas, so that GetTask and CancelTask over A2A reach it too,
// from any replica that shares the store. The SDK knows nothing of the
// extension: these requests are answered here, in JSON, as the direct
// path answers a plain call (direct.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// tasksExtension names the tasks extension in capabilities.
const tasksExtension = "io.modelcontextprotocol/tasks"

// The extension's methods.
const (
	methodTasksGet    = "tasks/get"
	methodTasksUpdate = "tasks/update"
	methodTasksCancel = "tasks/cancel"
)

// taskPollInterval is how often a handle suggests polling (pollIntervalMs).
const taskPollInterval = time.Second

// taskCall, in a tools/call's context, lets the call run as a task: send
// starts a call that runs as a task (taskRun) and notes it in handle, which is
// then the call's answer. A call without one runs to its end.
type taskCall struct{ handle *a2a.Task }

type taskCallKey struct{}

// asTask is the taskCall of a call's context, nil for a call to run to
// its end.
func asTask(ctx context.Context) *taskCall {
	call, _ := ctx.Value(taskCallKey{}).(*taskCall)
	return call
}

// taskRun reports whether the call of msg, to sk, after the task's
// history, runs as a task, and whether its run asks at once for arguments
// it lacks. The answer to a question its task asked runs as one; so does a
// new call, unless it holds a value its skill cannot use (it is answered at
// once with what is wrong) or it lacks arguments and its skill asks before
// its task (mcp.ask_before_task: the call's own answer asks, as SEP-2663's
// composition of input requests and tasks has it).
func taskRun(sk *mapping.Skill, msg *a2a.Message, history []a2a.Message) (runs, asksAtOnce bool) {
	if sk == nil {
		return false, false
	}
	problems := argumentProblems(sk, msg, history)
	if msg.TaskID == "" && (anyInvalid(problems) || len(problems) > 0 && sk.ToolHints().AskBeforeTask) {
		return false, false
	}
	return true, len(problems) > 0
}

// serveTasks answers env, a plain stateless POST whose body is body, when
// the tasks extension answers it: tasks/get, tasks/update, tasks/cancel,
// a tools/call of a tool that runs as a task from a client that declares
// the extension, and a subscriptions/listen that follows tasks (listen.go). It reports whether it did; false, and nothing
// written, for a request the SDK or the direct path is to answer.
func (b *binding) serveTasks(w http.ResponseWriter, in *inbound, env *envelope, body []byte) bool {
	// What the SDK would refuse before reading the method, it refuses.
	if in.r.Method != http.MethodPost || !validRequestID(env.ID) || !isJSONContent(in.r.Header.Get("Content-Type")) {
		return false
	}
	switch env.Method {
	case methodTasksGet, methodTasksUpdate, methodTasksCancel:
		out, err := b.taskMethod(in, env, body)
		b.writeAnswer(w, in, env.ID, out, err)
		return true
	case operationToolsCall:
		return b.callAsTask(w, in, env, body)
	case methodSubscriptionsListen:
		return b.listen(w, in, env, body)
	}
	return false
}

// callAsTask answers a tools/call that may run as a task, and reports
// whether it did: false for a tool that never does, a client that did not
// declare the extension, or headers that do not name the call (which the
// SDK refuses).
func (b *binding) callAsTask(w http.ResponseWriter, in *inbound, env *envelope, body []byte) bool {
	p := &env.Params
	sk := b.tools.skills[p.Name]
	hdr := in.r.Header
	if sk == nil || sk.ToolHints().Task == mapping.TaskForbidden || !declaresTasks(p.Meta.ClientCapabilities) ||
		hdr.Get(methodHeader) != env.Method || strings.TrimSpace(hdr.Get(nameHeader)) != p.Name {
		return false
	}
	var req struct {
		Params *sdk.CallToolParamsRaw `json:"params"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		b.writeAnswer(w, in, env.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: " + err.Error()})
		return true
	}
	// A task reports no progress: the extension has it polled instead.
	delete(req.Params.Meta, "progressToken")
	b.answerCall(w, in, env.ID, context.WithValue(in.r.Context(), taskCallKey{}, &taskCall{}), &sdk.CallToolRequest{Params: req.Params})
	return true
}

// declaresTasks reports whether a request's client capabilities (JSON)
// declare the tasks extension.
func declaresTasks(capabilities json.RawMessage) bool {
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	return firstByte(capabilities) == '{' && json.Unmarshal(capabilities, &caps) == nil && caps.Extensions[tasksExtension] != nil
}

// errTasksUndeclared refuses a request that needs the tasks extension from
// a client that did not declare it (SEP-2575's error, its data naming the
// extension).
func errTasksUndeclared(what string) error {
	data, _ := json.Marshal(sdk.MissingRequiredClientCapabilityData{
		RequiredCapabilities: &sdk.ClientCapabilities{Extensions: map[string]any{tasksExtension: struct{}{}}}})
	return &jsonrpc.Error{Code: sdk.CodeMissingRequiredClientCapabilities, Data: data,
		Message: fmt.Sprintf("Missing required client capability: %s needs the %s extension in the request's client capabilities", what, tasksExtension)}
}

// taskMethod answers a tasks/get, tasks/update or tasks/cancel of in's
// caller: only the task's owner reaches it.
func (b *binding) taskMethod(in *inbound, env *envelope, body []byte) ([]byte, error) {
	var req struct {
		Params struct {
			TaskID         string                     `json:"taskId"`
			InputResponses map[string]json.RawMessage `json:"inputResponses"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: %v", env.Method, err)}
	}
	taskID := req.Params.TaskID
	hdr := in.r.Header
	if hdr.Get(methodHeader) != env.Method || strings.TrimSpace(hdr.Get(nameHeader)) != taskID {
		return nil, &jsonrpc.Error{Code: sdk.CodeHeaderMismatch, Message: fmt.Sprintf(
			"%s: the %s header must name the method and the %s header the task (params.taskId)", env.Method, methodHeader, nameHeader)}
	}
	if !declaresTasks(env.Params.Meta.ClientCapabilities) {
		return nil, errTasksUndeclared(env.Method)
	}
	if taskID == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: env.Method + ": params.taskId is missing"}
	}
	owner := in.caller.Owner()
	switch env.Method {
	case methodTasksGet:
		noHistory := int32(0)
		task, err := b.tasks.Get(owner, taskID, &noHistory)
		if err != nil {
			return nil, b.taskError(taskID, err)
		}
		return b.appendTask(env.ID, "complete", task)
	case methodTasksCancel:
		// Canceling an ended task is no error: the client learns how it
		// ended from tasks/get.
		if _, err := b.tasks.Cancel(owner, taskID); err != nil && !isCode(err, a2a.CodeTaskNotCancelable) {
			return nil, b.taskError(taskID, err)
		}
	default:
		if err := b.updateTask(in, taskID, req.Params.InputResponses); err != nil {
			return nil, err
		}
	}
	return appendAck(env.ID), nil
}

// updateTask hands answers to the questions the caller's task asks, as a
// call that answers an input request does (resume), and goes on with the
// task in the background. Answers to questions it does not ask (any more)
// are ignored, as the extension says.
func (b *binding) updateTask(in *inbound, taskID string, answers map[string]json.RawMessage) error {
	noHistory := int32(0)
	task, err := b.tasks.Get(in.caller.Owner(), taskID, &noHistory)
	if err != nil {
		return b.taskError(taskID, err)
	}
	if task.Status.State != a2a.TaskStateInputRequired {
		return nil
	}
	asking := inputRequest(task, true) // the round the task is in: its questions, and its state
	responses := sdk.InputResponseMap{}
	for key := range asking.InputRequests {
		if raw, ok := answers[key]; ok {
			one, _ := json.Marshal(map[string]json.RawMessage{key: raw}) // RawMessages: cannot fail
			if err := json.Unmarshal(one, &responses); err != nil {
				return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tasks/update: " + err.Error()}
			}
		}
	}
	if len(responses) == 0 {
		return nil
	}
	_, err = b.runCall(context.WithValue(in.r.Context(), taskCallKey{}, &taskCall{}), in, &sdk.CallToolRequest{Params: &sdk.CallToolParamsRaw{
		Name: server.SkillOf(task), RequestState: asking.RequestState, InputResponses: responses}})
	return err
}

// taskError is the protocol error of a tasks/* request the store refused:
// a task that is not the caller's, or not there (any more), is invalid
// params.
func (b *binding) taskError(taskID string, err error) error {
	if isCode(err, a2a.CodeTaskNotFound) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Failed to retrieve task: task %q not found", taskID)}
	}
	return b.refused("", err)
}

func isCode(err error, code int) bool {
	e, ok := errors.AsType[*a2a.Error](err)
	return ok && e.Code == code
}

// wireTask is a task as the extension writes it: a handle (resultType
// task), the answer to tasks/get (DetailedTask, resultType complete), or
// a status notification's (DetailedTask, no resultType).
type wireTask struct {
	ResultType     string              `json:"resultType,omitempty"`
	TaskID         string              `json:"taskId"`
	Status         string              `json:"status"`
	StatusMessage  string              `json:"statusMessage,omitempty"`
	CreatedAt      string              `json:"createdAt"`
	LastUpdatedAt  string              `json:"lastUpdatedAt"`
	TTLMs          int64               `json:"ttlMs"`
	PollIntervalMs int64               `json:"pollIntervalMs"`
	InputRequests  sdk.InputRequestMap `json:"inputRequests,omitempty"`
	Result         *sdk.CallToolResult `json:"result,omitempty"`
	Error          *jsonrpc.Error      `json:"error,omitempty"`
}

// appendTask is the answer to request id holding task: with resultType
// "task", its handle; with "complete", the task in detail (its questions,
// or its result once it ended).
func (b *binding) appendTask(id json.RawMessage, resultType string, task *a2a.Task) ([]byte, error) {
	res, err := json.Marshal(b.wireTask(resultType, resultType == "complete", task))
	if err != nil {
		return nil, err
	}
	out := append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), `,"result":`...)
	return append(append(out, res...), '}'), nil
}

// wireTask is task as the extension writes it, with resultType ("" for
// none): a handle, or in detail (detailed), with what it asks, or how it
// ended.
func (b *binding) wireTask(resultType string, detailed bool, task *a2a.Task) *wireTask {
	// The store keeps a task max_age after its last change, and keeps no
	// other time: the last change is its creation too, for the extension.
	changed := task.Status.Timestamp
	if changed.IsZero() {
		changed = time.Now()
	}
	at := changed.UTC().Format(time.RFC3339Nano)
	wt := wireTask{ResultType: resultType, TaskID: task.ID, Status: "working", StatusMessage: messageText(task.Status.Message),
		CreatedAt: at, LastUpdatedAt: at, TTLMs: b.tasks.MaxAge().Milliseconds(), PollIntervalMs: taskPollInterval.Milliseconds()}
	switch state := task.Status.State; {
	case state == a2a.TaskStateInputRequired:
		wt.Status = "input_required"
		if detailed {
			wt.InputRequests = inputRequest(task, true).InputRequests
		}
	case state == a2a.TaskStateCanceled:
		wt.Status = "cancelled"
	case state == a2a.TaskStateFailed && mapping.AgentFault(task.Status.Message):
		// The agent could not run the skill as written: a protocol error,
		// where the service's own failure is the tool's.
		wt.Status = "failed"
		if detailed {
			wt.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: wt.StatusMessage}
		}
	case state.Terminal():
		// A skill that failed through its service is the tool's error
		// (isError), as the extension says.
		wt.Status = "completed"
		if detailed {
			wt.Result = endedResult(b.tools.skills[server.SkillOf(task)], task)
		}
	}
	return &wt
}

// appendAck is the empty answer to request id of tasks/update and
// tasks/cancel.
func appendAck(id json.RawMessage) []byte {
	out := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	return append(out, `,"result":{"resultType":"complete"}}`...)
}
