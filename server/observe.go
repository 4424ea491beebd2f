package server

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
)

// Observer is told what the handler does, for metrics, traces and the
// access log; caddymodule implements it with Prometheus, OpenTelemetry and
// Caddy's variables. Its methods run on the request path: they must be
// quick, safe for concurrent use, and never block.
//
// Every value it could count by is bounded: methods and versions are the
// protocol's, skills the skills file's, states the lifecycle's, codes the
// protocol's error codes, schemes the configuration's and causes authn's
// fixed phrases. Task ids reach only Annotate, which is for the access log.
type Observer interface {
	// StartMethod is called once a request of binding (a2a.BindingJSONRPC,
	// BindingHTTPJSON or BindingGRPC) has decoded as method m in version v.
	// It returns the context the request is then served with:
	// r's own, or one that carries a trace span for the method, which the
	// method's upstream calls continue.
	StartMethod(r *http.Request, binding string, m a2a.Method, v a2a.Version) context.Context
	// EndRequest is called once a request (of any binding) is answered: m is
	// MethodUnknown when it did not decode; code is 0 for a result, the
	// JSON-RPC error code of the answer (for a stream, of the error event
	// that ended it), or CodeCanceled or CodeDeadlineExceeded when the
	// request's context ended first (a stream the client left). ctx is
	// what StartMethod returned, or the request's own.
	EndRequest(ctx context.Context, m a2a.Method, v a2a.Version, code int)
	// Detach carries what a task run keeps of its request's context (the
	// trace span) into the run's own context, which outlives the request.
	Detach(request, run context.Context) context.Context
	// TaskEnded is called when a task of skill ("": none matched) reaches
	// state, terminal or interrupted: as a run of this handler's leaves it,
	// or canceled by CancelTask (a run canceled meanwhile is not told
	// again).
	TaskEnded(skill string, state a2a.TaskState)
	// TaskRun is called when a run of skill has recorded its outcome, d
	// after it started.
	TaskRun(skill string, d time.Duration)
	// AuthFailure is called for each request authentication or
	// authorization refuses.
	AuthFailure(f *authn.Failure)
	// Annotate says what a request is about, for the access log: the
	// skill chosen and the task's id, each "" when there is none.
	Annotate(ctx context.Context, skill, taskID string)
}

// Codes EndRequest is told for a request that ended unanswered because its
// context did: gRPC's status codes for these ends (the protocol's error
// codes are all negative).
const (
	// CodeCanceled: the caller went away (hung up, or canceled the call).
	CodeCanceled = int(codes.Canceled)
	// CodeDeadlineExceeded: the caller's deadline (a gRPC call's
	// grpc-timeout) passed.
	CodeDeadlineExceeded = int(codes.DeadlineExceeded)
)

// observed is the ResponseWriter of a request served under h.obs, of any
// binding: it keeps what EndRequest is told. Pooled, so that observing
// allocates nothing.
type observed struct {
	http.ResponseWriter
	ctx     context.Context
	binding string
	method  a2a.Method
	version a2a.Version
	code    int
}

// Unwrap lets http.ResponseController reach the deadlines and flushing of
// the writer underneath.
func (o *observed) Unwrap() http.ResponseWriter { return o.ResponseWriter }

var observedPool = sync.Pool{New: func() any { return new(observed) }}

// observe wraps w for a request of binding in version v served under h.obs;
// endObserved must follow once it is answered (also when the handler
// panics to abort a cut answer).
func (h *Handler) observe(w http.ResponseWriter, r *http.Request, binding string, v a2a.Version) *observed {
	o := observedPool.Get().(*observed)
	*o = observed{ResponseWriter: w, ctx: r.Context(), binding: binding, version: v}
	return o
}

// endObserved tells the observer how the request of o ended.
func (h *Handler) endObserved(o *observed) {
	h.obs.EndRequest(o.ctx, o.method, o.version, o.code)
	*o = observed{}
	observedPool.Put(o)
}

// startMethod tells the observer, if any, which method r is, and returns
// r under the context it gives back.
func (h *Handler) startMethod(w http.ResponseWriter, r *http.Request, m a2a.Method, v a2a.Version) *http.Request {
	o, ok := w.(*observed)
	if !ok {
		return r
	}
	o.method = m
	if ctx := h.obs.StartMethod(r, o.binding, m, v); ctx != r.Context() {
		o.ctx = ctx
		r = r.WithContext(ctx)
	}
	return r
}

// noteCode records the JSON-RPC error code an observed answer carries.
func noteCode(w http.ResponseWriter, code int) {
	if o, ok := w.(*observed); ok {
		o.code = code
	}
}

// noteEnded records on an observed answer that the request's context
// ended, with err (its Err), before the request was answered in full.
func noteEnded(w http.ResponseWriter, err error) {
	code := CodeCanceled
	if errors.Is(err, context.DeadlineExceeded) {
		code = CodeDeadlineExceeded
	}
	noteCode(w, code)
}

// annotate tells the observer what r is about: a skill ("": none) and a
// task id.
func (h *Handler) annotate(r *http.Request, skill, taskID string) {
	if h.obs != nil {
		h.obs.Annotate(r.Context(), skill, taskID)
	}
}

// annotateTask tells the observer which task r is about, once it is
// found: an id that names no task of the caller's is the caller's free
// text, and stays out of the logs.
func (h *Handler) annotateTask(r *http.Request, task *a2a.Task) {
	if task != nil {
		h.annotate(r, skillOf(task), task.ID)
	}
}
