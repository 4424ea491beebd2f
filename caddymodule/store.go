package caddymodule

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/tasks"
	"github.com/caddy-a2a/caddy-a2a/tasks/redisstore"
)

func init() {
	caddy.RegisterModule(MemoryStore{})
	caddy.RegisterModule(RedisConfig{})
}

// storesNamespace is the namespace of task store modules.
const storesNamespace = "http.handlers.a2a.stores"

// TaskStore is a task store as a Caddy module, in the namespace
// http.handlers.a2a.stores, which tasks.store names: a store of a third
// party registers its module there and needs no change here. A store is
// made once for the handlers that share it across reloads (by url), by the
// first config that loads it; those after keep it.
type TaskStore interface {
	caddy.Module
	// NewStore makes the task store within opts's limits (made with
	// opts.StoreLimits(), as tasks.Options.Store requires), and the close
	// that releases what it holds besides memory (nil: nothing). It should
	// not dial yet: a store that cannot be reached fails requests, not the
	// config.
	NewStore(opts tasks.Options, logger *zap.Logger) (tasks.Store, func() error, error)
}

// MemoryStore keeps the tasks in this process's memory, lost on restart
// and not shared by replicas: the default store.
type MemoryStore struct{}

// CaddyModule returns the Caddy module information.
func (MemoryStore) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: storesNamespace + ".memory", New: func() caddy.Module { return new(MemoryStore) }}
}

// NewStore makes the store in memory.
func (MemoryStore) NewStore(opts tasks.Options, _ *zap.Logger) (tasks.Store, func() error, error) {
	return tasks.NewMemoryStore(opts.StoreLimits()), nil, nil
}

// UnmarshalCaddyfile reads store memory, which takes no settings.
func (*MemoryStore) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the module's name
	if err := noArgs(d, "tasks: store memory"); err != nil {
		return err
	}
	return parseSettings(d, "tasks: store memory", nil, nil)
}

// stores holds the task managers of the loaded configs, keyed by the agent's
// url. Caddy provisions a new config before it cleans up the old one, so a
// reload finds the old config's manager here and takes it over: tasks,
// running skills, open streams and the connection to Redis carry on. The
// last handler to let go of a manager closes it.
var stores = caddy.NewUsagePool()

// store is one shared task manager, the limits it was created with, and
// how to close the task store it runs on.
type store struct {
	manager *tasks.Manager
	limits  TasksConfig
	// close releases what the task store holds besides memory (for Redis:
	// its event subscription and client); nil for tasks in memory.
	close func() error
}

// Destruct closes the manager once no loaded config uses it, then its
// task store.
func (s *store) Destruct() error {
	s.manager.Close()
	if s.close != nil {
		return s.close()
	}
	return nil
}

// RedisConfig, the store module redis, keeps the tasks in Redis, shared
// by every replica of the agent that names the same Redis and key_prefix:
// any replica can then read, stream, cancel and continue a task another
// one started, and tasks outlive restarts. Every replica must have the
// same tasks limits.
type RedisConfig struct {
	// Addresses are host:port of Redis: one for a single server; several
	// for Redis Cluster, or the Sentinels with MasterName. Required.
	Addresses []string `json:"addresses,omitempty"`
	// MasterName is the Sentinel master's name: Addresses are then
	// Sentinels.
	MasterName string `json:"master_name,omitempty"`
	// Username and Password authenticate to Redis (ACL). Both take
	// {env.NAME} placeholders, read at provision.
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	// DB is the database number (single server and Sentinel only).
	DB int `json:"db,omitempty"`
	// TLS connects with TLS, verifying the server's certificate against
	// the system's roots, or TLSCA's; TLSServerName overrides the name
	// checked.
	TLS           bool   `json:"tls,omitempty"`
	TLSServerName string `json:"tls_server_name,omitempty"`
	// TLSCA is a PEM file of the CA certificates to trust instead of the
	// system's (a private CA). It implies TLS.
	TLSCA string `json:"tls_ca,omitempty"`
	// KeyPrefix starts every key, so that several agents can share one
	// Redis (default "a2a").
	KeyPrefix string `json:"key_prefix,omitempty"`
	// Timeout bounds each command (default 3s), its wait for a batch of
	// concurrent changes included: a caller whose request needs a Redis
	// that does not answer gets -32603 UNAVAILABLE then.
	Timeout caddy.Duration `json:"timeout,omitempty"`
}

