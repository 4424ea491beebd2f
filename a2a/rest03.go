package a2a

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// The HTTP+JSON binding as the 0.3 specification defines it (0.3 §3.2.3,
// §7): the /v1/ paths of the 0.3 proto's google.api.http rules, and
// bodies and answers in the ProtoJSON of the 0.3 proto (a2a.v1 at v0.3.0),
// which differs from 0.3's JSON-RPC objects: no "kind", enum names
// (ROLE_USER, TASK_STATE_CANCELLED), a message's parts in "content", file
// parts as {"file": {"fileWithUri" | "fileWithBytes", "mimeType"}}, data
// parts as {"data": {"data": {...}}}, results wrapped ({"task": ...}), push
// configs named by resource (tasks/{id}/pushNotificationConfigs/{id}). The
// official compatibility kit's 0.3 tests, @a2a-js/sdk 0.3's REST transport
// and a2a-java 0.3 speak it; a2a-go's a2av0 REST transport speaks the
// other 0.3 form, on the 1.0 paths (rest.go).

// paramsProto03 holds the members of every request body of the 0.3 form.
// The ids the path carries are kept unexported: no body member sets them.
type paramsProto03 struct {
	// SendMessageRequest: its message is the proto field request, whose
	// JSON name is message; ProtoJSON reads both.
	Message       *messageProto03           `json:"message"`
	Request       *messageProto03           `json:"request"`
	Configuration *sendConfigurationProto03 `json:"configuration"`
	Metadata      map[string]any            `json:"metadata"`
	// Name is the resource a CancelTaskRequest or TaskSubscriptionRequest
	// names (tasks/{id}), or a TaskPushNotificationConfig's own name when
	// the config is the body (the http rule's body: "config").
	Name                   string        `json:"name"`
	PushNotificationConfig *pushConfig03 `json:"pushNotificationConfig"`
	// CreateTaskPushNotificationConfigRequest, sent whole (as a2a-java and
	// the kit send it).
	Parent   string                 `json:"parent"`
	ConfigID string                 `json:"configId"`
	Config   *taskPushConfigProto03 `json:"config"`

	taskID, configID string
	historyLength    *int32
}

type taskPushConfigProto03 struct {
	Name                   string        `json:"name"`
	PushNotificationConfig *pushConfig03 `json:"pushNotificationConfig"`
}

type sendConfigurationProto03 struct {
	AcceptedOutputModes []string      `json:"acceptedOutputModes"`
	PushNotification    *pushConfig03 `json:"pushNotification"`
	HistoryLength       *int32        `json:"historyLength"`
	Blocking            *bool         `json:"blocking"`
}

type messageProto03 struct {
	MessageID  string         `json:"messageId"`
	ContextID  string         `json:"contextId"`
	TaskID     string         `json:"taskId"`
	Role       string         `json:"role"`
	Content    []partProto03  `json:"content"`
	Metadata   map[string]any `json:"metadata"`
	Extensions []string       `json:"extensions"`
}

// partProto03 is the 0.3 proto's Part, which has no metadata.
type partProto03 struct {
	Text *string      `json:"text"`
	File *fileProto03 `json:"file"`
	Data *dataProto03 `json:"data"`
}

type fileProto03 struct {
	FileWithURI   *string `json:"fileWithUri"`
	FileWithBytes *string `json:"fileWithBytes"`
	MimeType      string  `json:"mimeType"`
}

type dataProto03 struct {
	Data jsonValue `json:"data"`
}

