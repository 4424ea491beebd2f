package tasks

import (
	"fmt"
	"time"

	"github.com/caddy-a2a/caddy-a2a/confval"
)

// Config is the task store's configuration as an operator writes it (the
// adapter's tasks block, in Caddy's JSON forms): the bounds of Options,
// where zero values take the defaults.
type Config struct {
	// MaxTasks is how many tasks the store keeps. Default: 10000.
	MaxTasks int `json:"max_tasks,omitempty"`
	// MaxLivePerOwner is how many running or interrupted tasks one
	// authenticated caller may have. Default: a quarter of max_tasks.
	MaxLivePerOwner int `json:"max_live_per_owner,omitempty"`
	// MaxLiveAnonymous is how many running or interrupted tasks anonymous
	// callers may have together, so that they cannot lock authenticated
	// callers out. Default: half of max_tasks; all of it when the agent
	// declares no security scheme (nobody can authenticate).
	MaxLiveAnonymous int `json:"max_live_anonymous,omitempty"`
	// MaxLivePerClient is how many running or interrupted tasks the
	// anonymous callers of one client address (Caddy's client IP; IPv6 by
	// /48, a site's usual allocation) may have, so that it takes many
	// addresses to fill the anonymous share. Default: max_tasks/100 (at
	// least 1, at most max_live_per_owner and max_live_anonymous).
	MaxLivePerClient int `json:"max_live_per_client,omitempty"`
	// MaxHistory is how many messages one task may hold; a follow-up past
	// that is refused. Default: 100; a value under 4 counts as 4.
	MaxHistory int `json:"max_history,omitempty"`
	// MaxAge is how long a task is kept after its last update; a running
	// task with no update for that long fails as expired. Default: 1h.
	MaxAge confval.Duration `json:"max_age,omitempty"`
	// ResendWindow is how long after its task's last update a message is
	// remembered, so that the same messageId sent again answers its task
	// instead of running again (while the task is live, it always is);
	// also once the task was dropped to make room. 0 turns that off: every
	// message runs, whatever its messageId, so a client that sends a
	// message again after a timeout runs its skill twice. Default and
	// most: max_age.
	ResendWindow *confval.Duration `json:"resend_window,omitempty"`
	// MaxResendKeys is how many messages of tasks dropped to make room are
	// remembered until their resend window ends, tens of bytes each; past
	// it, the caller holding the most loses its oldest, and anonymous
	// callers hold at most their share (as max_live_anonymous is of
	// max_tasks). Default: max_tasks.
	MaxResendKeys int `json:"max_resend_keys,omitempty"`
	// MaxInputWait is how long an input-required or auth-required task
	// waits for the follow-up message before it fails as expired, freeing
	// its owner's place. Default: 10m (at most max_age).
	MaxInputWait confval.Duration `json:"max_input_wait,omitempty"`
	// MaxBytes bounds the memory all stored tasks take, as estimated from
	// what they hold. A new task makes room by evicting terminal tasks,
	// oldest first, and is refused when every stored task is live. The
	// Caddyfile takes a size such as 256MiB. Default: 256 MiB.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// MaxLiveBytesPerOwner bounds the memory of one authenticated
	// caller's running or interrupted tasks. Default: a quarter of
	// max_bytes.
	MaxLiveBytesPerOwner int64 `json:"max_live_bytes_per_owner,omitempty"`
	// MaxLiveBytesAnonymous bounds the memory of the running or
	// interrupted tasks of all anonymous callers. Default: half of
	// max_bytes; all of it when the agent declares no security scheme.
	MaxLiveBytesAnonymous int64 `json:"max_live_bytes_anonymous,omitempty"`
	// MaxLiveBytesPerClient bounds the memory of the running or
	// interrupted tasks of one anonymous client address. Default:
	// max_bytes/64 (at most max_live_bytes_per_owner and
	// max_live_bytes_anonymous).
	MaxLiveBytesPerClient int64 `json:"max_live_bytes_per_client,omitempty"`
	// MaxTaskBytes bounds the memory of one task: a message that would
	// take more is refused with -32602 before anything is kept, and an
	// upstream result that would take more fails the task. It also bounds
	// one GetTask answer and one page of ListTasks. Default: 16 MiB (at
	// most max_live_bytes_per_owner and max_bytes).
	MaxTaskBytes int64 `json:"max_task_bytes,omitempty"`
	// StreamBuffer is how many events a stream may fall behind before it is
	// closed as too slow. Default: 64.
	StreamBuffer int `json:"stream_buffer,omitempty"`
}

