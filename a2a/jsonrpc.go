package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// Request is one decoded JSON-RPC request.
type Request struct {
	// ID is the raw id (string, number or null) echoed in the answer; nil
	// when the request has none or its id is not valid.
	ID     json.RawMessage
	Method Method
	// Params is *SendMessageRequest (SendMessage, SendStreamingMessage),
	// *GetTaskRequest, *ListTasksRequest, *TaskIDRequest (CancelTask,
	// SubscribeToTask), *TaskPushNotificationConfig (the push config
	// methods; Create carries the whole config, the others TaskID and ID)
	// or nil (GetExtendedAgentCard).
	Params any
}

// envelope is a JSON-RPC request as read in one pass, params included:
// P holds the members of every method's params in one version.
type envelope[P any] struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  *P              `json:"params"`
}

// wireParams is a pointer to params10 or params03.
type wireParams[P any] interface {
	*P
	model(m Method) (any, *Error)
}

// DecodeRequest decodes and validates a JSON-RPC 2.0 request spoken in
// version v. Errors are -32700 (not JSON), -32600 (not a JSON-RPC 2.0
// request object), -32601 (no such method in v) and -32602 (invalid params,
// Field naming the offending member as in "params.message.parts[0]"). The
// returned Request is nil only when body is not a JSON object; alongside an
// error it carries the ID (when valid) and the Method (when known, in any
// version).
func DecodeRequest(v Version, body []byte) (*Request, *Error) {
	if v == V10 {
		return decodeRequest[params10](v, body)
	}
	return decodeRequest[params03](v, body)
}

func decodeRequest[P any, PP wireParams[P]](v Version, body []byte) (*Request, *Error) {
	renamed, valid, err := checkJSON(v, body)
	if err != nil {
		return &Request{ID: PeekRequest(body).ID}, err
	}
	if renamed {
		named, err := protoNames10(body)
		if err != nil {
			return &Request{ID: PeekRequest(body).ID}, err
		}
		body = named
	}
	var env envelope[P]
	// Reported once the envelope is known to be valid:
	var (
		paramsErr  *Error // a params member of the wrong type
		paramsType string // the JSON type of params when not an object
	)
	if valid && !renamed && fastDecodeRequest(body, &env) {
		// read by hand: valid, and of the members' types
	} else if err := json.Unmarshal(body, &env); err != nil {
		// A type error leaves its member zero, and decoding goes on: the
		// envelope's members are judged by value below.
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, ParseError(err.Error())
		case !errors.As(err, &te):
			return nil, InvalidRequest(err.Error())
		case te.Field == "":
			return nil, InvalidRequest("the request must be a JSON object (batches are not supported)")
		case te.Field == "params":
			paramsType = te.Value
		case strings.HasPrefix(te.Field, "params."):
			paramsErr = typeError(body, te)
		}
	}
	req := &Request{}
	if !validID(env.ID) {
		return req, InvalidRequest("id must be a string, a number or null")
	}
	req.ID = env.ID
	if env.JSONRPC != "2.0" {
		return req, InvalidRequest(`jsonrpc must be "2.0"`)
	}
	if env.Method == "" {
		return req, InvalidRequest("method must be a string naming the method")
	}
	req.Method = LookupMethod(v, env.Method)
	if req.Method == MethodUnknown {
		// Known in another version: the caller asked for the wrong one, and
		// reads the answer in the method's form (SSE when it streams).
		req.Method = lookupMethodAnyVersion(env.Method)
		return req, MethodNotFound(v, env.Method)
	}
	switch paramsType {
	case "":
	case "array": // by-position params, which A2A does not use
		return req, InvalidParams("params", "must be an object")
	default:
		return req, InvalidRequest("params must be an object")
	}
	if paramsErr != nil {
		return req, paramsErr
	}
	params := env.Params
	if params == nil {
		params = new(P) // absent: each required member is reported
	}
	out, err := PP(params).model(req.Method)
	if err != nil {
		return req, within(err, "params")
	}
	req.Params = out
	return req, nil
}

// fastDecodeRequest reads body, checked and not renamed, into env by hand
// when it is a 1.0 request of the common shape (fastdecode.go); false
// leaves env zero.
func fastDecodeRequest[P any](body []byte, env *envelope[P]) bool {
	e, ok := any(env).(*envelope[params10])
	if !ok {
		return false
	}
	if fastDecodeRequest10(body, e) {
		return true
	}
	*e = envelope[params10]{}
	return false
}