func (w partProto03) model() (Part, *Error) {
	var part Part
	n := 0
	if w.Text != nil {
		n++
		part = Part{Kind: PartText, Text: *w.Text}
	}
	if f := w.File; f != nil {
		n++
		part.MediaType = f.MimeType
		switch {
		case (f.FileWithBytes == nil) == (f.FileWithURI == nil):
			return Part{}, InvalidParams("file", "must hold exactly one of fileWithBytes or fileWithUri")
		case f.FileWithBytes != nil:
			raw, err := decodeBase64(*f.FileWithBytes)
			if err != nil {
				return Part{}, InvalidParams("file.fileWithBytes", "must be base64: "+err.Error())
			}
			part.Kind, part.Raw = PartRaw, raw
		default:
			part.Kind, part.URL = PartURL, *f.FileWithURI
		}
	}
	if w.Data != nil {
		n++
		obj, ok := w.Data.Data.v.(map[string]any)
		if !ok {
			return Part{}, InvalidParams("data.data", "must be an object (a DataPart holds a google.protobuf.Struct)")
		}
		part = Part{Kind: PartData, Data: obj}
	}
	switch {
	case n == 0:
		return Part{}, InvalidParams("", "must hold one of text, file or data")
	case n > 1:
		return Part{}, InvalidParams("", "must hold only one of text, file or data")
	}
	return part, nil
}

// model checks the request of method m and converts it; error fields are
// relative to the body.
func (w *paramsProto03) model(m Method) (any, *Error) {
	switch m {
	case MethodSendMessage, MethodSendStreamingMessage:
		return w.sendMessage()
	case MethodCreatePushConfig:
		return w.pushConfig()
	case MethodGetExtendedAgentCard:
		return nil, nil
	case MethodGetTask:
		if err := checkHistoryLength(w.historyLength); err != nil {
			return nil, err
		}
		return &GetTaskRequest{ID: w.taskID, HistoryLength: w.historyLength}, nil
	case MethodCancelTask, MethodSubscribeToTask:
		return &TaskIDRequest{ID: w.taskID}, nil
	}
	// push config get, list, delete
	return &TaskPushNotificationConfig{TaskID: w.taskID, ID: w.configID}, nil
}

func (w *paramsProto03) sendMessage() (*SendMessageRequest, *Error) {
	msg := w.Message
	switch {
	case msg != nil && w.Request != nil:
		return nil, InvalidParams("request", "names the message again: message is its JSON name, request its proto field name")
	case msg == nil:
		msg = w.Request
	}
	if msg == nil {
		return nil, InvalidParams("message", "is required")
	}
	req := &SendMessageRequest{Metadata: w.Metadata}
	wire := wireMessage[partProto03]{MessageID: msg.MessageID, ContextID: msg.ContextID, TaskID: msg.TaskID, Role: msg.Role,
		Parts: msg.Content, Metadata: msg.Metadata, Extensions: msg.Extensions}
	// Roles are named as in 1.0 (ROLE_USER).
	if err := decodeMessage(decoder{v: V10, strict: true}, &wire, &req.Message); err != nil {
		return nil, within(renameField(err, "parts", "content"), "message")
	}
	if c := w.Configuration; c != nil {
		conf, err := (&sendConfiguration03{AcceptedOutputModes: c.AcceptedOutputModes, HistoryLength: c.HistoryLength,
			PushConfig: c.PushNotification, Blocking: c.Blocking}).model()
		if err != nil {
			return nil, within(renameField(err, "pushNotificationConfig", "pushNotification"), "configuration")
		}
		req.Configuration = conf
	}
	return req, nil
}

