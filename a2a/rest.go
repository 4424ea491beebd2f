package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// The HTTP+JSON binding of protocol 1.0 (spec 1.0 §11): its URL patterns,
// its request parameters (path, query, body) decoded into the one model,
// and its answers: the 1.0 JSON of the result with no envelope, and errors
// as google.rpc.Status with the HTTP status of spec 1.0 §5.4. The same
// paths serve 0.3, as a2a-go's a2av0 REST transport speaks it: the 0.3
// params and results, the same errors. The /v1/ paths serve 0.3 as the
// 0.3 specification defines it (rest03.go).

// RESTTarget is what the method and path of an HTTP+JSON request name: an
// operation and the ids its path carries.
type RESTTarget struct {
	Method   Method
	TaskID   string
	ConfigID string
	// Proto03 says that the path is one of the 0.3 specification's
	// (/v1/…): the request speaks 0.3, its body and answer are the 0.3
	// proto's ProtoJSON (AppendProto03Result, AppendProto03Error).
	Proto03 bool
}

// RESTContentType is the media type spec 1.0 §11.1 asks of requests and
// answers; application/json is accepted as well.
const RESTContentType = "application/a2a+json"

// MatchREST finds the operation that httpMethod and path name (spec 1.0
// §11.3, and the proto's google.api.http rules), path being the request's
// escaped path below the binding's base, starting with "/". found reports
// whether the path names a resource at all; when it does but not for
// httpMethod, t.Method is MethodUnknown and allow lists the methods it
// takes. SubscribeToTask takes GET (the proto) and POST (the spec's text).
// Below /v1/ are the 0.3 specification's paths (its §7, and the 0.3
// proto's rules), t.Proto03 set even when none matches: the same
// operations but ListTasks, and the extended card at /v1/card.
func MatchREST(httpMethod, path string) (t RESTTarget, allow string, found bool) {
	type route struct {
		method Method
		http   string
	}
	var routes []route
	if rest, ok := strings.CutPrefix(path, "/v1/"); ok {
		path, t.Proto03 = "/"+rest, true
	}
	switch {
	case path == "/message:send":
		routes = []route{{MethodSendMessage, "POST"}}
	case path == "/message:stream":
		routes = []route{{MethodSendStreamingMessage, "POST"}}
	case path == "/tasks" && !t.Proto03:
		routes = []route{{MethodListTasks, "GET"}}
	case path == "/extendedAgentCard" && !t.Proto03, path == "/card" && t.Proto03:
		routes = []route{{MethodGetExtendedAgentCard, "GET"}}
	case strings.HasPrefix(path, "/tasks/"):
		segs := strings.Split(path[len("/tasks/"):], "/")
		id := segs[0]
		switch {
		case len(segs) == 1 && strings.HasSuffix(id, ":cancel"):
			id, routes = strings.TrimSuffix(id, ":cancel"), []route{{MethodCancelTask, "POST"}}
		case len(segs) == 1 && strings.HasSuffix(id, ":subscribe"):
			id, routes = strings.TrimSuffix(id, ":subscribe"), []route{{MethodSubscribeToTask, "GET"}, {MethodSubscribeToTask, "POST"}}
		case len(segs) == 1:
			routes = []route{{MethodGetTask, "GET"}}
		case len(segs) == 2 && segs[1] == "pushNotificationConfigs":
			routes = []route{{MethodListPushConfigs, "GET"}, {MethodCreatePushConfig, "POST"}}
		case len(segs) == 3 && segs[1] == "pushNotificationConfigs":
			routes = []route{{MethodGetPushConfig, "GET"}, {MethodDeletePushConfig, "DELETE"}}
			t.ConfigID = unescapeSegment(segs[2])
			if t.ConfigID == "" {
				return RESTTarget{Proto03: t.Proto03}, "", false
			}
		}
		if t.TaskID = unescapeSegment(id); t.TaskID == "" {
			return RESTTarget{Proto03: t.Proto03}, "", false
		}
	}
	if len(routes) == 0 {
		return RESTTarget{Proto03: t.Proto03}, "", false
	}
	for _, r := range routes {
		if r.http == httpMethod {
			t.Method = r.method
			return t, "", true
		}
		if allow != "" {
			allow += ", "
		}
		allow += r.http
	}
	return RESTTarget{TaskID: t.TaskID, ConfigID: t.ConfigID, Proto03: t.Proto03}, allow, true
}

// unescapeSegment decodes one path segment; "" when it is empty or not
// validly escaped.
func unescapeSegment(s string) string {
	out, err := url.PathUnescape(s)
	if err != nil {
		return ""
	}
	return out
}

