package caddymodule

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

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
// decides that, and which networks those may reach.
//
// Push needs signing: the JWT's key is published in the JWKS that signing
// serves.
type PushConfig struct {
	// Key signs the notifications' JWTs, and is published in the JWKS
	// next to the card's keys. Default: the card's active signing key. In
	// the Caddyfile: key <file|{env.VAR}> [<kid> [<alg>]].
	Key *SigningKey `json:"key,omitempty"`
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
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// MaxAttempts bounds the attempts of one notification. Default: 4.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// InitialBackoff is the wait before the first retry; it doubles up to
	// MaxBackoff. Defaults: 1s and 30s.
	InitialBackoff caddy.Duration `json:"initial_backoff,omitempty"`
	MaxBackoff     caddy.Duration `json:"max_backoff,omitempty"`
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

func (p *PushConfig) validate(signing *SigningConfig) error {
	if signing == nil {
		return errors.New("notifications are signed with a key the agent's JWKS publishes: configure signing")
	}
	switch {
	case p.Timeout < 0, p.InitialBackoff < 0, p.MaxBackoff < 0:
		return errors.New("timeout, initial_backoff and max_backoff must not be negative")
	case p.MaxAttempts < 0, p.QueueLength < 0, p.QueueBytes < 0, p.MaxReceivers < 0, p.MaxBytes < 0, p.MaxConfigsPerTask < 0:
		return errors.New("max_attempts, queue_length, queue_bytes, max_receivers, max_bytes and max_configs_per_task must not be negative")
	}
	if k := p.Key; k != nil {
		if k.Key == "" {
			return errors.New("key: the key (a PEM file or a placeholder) is empty")
		}
		if err := checkSigningAlgorithm(k.Algorithm); err != nil {
			return fmt.Errorf("key: %w", err)
		}
	}
	for _, o := range p.AllowedOrigins {
		if _, err := push.AllowedOrigin(o); err != nil {
			return fmt.Errorf("allowed_origins: %w", err)
		}
	}
	_, err := p.networks()
	return err
}

func (p *PushConfig) networks() ([]netip.Prefix, error) {
	out := make([]netip.Prefix, len(p.AllowedNetworks))
	for i, s := range p.AllowedNetworks {
		n, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("allowed_networks: %q is not a CIDR range", s)
		}
		out[i] = n.Masked()
	}
	return out, nil
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
	networks, err := p.networks()
	if err != nil {
		return nil, fmt.Errorf("push: %w", err)
	}
	maxBytes := p.maxBytes(h.shared.limits)
	s, err := push.New(push.Options{
		Key:             key,
		Issuer:          h.URL,
		AllowInsecure:   p.AllowInsecure,
		AllowPrivate:    p.AllowPrivate,
		AllowedNetworks: networks,
		AllowedOrigins:  p.AllowedOrigins,
		Timeout:         time.Duration(p.Timeout),
		MaxAttempts:     p.MaxAttempts,
		InitialBackoff:  time.Duration(p.InitialBackoff),
		MaxBackoff:      time.Duration(p.MaxBackoff),
		QueueLength:     p.QueueLength,
		QueueBytes:      p.QueueBytes,
		MaxReceivers:    p.MaxReceivers,
		MaxBytes:        maxBytes,
		Logger:          h.logger.Named("push"),
		OnOutcome:       countPushDelivery,
	})
	if err != nil {
		return nil, fmt.Errorf("push: %w", err)
	}
	h.logger.Info("push notifications enabled",
		zap.String("kid", key.ID),
		zap.Bool("allow_insecure", p.AllowInsecure),
		zap.Bool("allow_private", p.AllowPrivate),
		zap.Strings("allowed_networks", p.AllowedNetworks),
		zap.Strings("allowed_origins", p.AllowedOrigins),
		zap.Int64("max_bytes", maxBytes))
	return s, nil
}

// parsePush reads the push block.
func parsePush(d *caddyfile.Dispenser, where string) (*PushConfig, error) {
	if err := noArgs(d, where); err != nil {
		return nil, err
	}
	p := new(PushConfig)
	err := parseBlock(d, where, nil, func(sub, at string) error {
		var err error
		switch sub {
		case "key":
			var k SigningKey
			k, err = keyArgs(d, at)
			p.Key = &k
		case "allow_insecure":
			p.AllowInsecure, err = flagArg(d, at)
		case "allow_private":
			p.AllowPrivate, err = flagArg(d, at)
		case "allowed_networks":
			p.AllowedNetworks, err = someArgs(d, at)
		case "allowed_origins":
			p.AllowedOrigins, err = someArgs(d, at)
		case "timeout":
			p.Timeout, err = durationArg(d, at)
		case "max_attempts":
			p.MaxAttempts, err = countArg(d, at)
		case "initial_backoff":
			p.InitialBackoff, err = durationArg(d, at)
		case "max_backoff":
			p.MaxBackoff, err = durationArg(d, at)
		case "queue_length":
			p.QueueLength, err = countArg(d, at)
		case "queue_bytes":
			p.QueueBytes, err = sizeArg(d, at)
		case "max_receivers":
			p.MaxReceivers, err = countArg(d, at)
		case "max_bytes":
			p.MaxBytes, err = sizeArg(d, at)
		case "max_configs_per_task":
			p.MaxConfigsPerTask, err = countArg(d, at)
		default:
			return unknownSubdirective(pushSubdirectives)
		}
		return err
	})
	return p, err
}

// pushSubdirectives are the subdirectives of the push block.
var pushSubdirectives = []string{"key", "allow_insecure", "allow_private", "allowed_networks", "allowed_origins", "timeout", "max_attempts", "initial_backoff", "max_backoff", "queue_length", "queue_bytes", "max_receivers", "max_bytes", "max_configs_per_task"}
