package caddymodule

import (
	"encoding/json"
	"errors"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// TasksConfig bounds the task store, as tasks.Config declares it (its
// fields, documented there, stand in this block), and says where the tasks
// are kept: in this process's memory unless redis or store says otherwise.
// A store kept across a reload keeps the limits it was created with: new
// limits take effect once no loaded config uses the store's url any more
// (a restart, or a reload with a different url).
type TasksConfig struct {
	tasks.Config

	// Redis keeps the tasks in Redis, shared by the agent's replicas,
	// instead of in this process's memory: the store module redis, written
	// in the tasks block itself. See RedisConfig.
	Redis *RedisConfig `json:"redis,omitempty"`

	// StoreRaw is the task store module that keeps the tasks, named by its
	// "module" member: memory, redis (see RedisConfig) or a third party's,
	// registered in the namespace http.handlers.a2a.stores. In the
	// Caddyfile: store <module> [{ … }]. Default: memory.
	StoreRaw json.RawMessage `json:"store,omitempty" caddy:"namespace=http.handlers.a2a.stores inline_key=module"`
}

func (t *TasksConfig) validate() error {
	if err := t.Config.Validate(); err != nil {
		return err
	}
	if t.Redis == nil {
		return nil
	}
	if t.StoreRaw != nil {
		return errors.New("redis and store both name a store: keep one")
	}
	return t.Redis.Validate()
}

// tasksFeature is the tasks block: the task store, shared across reloads
// by url (store.go).
type tasksFeature struct{ noSteps }

func (tasksFeature) setting(h *Handler) setting {
	return setting{"tasks", setBlock(&h.Tasks, parseTasks)}
}

func (tasksFeature) validate(h *Handler) error {
	return checkBlock("tasks", h.Tasks, (*TasksConfig).validate)
}

// acquire takes the shared task store, the one the features after it use.
func (tasksFeature) acquire(a *assembly) (err error) {
	a.server.Tasks, err = a.h.acquireStore(a.ctx)
	a.h.manager = a.server.Tasks
	return err
}

func (tasksFeature) cleanup(h *Handler) error { return h.releaseStore() }

// parseTasks reads the tasks block.
func parseTasks(d *caddyfile.Dispenser, where string) (*TasksConfig, error) {
	if err := noArgs(d, where); err != nil {
		return nil, err
	}
	t := new(TasksConfig)
	return t, parseSettings(d, where, nil, []setting{
		{"max_tasks", setCount(&t.MaxTasks)},
		{"max_live_per_owner", setCount(&t.MaxLivePerOwner)},
		{"max_live_anonymous", setCount(&t.MaxLiveAnonymous)},
		{"max_live_per_client", setCount(&t.MaxLivePerClient)},
		{"max_history", setCount(&t.MaxHistory)},
		{"max_age", setDuration(&t.MaxAge)},
		{"resend_window", setWindow(&t.ResendWindow)},
		{"max_resend_keys", setCount(&t.MaxResendKeys)},
		{"max_input_wait", setDuration(&t.MaxInputWait)},
		{"max_bytes", setSize(&t.MaxBytes)},
		{"max_live_bytes_per_owner", setSize(&t.MaxLiveBytesPerOwner)},
		{"max_live_bytes_anonymous", setSize(&t.MaxLiveBytesAnonymous)},
		{"max_live_bytes_per_client", setSize(&t.MaxLiveBytesPerClient)},
		{"max_task_bytes", setSize(&t.MaxTaskBytes)},
		{"redis", setBlock(&t.Redis, parseRedis)},
		{"stream_buffer", setCount(&t.StreamBuffer)},
		{"store", func(d *caddyfile.Dispenser, at string) (err error) {
			t.StoreRaw, err = parseStoreModule(d, at)
			return err
		}},
	})
}