// Interface guards
var (
	_ TaskStore             = (*MemoryStore)(nil)
	_ TaskStore             = (*RedisConfig)(nil)
	_ caddy.Validator       = (*RedisConfig)(nil)
	_ caddyfile.Unmarshaler = (*MemoryStore)(nil)
	_ caddyfile.Unmarshaler = (*RedisConfig)(nil)
)

// CaddyModule returns the Caddy module information.
func (RedisConfig) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: storesNamespace + ".redis", New: func() caddy.Module { return new(RedisConfig) }}
}

// Validate checks what needs no network.
func (c *RedisConfig) Validate() error {
	switch {
	case len(c.Addresses) == 0:
		return fmt.Errorf("redis: at least one address is required")
	case c.Timeout < 0:
		return fmt.Errorf("redis: timeout %s is negative", time.Duration(c.Timeout))
	case c.DB < 0:
		return fmt.Errorf("redis: db %d is negative", c.DB)
	}
	return nil
}

// timeout is the configured timeout, or its default.
func (c *RedisConfig) timeout() time.Duration {
	return cmp.Or(time.Duration(c.Timeout), redisstore.DefaultTimeout)
}

// client makes the Redis client; nothing is dialed yet.
func (c *RedisConfig) client() (redis.UniversalClient, error) {
	repl := caddy.NewReplacer()
	username, err := repl.ReplaceOrErr(c.Username, true, true)
	if err != nil {
		return nil, fmt.Errorf("redis: username: %w", err)
	}
	password, err := repl.ReplaceOrErr(c.Password, true, true)
	if err != nil {
		return nil, fmt.Errorf("redis: password: %w", err)
	}
	timeout := c.timeout()
	opts := &redis.UniversalOptions{
		Addrs: c.Addresses, MasterName: c.MasterName, Username: username, Password: password, DB: c.DB,
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
		// A request fails fast while Redis is down, rather than waiting
		// out retries.
		MaxRetries: 1,
		// RESP2: the store needs none of RESP3's push notifications, whose
		// check before every reply costs CPU on the request path.
		Protocol: 2,
	}
	if !c.TLS && c.TLSCA == "" {
		opts.Dialer = redisstore.Dialer(timeout)
	}
	if c.TLS || c.TLSCA != "" {
		opts.TLSConfig = &tls.Config{ServerName: c.TLSServerName, MinVersion: tls.VersionTLS12}
		if c.TLSCA != "" {
			pem, err := os.ReadFile(c.TLSCA)
			if err != nil {
				return nil, fmt.Errorf("redis: tls_ca: %w", err)
			}
			opts.TLSConfig.RootCAs = x509.NewCertPool()
			if !opts.TLSConfig.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("redis: tls_ca: %s holds no PEM certificate", c.TLSCA)
			}
		}
	}
	return redis.NewUniversalClient(opts), nil
}

// NewStore makes the task store in Redis that c configures, within
// opts's limits, and returns it with its close; nothing is dialed yet.
func (c *RedisConfig) NewStore(opts tasks.Options, logger *zap.Logger) (tasks.Store, func() error, error) {
	client, err := c.client()
	if err != nil {
		return nil, nil, err
	}
	rs, err := redisstore.New(redisstore.Options{Client: client, Prefix: c.KeyPrefix,
		Limits: opts.StoreLimits(), MaxTaskBytes: opts.MaxTaskBytes, Logger: logger, Timeout: c.timeout()})
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return rs, func() error {
		rs.Close()
		return client.Close()
	}, nil
}

// UnmarshalCaddyfile reads store redis { … }, the settings of the tasks
// block's redis block.
func (c *RedisConfig) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the module's name
	r, err := parseRedis(d, "tasks: store redis")
	if err == nil {
		*c = *r
	}
	return err
}

