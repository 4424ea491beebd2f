package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// statePrefix begins the request state of a call that asks for input:
// the task the answers go to, then the round, the id of the message that
// asks (stateRoundSep between them), so that each round's state is new and
// an earlier round's, or one altered, names no question the task still
// asks. maxRequestState bounds what a retry may send back.
const (
	statePrefix     = "a2a-task:"
	stateRoundSep   = "/"
	maxRequestState = 256
)

// askInput answers a call whose task asks for input: an elicitation in
// form mode per missing argument, keyed by its name, and the task and
// round in the request state; the client answers by calling again (2026-07-28), or the
// SDK asks it and calls again for it (before). A call whose arguments are
// invalid, or whose client cannot answer, gets an error result that says
// what is missing or wrong, and its task is canceled: the caller calls
// again, and its abandoned tasks do not hold its share of the store.
func (b *binding) askInput(ctx context.Context, in *inbound, req *sdk.CallToolRequest, task *a2a.Task, owner string, invalid bool) *sdk.CallToolResult {
	if caps := req.ClientCapabilities(); invalid || caps == nil || caps.Elicitation == nil {
		b.cancelTask(owner, task.ID)
		return toolError(task.ID, askText(task.Status.Message, false))
	}
	// A call the SDK asks the client for (a session's) waits for it.
	w, onSession := ctx.Value(inputWaitKey{}).(*inputWait)
	if onSession {
		w.arm(b, in, task.ID, owner)
	}
	return inputRequest(task, !onSession)
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

// inputRequest is the result that asks for the input task waits for:
// the missing arguments by their schema, or a reply in words (key
// freeReply). Per argument (a client at 2026-07-28, which gets them all
// at once), one request each, keyed by its name; otherwise (a session,
// where the SDK asks the user each request in turn) one form for them
// all, keyed wholeForm. Its request state names the task and this round
// (the message that asks), so that every round's is new.
func inputRequest(task *a2a.Task, perArgument bool) *sdk.CallToolResult {
	msg := task.Status.Message
	text := askText(msg, true)
	requests := sdk.InputRequestMap{}
	switch asked := askedForm(msg); {
	case asked == nil:
	case perArgument:
		for name, prop := range asked.Properties {
			requests[name] = &sdk.ElicitParams{Mode: "form", Message: text, RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{name: prop}, "required": []string{name}}}
		}
	default:
		requests[wholeForm] = &sdk.ElicitParams{Mode: "form", Message: text, RequestedSchema: asked}
	}
	if len(requests) == 0 {
		requests[freeReply] = &sdk.ElicitParams{Mode: "form", Message: text, RequestedSchema: freeReplySchema}
	}
	state := statePrefix + task.ID
	if msg != nil {
		state += stateRoundSep + msg.MessageID
	}
	return &sdk.CallToolResult{Meta: sdk.Meta{TaskIDMeta: task.ID}, InputRequests: requests, RequestState: state}
}

// wholeForm keys the one input request that asks for every missing
// argument at once.
const wholeForm = "arguments"

// formSchema is the object schema of a form.
type formSchema struct {
	Type       string                    `json:"type"`
	Properties map[string]map[string]any `json:"properties"`
	Required   []string                  `json:"required,omitempty"`
	// asJSON are the types of the arguments asked as a string holding
	// JSON, by name: the answer is read back as JSON of one of them.
	asJSON map[string][]string
}

// formFormats are the string formats MCP's forms define: an argument's
// other formats (uuid, ipv4…) are left out of the form that asks for it,
// as a client may refuse a form that has one. The answer is still checked
// against the argument's whole schema.
var formFormats = map[string]bool{"email": true, "uri": true, "date": true, "date-time": true}

// formKeys are the keys a form's field of each type may have (MCP's
// PrimitiveSchemaDefinition, 2025-11-25): a client may refuse a form with
// any other (pattern, exclusiveMinimum, a number's enum…), so they are
// left out, and the answer is still checked against the whole schema. An
// array is a field only as a choice of strings (items with an enum).
var formKeys = map[string][]string{
	"string":  {"type", "title", "description", "default", "minLength", "maxLength", "format", "enum", "oneOf"},
	"number":  {"type", "title", "description", "default", "minimum", "maximum"},
	"integer": {"type", "title", "description", "default", "minimum", "maximum"},
	"boolean": {"type", "title", "description", "default"},
	"array":   {"type", "title", "description", "default", "minItems", "maxItems"},
}

