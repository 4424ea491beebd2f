package server

import (
	"errors"
	"net/http"

	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
)

// dispatch runs one decoded request of caller (nil: anonymous) and answers
// it. The caller owns the tasks it creates and sees no others: another
// caller's task answers exactly like an unknown one.
func (h *Handler) dispatch(w http.ResponseWriter, r *http.Request, v a2a.Version, req *a2a.Request, caller *authn.Identity) {
	owner := caller.Owner()

	switch req.Method {
	case a2a.MethodSendMessage:
		h.sendMessage(w, r, v, req, caller)
	case a2a.MethodSendStreamingMessage:
		h.sendStreamingMessage(w, r, v, req, caller)
	case a2a.MethodGetTask:
		task, err := h.getTask(r, owner, req.Params.(*a2a.GetTaskRequest))
		h.answer(w, v, req, task, err)
	case a2a.MethodListTasks:
		list, err := h.tasks.List(owner, req.Params.(*a2a.ListTasksRequest))
		if err != nil {
			h.fail(w, v, req, h.protocolError(req.Method, err))
			return
		}
		h.writeList(w, req.ID, list)
	case a2a.MethodCancelTask:
		task, err := h.cancelTask(r, owner, req.Params.(*a2a.TaskIDRequest))
		h.answer(w, v, req, task, err)
	case a2a.MethodSubscribeToTask:
		first, sub, err := h.subscribeTask(r, owner, req.Params.(*a2a.TaskIDRequest))
		if err != nil {
			h.fail(w, v, req, h.protocolError(req.Method, err))
			return
		}
		h.stream(w, r, v, req.ID, first, sub)
	case a2a.MethodCreatePushConfig, a2a.MethodGetPushConfig, a2a.MethodListPushConfigs, a2a.MethodDeletePushConfig:
		res, err := h.pushCall(v, req.Method, req.Params.(*a2a.TaskPushNotificationConfig), owner)
		h.answer(w, v, req, res, err)
	case a2a.MethodGetExtendedAgentCard:
		card, err := h.extendedCardFor(caller)
		if err != nil {
			h.reject(w, v, req, err)
			return
		}
		h.writeResult(w, v, req.ID, card.JSON())
	default:
		h.fail(w, v, req, a2a.MethodNotFound(v, req.Method.Name(v)))
	}
}

// fail answers a protocol error in the form the caller reads: one SSE error
// event for a streaming method (the official SDKs read any 200 answer to a
// streaming call as a stream), a JSON-RPC error object otherwise.
func (h *Handler) fail(w http.ResponseWriter, v a2a.Version, req *a2a.Request, e *a2a.Error) {
	if req.Method.Streaming() {
		s := h.startSSE(w, v, req.ID)
		defer s.end()
		h.logStreamEnd(s.error(e))
		return
	}
	h.writeError(w, http.StatusOK, v, req.ID, e)
}

// reject answers an error of the engine: a refusal of authn as 401 or 403,
// anything else as a protocol error.
func (h *Handler) reject(w http.ResponseWriter, v a2a.Version, req *a2a.Request, err error) {
	var f *authn.Failure
	if errors.As(err, &f) {
		h.refuse(w, v, req.ID, f)
		return
	}
	h.fail(w, v, req, h.protocolError(req.Method, err))
}

// answer writes result, or err as a protocol error: errors the task layer
// meant for the caller keep their code, anything else is internal.
func (h *Handler) answer(w http.ResponseWriter, v a2a.Version, req *a2a.Request, result any, err error) {
	if err != nil {
		h.reject(w, v, req, err)
		return
	}
	h.writeResult(w, v, req.ID, result)
}

func (h *Handler) protocolError(m a2a.Method, err error) *a2a.Error {
	var protoErr *a2a.Error
	if errors.As(err, &protoErr) {
		return protoErr
	}
	h.log.Error("A2A method failed", zap.String("method", m.Name(a2a.V10)), zap.Error(err))
	return a2a.InternalError("the request could not be completed")
}
