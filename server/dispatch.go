package server

import (
	"errors"
	"net/http"

	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// outcome is what a method produced, in the one model, for a binding to
// write: an error, a stream (first, then sub's events; sub is nil for a
// stream of one event), or a result.
type outcome struct {
	// err is an *authn.Failure (refused: 401 or 403), an *a2a.Error, or
	// any other error, which the caller sees as an internal error.
	err error
	// ended is the error of the request's context when it ended before
	// the request was answered: nobody is left to answer.
	ended  error
	first  *a2a.StreamResponse
	sub    *tasks.Subscription
	result any
}

func failed(err error) outcome { return outcome{err: err} }

// invoke runs one decoded request of call c, whatever the binding it came
// by, for c's caller (nil: anonymous) in c's version. The caller owns the
// tasks it creates and sees no others: another caller's task answers
// exactly like an unknown one. A stream outcome holds a subscription that
// the binding must close.
func (h *Handler) invoke(r *http.Request, c *Exchange, req *a2a.Request) outcome {
	v, caller := c.Version, c.Caller
	owner := caller.Owner()

	switch req.Method {
	case a2a.MethodSendMessage:
		return h.sendMessage(r, v, req.Params.(*a2a.SendMessageRequest), caller)
	case a2a.MethodSendStreamingMessage:
		return h.sendStreamingMessage(r, v, req.Params.(*a2a.SendMessageRequest), caller)
	case a2a.MethodGetTask:
		p := req.Params.(*a2a.GetTaskRequest)
		task, err := h.tasks.Get(owner, p.ID, p.HistoryLength)
		h.annotateTask(r, task)
		return answered(task, err)
	case a2a.MethodListTasks:
		list, err := h.tasks.List(owner, req.Params.(*a2a.ListTasksRequest))
		return answered(list, err)
	case a2a.MethodCancelTask:
		task, err := h.tasks.Cancel(owner, req.Params.(*a2a.TaskIDRequest).ID)
		h.annotateTask(r, task)
		if task != nil && h.obs != nil {
			h.obs.TaskEnded(skillOf(task), task.Status.State)
		}
		return answered(task, err)
	case a2a.MethodSubscribeToTask:
		task, sub, err := h.tasks.Subscribe(owner, req.Params.(*a2a.TaskIDRequest).ID)
		h.annotateTask(r, task)
		if err != nil {
			return failed(err)
		}
		return outcome{first: &a2a.StreamResponse{Task: task}, sub: sub}
	case a2a.MethodCreatePushConfig, a2a.MethodGetPushConfig, a2a.MethodListPushConfigs, a2a.MethodDeletePushConfig:
		return h.pushMethod(v, req.Method, req.Params.(*a2a.TaskPushNotificationConfig), owner)
	case a2a.MethodGetExtendedAgentCard:
		if h.extendedCard == nil {
			return failed(a2a.ExtendedAgentCardNotConfigured())
		}
		// Spec 1.0 §13.3: the extended card requires authentication, also
		// where the agent-wide requirement admits anonymous callers.
		if caller == nil {
			return failed(h.auth.Challenge())
		}
		return outcome{result: h.extendedCard.JSON()}
	}
	return failed(a2a.MethodNotFound(v, req.Method.Name(v)))
}

// answered is the outcome of a method that answers result or fails.
func answered[T any](result *T, err error) outcome {
	if err != nil {
		return failed(err)
	}
	return outcome{result: result}
}

// answer writes out, the outcome of call c, in c's form, for every
// binding that answers in JSON over HTTP: a refusal, a protocol error, a
// stream or a result; nothing when the request's context ended first.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, c *Exchange, out outcome) {
	var f *authn.Failure
	switch list, isList := out.result.(*a2a.ListTasksResponse); {
	case out.ended != nil:
		c.EndedBy(out.ended) // nobody is left to answer
	case errors.As(out.err, &f):
		h.refuse(w, c, f)
	case out.err != nil:
		h.fail(w, c, c.Method, h.protocolError(c.Method, out.err))
	case out.first != nil:
		h.stream(w, r, c, out.first, out.sub)
	case isList:
		h.writeList(w, c, list)
	default:
		h.writeResult(w, c, out.result)
	}
}

// fail answers a protocol error of a request for method m as c's form
// has it: an error object with its HTTP status, or one SSE error event.
func (h *Handler) fail(w http.ResponseWriter, c *Exchange, m a2a.Method, e *a2a.Error) {
	if c.form.errorStreams(m) {
		s := h.startSSE(w, c)
		defer s.end()
		h.logStreamEnd(s.error(e))
		return
	}
	h.writeError(w, c.form.errorStatus(e), c, e)
}

// protocolError is err as the caller sees it: errors the task layer meant
// for the caller keep their code, anything else is internal.
func (h *Handler) protocolError(m a2a.Method, err error) *a2a.Error {
	var protoErr *a2a.Error
	if errors.As(err, &protoErr) {
		return protoErr
	}
	h.log.Error("A2A method failed", zap.String("method", m.Name(a2a.V10)), zap.Error(err))
	return a2a.InternalError("the request could not be completed")
}