// Validate refuses negative bounds; its errors name the option.
func (c *Config) Validate() error {
	switch {
	case c.MaxTasks < 0:
		return fmt.Errorf("max_tasks %d is negative", c.MaxTasks)
	case c.MaxLivePerOwner < 0:
		return fmt.Errorf("max_live_per_owner %d is negative", c.MaxLivePerOwner)
	case c.MaxLiveAnonymous < 0:
		return fmt.Errorf("max_live_anonymous %d is negative", c.MaxLiveAnonymous)
	case c.MaxLivePerClient < 0:
		return fmt.Errorf("max_live_per_client %d is negative", c.MaxLivePerClient)
	case c.MaxLiveBytesAnonymous < 0:
		return fmt.Errorf("max_live_bytes_anonymous %d is negative", c.MaxLiveBytesAnonymous)
	case c.MaxLiveBytesPerClient < 0:
		return fmt.Errorf("max_live_bytes_per_client %d is negative", c.MaxLiveBytesPerClient)
	case c.MaxHistory < 0:
		return fmt.Errorf("max_history %d is negative", c.MaxHistory)
	case c.MaxAge < 0:
		return fmt.Errorf("max_age %s is negative", time.Duration(c.MaxAge))
	case c.ResendWindow != nil && *c.ResendWindow < 0:
		return fmt.Errorf("resend_window %s is negative (0 turns it off)", time.Duration(*c.ResendWindow))
	case c.MaxResendKeys < 0:
		return fmt.Errorf("max_resend_keys %d is negative", c.MaxResendKeys)
	case c.StreamBuffer < 0:
		return fmt.Errorf("stream_buffer %d is negative", c.StreamBuffer)
	case c.MaxInputWait < 0:
		return fmt.Errorf("max_input_wait %s is negative", time.Duration(c.MaxInputWait))
	case c.MaxBytes < 0:
		return fmt.Errorf("max_bytes %d is negative", c.MaxBytes)
	case c.MaxLiveBytesPerOwner < 0:
		return fmt.Errorf("max_live_bytes_per_owner %d is negative", c.MaxLiveBytesPerOwner)
	case c.MaxTaskBytes < 0:
		return fmt.Errorf("max_task_bytes %d is negative", c.MaxTaskBytes)
	}
	return nil
}

// Options are the manager's options with c's bounds; the caller adds the
// rest (the store, push configs, the anonymous shares where nobody can
// authenticate).
func (c *Config) Options() Options {
	opts := Options{
		MaxTasks:             c.MaxTasks,
		MaxLivePerOwner:      c.MaxLivePerOwner,
		MaxHistory:           c.MaxHistory,
		MaxAge:               time.Duration(c.MaxAge),
		MaxInputWait:         time.Duration(c.MaxInputWait),
		MaxBytes:             c.MaxBytes,
		MaxLiveBytesPerOwner: c.MaxLiveBytesPerOwner,
		MaxTaskBytes:         c.MaxTaskBytes,
		StreamBuffer:         c.StreamBuffer,

		MaxLiveAnonymous:      c.MaxLiveAnonymous,
		MaxLiveBytesAnonymous: c.MaxLiveBytesAnonymous,
		MaxLivePerClient:      c.MaxLivePerClient,
		MaxLiveBytesPerClient: c.MaxLiveBytesPerClient,
		MaxResendKeys:         c.MaxResendKeys,
	}
	if w := c.ResendWindow; w != nil {
		opts.ResendWindow = time.Duration(*w)
		if *w == 0 {
			opts.ResendWindow = -1 // off
		}
	}
	return opts
}
