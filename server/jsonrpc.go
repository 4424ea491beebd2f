package server

import (
	"mime"
	"net/http"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// The JSON-RPC binding (spec 1.0 §9, and 0.3's): a POST whose body is a
// JSON-RPC request, on any path that routes here and no other binding
// takes; answers are JSON-RPC responses, streams SSE events of them.
type jsonRPC struct {
	noLifecycle
	h *Handler
}

func (b jsonRPC) Serve(w http.ResponseWriter, r *http.Request, c *Exchange) bool {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "A2A JSON-RPC endpoint: use POST with Content-Type: application/json", http.StatusMethodNotAllowed)
		return true
	}
	h := b.h
	version, versionErr := requestVersion(r)
	c.begin(a2a.BindingJSONRPC, version, b, "application/json")
	// Who is calling is settled before the body is read: an unauthenticated
	// caller costs a header lookup, never a body of up to maxBody bytes.
	caller, failure := h.authenticate(r)
	if failure != nil {
		h.refuse(w, c, failure)
		return true
	}
	c.Caller = caller

	if mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mediaType != "application/json" {
		h.writeError(w, http.StatusUnsupportedMediaType, c, a2a.InvalidRequest("Content-Type must be application/json"))
		return true
	}

	if req, ok := b.decode(w, r, c, versionErr); ok {
		r = h.startMethod(r, c, req.Method)
		h.answer(w, r, c, h.invoke(r, c, req))
	}
	return true
}

// decode reads the body into a pooled buffer and decodes it, answering
// the error itself when it fails. The buffer goes back to the pool before
// dispatch: the decoded request holds copies of what it needs, so a stream
// that stays open for hours does not pin the body.
func (b jsonRPC) decode(w http.ResponseWriter, r *http.Request, c *Exchange, versionErr *a2a.Error) (*a2a.Request, bool) {
	h := b.h
	buf := getBuffer()
	defer putBuffer(buf)
	body, status, readErr := h.readRequestBody(w, r, buf)
	if readErr != nil {
		h.writeError(w, status, c, readErr)
		return nil, false
	}

	if versionErr != nil {
		req := a2a.PeekRequest(body)
		c.id = req.ID
		h.fail(w, c, req.Method, versionErr)
		return nil, false
	}
	req, protoErr := a2a.DecodeRequest(c.Version, body)
	if protoErr != nil {
		if req != nil {
			c.id = req.ID
			h.fail(w, c, req.Method, protoErr)
		} else {
			h.writeError(w, http.StatusOK, c, protoErr)
		}
		return nil, false
	}
	c.id = req.ID
	return req, true
}

// The JSON-RPC form: responses to the request's id, errors with 200 as
// JSON-RPC over HTTP expects, and an error of a streaming method as a
// stream of one error event (the official SDKs read any 200 answer to a
// streaming call as a stream).

func (jsonRPC) appendResult(dst []byte, c *Exchange, result any) ([]byte, error) {
	return a2a.AppendResult(dst, c.Version, c.id, result)
}

func (jsonRPC) appendList(dst []byte, c *Exchange, list *a2a.ListTasksResponse, flush func([]byte) ([]byte, error)) ([]byte, error) {
	return a2a.AppendListTasksResult(dst, c.id, list, flush)
}

func (jsonRPC) appendError(dst []byte, c *Exchange, _ int, e *a2a.Error) []byte {
	return a2a.AppendError(dst, c.Version, c.id, e)
}

func (jsonRPC) errorStatus(*a2a.Error) int { return http.StatusOK }

// errorEvent: a JSON-RPC error event is a response like any other.
func (jsonRPC) errorEvent() string { return "data: " }

func (jsonRPC) errorStreams(m a2a.Method) bool { return m.Streaming() }