// DecodeRESTRequest decodes the parameters of the HTTP+JSON request for t
// spoken in version v: the ids in its path, its query (spec 1.0 §11.5:
// GetTask's historyLength and ListTasks' filters) and its body (the request
// message of the proto, for POST; cancel and subscribe may send none). In
// 0.3 the paths are the same and the bodies are the 0.3 params (a2a-go's
// a2av0 REST transport), and ListTasks is not served. A t.Proto03 request
// is read as 0.3 whatever v says: its bodies are the 0.3 proto's requests.
// It checks what DecodeRequest checks, with the same errors; a field is
// named from the body's root ("message.parts[0]") or as its query
// parameter. The result has no ID.
func DecodeRESTRequest(v Version, t RESTTarget, query url.Values, body []byte) (*Request, *Error) {
	switch {
	case t.Proto03:
		return decodeREST[paramsProto03](paramsMembersProto03, t, query, body)
	case v == V10:
		return decodeREST[params10](paramsMembers[V10], t, query, body)
	case t.Method == MethodListTasks:
		return &Request{Method: t.Method}, MethodNotFound(V03, t.Method.Name(V10))
	}
	return decodeREST[params03](paramsMembers[V03], t, query, body)
}

// restParams is a pointer to params10, params03 or paramsProto03.
type restParams[P any] interface {
	*P
	model(m Method) (any, *Error)
	fromPath(t RESTTarget) *Error
	fromQuery(m Method, q url.Values) *Error
}

// decodeREST decodes a request whose body, if any, holds the members
// known.
func decodeREST[P any, PP restParams[P]](known *Members, t RESTTarget, query url.Values, body []byte) (*Request, *Error) {
	req := &Request{Method: t.Method}
	w := PP(new(P))
	if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if err := decodeRESTBody(known, body, w); err != nil {
			return req, err
		}
	}
	if err := w.fromQuery(t.Method, query); err != nil {
		return req, err
	}
	if err := w.fromPath(t); err != nil {
		return req, err
	}
	out, err := w.model(t.Method)
	if err != nil {
		return req, err
	}
	req.Params = out
	return req, nil
}

// decodeRESTBody decodes a request body, whose root has the members
// known, into w: one JSON object, checked as every request body is
// (checkParams), proto field names allowed (a2av0 sends every 0.3 member
// name in snake_case, and so does the kit in the 0.3 form).
func decodeRESTBody(known *Members, body []byte, w any) *Error {
	renamed, valid, e := checkParams(known, body)
	if e != nil {
		return e
	}
	if renamed {
		if body, e = protoNames10(body); e != nil {
			return e
		}
	}
	if p, ok := w.(*params10); ok && valid && !renamed { // new, from decodeREST
		if fastDecodeParams10(body, p) {
			return nil
		}
		*p = params10{}
	}
	err := json.Unmarshal(body, w)
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return ParseError(err.Error())
	case errors.As(err, &te) && te.Field == "":
		return InvalidRequest("the request body must be a JSON object")
	case errors.As(err, &te):
		return typeError(body, te)
	}
	return InvalidRequest(err.Error())
}

// fromPath sets the ids the path carries; the body may repeat them, but
// not differ.
func (w *params10) fromPath(t RESTTarget) *Error {
	switch t.Method {
	case MethodGetTask, MethodCancelTask, MethodSubscribeToTask:
		return setFromPath(&w.ID, "id", t.TaskID)
	}
	if err := setFromPath(&w.TaskID, "taskId", t.TaskID); err != nil {
		return err
	}
	return setFromPath(&w.ID, "id", t.ConfigID)
}

// fromPath sets the ids the path carries where the 0.3 params hold them:
// the task's as id (TaskIdParams), but as taskId when a config is created.
func (w *params03) fromPath(t RESTTarget) *Error {
	switch t.Method {
	case MethodCreatePushConfig:
		return setFromPath(&w.TaskID, "taskId", t.TaskID)
	case MethodGetPushConfig, MethodDeletePushConfig:
		if err := setFromPath(&w.PushNotificationConfigID, "pushNotificationConfigId", t.ConfigID); err != nil {
			return err
		}
	}
	return setFromPath(&w.ID, "id", t.TaskID)
}

// fromQuery reads GetTask's historyLength, the one 0.3 query parameter.
func (w *params03) fromQuery(m Method, q url.Values) *Error {
	if m != MethodGetTask {
		return nil
	}
	return queryInt(q, "historyLength", &w.HistoryLength)
}

// setFromPath sets *field, named name, to v, the path's; "" sets nothing.
func setFromPath(field *string, name, v string) *Error {
	switch {
	case v == "":
	case *field != "" && *field != v:
		return InvalidParams(name, "differs from the "+name+" in the path")
	default:
		*field = v
	}
	return nil
}

