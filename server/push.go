package server

import (
	"net/http"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// URLChecker says why a push notification URL cannot be used (push.Sender
// is one).
type URLChecker interface {
	CheckURL(raw string) error
}

// pushConfig checks a config a request registers: push must be enabled
// (spec 1.0 §3.3.4) and the URL acceptable, which is said at once rather
// than when the first notification fails.
func (h *Handler) pushConfig(v a2a.Version, c *a2a.TaskPushNotificationConfig) (tasks.PushConfig, *a2a.Error) {
	if h.push == nil {
		return tasks.PushConfig{}, a2a.PushNotificationNotSupported()
	}
	if err := h.push.CheckURL(c.URL); err != nil {
		return tasks.PushConfig{}, a2a.InvalidParams("", "the push notification url is refused: "+err.Error())
	}
	// A config's notifications are written in the version of the request
	// that registered it: the receiver is that client's.
	return tasks.PushConfigFrom(c, v), nil
}

// pushMethod answers the four push config methods. Only the task's owner
// sees or changes its configs: another caller's task answers like an
// unknown one.
func (h *Handler) pushMethod(w http.ResponseWriter, v a2a.Version, req *a2a.Request, owner string) {
	if h.push == nil {
		h.fail(w, v, req, a2a.PushNotificationNotSupported())
		return
	}
	p := req.Params.(*a2a.TaskPushNotificationConfig)
	switch req.Method {
	case a2a.MethodCreatePushConfig:
		cfg, e := h.pushConfig(v, p)
		if e != nil {
			h.fail(w, v, req, e)
			return
		}
		stored, err := h.tasks.SetPushConfig(owner, p.TaskID, cfg)
		h.answerPushConfig(w, v, req, p.TaskID, stored, err)
	case a2a.MethodGetPushConfig:
		c, err := h.tasks.PushConfig(owner, p.TaskID, p.ID)
		h.answerPushConfig(w, v, req, p.TaskID, c, err)
	case a2a.MethodListPushConfigs:
		configs, err := h.tasks.PushConfigs(owner, p.TaskID)
		if err != nil {
			h.answer(w, v, req, nil, err)
			return
		}
		list := &a2a.ListTaskPushNotificationConfigsResponse{Configs: make([]a2a.TaskPushNotificationConfig, len(configs))}
		for i := range configs {
			list.Configs[i] = configs[i].Wire(p.TaskID)
		}
		h.answer(w, v, req, list, nil)
	case a2a.MethodDeletePushConfig:
		h.answer(w, v, req, &a2a.Empty{}, h.tasks.DeletePushConfig(owner, p.TaskID, p.ID))
	}
}

func (h *Handler) answerPushConfig(w http.ResponseWriter, v a2a.Version, req *a2a.Request, taskID string, c tasks.PushConfig, err error) {
	if err != nil {
		h.answer(w, v, req, nil, err)
		return
	}
	wire := c.Wire(taskID)
	h.answer(w, v, req, &wire, nil)
}