// validID reports whether a raw id (valid JSON) is absent, a string, a
// number or null, judging by its first byte, and can be echoed: valid
// UTF-8.
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return true
	}
	c := raw[0]
	return (c == '"' || c == 'n' || c == '-' || c >= '0' && c <= '9') && utf8.Valid(raw)
}

// PeekRequest digs the id and the method out of a request body that will
// not be decoded further (its version is not spoken, or it is refused
// before decoding), so that even an early error answers the caller's id,
// in the form the method's caller reads (SSE for a streaming method). The
// id is nil when the body has none, or one the answer could not echo (an
// object, an array, a boolean, a string that is not UTF-8): the answer's
// id is then null, as JSON-RPC 2.0 says for an id that cannot be read. The
// method is looked up in every version.
func PeekRequest(body []byte) *Request {
	// By exact name, as a case-sensitive parser reads them: into a map,
	// not a struct, whose members encoding/json would match in any case.
	var env map[string]json.RawMessage
	req := &Request{}
	if json.Unmarshal(body, &env) != nil {
		return req
	}
	if id := env["id"]; validID(id) {
		req.ID = id
	}
	var method string
	if json.Unmarshal(env["method"], &method) == nil {
		req.Method = lookupMethodAnyVersion(method)
	}
	return req
}

// lookupMethodAnyVersion finds the method a name names in any version.
func lookupMethodAnyVersion(name string) Method {
	for _, v := range Versions {
		if m := LookupMethod(v, name); m != MethodUnknown {
			return m
		}
	}
	return MethodUnknown
}

func checkHistoryLength(h *int32) *Error {
	if h != nil && *h < 0 {
		return InvalidParams("historyLength", "must not be negative")
	}
	return nil
}

func appendEnvelope(dst []byte, id json.RawMessage) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	if len(id) == 0 {
		return append(dst, "null"...)
	}
	return append(dst, id...)
}

// AppendResult appends the JSON-RPC response carrying result, in version v,
// to dst. result is *StreamResponse (the SendMessage answer and every
// stream event: 1.0 wraps it as {"task":..}, {"message":..},
// {"statusUpdate":..} or {"artifactUpdate":..}; 0.3 writes the object with
// its "kind"), *Task (GetTask, CancelTask), *ListTasksResponse (1.0 only),
// *AgentCard (the union card), *TaskPushNotificationConfig (Create and Get),
// *ListTaskPushNotificationConfigsResponse (1.0 an object, 0.3 an array),
// *Empty (Delete) or json.RawMessage (an already-encoded result, such as
// precomputed card bytes, written as is). On error dst is returned
// unchanged.
func AppendResult(dst []byte, v Version, id json.RawMessage, result any) ([]byte, error) {
	start := len(dst)
	dst, err := appendResult(append(appendEnvelope(dst, id), `,"result":`...), form(v), result)
	if err != nil {
		return dst[:start], err
	}
	return append(dst, '}'), nil
}

// appendResult appends the result itself, in form f; on error dst is
// returned unchanged.
func appendResult(dst []byte, f form, result any) ([]byte, error) {
	start := len(dst)
	var err error
	switch r := result.(type) {
	case *StreamResponse:
		dst, err = appendStreamResponse(dst, f, r)
	case *Task:
		if r == nil {
			err = errors.New("nil task")
			break
		}
		dst, err = appendTask(dst, f, r)
	case *ListTasksResponse:
		dst, err = appendListTasks(dst, f, r)
	case *AgentCard:
		var card []byte
		if card, err = MarshalAgentCard(r); err == nil {
			dst = append(dst, card...)
		}
	case *TaskPushNotificationConfig:
		dst = appendPushConfigResult(dst, f, r)
	case *ListTaskPushNotificationConfigsResponse:
		dst = appendPushConfigList(dst, f, r)
	case *Empty:
		if f == form03 {
			dst = append(dst, "null"...)
		} else {
			dst = append(dst, "{}"...)
		}
	case json.RawMessage:
		dst, err = jsonx.AppendRaw(dst, r)
	default:
		err = fmt.Errorf("unsupported result type %T", result)
	}
	if err != nil {
		return dst[:start], fmt.Errorf("a2a: encode %s result: %w", f, err)
	}
	return dst, nil
}

