package tasks

import (
	"context"
	"fmt"
	"slices"
	"unsafe"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// Push notification configs live on their task's record (Record.Push), so
// that every store keeps them with the task, owner and bounds included, and
// replicas that share a store act as one agent: a config registered through
// one replica applies to the task wherever it runs. The replica that makes
// a change (runs the task, cancels it, expires it) hands it to its Pusher.

// PushConfig is a push notification target registered on a task (spec 1.0
// §3.1.7).
type PushConfig struct {
	ID    string `json:"id"`
	URL   string `json:"url"`
	Token string `json:"token,omitempty"`
	// AuthScheme and AuthCredentials are what the client asked the agent
	// to send in the Authorization header (spec 1.0 §4.3.2).
	AuthScheme      string `json:"scheme,omitempty"`
	AuthCredentials string `json:"credentials,omitempty"`
	// Version is the protocol version of the request that registered the
	// config: its notifications are written in that version.
	Version a2a.Version `json:"v"`
}

// PushConfigFrom is the config a request registers.
func PushConfigFrom(c *a2a.TaskPushNotificationConfig, v a2a.Version) PushConfig {
	pc := PushConfig{ID: c.ID, URL: c.URL, Token: c.Token, Version: v}
	if a := c.Authentication; a != nil {
		pc.AuthScheme, pc.AuthCredentials = a.Scheme, a.Credentials
	}
	return pc
}

// Wire is the config as the protocol shows it, for task taskID; the
// credentials are left out (they are the client's secret, and a config
// read back never shows them).
func (c *PushConfig) Wire(taskID string) a2a.TaskPushNotificationConfig {
	w := a2a.TaskPushNotificationConfig{ID: c.ID, TaskID: taskID, URL: c.URL, Token: c.Token}
	if c.AuthScheme != "" {
		w.Authentication = &a2a.AuthenticationInfo{Scheme: c.AuthScheme}
	}
	return w
}

func sizeOfPushConfig(c *PushConfig) int64 {
	return int64(unsafe.Sizeof(PushConfig{})) + sizeOfString(c.ID) + sizeOfString(c.URL) + sizeOfString(c.Token) +
		sizeOfString(c.AuthScheme) + sizeOfString(c.AuthCredentials)
}

// Pusher delivers a task's changes to its push configs.
type Pusher interface {
	// Push is called after each committed change of a task that has push
	// configs, with the task as it stands after the change, its configs
	// and the events of the change, in the order of the changes to that
	// task on this replica. It must not block, nor keep the slices beyond
	// the call: they are the store's.
	Push(task *a2a.Task, configs []PushConfig, events []a2a.StreamResponse)
}

// SetPusher makes p receive the changes of tasks that have push configs,
// replacing the pusher set before (nil: none). A Manager outlives config
// reloads; the configuration loaded last sets its own.
func (m *Manager) SetPusher(p Pusher) {
	if p == nil {
		m.pusher.Store(nil)
		return
	}
	m.pusher.Store(&p)
}

// ClearPusher removes p if it is still the Manager's pusher: a config
// unloaded after its successor was loaded leaves the successor's in place.
func (m *Manager) ClearPusher(p Pusher) {
	if cur := m.pusher.Load(); cur != nil && *cur == p {
		m.pusher.CompareAndSwap(cur, nil)
	}
}

// pushNotice is what one change hands to the pusher.
type pushNotice struct {
	task    *a2a.Task
	configs []PushConfig
	events  []a2a.StreamResponse
}

// pushTx is the store's Tx seen by a change of a task that may have push
// configs: the change builds its events (Listening) whenever the task has
// configs, and they are kept for the pusher as well as published.
type pushTx struct {
	Tx
	rec    *Record
	notice *pushNotice
}

func (t *pushTx) Listening() bool { return len(t.rec.Push) > 0 || t.Tx.Listening() }

func (t *pushTx) Publish(ev a2a.StreamResponse) {
	if len(t.rec.Push) > 0 {
		t.notice.events = append(t.notice.events, ev)
	}
	t.Tx.Publish(ev)
}

// update is store.Update for every change the Manager makes to a task: in
// the task's turn (see taskTurns), and handed to the pusher, when one is
// set and the task has push configs, before the next change of the task
// takes its turn.
func (m *Manager) update(ctx context.Context, taskID string, fn func(rec *Record, tx Tx) error) error {
	turn := m.turns.take(taskID)
	defer m.turns.give(taskID, turn)
	pp := m.pusher.Load()
	if pp == nil {
		return m.store.Update(ctx, taskID, fn)
	}
	var notice pushNotice
	err := m.store.Update(ctx, taskID, func(rec *Record, tx Tx) error {
		notice = pushNotice{events: notice.events[:0]} // the callback may run again
		ptx := pushTx{Tx: tx, rec: rec, notice: &notice}
		if err := fn(rec, &ptx); err != nil {
			return err
		}
		if len(rec.Push) > 0 && len(notice.events) > 0 {
			notice.task, notice.configs = snapshot(rec, -1, true), rec.Push
		}
		return nil
	})
	if err == nil && notice.task != nil {
		(*pp).Push(notice.task, notice.configs, notice.events)
	}
	return err
}

// expireNotifying is the expire of a sweep when a pusher is set: it adds
// the notice of each expiry to notices, to be handed over once the sweep
// is done (see pushExpired).
func (m *Manager) expireNotifying(notices *[]*pushNotice) func(*Record, Tx, Expiry) {
	return func(rec *Record, tx Tx, why Expiry) {
		n := &pushNotice{}
		m.expire(rec, &pushTx{Tx: tx, rec: rec, notice: n}, why)
		if len(rec.Push) == 0 || len(n.events) == 0 {
			return
		}
		n.task, n.configs = snapshot(rec, -1, true), rec.Push
		*notices = append(*notices, n)
	}
}

// pushExpired hands over the notices of the expiries a sweep made. An
// expire may run in an attempt the store then drops (in a shared store,
// the task changed meanwhile: another replica expired it, or its run
// reported progress), and an end heard from the store does not say which
// replica made it; so an expiry counts as made here only when the task
// holds the very status it wrote, whose message has an id of its own.
// One read per expiry of a task with push configs buys that each expiry
// is pushed once, by the replica that made it.
func (m *Manager) pushExpired(ctx context.Context, notices []*pushNotice) {
	pp := m.pusher.Load()
	if pp == nil {
		return
	}
	for _, n := range notices {
		rec, err := m.store.Get(ctx, n.task.ID)
		if err != nil || !sameStatusMessage(rec.Task.Status.Message, n.task.Status.Message) {
			continue // another replica's expiry (or the task is gone: nobody can tell whose)
		}
		(*pp).Push(n.task, n.configs, n.events)
	}
}

// sameStatusMessage reports whether a and b are the same status message,
// by its id.
func sameStatusMessage(a, b *a2a.Message) bool {
	return a != nil && b != nil && a.MessageID == b.MessageID
}

// withPushID gives c a new id if it has none.
func (m *Manager) withPushID(c PushConfig) PushConfig {
	if c.ID == "" {
		c.ID = m.newID(PushConfigID)
	}
	return c
}

// withPushConfig returns configs with c added, or replacing the config with
// its id, in a new slice (records share theirs); it refuses a task that
// already holds as many configs as one may.
func (m *Manager) withPushConfig(configs []PushConfig, c PushConfig) ([]PushConfig, int64, error) {
	i := slices.IndexFunc(configs, func(old PushConfig) bool { return old.ID == c.ID })
	if i < 0 && len(configs) >= m.maxPushConfigs {
		return nil, 0, a2a.InvalidParams("params", fmt.Sprintf(
			"the task has %d push notification configs, as many as one task may hold; delete one first", len(configs)))
	}
	out := slices.Clone(configs)
	if i < 0 {
		return append(out, c), sizeOfPushConfig(&c), nil
	}
	out[i] = c
	return out, sizeOfPushConfig(&c) - sizeOfPushConfig(&configs[i]), nil
}

// SetPushConfig registers c on the caller's task, replacing the config with
// the same id; a config without an id gets a new one. It returns the config
// as stored. A terminal task takes one too (the spec lists no error for
// it, and clients register configs on tasks that have ended): it can be
// read, listed and deleted, and counts against the bounds like any other,
// but since the task changes no more, nothing is delivered to it.
func (m *Manager) SetPushConfig(owner, taskID string, c PushConfig) (PushConfig, error) {
	c = m.withPushID(c)
	err := m.update(context.Background(), taskID, func(rec *Record, tx Tx) error {
		if rec.Owner != owner {
			return a2a.TaskNotFound(taskID)
		}
		configs, delta, err := m.withPushConfig(rec.Push, c)
		if err != nil {
			return err
		}
		if err := m.grow(rec, tx, delta); err != nil {
			return err
		}
		rec.Push = configs
		return nil
	})
	return c, err
}

// PushConfigs returns the push configs of the caller's task.
func (m *Manager) PushConfigs(owner, taskID string) ([]PushConfig, error) {
	rec, err := m.store.Get(context.Background(), taskID)
	if err != nil {
		return nil, err
	}
	if rec.Owner != owner {
		return nil, a2a.TaskNotFound(taskID)
	}
	return rec.Push, nil
}

// PushConfig returns the push config id of the caller's task; an empty id
// names the task's first config (0.3 lets a client ask for "the" config).
// A config that does not exist answers TaskNotFound (spec 1.0 §3.1.8).
func (m *Manager) PushConfig(owner, taskID, id string) (PushConfig, error) {
	configs, err := m.PushConfigs(owner, taskID)
	if err != nil {
		return PushConfig{}, err
	}
	for _, c := range configs {
		if id == "" || c.ID == id {
			return c, nil
		}
	}
	e := a2a.TaskNotFound(taskID)
	e.Message = "Push notification config not found"
	return PushConfig{}, e
}

// DeletePushConfig removes the push config id of the caller's task, and
// gives its bytes back to the store's budgets. Deleting a config that is
// not there succeeds (spec 1.0 §3.1.10: the operation is idempotent).
func (m *Manager) DeletePushConfig(owner, taskID, id string) error {
	return m.update(context.Background(), taskID, func(rec *Record, tx Tx) error {
		if rec.Owner != owner {
			return a2a.TaskNotFound(taskID)
		}
		i := slices.IndexFunc(rec.Push, func(c PushConfig) bool { return c.ID == id })
		if i < 0 {
			return nil
		}
		freed := sizeOfPushConfig(&rec.Push[i])
		rec.Push = slices.Delete(slices.Clone(rec.Push), i, i+1) // ids are unique: SetPushConfig replaces
		if len(rec.Push) == 0 {
			rec.Push = nil
		}
		return tx.Take(-freed)
	})
}