// parseRedis reads the tasks block's redis block.
func parseRedis(d *caddyfile.Dispenser, where string) (*RedisConfig, error) {
	if err := noArgs(d, where); err != nil {
		return nil, err
	}
	r := new(RedisConfig)
	return r, parseSettings(d, where, nil, []setting{
		{"address", addStrings(&r.Addresses)},
		{"master_name", setString(&r.MasterName)},
		{"username", setString(&r.Username)},
		{"password", setString(&r.Password)},
		{"db", setInt(&r.DB)},
		{"tls", func(d *caddyfile.Dispenser, at string) error {
			r.TLS = true
			if d.NextArg() {
				r.TLSServerName = d.Val()
			}
			if d.NextArg() {
				return d.Errf("%s: want at most a server name", at)
			}
			return nil
		}},
		{"tls_ca", setString(&r.TLSCA)},
		{"key_prefix", setString(&r.KeyPrefix)},
		{"timeout", setDuration(&r.Timeout)},
	})
}

// parseStoreModule reads store <module> [{ … }]: the module reads the
// rest (it must be a caddyfile.Unmarshaler).
func parseStoreModule(d *caddyfile.Dispenser, at string) (json.RawMessage, error) {
	if !d.NextArg() {
		return nil, d.Errf("%s: want the name of a store module (memory, redis, or another one's in %s)", at, storesNamespace)
	}
	name := d.Val()
	m, err := caddyfile.UnmarshalModule(d, storesNamespace+"."+name)
	if err != nil {
		return nil, err
	}
	return caddyconfig.JSONModuleObject(m, "module", name, nil), nil
}

// storeModule is the store module the tasks block names: store, or redis;
// nil for the default, in memory. Caddy provisions a module loaded from
// store, and cleans it up with the config.
func (h *Handler) storeModule(ctx caddy.Context) (TaskStore, error) {
	switch t := h.Tasks; {
	case t == nil:
		return nil, nil
	case t.Redis != nil:
		return t.Redis, nil
	case t.StoreRaw == nil:
		return nil, nil
	}
	m, err := ctx.LoadModule(h.Tasks, "StoreRaw")
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	s, ok := m.(TaskStore)
	if !ok {
		return nil, fmt.Errorf("store: module %s is not a task store (%T)", m.(caddy.Module).CaddyModule().ID, m)
	}
	return s, nil
}

// acquireStore takes a reference to the task manager of h.URL, creating it
// with h's limits, on the task store they configure (in memory, unless
// another store is configured), if no loaded config has one. Cleanup
// releases it.
func (h *Handler) acquireStore(ctx caddy.Context) (*tasks.Manager, error) {
	var limits TasksConfig
	if h.Tasks != nil {
		limits = *h.Tasks // before the store module is loaded, which clears StoreRaw
	}
	module, err := h.storeModule(ctx)
	if err != nil {
		return nil, fmt.Errorf("tasks: %w", err)
	}
	val, loaded, err := stores.LoadOrNew(h.URL, func() (caddy.Destructor, error) {
		opts := limits.Options()
		if h.auth == nil {
			// Nobody can authenticate: there is no one to keep a share
			// for, and anonymous callers may use the whole store.
			opts.MaxLiveAnonymous = cmp.Or(opts.MaxLiveAnonymous, opts.MaxTasks, tasks.DefaultMaxTasks)
			opts.MaxLiveBytesAnonymous = cmp.Or(opts.MaxLiveBytesAnonymous, opts.MaxBytes, tasks.DefaultMaxBytes)
		}
		if h.Push != nil {
			opts.MaxPushConfigs = h.Push.MaxConfigsPerTask
		}
		s := &store{limits: limits}
		if module != nil {
			logger := h.logger.Named(module.CaddyModule().ID.Name())
			var err error
			if opts.Store, s.close, err = module.NewStore(opts, logger); err != nil {
				return nil, err
			}
		}
		s.manager = tasks.NewManager(opts)
		return s, nil
	})
	if err != nil {
		return nil, fmt.Errorf("tasks: %w", err)
	}
	h.storeKey = h.URL
	s := val.(*store)
	h.shared = s
	if loaded && !reflect.DeepEqual(s.limits, limits) {
		h.logger.Warn("the task store kept across the reload keeps its limits and Redis; new ones apply once no loaded config uses this url",
			zap.String("url", h.URL))
	}
	return s.manager, nil
}

// releaseStore lets go of h's reference to its task manager; the last
// handler to let go closes it.
func (h *Handler) releaseStore() error {
	if h.storeKey == "" {
		return nil
	}
	key := h.storeKey
	h.storeKey, h.shared = "", nil
	if _, err := stores.Delete(key); err != nil {
		return fmt.Errorf("releasing the task store of %s: %w", key, err)
	}
	return nil
}
