package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// A Binding is one wire form served on the Handler: JSON-RPC
// (jsonrpc.go), HTTP+JSON (rest.go), gRPC (grpc.go); and the skills as
// MCP tools (server/mcp). Each is an adapter over the one engine: an A2A
// binding decodes its requests into a2a.Request, runs them by invoke, and
// writes each outcome (a result, a stream, an error, a refusal) in its own
// form; a binding of another protocol goes through the surface of
// transport.go. Each records on the call how it ended: what every binding
// shares travels in the call, from decoding to the observer.
//
// The adapter builds the bindings (Config.Bindings), each by a
// constructor such as HTTPJSON or GRPC, and New gives them the Handler.
// A binding on a listener of its own, which ServeHTTP never sees, takes
// its calls from newCall and goes through authenticate, startMethod,
// invoke and endCall as the others do: the same authentication, limits
// and observer.
type Binding interface {
	// Serve answers r, of call c, when r is the binding's, and reports
	// whether it was: false, and nothing written, for a request another
	// binding may take. A request the binding takes as a call of its own
	// begins c (Exchange.Begin); one it answers as plain HTTP (a JSON-RPC
	// GET) is not observed.
	Serve(w http.ResponseWriter, r *http.Request, c *Exchange) bool
	// Shutdown ends what would hold the HTTP server's shutdown for ever:
	// long-lived streams (an MCP session's standalone stream), also those
	// opened after it. The calls under way still answer. The adapter
	// registers Handler.Shutdown with the HTTP server (RegisterOnShutdown).
	Shutdown()
	// Close releases what the binding holds once the calls under way on
	// it end (at once when none is), for a Handler that is discarded; the
	// requests that come after are refused.
	Close()
}

// NewBinding makes a binding of the Handler New is making, or fails for
// a setting the binding cannot take.
type NewBinding func(h *Handler) (Binding, error)

// noLifecycle is the lifecycle of a binding that holds nothing past its
// requests: nothing to end or release.
type noLifecycle struct{}

func (noLifecycle) Shutdown() {}

func (noLifecycle) Close() {}

// jsonForm is how a binding that answers over HTTP in JSON, and streams
// as SSE, writes its answers; the call holds the form of its binding.
type jsonForm interface {
	// appendResult appends a whole answer, or one stream event's data.
	appendResult(dst []byte, c *Exchange, result any) ([]byte, error)
	// appendList appends a ListTasks answer, flushed as it grows.
	appendList(dst []byte, c *Exchange, list *a2a.ListTasksResponse, flush func([]byte) ([]byte, error)) ([]byte, error)
	// appendError appends an error answer, or an error event's data;
	// status is the answer's HTTP status (0 for a stream's event).
	appendError(dst []byte, c *Exchange, status int, e *a2a.Error) []byte
	// errorStatus is the HTTP status of a protocol error's answer.
	errorStatus(e *a2a.Error) int
	// errorEvent opens a stream's error event.
	errorEvent() string
	// errorStreams reports whether a protocol error of method m is
	// answered as a stream of one error event.
	errorStreams(m a2a.Method) bool
}

// An Exchange is one call of any binding, from its request to its answer:
// what the observer is told (Call), and what the answers are written
// with. A binding begins it (Begin, for a binding outside this package),
// and the Handler ends it once the binding's Serve returns.
type Exchange struct {
	Call
	// ctx is the context EndRequest is told: StartMethod's, or the
	// request's own.
	ctx context.Context
	// form writes the answers of a binding that answers in JSON over HTTP.
	form jsonForm
	// contentType is the Content-Type of its JSON answers.
	contentType string
	// id is the JSON-RPC request's id, which its answers repeat.
	id json.RawMessage
	// body holds the request body ReadBody read, until the call ends.
	body *[]byte
}

// Calls are pooled, so that a call costs no allocation.
var callPool = sync.Pool{New: func() any { return new(Exchange) }}

// newCall takes a call for a request served under ctx; endCall must
// follow once it is answered (also when the handler panics to abort a cut
// answer).
func (h *Handler) newCall(ctx context.Context) *Exchange {
	c := callPool.Get().(*Exchange)
	c.ctx = ctx
	return c
}

// begin makes c a call of binding in version v, answered in form (nil for
// a binding that writes no JSON).
func (c *Exchange) begin(binding string, v a2a.Version, form jsonForm, contentType string) {
	c.Binding, c.Version, c.form, c.contentType = binding, v, form, contentType
}

// startMethod records that c decoded as method m and tells the observer,
// if any; it returns r under the context the observer gives back.
func (h *Handler) startMethod(r *http.Request, c *Exchange, m a2a.Method) *http.Request {
	c.Method = m
	return h.observeStart(r, c)
}

// observeStart tells the observer, if any, that c has decoded as its
// method; it returns r under the context the observer gives back.
func (h *Handler) observeStart(r *http.Request, c *Exchange) *http.Request {
	if h.obs == nil {
		return r
	}
	if ctx := h.obs.StartMethod(r, c.Call); ctx != r.Context() {
		c.ctx = ctx
		r = r.WithContext(ctx)
	}
	return r
}

// endCall tells the observer how c ended, if c began, and gives c back.
func (h *Handler) endCall(c *Exchange) {
	if h.obs != nil && c.Binding != "" {
		h.obs.EndRequest(c.ctx, c.Call)
	}
	if c.body != nil {
		putBuffer(c.body)
	}
	*c = Exchange{}
	callPool.Put(c)
}

// EndedBy records that c's context ended, with err (its Err), before c
// was answered in full: nobody is left to answer.
func (c *Exchange) EndedBy(err error) {
	c.Code = CodeCanceled
	if errors.Is(err, context.DeadlineExceeded) {
		c.Code = CodeDeadlineExceeded
	}
}
