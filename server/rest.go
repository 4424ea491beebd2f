package server

import (
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// The HTTP+JSON binding (spec 1.0 §11, and the same paths in 0.3 as
// a2a-go's a2av0 client speaks it; below /v1/, 0.3 as the 0.3
// specification defines it): the same methods as JSON-RPC, run by invoke
// on the same engine (authentication, owner isolation, limits, body
// checks, deadlines, observer), with the operation named by the request's
// method and path, its parameters in the path, query and body, and
// answers and errors as the binding writes them: in the form of the path
// (httpJSON, or proto03Form below /v1/).
type httpJSON struct {
	noLifecycle
	h *Handler
	// path is where the binding is served (HTTPJSON).
	path string
}

// HTTPJSON serves the HTTP+JSON binding (spec 1.0 §11, and the same
// paths in 0.3) below the request path path: "/rest" answers POST
// /rest/message:send. At "/" its operations share the paths of the
// JSON-RPC endpoint, which answers every other path.
func HTTPJSON(path string) NewBinding {
	return func(h *Handler) (Binding, error) {
		if err := CheckRESTPath(path); err != nil {
			return nil, fmt.Errorf("server: REST path: %w", err)
		}
		return &httpJSON{h: h, path: path}, nil
	}
}

// target finds the HTTP+JSON operation r names under the binding's
// path. ok is false when r is not for the binding: outside its path, or,
// when the binding is at "/", on a path that names none of its resources
// (JSON-RPC answers those).
func (b *httpJSON) target(r *http.Request) (t a2a.RESTTarget, allow, path string, ok bool) {
	path = r.URL.EscapedPath()
	if b.path != "/" {
		rest, under := strings.CutPrefix(path, b.path)
		if !under || rest != "" && rest[0] != '/' {
			return t, "", "", false
		}
		path = rest
	}
	t, allow, found := a2a.MatchREST(r.Method, path)
	return t, allow, path, found || b.path != "/"
}

// serve answers an HTTP+JSON request for the operation its path names.
func (b *httpJSON) Serve(w http.ResponseWriter, r *http.Request, c *Exchange) bool {
	t, allow, path, ok := b.target(r)
	if !ok {
		return false
	}
	h := b.h
	version, versionErr := requestVersion(r)
	if t.Proto03 {
		c.begin(a2a.BindingHTTPJSON, version, proto03Form{}, "application/json") // 0.3 §3.2.3
	} else {
		c.begin(a2a.BindingHTTPJSON, version, b, restMediaType(r))
	}
	switch {
	case t.Method == a2a.MethodUnknown && allow != "":
		w.Header().Set("Allow", allow)
		h.writeError(w, http.StatusMethodNotAllowed, c,
			a2a.InvalidRequest(path+" takes "+allow+", not "+r.Method))
		return true
	case t.Method == a2a.MethodUnknown:
		h.writeError(w, http.StatusNotFound, c, &a2a.Error{Code: a2a.CodeMethodNotFound,
			Message: "Method not found", Reason: "METHOD_NOT_FOUND",
			Description: "no HTTP+JSON operation at " + path})
		return true
	}

	// Who is calling is settled before the body is read, as for JSON-RPC.
	caller, failure := h.authenticate(r)
	if failure != nil {
		h.refuse(w, c, failure)
		return true
	}
	c.Caller = caller
	if versionErr != nil {
		h.writeError(w, http.StatusBadRequest, c, versionErr)
		return true
	}
	if t.Proto03 && c.Version != a2a.V03 {
		h.writeError(w, http.StatusNotFound, c, a2a.NotProto03(c.Version))
		return true
	}

	if req, ok := b.decode(w, r, c, t); ok {
		r = h.startMethod(r, c, req.Method)
		h.answer(w, r, c, h.invoke(r, c, req))
	}
	return true
}

// decode reads the body of a POST and decodes the request's parameters,
// answering the error itself when it fails.
func (b *httpJSON) decode(w http.ResponseWriter, r *http.Request, c *Exchange, t a2a.RESTTarget) (*a2a.Request, bool) {
	h := b.h
	var body []byte
	buf := getBuffer()
	defer putBuffer(buf)
	if r.Method == http.MethodPost {
		contentType := r.Header.Get("Content-Type")
		// Cancel and subscribe have no required member: a client may send
		// no body, and then no Content-Type.
		optional := contentType == "" && (t.Method == a2a.MethodCancelTask || t.Method == a2a.MethodSubscribeToTask)
		if mediaType, _, err := mime.ParseMediaType(contentType); !optional &&
			(err != nil || mediaType != a2a.RESTContentType && mediaType != "application/json") {
			h.writeError(w, http.StatusUnsupportedMediaType, c,
				a2a.InvalidRequest("Content-Type must be "+a2a.RESTContentType+" or application/json"))
			return nil, false
		}
		var status int
		var e *a2a.Error
		if body, status, e = h.readRequestBody(w, r, buf); e != nil {
			h.writeError(w, status, c, e)
			return nil, false
		}
		if optional && len(body) > 0 {
			h.writeError(w, http.StatusUnsupportedMediaType, c,
				a2a.InvalidRequest("a body needs Content-Type "+a2a.RESTContentType+" or application/json"))
			return nil, false
		}
	}
	req, e := a2a.DecodeRESTRequest(c.Version, t, r.URL.Query(), body)
	if e != nil {
		h.fail(w, c, t.Method, e)
		return nil, false
	}
	return req, true
}

// restMediaType is the Content-Type of the JSON answers to r:
// application/a2a+json (spec 1.0 §11.1) when the client names it (its
// Accept or Content-Type), application/json otherwise: a2a-go's REST
// clients read an error only as application/json, and its 0.3 one sends
// neither header on a request without a body.
func restMediaType(r *http.Request) string {
	if strings.Contains(r.Header.Get("Accept"), a2a.RESTContentType) ||
		strings.HasPrefix(r.Header.Get("Content-Type"), a2a.RESTContentType) {
		return a2a.RESTContentType
	}
	return "application/json"
}

// The HTTP+JSON form: bare objects, errors as google.rpc.Status with
// their own HTTP status, which the body repeats, and in a stream as events
// of type error, as @a2a-js/sdk reads them (a2a-go reads their data
// either way).

func (*httpJSON) appendResult(dst []byte, c *Exchange, result any) ([]byte, error) {
	return a2a.AppendRESTResult(dst, c.Version, result)
}

func (*httpJSON) appendList(dst []byte, _ *Exchange, list *a2a.ListTasksResponse, flush func([]byte) ([]byte, error)) ([]byte, error) {
	return a2a.AppendRESTListTasks(dst, list, flush)
}

func (*httpJSON) appendError(dst []byte, _ *Exchange, status int, e *a2a.Error) []byte {
	if status == 0 || status == http.StatusOK {
		status, _ = a2a.RESTStatus(e)
	}
	return a2a.AppendRESTError(dst, status, e)
}

func (*httpJSON) errorStatus(e *a2a.Error) int {
	status, _ := a2a.RESTStatus(e)
	return status
}

func (*httpJSON) errorEvent() string { return "event: error\ndata: " }

func (*httpJSON) errorStreams(a2a.Method) bool { return false }

// proto03Form writes the answers below /v1/, the HTTP+JSON binding of the
// 0.3 specification: the 0.3 proto's ProtoJSON, and errors as
// {"code", "error", "message"} with the HTTP statuses of the 0.3 SDKs
// (a2a.Proto03Status), in a stream as events of type error.
type proto03Form struct{}

func (proto03Form) appendResult(dst []byte, _ *Exchange, result any) ([]byte, error) {
	return a2a.AppendProto03Result(dst, result)
}

// appendList is never called: no /v1/ path names ListTasks, which 0.3
// does not have.
func (proto03Form) appendList(dst []byte, _ *Exchange, list *a2a.ListTasksResponse, _ func([]byte) ([]byte, error)) ([]byte, error) {
	return a2a.AppendProto03Result(dst, list)
}

func (proto03Form) appendError(dst []byte, _ *Exchange, _ int, e *a2a.Error) []byte {
	return a2a.AppendProto03Error(dst, e)
}

func (proto03Form) errorStatus(e *a2a.Error) int { return a2a.Proto03Status(e) }

func (proto03Form) errorEvent() string { return "event: error\ndata: " }

func (proto03Form) errorStreams(a2a.Method) bool { return false }