// askedForm is the schema of the arguments an input-required message asks
// for (mapping.AskedSchema, every argument in it required) as a form's;
// nil when it asks for none by name.
func askedForm(msg *a2a.Message) *formSchema {
	return formOf(mapping.AskedSchema(msg))
}

// formOf is an object schema of arguments as a form's, each argument a
// field MCP's forms define: nil when it has no properties.
func formOf(schema any) *formSchema {
	var form formSchema
	// The schema is a Go map in memory, JSON once a shared store has
	// held the task: read either as JSON.
	if raw, err := json.Marshal(schema); err == nil {
		_ = json.Unmarshal(raw, &form) // no properties: nothing asked by name
	}
	if len(form.Properties) == 0 {
		return nil
	}
	for name, prop := range form.Properties {
		field, types := formField(prop)
		form.Properties[name] = field
		if types != nil {
			if form.asJSON == nil {
				form.asJSON = map[string][]string{}
			}
			form.asJSON[name] = types
		}
	}
	return &form
}

// formField is prop, an argument's JSON Schema, as a form's field: the
// keys its type may have, or, for a union, an object (a file too) or an
// array that is no choice of strings, a string holding JSON, with the
// types the JSON may be of.
func formField(prop map[string]any) (field map[string]any, asJSON []string) {
	typ, _ := prop["type"].(string)
	keys := formKeys[typ]
	items, _ := prop["items"].(map[string]any)
	var choice map[string]any // MCP's multi-select: an array of strings with an enum
	switch {
	case items["type"] != "string":
	case items["enum"] != nil:
		choice = map[string]any{"type": "string", "enum": items["enum"]}
	case items["oneOf"] != nil:
		choice = map[string]any{"anyOf": items["oneOf"]}
	}
	if keys == nil || typ == "array" && choice == nil {
		union, _ := prop["type"].([]any)
		for _, t := range union {
			name, _ := t.(string)
			asJSON = append(asJSON, name)
		}
		if asJSON == nil {
			asJSON = []string{typ}
		}
		desc, _ := prop["description"].(string)
		desc = strings.TrimSpace(desc + " As JSON (" + strings.Join(asJSON, " or ") + ").")
		return map[string]any{"type": "string", "description": desc}, asJSON
	}
	field = map[string]any{}
	for _, k := range keys {
		if v, ok := prop[k]; ok {
			field[k] = v
		}
	}
	if format, ok := field["format"].(string); ok && !formFormats[format] {
		delete(field, "format")
	}
	if choice != nil {
		field["items"] = choice
	}
	return field, nil
}

// answer is the value an answer v gives the argument name: for one asked
// as JSON, the text read as JSON when that is a value of one of its types,
// else v as it is (the text of a union's string).
func (f *formSchema) answer(name string, v any) any {
	if f == nil {
		return v
	}
	types := f.asJSON[name]
	s, isText := v.(string)
	var read any
	if types == nil || !isText || jsonx.UnmarshalKeepingIntegers([]byte(s), &read) != nil || !slices.Contains(types, jsonType(read)) &&
		!(slices.Contains(types, "integer") && jsonType(read) == "number") {
		return v
	}
	return read
}

// jsonType is the JSON Schema type of a decoded JSON value.
func jsonType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return "number"
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

