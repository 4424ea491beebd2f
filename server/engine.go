package server

import (
	"net/http"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// The methods below are the engine every binding calls with the internal
// model: JSON-RPC (dispatch) and gRPC (grpc.go). Each answers a result or
// an error that is a protocol error, an *authn.Failure, or an internal
// failure (see protocolError). SendMessage and SendStreamingMessage are
// admit, then send or startStream (send.go).

// getTask answers GetTask.
func (h *Handler) getTask(r *http.Request, owner string, p *a2a.GetTaskRequest) (*a2a.Task, error) {
	task, err := h.tasks.Get(owner, p.ID, p.HistoryLength)
	h.annotateTask(r, task)
	return task, err
}

// cancelTask answers CancelTask.
func (h *Handler) cancelTask(r *http.Request, owner string, p *a2a.TaskIDRequest) (*a2a.Task, error) {
	task, err := h.tasks.Cancel(owner, p.ID)
	h.annotateTask(r, task)
	if task != nil && h.obs != nil {
		h.obs.TaskEnded(skillOf(task), task.Status.State)
	}
	return task, err
}

// subscribeTask answers SubscribeToTask: the task's first event and the
// subscription to the rest.
func (h *Handler) subscribeTask(r *http.Request, owner string, p *a2a.TaskIDRequest) (*a2a.StreamResponse, *tasks.Subscription, error) {
	task, sub, err := h.tasks.Subscribe(owner, p.ID)
	h.annotateTask(r, task)
	if err != nil {
		return nil, nil, err
	}
	return &a2a.StreamResponse{Task: task}, sub, nil
}

// extendedCardFor answers GetExtendedAgentCard.
func (h *Handler) extendedCardFor(caller *authn.Identity) (*cardgen.Document, error) {
	if h.extendedCard == nil {
		return nil, a2a.ExtendedAgentCardNotConfigured()
	}
	// Spec 1.0 §13.3: the extended card requires authentication, also
	// where the agent-wide requirement admits anonymous callers.
	if caller == nil {
		return nil, h.auth.Challenge()
	}
	return h.extendedCard, nil
}
