package caddymodule

import (
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// stores holds the task managers of the loaded configs, keyed by the agent's
// url. Caddy provisions a new config before it cleans up the old one, so a
// reload finds the old config's manager here and takes it over: tasks,
// running skills and open streams carry on. The last handler to let go of a
// manager closes it.
var stores = caddy.NewUsagePool()

// store is one shared task manager and the limits it was created with.
type store struct {
	manager *tasks.Manager
	limits  TasksConfig
}

// Destruct closes the manager once no loaded config uses it.
func (s *store) Destruct() error {
	s.manager.Close()
	return nil
}

// acquireStore takes a reference to the task manager of h.URL, creating it
// with h's limits if no loaded config has one. Cleanup releases it.
func (h *Handler) acquireStore() *tasks.Manager {
	var limits TasksConfig
	if h.Tasks != nil {
		limits = *h.Tasks
	}
	// The constructor cannot fail, so neither can LoadOrNew.
	val, loaded, _ := stores.LoadOrNew(h.URL, func() (caddy.Destructor, error) {
		return &store{
			manager: tasks.NewManager(tasks.Options{
				MaxTasks:             limits.MaxTasks,
				MaxLivePerOwner:      limits.MaxLivePerOwner,
				MaxHistory:           limits.MaxHistory,
				MaxAge:               time.Duration(limits.MaxAge),
				MaxInputWait:         time.Duration(limits.MaxInputWait),
				MaxBytes:             limits.MaxBytes,
				MaxLiveBytesPerOwner: limits.MaxLiveBytesPerOwner,
				MaxTaskBytes:         limits.MaxTaskBytes,
				StreamBuffer:         limits.StreamBuffer,
			}),
			limits: limits,
		}, nil
	})
	h.storeKey = h.URL
	s := val.(*store)
	if loaded && s.limits != limits {
		h.logger.Warn("the task store kept across the reload keeps its limits; new limits apply once no loaded config uses this url",
			zap.String("url", h.URL),
			zap.Any("limits", s.limits),
			zap.Any("configured", limits))
	}
	return s.manager
}
