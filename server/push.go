package server

import (
	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// URLChecker says why a push notification config cannot be used: its URL,
// or what it puts in a notification's headers. push.Sender is one; the
// server does not import push, which delivers what the server stores.
type URLChecker interface {
	CheckURL(raw string) error
	CheckHeaders(c *tasks.PushConfig) error
}

// pushConfig checks a config a request registers, in every binding: push
// must be enabled (spec 1.0 §3.3.4), the URL acceptable and what goes in
// headers fit for a header, which is said at once rather than when the
// first notification fails.
func (h *Handler) pushConfig(v a2a.Version, c *a2a.TaskPushNotificationConfig) (tasks.PushConfig, *a2a.Error) {
	if h.push == nil {
		return tasks.PushConfig{}, a2a.PushNotificationNotSupported()
	}
	if err := h.push.CheckURL(c.URL); err != nil {
		return tasks.PushConfig{}, a2a.InvalidParams("", "the push notification url is refused: "+err.Error())
	}
	// A config's notifications are written in the version of the request
	// that registered it: the receiver is that client's.
	cfg := tasks.PushConfigFrom(c, v)
	if err := h.push.CheckHeaders(&cfg); err != nil {
		return tasks.PushConfig{}, a2a.InvalidParams("", "the push notification config is refused: "+err.Error())
	}
	return cfg, nil
}

// pushMethod runs the four push config methods. Only the task's owner
// sees or changes its configs: another caller's task answers like an
// unknown one.
func (h *Handler) pushMethod(v a2a.Version, m a2a.Method, p *a2a.TaskPushNotificationConfig, owner string) outcome {
	if h.push == nil {
		return failed(a2a.PushNotificationNotSupported())
	}
	switch m {
	case a2a.MethodCreatePushConfig:
		cfg, e := h.pushConfig(v, p)
		if e != nil {
			return failed(e)
		}
		stored, err := h.tasks.SetPushConfig(owner, p.TaskID, cfg)
		return pushConfigOutcome(p.TaskID, stored, err)
	case a2a.MethodGetPushConfig:
		c, err := h.tasks.PushConfig(owner, p.TaskID, p.ID)
		return pushConfigOutcome(p.TaskID, c, err)
	case a2a.MethodListPushConfigs:
		configs, err := h.tasks.PushConfigs(owner, p.TaskID)
		if err != nil {
			return failed(err)
		}
		list := &a2a.ListTaskPushNotificationConfigsResponse{Configs: make([]a2a.TaskPushNotificationConfig, len(configs))}
		for i := range configs {
			list.Configs[i] = configs[i].Wire(p.TaskID)
		}
		return outcome{result: list}
	}
	return answered(&a2a.Empty{}, h.tasks.DeletePushConfig(owner, p.TaskID, p.ID))
}

func pushConfigOutcome(taskID string, c tasks.PushConfig, err error) outcome {
	if err != nil {
		return failed(err)
	}
	wire := c.Wire(taskID)
	return outcome{result: &wire}
}