// resume goes on with a call that answers an input request: the answers
// become the next message of the task (its owner's only), a refusal
// cancels the task. The request state must name the task's current round:
// one of an earlier round, or altered, is refused.
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
	taskID, round, ok := strings.Cut(strings.TrimPrefix(state, statePrefix), stateRoundSep)
	if !ok || !strings.HasPrefix(state, statePrefix) || len(state) > maxRequestState {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState is not one this server gave"}
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
	asking := task.Status.Message
	if task.Status.State != a2a.TaskStateInputRequired || asking == nil || asking.MessageID != round {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"requestState is stale: task %s asks no more what it names (it is %s); answer the last input requests with their own requestState",
			taskID, task.Status.State)}
	}
	content, refusal, err := answers(asking, req.Params.InputResponses)
	switch {
	case err != nil:
		return nil, err
	case refusal != "":
		answered()
		if _, err := b.tasks.Cancel(owner, taskID); err != nil {
			return nil, b.refused(req.Params.Name, err)
		}
		return toolError(taskID, "The input requests were not answered ("+refusal+"): the task is canceled."), nil
	case len(content) == 0: // nothing answers this round: ask again
		return b.askInput(ctx, in, req, task, owner, false), nil
	}
	part := a2a.DataPart(content)
	if reply, ok := content[freeReply].(string); ok && len(content) == 1 && mapping.AskedSchema(asking) == nil {
		part = a2a.TextPart(reply)
	}
	msg := a2a.Message{MessageID: b.tasks.NewID(tasks.MessageID), TaskID: taskID, ContextID: task.ContextID,
		Role: a2a.RoleUser, Parts: []a2a.Part{part}}
	answered()
	return b.send(ctx, in, req, &msg)
}

// answers reads the responses to the input requests of asking (keyed as
// inputRequest keys them; others are ignored): the values they give, by
// argument, or the action of the first that declines or cancels. The
// answer to one argument is its content's member of that name, else its
// content's only member, whatever its client named it.
func answers(asking *a2a.Message, responses sdk.InputResponseMap) (content map[string]any, refusal string, err error) {
	var asked map[string]map[string]any
	form := askedForm(asking)
	if form != nil {
		asked = form.Properties
	}
	keys := slices.Sorted(maps.Keys(asked))
	if len(keys) == 0 {
		keys = []string{freeReply}
	}
	content = map[string]any{}
	for _, key := range append(keys, wholeForm) {
		response, ok := responses[key]
		if !ok {
			continue
		}
		answer, ok := response.(*sdk.ElicitResult)
		if !ok || answer == nil {
			return nil, "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: fmt.Sprintf("inputResponses[%q] answers no elicitation, which its input request is", key)}
		}
		switch answer.Action {
		case "accept":
		case "decline", "cancel":
			return nil, answer.Action, nil
		default:
			return nil, "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
				"inputResponses[%q]: the answer's action %q is none of accept, decline and cancel", key, answer.Action)}
		}
		if key == wholeForm {
			for name, v := range answer.Content {
				if _, ok := asked[name]; ok {
					content[name] = form.answer(name, v)
				}
			}
		} else if v, ok := answerValue(key, answer); ok {
			content[key] = form.answer(key, v)
		}
	}
	return content, "", nil
}

// answerValue is the value an accepted answer gives the argument it was
// asked for: its content's member of that name, else its content's only
// member, whatever its client named it.
func answerValue(name string, answer *sdk.ElicitResult) (any, bool) {
	if v, ok := answer.Content[name]; ok {
		return v, true
	}
	if len(answer.Content) == 1 {
		for _, v := range answer.Content {
			return v, true
		}
	}
	return nil, false
}

// withAnswers is the arguments of a call that carries input responses but
// no request state (a client that keeps no state, or answers before it is
// asked): each accepted answer keyed by an argument of the skill that the
// arguments lack gives it; any other response is ignored, as
// unrecognized input is.
func withAnswers(sk *mapping.Skill, args json.RawMessage, responses sdk.InputResponseMap) (json.RawMessage, error) {
	var given map[string]any
	if err := json.Unmarshal(args, &given); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the arguments must be a JSON object: " + err.Error()}
	}
	added := false
	form := formOf(sk.ArgumentSchema())
	for _, name := range sk.DeclaredArguments() {
		answer, ok := responses[name].(*sdk.ElicitResult)
		if _, set := given[name]; set || !ok || answer == nil || answer.Action != "accept" {
			continue
		}
		if v, ok := answerValue(name, answer); ok {
			if given == nil {
				given = map[string]any{}
			}
			given[name], added = form.answer(name, v), true
		}
	}
	if !added {
		return args, nil
	}
	return json.Marshal(given)
}

// cancelTask cancels a call's task that waits for input no more: a refusal
// means it moved on (most often, it was canceled already).
func (b *binding) cancelTask(owner, taskID string) {
	if _, err := b.tasks.Cancel(owner, taskID); err != nil {
		b.log.Debug("task update refused", zap.String("task", taskID), zap.Error(err))
	}
}
