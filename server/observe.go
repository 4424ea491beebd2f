package server

import (
	"context"
	"net/http"
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
	// StartMethod is called once a call has decoded as its method (c.Method,
	// in c.Version, of c.Binding, by c.Caller). It returns the context the
	// request is then served with: r's own, or one that carries a trace
	// span for the method, which the method's upstream calls continue.
	StartMethod(r *http.Request, c Call) context.Context
	// EndRequest is called once a call (of any binding) is answered, with
	// c.Code saying how it ended. c.Method is MethodUnknown when the request
	// did not decode. ctx is what StartMethod returned, or the request's
	// own.
	EndRequest(ctx context.Context, c Call)
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

// Call is what every binding knows of one call, from its decoding to its
// end: what the observer is told.
type Call struct {
	// Binding is the binding the call came by: a2a.BindingJSONRPC,
	// BindingHTTPJSON or BindingGRPC, or the name of a binding of
	// another protocol (MCP's).
	Binding string
	// Method is the A2A method the request decoded as: MethodUnknown
	// until it did, or when it did not, and for a call of another
	// protocol (Operation names its method).
	Method a2a.Method
	// Operation is the method of a call of another protocol than A2A, as
	// its binding names it, from a fixed set (MCP's tools/call, …):
	// UnknownMethod until it decoded, or when it did not. "" for an A2A
	// call.
	Operation string
	// Version is the A2A version the call speaks (for a call of another
	// protocol, the one its errors are written in: it speaks none).
	Version a2a.Version
	// Caller is who is calling: nil for an anonymous caller, and until
	// authentication names one.
	Caller *authn.Identity
	// Code is how the call ended: 0 for a result, the JSON-RPC error code
	// of the answer (for a stream, of the error event that ended it), or
	// CodeCanceled or CodeDeadlineExceeded when the request's context
	// ended first (a stream the client left).
	Code int
}

// UnknownMethod is the method label of a call whose request did not
// decode.
const UnknownMethod = "unknown"

// MethodLabel is the call's method as metrics, spans and logs name it:
// an A2A method's 1.0 name (SendMessage, also for 0.3's message/send),
// the Operation of a call of another protocol, or UnknownMethod.
func (c *Call) MethodLabel() string {
	switch {
	case c.Operation != "":
		return c.Operation
	case c.Method == a2a.MethodUnknown:
		return UnknownMethod
	}
	return c.Method.Name(a2a.V10)
}

// VersionLabel is the A2A version the call speaks, as metrics, spans and
// logs name it: "" for a call of another protocol, which speaks none.
func (c *Call) VersionLabel() string {
	if c.Operation != "" {
		return ""
	}
	return c.Version.String()
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
