package server

import (
	"mime"
	"net/http"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// The HTTP+JSON binding (spec 1.0 §11, and the same paths in 0.3): the
// same methods as JSON-RPC, run by invoke on the same engine (authentication, owner isolation, limits,
// body checks, deadlines, observer), with the operation named by the
// request's method and path, its parameters in the path, query and body,
// and answers and errors as the binding writes them.

// restTarget finds the HTTP+JSON operation r names under the binding's
// path. ok is false when r is not for the binding: outside its path, or,
// when the binding is at "/", on a path that names none of its resources
// (JSON-RPC answers those).
func (h *Handler) restTarget(r *http.Request) (t a2a.RESTTarget, allow, path string, ok bool) {
	path = r.URL.EscapedPath()
	if h.restPath != "/" {
		rest, under := strings.CutPrefix(path, h.restPath)
		if !under || rest != "" && rest[0] != '/' {
			return t, "", "", false
		}
		path = rest
	}
	t, allow, found := a2a.MatchREST(r.Method, path)
	return t, allow, path, found || h.restPath != "/"
}

// serveREST answers an HTTP+JSON request for t (MethodUnknown: its path
// names no operation, or none for its HTTP method, which allow lists).
func (h *Handler) serveREST(w http.ResponseWriter, r *http.Request, version a2a.Version, versionErr *a2a.Error,
	t a2a.RESTTarget, allow, path string) {
	form := wire{v: version, rest: true, mediaType: restMediaType(r)}
	switch {
	case t.Method == a2a.MethodUnknown && allow != "":
		w.Header().Set("Allow", allow)
		h.writeError(w, http.StatusMethodNotAllowed, form,
			a2a.InvalidRequest(path+" takes "+allow+", not "+r.Method))
		return
	case t.Method == a2a.MethodUnknown:
		h.writeError(w, http.StatusNotFound, form, &a2a.Error{Code: a2a.CodeMethodNotFound,
			Message: "Method not found", Reason: "METHOD_NOT_FOUND",
			Description: "no HTTP+JSON operation at " + path})
		return
	}

	// Who is calling is settled before the body is read, as for JSON-RPC.
	caller, failure := h.authenticate(r)
	if failure != nil {
		h.refuse(w, form, failure)
		return
	}
	if versionErr != nil {
		h.writeError(w, http.StatusBadRequest, form, versionErr)
		return
	}

	req, ok := h.decodeREST(w, r, t, form)
	if !ok {
		return
	}
	r = h.startMethod(w, r, req.Method, version)
	h.answer(w, r, form, req.Method, h.invoke(r, version, req, caller))
}

// decodeREST reads the body of a POST and decodes the request's
// parameters, answering the error itself when it fails.
func (h *Handler) decodeREST(w http.ResponseWriter, r *http.Request, t a2a.RESTTarget, form wire) (*a2a.Request, bool) {
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
			h.writeError(w, http.StatusUnsupportedMediaType, form,
				a2a.InvalidRequest("Content-Type must be "+a2a.RESTContentType+" or application/json"))
			return nil, false
		}
		var status int
		var e *a2a.Error
		if body, status, e = h.readRequestBody(w, r, buf); e != nil {
			h.writeError(w, status, form, e)
			return nil, false
		}
		if optional && len(body) > 0 {
			h.writeError(w, http.StatusUnsupportedMediaType, form,
				a2a.InvalidRequest("a body needs Content-Type "+a2a.RESTContentType+" or application/json"))
			return nil, false
		}
	}
	req, e := a2a.DecodeRESTRequest(form.v, t, r.URL.Query(), body)
	if e != nil {
		h.fail(w, form, t.Method, e)
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
