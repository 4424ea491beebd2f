package push

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/caddy-a2a/caddy-a2a/confval"
)

// Config is push delivery's configuration as an operator writes it (the
// adapter's push block, in Caddy's JSON forms): which receivers may be
// reached, and the bounds of Options, where zero values take the defaults.
// The signing key is the adapter's to load.
type Config struct {
	// AllowInsecure accepts http receiver URLs. Default: https only.
	AllowInsecure bool `json:"allow_insecure,omitempty"`
	// AllowPrivate accepts receivers on loopback, private, link-local and
	// other non-public addresses: for tests and development only, as it
	// lets any caller make the agent reach its own network.
	AllowPrivate bool `json:"allow_private,omitempty"`
	// AllowedNetworks are CIDR ranges accepted although not public, such
	// as the operator's own receivers (10.20.0.0/16); a range with a
	// loopback address admits localhost names too.
	AllowedNetworks []string `json:"allowed_networks,omitempty"`
	// AllowedOrigins, when set, are the only origins
	// (scheme://host[:port], http or https) receivers may have, e.g.
	// https://hooks.example.com; their addresses are checked all the same.
	// An entry with a path, query or user is refused: receivers are allowed
	// by origin only.
	AllowedOrigins []string `json:"allowed_origins,omitempty"`
	// Timeout bounds one delivery attempt. Default: 10s.
	Timeout confval.Duration `json:"timeout,omitempty"`
	// MaxAttempts bounds the attempts of one notification. Default: 4.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// InitialBackoff is the wait before the first retry; it doubles up to
	// MaxBackoff. Defaults: 1s and 30s.
	InitialBackoff confval.Duration `json:"initial_backoff,omitempty"`
	MaxBackoff     confval.Duration `json:"max_backoff,omitempty"`
	// QueueLength and QueueBytes bound the notifications waiting for one
	// receiver; past them notifications are dropped, and logged. The
	// Caddyfile takes a size such as 1MiB. Defaults: 32 and 1 MiB.
	QueueLength int   `json:"queue_length,omitempty"`
	QueueBytes  int64 `json:"queue_bytes,omitempty"`
	// MaxReceivers bounds the receivers with notifications under way at
	// once. Default: 1024.
	MaxReceivers int `json:"max_receivers,omitempty"`
	// MaxBytes bounds the memory all notifications queued or under way
	// take, across receivers: each body once, however many receivers share
	// it, and each notification's config and task id. Past it
	// notifications are dropped, and logged. The Caddyfile takes a size
	// such as 64MiB. Default: a quarter of tasks.max_bytes (64 MiB with
	// its default), so that push cannot take the agent's memory much past
	// the task store's budget.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// MaxConfigsPerTask bounds the configs of one task (with
	// tasks.max_live_per_owner, those of one caller). Like the tasks
	// limits, it is the store's and is kept across reloads. Default: 10.
	MaxConfigsPerTask int `json:"max_configs_per_task,omitempty"`
}

// Validate refuses negative bounds, and origins and networks that do not
// parse; its errors name the option.
func (c *Config) Validate() error {
	switch {
	case c.Timeout < 0, c.InitialBackoff < 0, c.MaxBackoff < 0:
		return errors.New("timeout, initial_backoff and max_backoff must not be negative")
	case c.MaxAttempts < 0, c.QueueLength < 0, c.QueueBytes < 0, c.MaxReceivers < 0, c.MaxBytes < 0, c.MaxConfigsPerTask < 0:
		return errors.New("max_attempts, queue_length, queue_bytes, max_receivers, max_bytes and max_configs_per_task must not be negative")
	}
	for _, o := range c.AllowedOrigins {
		if _, err := AllowedOrigin(o); err != nil {
			return fmt.Errorf("allowed_origins: %w", err)
		}
	}
	_, err := c.networks()
	return err
}

func (c *Config) networks() ([]netip.Prefix, error) {
	out := make([]netip.Prefix, len(c.AllowedNetworks))
	for i, s := range c.AllowedNetworks {
		n, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("allowed_networks: %q is not a CIDR range", s)
		}
		out[i] = n.Masked()
	}
	return out, nil
}

// Options are the sender's options with c's receivers and bounds; the
// caller adds the key, the issuer, the logger and the outcome hook.
func (c *Config) Options() (Options, error) {
	networks, err := c.networks()
	if err != nil {
		return Options{}, err
	}
	return Options{
		AllowInsecure:   c.AllowInsecure,
		AllowPrivate:    c.AllowPrivate,
		AllowedNetworks: networks,
		AllowedOrigins:  c.AllowedOrigins,
		Timeout:         time.Duration(c.Timeout),
		MaxAttempts:     c.MaxAttempts,
		InitialBackoff:  time.Duration(c.InitialBackoff),
		MaxBackoff:      time.Duration(c.MaxBackoff),
		QueueLength:     c.QueueLength,
		QueueBytes:      c.QueueBytes,
		MaxReceivers:    c.MaxReceivers,
		MaxBytes:        c.MaxBytes,
	}, nil
}