// pushConfig reads the config a create registers: the body is the
// CreateTaskPushNotificationConfigRequest or, as the http rule's body:
// "config" has it, the TaskPushNotificationConfig alone. Its id is the
// config's own, configId, or the last segment of its name; those given
// must agree, and the names must name the task of the path.
func (w *paramsProto03) pushConfig() (*TaskPushNotificationConfig, *Error) {
	name, nameField, pc, field := w.Name, "name", w.PushNotificationConfig, "pushNotificationConfig"
	if w.Config != nil {
		if pc != nil || name != "" {
			return nil, InvalidParams("config", "comes with the members of a TaskPushNotificationConfig: send the "+
				"CreateTaskPushNotificationConfigRequest or the TaskPushNotificationConfig, not both")
		}
		name, nameField, pc, field = w.Config.Name, "config.name", w.Config.PushNotificationConfig, "config.pushNotificationConfig"
	}
	if pc == nil {
		return nil, InvalidParams(field, "is required")
	}
	if a := pc.Authentication; a != nil && len(a.Schemes) == 0 && a.Credentials == "" {
		pc.Authentication = nil // {}: ProtoJSON writers send the empty message for none
	}
	c, err := decodePushConfig03(pc)
	if err != nil {
		return nil, within(err, field)
	}
	c.TaskID = w.taskID
	if w.Parent != "" && w.Parent != taskName(w.taskID) {
		return nil, InvalidParams("parent", "names "+strconv.Quote(w.Parent)+", not the path's task "+strconv.Quote(taskName(w.taskID)))
	}
	ids := [...]struct{ field, id string }{{field + ".id", c.ID}, {"configId", w.ConfigID}, {nameField, ""}}
	if name != "" {
		id, ok := strings.CutPrefix(name, taskName(w.taskID)+"/pushNotificationConfigs/")
		if !ok || strings.Contains(id, "/") {
			return nil, InvalidParams(nameField, "must be "+strconv.Quote(pushConfigName(w.taskID, "{configId}"))+
				", the path's task and the config's id, not "+strconv.Quote(name))
		}
		ids[2].id = id
	}
	for _, given := range ids {
		switch {
		case given.id == "":
		case c.ID == "":
			c.ID = given.id
		case given.id != c.ID:
			return nil, InvalidParams(given.field, "names the config "+strconv.Quote(given.id)+", but the request also names it "+strconv.Quote(c.ID))
		}
	}
	if err := checkPushConfig(c); err != nil {
		return nil, err
	}
	return c, nil
}

// fromPath keeps the ids the path carries; a cancel's or subscribe's body
// may name its task too, but not another.
func (w *paramsProto03) fromPath(t RESTTarget) *Error {
	w.taskID, w.configID = t.TaskID, t.ConfigID
	if w.Name != "" && (t.Method == MethodCancelTask || t.Method == MethodSubscribeToTask) && w.Name != taskName(t.TaskID) {
		return InvalidParams("name", "names "+strconv.Quote(w.Name)+", not the path's task "+strconv.Quote(taskName(t.TaskID)))
	}
	return nil
}

// fromQuery reads GetTask's history length, by its JSON name or its proto
// field name (history_length, which the kit sends), not both.
func (w *paramsProto03) fromQuery(m Method, q url.Values) *Error {
	if m != MethodGetTask {
		return nil
	}
	if _, both := q["history_length"]; both && q.Has("historyLength") {
		return InvalidParams("historyLength", "is given twice, as historyLength and history_length")
	}
	if err := queryInt(q, "historyLength", &w.historyLength); err != nil || w.historyLength != nil {
		return err
	}
	return queryInt(q, "history_length", &w.historyLength)
}

func taskName(taskID string) string { return "tasks/" + taskID }

// pushConfigName is the resource name of push config id of task taskID.
func pushConfigName(taskID, id string) string {
	return taskName(taskID) + "/pushNotificationConfigs/" + id
}

// renameField is e with the member from at the start of its field named to.
func renameField(e *Error, from, to string) *Error {
	if rest, ok := strings.CutPrefix(e.Field, from); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
		e.Field = to + rest
	}
	return e
}

// appendPartProto03 writes a part as the 0.3 proto's Part: text, a
// FilePart, or a DataPart that holds the object under "data". The proto's
// Part has no metadata and its FilePart no name: they are left out. A data
// value that is no object is wrapped as {"value": v}, as 0.3 wraps it.
func appendPartProto03(dst []byte, p *Part) ([]byte, error) {
	switch p.Kind {
	case PartText:
		dst = jsonx.AppendString(append(dst, `{"text":`...), p.Text)
		return append(dst, '}'), nil
	case PartRaw:
		dst = jsonx.AppendBase64(append(dst, `{"file":{"fileWithBytes":`...), p.Raw)
	case PartURL:
		dst = jsonx.AppendString(append(dst, `{"file":{"fileWithUri":`...), p.URL)
	case PartData:
		dst, _, err := appendDataObject(append(dst, `{"data":{"data":`...), p.Data)
		if err != nil {
			return dst, err
		}
		return append(dst, "}}"...), nil
	default:
		return dst, fmt.Errorf("unknown part kind %d", p.Kind)
	}
	if p.MediaType != "" {
		dst = appendStringField(dst, "mimeType", p.MediaType)
	}
	return append(dst, "}}"...), nil
}