// fromQuery reads the query parameters of GetTask and ListTasks. Others,
// A2A-Version among them, are not parameters of the operation.
func (w *params10) fromQuery(m Method, q url.Values) *Error {
	if m != MethodGetTask && m != MethodListTasks {
		return nil
	}
	if err := queryInt(q, "historyLength", &w.HistoryLength); err != nil {
		return err
	}
	if m == MethodGetTask {
		return nil
	}
	// In a fixed order, so that a request with two bad parameters is
	// always told of the same one.
	for _, p := range [...]struct {
		name string
		dst  *string
	}{{"contextId", &w.ContextID}, {"status", &w.Status}, {"pageToken", &w.PageToken},
		{"statusTimestampAfter", &w.StatusTimestampAfter}} {
		if err := queryString(q, p.name, p.dst); err != nil {
			return err
		}
	}
	if w.StatusTimestampAfter == "" {
		// a2a-go v2.3.1's REST client sends the filter by this name.
		if err := queryString(q, "lastUpdatedAfter", &w.StatusTimestampAfter); err != nil {
			return err
		}
	}
	if err := queryInt(q, "pageSize", &w.PageSize); err != nil {
		return err
	}
	if s, ok := q["includeArtifacts"]; ok {
		if len(s) != 1 {
			return InvalidParams("includeArtifacts", "must be given once")
		}
		b, err := strconv.ParseBool(s[0])
		if err != nil {
			return InvalidParams("includeArtifacts", "must be true or false")
		}
		w.IncludeArtifacts = &b
	}
	return nil
}

func queryString(q url.Values, name string, dst *string) *Error {
	s, ok := q[name]
	switch {
	case !ok:
		return nil
	case len(s) != 1:
		return InvalidParams(name, "must be given once")
	}
	*dst = s[0]
	return nil
}

func queryInt(q url.Values, name string, dst **int32) *Error {
	var s string
	if err := queryString(q, name, &s); err != nil || s == "" {
		return err
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return InvalidParams(name, "must be an integer")
	}
	v := int32(n)
	*dst = &v
	return nil
}

// AppendRESTResult appends result as the HTTP+JSON binding answers it: its
// JSON in version v, with no envelope. result is any of AppendResult's. On
// error dst is returned unchanged.
func AppendRESTResult(dst []byte, v Version, result any) ([]byte, error) {
	return appendResult(dst, form(v), result)
}

// AppendRESTListTasks is AppendRESTResult for a ListTasks answer, flushed
// as AppendListTasksResult flushes.
func AppendRESTListTasks(dst []byte, r *ListTasksResponse, flush func([]byte) ([]byte, error)) ([]byte, error) {
	return appendListTasksFlushing(dst, form10, r, flush)
}

// RESTStatus is the HTTP status and google.rpc.Code name of e in the
// HTTP+JSON binding (spec 1.0 §5.4; the JSON-RPC errors as the official
// SDKs map them; an internal error that asks to retry as 503 or 429).
func RESTStatus(e *Error) (status int, code string) {
	switch e.Code {
	case CodeParseError, CodeInvalidRequest, CodeInvalidParams, CodeContentTypeNotSupported:
		return 400, "INVALID_ARGUMENT"
	case CodeMethodNotFound, CodeTaskNotFound:
		return 404, "NOT_FOUND"
	case CodeTaskNotCancelable, CodePushNotificationNotSupported, CodeUnsupportedOperation,
		CodeExtendedAgentCardNotConfigured, CodeExtensionSupportRequired, CodeVersionNotSupported:
		return 400, "FAILED_PRECONDITION"
	case CodeUnauthenticated:
		return 401, "UNAUTHENTICATED"
	case CodeUnauthorized:
		return 403, "PERMISSION_DENIED"
	}
	switch e.Reason {
	case "UNAVAILABLE":
		return 503, "UNAVAILABLE"
	case "RESOURCE_EXHAUSTED":
		return 429, "RESOURCE_EXHAUSTED"
	}
	return 500, "INTERNAL"
}

// AppendRESTError appends e as the HTTP+JSON binding answers it (spec 1.0
// §11.6): {"error": google.rpc.Status}, code being the HTTP status, the
// details a google.rpc.ErrorInfo in the A2A domain and, for an invalid
// field, a google.rpc.BadRequest. The same object is a stream's error
// event.
func AppendRESTError(dst []byte, status int, e *Error) []byte {
	if e == nil {
		e = InternalError("")
	}
	_, code := RESTStatus(e)
	dst = strconv.AppendInt(append(dst, `{"error":{"code":`...), int64(status), 10)
	dst = append(append(dst, `,"status":"`...), code...)
	dst = jsonx.AppendString(append(dst, `","message":`...), errorMessage(V10, e))
	dst = append(dst, `,"details":`...)
	return append(appendDetails(dst, e), "}}"...)
}
