package caddymodule

import (
	"errors"
	"fmt"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/push"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// PushConfig enables push notifications (spec 1.0 §3.1.7–§3.1.10, §4.3,
// §13.2): clients register webhook URLs on their tasks, and the agent POSTs
// each change of the task to them, signed with a JWT its JWKS verifies.
// The block's presence enables it; the card then says
// capabilities.pushNotifications: true. It is off by default because it
// makes the agent send requests to URLs its callers choose: the operator
// decides that, and which networks those may reach. Its delivery settings
// are push.Config's (its fields, documented there, stand in this block).
//
// Push needs signing: the JWT's key is published in the JWKS that signing
// serves.
type PushConfig struct {
	// Key signs the notifications' JWTs, and is published in the JWKS
	// next to the card's keys. Default: the card's active signing key. In
	// the Caddyfile: key <file|{env.VAR}> [<kid> [<alg>]].
	Key *SigningKey `json:"key,omitempty"`

	push.Config
}

func (p *PushConfig) validate(signing *SigningConfig) error {
	if signing == nil {
		return errors.New("notifications are signed with a key the agent's JWKS publishes: configure signing")
	}
	if k := p.Key; k != nil {
		if k.Key == "" {
			return errors.New("key: the key (a PEM file or a placeholder) is empty")
		}
		if err := checkSigningAlgorithm(k.Algorithm); err != nil {
			return fmt.Errorf("key: %w", err)
		}
	}
	return p.Config.Validate()
}

// pushKey is the key that signs notifications: the configured one, with
// its kid and algorithm filled in, or the card's signing key.
func (p *PushConfig) pushKey(cardKey cardgen.Key) (cardgen.Key, error) {
	if p.Key == nil {
		return cardKey, nil
	}
	k, err := loadKey(caddy.NewReplacer(), p.Key.Key)
	if err != nil {
		return cardgen.Key{}, fmt.Errorf("push: key: %w", err)
	}
	if k.Private == nil {
		return cardgen.Key{}, errors.New("push: key: a public key cannot sign: give the private key")
	}
	k.ID, k.Algorithm = p.Key.ID, p.Key.Algorithm
	ks, err := cardgen.NewKeySet(k)
	if err != nil {
		return cardgen.Key{}, fmt.Errorf("push: key: %w", err)
	}
	return ks.Keys()[0], nil
}

// maxBytes is the bound on what queued notifications hold: max_bytes, or
// a quarter of the byte budget of the task store in use (whose limits are
// those of the config that created it).
func (p *PushConfig) maxBytes(store TasksConfig) int64 {
	if p.MaxBytes > 0 {
		return p.MaxBytes
	}
	return tasks.Options{MaxBytes: store.MaxBytes}.StoreLimits().MaxBytes / 4
}

// newSender makes the sender of the notifications, signed with key.
func (p *PushConfig) newSender(h *Handler, key cardgen.Key) (*push.Sender, error) {
	opts, err := p.Options()
	if err != nil {
		return nil, fmt.Errorf("push: %w", err)
	}
	opts.Key, opts.Issuer, opts.MaxBytes = key, h.URL, p.maxBytes(h.shared.limits)
	opts.Logger, opts.OnOutcome = h.logger.Named("push"), countPushDelivery
	s, err := push.New(opts)
	if err != nil {
		return nil, fmt.Errorf("push: %w", err)
	}
	h.logger.Info("push notifications enabled",
		zap.String("kid", key.ID),
		zap.Bool("allow_insecure", p.AllowInsecure),
		zap.Bool("allow_private", p.AllowPrivate),
		zap.Strings("allowed_networks", p.AllowedNetworks),
		zap.Strings("allowed_origins", p.AllowedOrigins),
		zap.Int64("max_bytes", opts.MaxBytes))
	return s, nil
}

// pushFeature is the push block: the sender of this config's
// notifications, on the task store tasks acquired.
type pushFeature struct{ noSteps }

func (pushFeature) setting(h *Handler) setting { return setting{"push", setBlock(&h.Push, parsePush)} }

func (pushFeature) validate(h *Handler) error {
	return checkBlock("push", h.Push, func(p *PushConfig) error { return p.validate(h.Signing) })
}

// acquire makes the sender and sets it as the manager's pusher: the last
// config loaded decides, also when it turns push off.
func (pushFeature) acquire(a *assembly) (err error) {
	h := a.h
	if h.Push != nil {
		if h.pusher, err = h.Push.newSender(h, a.pushKey); err != nil {
			return err
		}
		a.server.Push = h.pusher
	}
	if h.pusher != nil {
		h.manager.SetPusher(h.pusher)
	} else {
		h.manager.SetPusher(nil)
	}
	return nil
}

func (pushFeature) cleanup(h *Handler) error {
	if h.pusher != nil {
		h.manager.ClearPusher(h.pusher)
		h.pusher.Close()
		h.pusher = nil
	}
	return nil
}

// parsePush reads the push block.
func parsePush(d *caddyfile.Dispenser, where string) (*PushConfig, error) {
	if err := noArgs(d, where); err != nil {
		return nil, err
	}
	p := new(PushConfig)
	return p, parseSettings(d, where, nil, []setting{
		{"key", func(d *caddyfile.Dispenser, at string) error {
			k, err := keyArgs(d, at)
			p.Key = &k
			return err
		}},
		{"allow_insecure", setFlag(&p.AllowInsecure)},
		{"allow_private", setFlag(&p.AllowPrivate)},
		{"allowed_networks", addStrings(&p.AllowedNetworks)},
		{"allowed_origins", addStrings(&p.AllowedOrigins)},
		{"timeout", setDuration(&p.Timeout)},
		{"max_attempts", setCount(&p.MaxAttempts)},
		{"initial_backoff", setDuration(&p.InitialBackoff)},
		{"max_backoff", setDuration(&p.MaxBackoff)},
		{"queue_length", setCount(&p.QueueLength)},
		{"queue_bytes", setSize(&p.QueueBytes)},
		{"max_receivers", setCount(&p.MaxReceivers)},
		{"max_bytes", setSize(&p.MaxBytes)},
		{"max_configs_per_task", setCount(&p.MaxConfigsPerTask)},
	})
}