// Proto03Status is the HTTP status of e in the 0.3 form, as the 0.3 SDKs
// that serve it (a2a-java, a2a-python) answer: 422 for invalid parameters,
// 409 for a task not cancelable, 501 for an unsupported operation.
func Proto03Status(e *Error) int {
	switch e.Code {
	case CodeParseError, CodeInvalidRequest, CodeVersionNotSupported, CodeExtensionSupportRequired:
		return 400
	case CodeInvalidParams:
		return 422
	case CodeMethodNotFound, CodeTaskNotFound, CodeExtendedAgentCardNotConfigured:
		return 404
	case CodeTaskNotCancelable:
		return 409
	case CodePushNotificationNotSupported, CodeUnsupportedOperation:
		return 501
	case CodeContentTypeNotSupported:
		return 415
	case CodeInvalidAgentResponse:
		return 502
	}
	status, _ := RESTStatus(e) // 401, 403, 503, 429 or 500
	return status
}

// proto03ErrorTypes name the errors of the 0.3 specification (§8) as the
// 0.3 form's "error" member carries them: as a2a-java 0.3, the kit's
// reference, writes them, and as its client maps them back.
var proto03ErrorTypes = map[int]string{
	CodeParseError:                     "io.a2a.spec.JSONParseError",
	CodeInvalidRequest:                 "io.a2a.spec.InvalidRequestError",
	CodeMethodNotFound:                 "io.a2a.spec.MethodNotFoundError",
	CodeInvalidParams:                  "io.a2a.spec.InvalidParamsError",
	CodeInternalError:                  "io.a2a.spec.InternalError",
	CodeTaskNotFound:                   "io.a2a.spec.TaskNotFoundError",
	CodeTaskNotCancelable:              "io.a2a.spec.TaskNotCancelableError",
	CodePushNotificationNotSupported:   "io.a2a.spec.PushNotificationNotSupportedError",
	CodeUnsupportedOperation:           "io.a2a.spec.UnsupportedOperationError",
	CodeContentTypeNotSupported:        "io.a2a.spec.ContentTypeNotSupportedError",
	CodeInvalidAgentResponse:           "io.a2a.spec.InvalidAgentResponseError",
	CodeExtendedAgentCardNotConfigured: "io.a2a.spec.AuthenticatedExtendedCardNotConfiguredError",
}

// AppendProto03Error appends e as the 0.3 form answers it, and as a
// stream's error event: {"code", "error", "message"}, the JSON-RPC code
// (which @a2a-js/sdk 0.3 reads), the error's type (which a2a-java 0.3 and
// the kit read; io.a2a.spec.JSONRPCError for an error 0.3 does not name)
// and the message as 0.3 writes it.
func AppendProto03Error(dst []byte, e *Error) []byte {
	if e == nil {
		e = InternalError("")
	}
	kind, ok := proto03ErrorTypes[e.Code]
	if !ok {
		kind = "io.a2a.spec.JSONRPCError"
	}
	dst = strconv.AppendInt(append(dst, `{"code":`...), int64(e.Code), 10)
	dst = appendStringField(dst, "error", kind)
	dst = appendStringField(dst, "message", errorMessage(V03, e))
	return append(dst, '}')
}

// AppendProto03Result appends result as the 0.3 form answers it: the 0.3
// proto's message in ProtoJSON. result is any of AppendResult's but a
// ListTasks answer (0.3 has none). On error dst is returned unchanged.
func AppendProto03Result(dst []byte, result any) ([]byte, error) {
	return appendResult(dst, formProto03, result)
}

// NotProto03 answers a request on a /v1/ path that asks for another
// version than 0.3.
func NotProto03(v Version) *Error {
	return &Error{Code: CodeMethodNotFound, Message: "Method not found", Reason: "METHOD_NOT_FOUND",
		Metadata: map[string]string{"version": v.String()},
		Description: "the /v1/ paths are the HTTP+JSON binding of A2A 0.3, and this request asked for " + v.String() +
			" (A2A-Version): leave out A2A-Version to speak 0.3 here, or call the same operation without /v1/"}
}