// AppendListTasksResult is AppendResult for a ListTasks answer, which may be
// large: each time the encoded answer passes 64 KiB between two tasks it is
// handed to flush, which writes it out and returns the buffer to go on with
// (typically the same one, emptied). Once flush has been called, an error
// leaves the answer cut short: the caller must abort the response.
func AppendListTasksResult(dst []byte, id json.RawMessage, r *ListTasksResponse, flush func([]byte) ([]byte, error)) ([]byte, error) {
	start := len(dst)
	flushed := false
	dst = append(appendEnvelope(dst, id), `,"result":`...)
	dst, err := appendListTasksFlushing(dst, form10, r, func(b []byte) ([]byte, error) {
		flushed = true
		return flush(b)
	})
	if err != nil {
		if !flushed {
			dst = dst[:start]
		}
		return dst, fmt.Errorf("a2a: encode %s result: %w", V10, err)
	}
	return append(dst, '}'), nil
}

// Error detail type URLs of spec 1.0 §9.5.
const (
	errorInfoType  = "type.googleapis.com/google.rpc.ErrorInfo"
	badRequestType = "type.googleapis.com/google.rpc.BadRequest"
	errorDomain    = "a2a-protocol.org"
)

// AppendError appends the JSON-RPC error response for e, in version v, to
// dst. A parse error (-32700) always answers with a null id.
//
// In 1.0, error.data is an array of typed details (spec 1.0 §9.5): a
// google.rpc.ErrorInfo with e.Reason and e.Metadata, and for an invalid
// field a google.rpc.BadRequest naming it. In 0.3, error.data is omitted
// and the detail goes into the message: the official Go SDK's 0.3 client
// decodes error.data only as an array of typed details and fails on a plain
// object, and no 0.3 client reads a structure from it.
func AppendError(dst []byte, v Version, id json.RawMessage, e *Error) []byte {
	if e == nil {
		e = InternalError("")
	}
	if e.Code == CodeParseError {
		id = nil
	}
	dst = append(appendEnvelope(dst, id), `,"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(e.Code), 10)
	dst = jsonx.AppendString(append(dst, `,"message":`...), errorMessage(v, e))
	if v == V10 && (e.Reason != "" || e.Field != "") {
		dst = appendDetails(append(dst, `,"data":`...), e)
	}
	return append(dst, "}}"...)
}

// errorMessage is e's message as version v writes it: in 1.0 the
// description of an invalid field goes into its BadRequest detail, in 0.3
// (which has no details) everything goes into the message.
func errorMessage(v Version, e *Error) string {
	msg := e.Message
	if e.Field != "" && v == V03 {
		msg += ": " + e.Field
	}
	if e.Description != "" && (e.Field == "" || v == V03) {
		msg += ": " + e.Description
	}
	if v == V03 && e.Description == "" && len(e.Metadata) > 0 {
		// 0.3 errors have no typed details: what 1.0 puts in ErrorInfo
		// (the task id, its state) goes into the message.
		msg += ": " + metadataText(e.Metadata)
	}
	return msg
}

// appendDetails appends e's 1.0 typed details (spec 1.0 §9.5, §11.6): a
// google.rpc.ErrorInfo with e.Reason and e.Metadata, and for an invalid
// field a google.rpc.BadRequest naming it.
func appendDetails(dst []byte, e *Error) []byte {
	dst = append(dst, '[')
	if e.Reason != "" {
		dst = appendErrorInfo(dst, e)
	}
	if e.Field != "" {
		if e.Reason != "" {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"@type":"`+badRequestType+`","fieldViolations":[{"field":`...)
		dst = jsonx.AppendString(dst, e.Field)
		dst = append(dst, `,"description":`...)
		dst = jsonx.AppendString(dst, e.Description)
		dst = append(dst, "}]}"...)
	}
	return append(dst, ']')
}

func appendErrorInfo(dst []byte, e *Error) []byte {
	dst = append(dst, `{"@type":"`+errorInfoType+`","reason":`...)
	dst = jsonx.AppendString(dst, e.Reason)
	dst = append(dst, `,"domain":"`+errorDomain+`"`...)
	if len(e.Metadata) > 0 {
		dst = jsonx.AppendStringMap(append(dst, `,"metadata":`...), e.Metadata)
	}
	return append(dst, '}')
}

// metadataText writes an error's metadata as key=value pairs, in key
// order.
func metadataText(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k + "=" + m[k])
	}
	return b.String()
}
