// Package caddymodule plugs caddy-a2a into Caddy: it registers the
// http.handlers.a2a module and the a2a Caddyfile directive, turns their
// configuration into the options of the server package, and keeps the task
// store alive across config reloads. It is the only package that imports
// Caddy; all protocol logic lives in server and the packages below it.
package caddymodule

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/push"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// DefaultVersion is the agent version the card shows when none is configured.
const DefaultVersion = "1.0.0"

// Handler makes the REST API described by a skills file into an A2A agent.
// It serves the Agent Card on GET /.well-known/agent-card.json (and the older
// /.well-known/agent.json), its JWK Set when the card is signed, the
// HTTP+JSON and gRPC bindings when they are on, and the A2A JSON-RPC
// endpoint, with SSE streaming, on POST to whatever path routes to it. It is
// a terminal handler: it never calls the next handler in the chain.
//
// The task store outlives config reloads: handlers whose url is the same
// share one store, so tasks created before `caddy reload` stay readable after
// it and open streams keep their events. The store is released when the last
// config using that url is unloaded. Changing the url starts a fresh store.
type Handler struct {
	// Skills is the path of the skills YAML file, relative to Caddy's working
	// directory. Required.
	Skills string `json:"skills,omitempty"`

	// Upstream, when set, replaces the upstream URL written in the skills
	// file, so one skills file serves several deployments.
	Upstream string `json:"upstream,omitempty"`

	// URL is the public, absolute URL of this A2A endpoint, as clients reach
	// it; the Agent Card advertises it. It also names the task store kept
	// across config reloads. Required.
	URL string `json:"url,omitempty"`

	// Name is the agent's human-readable name. Required.
	Name string `json:"name,omitempty"`

	// Description says what the agent does. Required.
	Description string `json:"description,omitempty"`

	// Version is the agent's own version, as the card shows it. Default: 1.0.0.
	Version string `json:"version,omitempty"`

	// Provider is the organization behind the agent.
	Provider *Provider `json:"provider,omitempty"`

	// DocumentationURL is an absolute URL of the agent's documentation.
	DocumentationURL string `json:"documentation_url,omitempty"`

	// IconURL is an absolute URL of the agent's icon.
	IconURL string `json:"icon_url,omitempty"`

	// DefaultInputModes are the media types every skill accepts unless the
	// skill says otherwise. Default: text/plain and application/json.
	DefaultInputModes []string `json:"default_input_modes,omitempty"`

	// DefaultOutputModes are the media types every skill produces unless the
	// skill says otherwise. Default: text/plain and application/json.
	DefaultOutputModes []string `json:"default_output_modes,omitempty"`

	// MaxRequestBody caps the size in bytes of a request body of any
	// binding (JSON-RPC, HTTP+JSON, a gRPC message); a larger one is
	// refused with 413 (gRPC: RESOURCE_EXHAUSTED). The Caddyfile takes a
	// size such as 4MiB or 1MB. Default: 4 MiB.
	MaxRequestBody int64 `json:"max_request_body,omitempty"`

	// Heartbeat is how often an SSE stream (A2A's, and MCP's: a call's, a
	// session's standalone stream) gets a comment line, so that proxies
	// and clients keep an idle one open. Default: 15s.
	Heartbeat caddy.Duration `json:"heartbeat,omitempty"`

	// ReadBodyTimeout bounds the time to read one request body; a body
	// slower than that is refused with 408. Caddy's own read timeouts
	// restart with every byte, so a body sent a byte at a time would hold
	// its connection for ever. Default: 10s.
	ReadBodyTimeout caddy.Duration `json:"read_body_timeout,omitempty"`

	// WriteTimeout bounds writing one answer: a JSON answer, or one event
	// of a stream. A client that stops reading is dropped then, instead of
	// holding the answer's memory. (Caddy's servers.timeouts.write cannot
	// serve: it counts from the start of the request, and would cut
	// streams and long blocking calls.) Default: 10s.
	WriteTimeout caddy.Duration `json:"write_timeout,omitempty"`

	// CardMaxAge is how long clients and caches may reuse the Agent Card
	// before revalidating it (Cache-Control max-age, whole seconds).
	// Default: 5m.
	CardMaxAge caddy.Duration `json:"card_max_age,omitempty"`

	// CardFormat is the shape of the served Agent Card: "union" (the
	// default: the 1.0 and the 0.3 members, so that clients of both
	// versions read it) or "strict" (the 1.0 AgentCard's members only, for
	// clients that validate the 1.0 schema strictly; 0.3 clients cannot
	// read it, and one signature serves every verifier unless the card
	// holds empty values).
	CardFormat string `json:"card_format,omitempty"`

	// CardBareScopes writes the scopes of security requirements as bare
	// arrays ({"schemes": {"key": []}}) instead of the proto's ProtoJSON
	// StringList ({"schemes": {"key": {"list": []}}}): the only form the
	// official Go SDK a2a-go v2.3.1 and v2.4.0 can read (its issue #430).
	// ProtoJSON parsers (the JavaScript and Python SDKs, verifiers written
	// from the spec) cannot read such a card, and it carries only the
	// "served" form's signature. Off by default.
	CardBareScopes bool `json:"card_bare_scopes,omitempty"`

	// DrainTimeout is how long, when Caddy stops (SIGTERM, caddy stop; not
	// a reload), running tasks and blocking calls may take to finish; new
	// tasks are refused from the start. Then what still runs ends failed,
	// stored and told to its streams, and the process exits. Keep it below
	// Caddy's grace_period (when set) and, in Kubernetes, below
	// terminationGracePeriodSeconds. Default: 20s.
	DrainTimeout caddy.Duration `json:"drain_timeout,omitempty"`

	// Signing signs the Agent Card (spec 1.0 §8.4) and serves the public
	// keys as a JWK Set at signing.jwks_path. See SigningConfig.
	Signing *SigningConfig `json:"signing,omitempty"`

	// Tasks bounds the task store. A store kept across a reload keeps the
	// limits it was created with: new limits take effect once no loaded
	// config uses the store's url any more (a restart, or a reload with a
	// different url).
	Tasks *TasksConfig `json:"tasks,omitempty"`

	// Security authenticates callers against the security schemes the
	// card declares (spec 1.0 §7): every JSON-RPC request must meet the
	// agent-wide requirement, each caller owns the tasks it creates and
	// sees no others, and skills may require more. Without it, every
	// caller is anonymous. See SecurityConfig.
	Security *SecurityConfig `json:"security,omitempty"`

	// ExtendedCard serves the extended Agent Card to authenticated callers
	// (GetExtendedAgentCard) and announces it on the public card. It needs
	// Security, and is signed like the public card. See
	// ExtendedCardConfig.
	ExtendedCard *ExtendedCardConfig `json:"extended_card,omitempty"`

	// Push enables push notifications; off without it. It needs Signing.
	// See PushConfig.
	Push *PushConfig `json:"push,omitempty"`

	// REST serves the HTTP+JSON binding (protocols 1.0 and 0.3) below a
	// path, and lists it on the card; off without it. See RESTConfig.
	REST *RESTConfig `json:"rest,omitempty"`

	// GRPC serves the gRPC binding (A2A 1.0's A2AService) beside JSON-RPC,
	// and lists it on the card: on the same site (gRPC needs HTTP/2 there:
	// over TLS as Caddy serves it by default, or over cleartext with the
	// server's `protocols h1 h2 h2c`), or with listen on a listener of its
	// own. Off without it. See GRPCConfig.
	GRPC *GRPCConfig `json:"grpc,omitempty"`

	// MCP serves the skills as the tools of an MCP server on a path of
	// the site (default /mcp); off without it. With a security scheme that
	// takes bearer tokens, its OAuth 2.0 Protected Resource Metadata is
	// served at /.well-known/oauth-protected-resource (also followed by
	// the endpoint's path), Bearer challenges name it, and JWTs must be
	// for the endpoint's URL (docs/mcp.md, Authorization). See MCPConfig.
	MCP *MCPConfig `json:"mcp,omitempty"`

	skills   *mapping.Skills
	auth     *authn.Authenticator // nil without Security
	storeKey string               // set while this handler holds a reference in stores
	shared   *store               // the store of storeKey
	drain    func()               // drains shared's manager, once; see drainOnExit
	srv      *server.Handler
	// manager and pusher: the store's task manager, and this config's
	// sender of push notifications, which it set as the manager's pusher.
	manager *tasks.Manager
	pusher  *push.Sender
	logger  *zap.Logger
	// grpcListen is set while this handler holds a reference in
	// grpcListeners; detachGRPC detaches it from that listener.
	grpcListen string
	detachGRPC func()
}

// GRPCConfig is the gRPC binding, served by the same engine,
// authentication, limits and observer as JSON-RPC: on the site's port,
// HTTP/2 requests with a gRPC content type (on the paths
// /lf.a2a.v1.A2AService/<method>, which must route to this handler); or,
// with Listen, every call on a listener of the binding's own. In the
// Caddyfile: grpc [<address>] [{ … }].
type GRPCConfig struct {
	// URL is the address the card lists for the gRPC binding: a gRPC
	// target, as gRPC clients (the official SDKs' among them) dial it.
	// Default: the host and port of url, such as agent.example.com:443;
	// with Listen, the host of url and the port of Listen, such as
	// agent.example.com:50051.
	URL string `json:"url,omitempty"`

	// Listen serves the binding on a listener of its own at this
	// host:port (":50051": every interface), by grpc-go's own HTTP/2
	// transport, cheaper per call than on the site's port (docs/bindings.md
	// has the figures), which then takes no gRPC call; with
	// grpc.health.v1.Health beside it.
	// A reload that keeps the address keeps the listener and its
	// connections, and hands new calls to the new config; the listener
	// stops once no loaded config uses it (gracefully, within
	// drain_timeout). Default: the binding is served on the site's port.
	// The settings below are the listener's.
	Listen string `json:"listen,omitempty"`

	// TLS serves the listener over TLS. Default: cleartext (HTTP/2 with
	// prior knowledge, as gRPC clients speak it without TLS). When
	// security declares a mutual_tls scheme, clients are asked for a
	// certificate, which the scheme checks. See GRPCTLSConfig.
	TLS *GRPCTLSConfig `json:"tls,omitempty"`

	// KeepaliveTime: a connection on which nothing arrived for this long
	// is pinged, so that idle streams outlive the idle timeouts of NATs and
	// load balancers, and a client that vanished is found. Default: 30s.
	KeepaliveTime caddy.Duration `json:"keepalive_time,omitempty"`

	// KeepaliveTimeout: a ping not answered within this closes its
	// connection and ends its calls. Default: 20s.
	KeepaliveTimeout caddy.Duration `json:"keepalive_timeout,omitempty"`

	// KeepaliveMinTime is how often clients may ping, with or without a
	// call open; a client that pings more often is sent GOAWAY
	// (too_many_pings). Default: 10s.
	KeepaliveMinTime caddy.Duration `json:"keepalive_min_time,omitempty"`

	// MaxConcurrentStreams bounds the calls open at once on one
	// connection. Default: 250.
	MaxConcurrentStreams int `json:"max_concurrent_streams,omitempty"`

	// Reflection serves gRPC server reflection (v1 and v1alpha), which
	// tools such as grpcurl use to list and call the service without its
	// proto. Like the health service, it asks for no credentials. Off by
	// default.
	Reflection bool `json:"reflection,omitempty"`
}

// Provider is the organization behind the agent.
type Provider struct {
	// Organization is the provider's name. Required.
	Organization string `json:"organization,omitempty"`
	// URL is an absolute URL of the provider's website. Required.
	URL string `json:"url,omitempty"`
}

// TasksConfig bounds the task store. Zero values take the defaults.
type TasksConfig struct {
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
	MaxAge caddy.Duration `json:"max_age,omitempty"`
	// ResendWindow is how long after its task's last update a message is
	// remembered, so that the same messageId sent again answers its task
	// instead of running again (while the task is live, it always is);
	// also once the task was dropped to make room. 0 turns that off: every
	// message runs, whatever its messageId, so a client that sends a
	// message again after a timeout runs its skill twice. Default and
	// most: max_age.
	ResendWindow *caddy.Duration `json:"resend_window,omitempty"`
	// MaxResendKeys is how many messages of tasks dropped to make room are
	// remembered until their resend window ends, tens of bytes each; past
	// it, the caller holding the most loses its oldest, and anonymous
	// callers hold at most their share (as max_live_anonymous is of
	// max_tasks). Default: max_tasks.
	MaxResendKeys int `json:"max_resend_keys,omitempty"`
	// MaxInputWait is how long an input-required or auth-required task
	// waits for the follow-up message before it fails as expired, freeing
	// its owner's place. Default: 10m (at most max_age).
	MaxInputWait caddy.Duration `json:"max_input_wait,omitempty"`
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
	// Redis keeps the tasks in Redis, shared by the agent's replicas,
	// instead of in this process's memory. See RedisConfig.
	Redis *RedisConfig `json:"redis,omitempty"`
	// StreamBuffer is how many events a stream may fall behind before it is
	// closed as too slow. Default: 64.
	StreamBuffer int `json:"stream_buffer,omitempty"`
}

// The values of card_format.
const (
	cardFormatUnion  = "union"
	cardFormatStrict = "strict"
)

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.a2a",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision loads the skills, builds the Agent Card, takes the shared task
// store and sets up the A2A server.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	// With several agents in one config, the error says which one (by its
	// url, any password in it redacted).
	if err := h.provision(ctx); err != nil {
		if h.URL != "" {
			return fmt.Errorf("a2a agent %s: %w", redactedURL(h.URL), err)
		}
		return err
	}
	return nil
}

func (h *Handler) provision(ctx caddy.Context) error {
	// Caddy validates only after provisioning; checking first means no file
	// is read and no store is taken for a configuration that cannot work.
	if err := h.Validate(); err != nil {
		return err
	}
	if err := registerMetrics(ctx.GetMetricsRegistry()); err != nil {
		return fmt.Errorf("registering the metrics: %w", err)
	}

	// First, so that the skills' requirements are checked against the
	// declared schemes while the file loads.
	if err := h.provisionSecurity(); err != nil {
		return err
	}

	// An absolute path, so that errors name the file wherever Caddy runs.
	path, err := filepath.Abs(h.Skills)
	if err != nil {
		return fmt.Errorf("skills file %s: %w", h.Skills, err)
	}
	// mapping's errors already name the file, the line and the skill.
	h.skills, err = mapping.Load(path, mapping.Options{UpstreamURL: h.Upstream, LookupEnv: os.LookupEnv,
		CheckSecurity: h.auth.CheckRequirements, WrapTransport: wrapUpstream})
	if err != nil {
		return err
	}
	if err := h.checkExtended(h.skills); err != nil {
		return err
	}

	card, err := cardgen.Build(h.cardConfig())
	if err != nil {
		return fmt.Errorf("building the agent card: %w", err)
	}
	cardOpts := []cardgen.Option{cardgen.WithShape(a2a.CardShape{
		Strict10: h.CardFormat == cardFormatStrict, BareScopes: h.CardBareScopes})}
	if h.CardMaxAge > 0 {
		cardOpts = append(cardOpts, cardgen.WithMaxAge(time.Duration(h.CardMaxAge)))
	}
	srvCfg := server.Config{
		Skills:            h.skills,
		MaxRequestBytes:   h.MaxRequestBody,
		HeartbeatInterval: time.Duration(h.Heartbeat),
		ReadBodyTimeout:   time.Duration(h.ReadBodyTimeout),
		WriteTimeout:      time.Duration(h.WriteTimeout),
		ClientAddress:     clientIP,
		Logger:            h.logger,
		Observer:          observer{},
	}
	// In the order they are tried: gRPC's paths may lie below HTTP+JSON's.
	if h.GRPC != nil && h.GRPC.Listen == "" {
		srvCfg.Bindings = append(srvCfg.Bindings, server.GRPC())
	}
	if h.MCP != nil {
		srvCfg.Bindings = append(srvCfg.Bindings, h.MCP.binding())
	}
	if h.REST != nil {
		srvCfg.Bindings = append(srvCfg.Bindings, server.HTTPJSON(h.REST.Path))
	}
	var pushKey cardgen.Key
	if h.Signing != nil {
		var published []cardgen.Key
		if h.Push != nil && h.Push.Key != nil {
			if pushKey, err = h.Push.pushKey(cardgen.Key{}); err != nil {
				return err
			}
			published = append(published, cardgen.Key{ID: pushKey.ID, Algorithm: pushKey.Algorithm, Public: pushKey.Public})
		}
		signer, jwks, err := h.provisionSigning(ctx, published...)
		if err != nil {
			return err
		}
		if pushKey.Private == nil {
			pushKey = signer.Key()
		}
		cardOpts = append(cardOpts, cardgen.WithSigner(signer))
		srvCfg.JWKS, srvCfg.JWKSPath = jwks, h.Signing.jwksPath()
	}
	srvCfg.Card, err = cardgen.NewDocument(card, cardOpts...)
	if err != nil {
		return fmt.Errorf("encoding the agent card: %w", err)
	}
	if h.ExtendedCard != nil {
		ext, err := cardgen.Build(h.extendedCardConfig())
		if err != nil {
			return fmt.Errorf("building the extended agent card: %w", err)
		}
		// Signed like the public card, when signing is configured.
		if srvCfg.ExtendedCard, err = cardgen.NewDocument(ext, cardOpts...); err != nil {
			return fmt.Errorf("encoding the extended agent card: %w", err)
		}
	}
	if h.auth != nil {
		srvCfg.Auth = placeholders{h.auth}
		srvCfg.ProtectCard = h.Security.ProtectCard
	}
	if srvCfg.ResourceMetadata, err = h.resourceMetadata(); err != nil {
		return err
	}

	if srvCfg.Tasks, err = h.acquireStore(); err != nil {
		return err
	}
	h.manager = srvCfg.Tasks
	if h.Push != nil {
		if h.pusher, err = h.Push.newSender(h, pushKey); err != nil {
			return err
		}
		srvCfg.Push = h.pusher
	}
	// The last config loaded decides, also when it turns push off.
	if h.pusher != nil {
		h.manager.SetPusher(h.pusher)
	} else {
		h.manager.SetPusher(nil)
	}
	srv, _ := ctx.Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	newAccessLogAdvice(h.Security).warn(srv, h.logger)
	h.srv, err = server.New(srvCfg)
	if err != nil {
		return fmt.Errorf("setting up the A2A server: %w", err)
	}
	if err := h.listenGRPC(ctx); err != nil {
		return err
	}
	h.drainOnExit(ctx)
	if srv != nil {
		// Streams that last until their client leaves (MCP's) would hold
		// the shutdown, for a reload too: they end as it begins.
		srv.RegisterOnShutdown(h.srv.Shutdown)
	}
	agents.add(h)
	return nil
}

// cardConfig is the public card's part of the configuration: the skills
// the skills file declares (but those for the extended card only), and the
// security schemes and requirement exactly as they are checked.
func (h *Handler) cardConfig() cardgen.Config {
	cfg := cardgen.Config{
		Name:               h.Name,
		Description:        h.Description,
		Version:            h.Version,
		URL:                h.URL,
		RESTURL:            h.restURL(),
		DocumentationURL:   h.DocumentationURL,
		IconURL:            h.IconURL,
		DefaultInputModes:  h.DefaultInputModes,
		DefaultOutputModes: h.DefaultOutputModes,
	}
	if cfg.Version == "" {
		cfg.Version = DefaultVersion
	}
	if h.Provider != nil {
		cfg.Provider = &a2a.AgentProvider{Organization: h.Provider.Organization, URL: h.Provider.URL}
	}
	for _, sk := range h.skills.All() {
		if !sk.Extended {
			cfg.AddSkill(sk.AgentSkill(), sk.ArgumentSchema())
		}
	}
	cfg.SecuritySchemes = h.auth.CardSchemes()
	cfg.Security = h.auth.CardRequirements()
	cfg.ExtendedCard = h.ExtendedCard != nil
	cfg.PushNotifications = h.Push != nil
	cfg.GRPCURL = h.grpcURL()
	return cfg
}

// siteURL is the absolute URL of path on the agent's site: the scheme and
// host of url.
func (h *Handler) siteURL(path string) string {
	u, err := url.Parse(h.URL)
	if err != nil {
		return "" // Validate has refused it
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: path}).String()
}

// grpcURL is the address the card lists for the gRPC binding ("": not
// served).
func (h *Handler) grpcURL() string {
	if h.GRPC == nil {
		return ""
	}
	if h.GRPC.URL != "" {
		return h.GRPC.URL
	}
	u, err := url.Parse(h.URL) // checked by Validate
	if err != nil {
		return ""
	}
	if h.GRPC.Listen != "" {
		port, _ := listenPort(h.GRPC.Listen) // checked by Validate
		return net.JoinHostPort(u.Hostname(), port)
	}
	if u.Port() != "" {
		return u.Host
	}
	port := "443"
	if u.Scheme == "http" {
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// Validate checks the configuration: required fields, absolute URLs, and
// no negative sizes, durations or limits. The card's own rules (media types,
// URLs without credentials) are cardgen's to check.
func (h *Handler) Validate() error {
	switch {
	case h.Skills == "":
		return errors.New("skills: the skills file is required")
	case h.URL == "":
		return errors.New("url: the public URL of the A2A endpoint is required")
	case h.Name == "":
		return errors.New("name: the agent's name is required")
	case h.Description == "":
		return errors.New("description: the agent's description is required")
	case h.MaxRequestBody < 0:
		return fmt.Errorf("max_request_body: %d is negative", h.MaxRequestBody)
	case h.Heartbeat < 0:
		return fmt.Errorf("heartbeat: %s is negative", time.Duration(h.Heartbeat))
	case h.CardMaxAge < 0:
		return fmt.Errorf("card_max_age: %s is negative", time.Duration(h.CardMaxAge))
	case h.CardFormat != "" && h.CardFormat != cardFormatUnion && h.CardFormat != cardFormatStrict:
		return fmt.Errorf("card_format: %q is not %q or %q", h.CardFormat, cardFormatUnion, cardFormatStrict)
	case h.CardBareScopes && h.Signing != nil && len(h.Signing.Forms) > 0 && !slices.Contains(h.Signing.Forms, string(cardgen.FormServed)):
		return fmt.Errorf("signing: forms %v: a card with card_bare_scopes carries only the %q form's signature",
			h.Signing.Forms, cardgen.FormServed)
	case h.ReadBodyTimeout < 0:
		return fmt.Errorf("read_body_timeout: %s is negative", time.Duration(h.ReadBodyTimeout))
	case h.WriteTimeout < 0:
		return fmt.Errorf("write_timeout: %s is negative", time.Duration(h.WriteTimeout))
	case h.DrainTimeout < 0:
		return fmt.Errorf("drain_timeout: %s is negative", time.Duration(h.DrainTimeout))
	}
	if h.Provider != nil {
		if h.Provider.Organization == "" {
			return errors.New("provider: the organization is required")
		}
		if h.Provider.URL == "" {
			return errors.New("provider: the provider's URL is required")
		}
	}
	for _, u := range [...]struct{ field, value string }{
		{"url", h.URL},
		{"upstream", h.Upstream},
		{"provider", h.providerURL()},
		{"documentation_url", h.DocumentationURL},
		{"icon_url", h.IconURL},
	} {
		if u.value == "" {
			continue
		}
		if err := checkAbsoluteURL(u.value); err != nil {
			return fmt.Errorf("%s: %w", u.field, err)
		}
	}
	if h.Signing != nil {
		if err := h.Signing.validate(); err != nil {
			return fmt.Errorf("signing: %w", err)
		}
	}
	if h.Security != nil {
		if err := h.Security.validate(); err != nil {
			return fmt.Errorf("security: %w", err)
		}
	}
	if h.Push != nil {
		if err := h.Push.validate(h.Signing); err != nil {
			return fmt.Errorf("push: %w", err)
		}
	}
	if h.REST != nil {
		if err := h.REST.validate(); err != nil {
			return fmt.Errorf("rest: %w", err)
		}
	}
	if h.GRPC != nil {
		if err := h.GRPC.validate(); err != nil {
			return fmt.Errorf("grpc: %w", err)
		}
	}
	if h.MCP != nil {
		if err := h.MCP.validate(); err != nil {
			return fmt.Errorf("mcp: %w", err)
		}
	}
	if e := h.ExtendedCard; e != nil {
		if h.Security == nil {
			return errors.New("extended_card: the extended card is served to authenticated callers only: configure security")
		}
		if e.DocumentationURL != "" {
			if err := checkAbsoluteURL(e.DocumentationURL); err != nil {
				return fmt.Errorf("extended_card: documentation_url: %w", err)
			}
		}
	}
	if t := h.Tasks; t != nil {
		switch {
		case t.MaxTasks < 0:
			return fmt.Errorf("tasks: max_tasks %d is negative", t.MaxTasks)
		case t.MaxLivePerOwner < 0:
			return fmt.Errorf("tasks: max_live_per_owner %d is negative", t.MaxLivePerOwner)
		case t.MaxLiveAnonymous < 0:
			return fmt.Errorf("tasks: max_live_anonymous %d is negative", t.MaxLiveAnonymous)
		case t.MaxLivePerClient < 0:
			return fmt.Errorf("tasks: max_live_per_client %d is negative", t.MaxLivePerClient)
		case t.MaxLiveBytesAnonymous < 0:
			return fmt.Errorf("tasks: max_live_bytes_anonymous %d is negative", t.MaxLiveBytesAnonymous)
		case t.MaxLiveBytesPerClient < 0:
			return fmt.Errorf("tasks: max_live_bytes_per_client %d is negative", t.MaxLiveBytesPerClient)
		case t.MaxHistory < 0:
			return fmt.Errorf("tasks: max_history %d is negative", t.MaxHistory)
		case t.MaxAge < 0:
			return fmt.Errorf("tasks: max_age %s is negative", time.Duration(t.MaxAge))
		case t.ResendWindow != nil && *t.ResendWindow < 0:
			return fmt.Errorf("tasks: resend_window %s is negative (0 turns it off)", time.Duration(*t.ResendWindow))
		case t.MaxResendKeys < 0:
			return fmt.Errorf("tasks: max_resend_keys %d is negative", t.MaxResendKeys)
		case t.StreamBuffer < 0:
			return fmt.Errorf("tasks: stream_buffer %d is negative", t.StreamBuffer)
		case t.MaxInputWait < 0:
			return fmt.Errorf("tasks: max_input_wait %s is negative", time.Duration(t.MaxInputWait))
		case t.MaxBytes < 0:
			return fmt.Errorf("tasks: max_bytes %d is negative", t.MaxBytes)
		case t.MaxLiveBytesPerOwner < 0:
			return fmt.Errorf("tasks: max_live_bytes_per_owner %d is negative", t.MaxLiveBytesPerOwner)
		case t.MaxTaskBytes < 0:
			return fmt.Errorf("tasks: max_task_bytes %d is negative", t.MaxTaskBytes)
		}
		if t.Redis != nil {
			if err := t.Redis.validate(); err != nil {
				return fmt.Errorf("tasks: %w", err)
			}
		}
	}
	return nil
}

func (h *Handler) providerURL() string {
	if h.Provider == nil {
		return ""
	}
	return h.Provider.URL
}

// checkAbsoluteURL accepts http and https URLs with a host. Its error does
// not repeat the value, which may carry credentials.
func checkAbsoluteURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("not an absolute http or https URL")
	}
	return nil
}

// Cleanup stops the authenticator's key refreshes, closes the skills'
// upstream connections and releases the gRPC listener and the task store;
// the last handler to release one stops or closes it. When the process
// exits, it first lets the drain finish (see drainOnExit), while the gRPC
// listener still answers (its health service: NOT_SERVING).
func (h *Handler) Cleanup() error {
	agents.remove(h)
	if h.drain != nil && caddy.Exiting() {
		h.drain()
	}
	grpcErr := h.releaseGRPC()
	if h.srv != nil {
		h.srv.Close() // once the calls still under way on it end (a reload does not wait for them)
	}
	h.auth.Close()
	h.auth = nil
	if h.pusher != nil {
		h.manager.ClearPusher(h.pusher)
		h.pusher.Close()
		h.pusher = nil
	}
	if h.skills != nil {
		h.skills.Close()
		h.skills = nil
	}
	if h.storeKey == "" {
		return grpcErr
	}
	key := h.storeKey
	h.storeKey, h.shared = "", nil
	if _, err := stores.Delete(key); err != nil {
		return errors.Join(grpcErr, fmt.Errorf("releasing the task store of %s: %w", key, err))
	}
	return grpcErr
}

// ServeHTTP hands the request to the A2A server. The handler is terminal.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	h.srv.ServeHTTP(w, r)
	return nil
}

// Interface guards
var (
	_ caddy.Module                = (*Handler)(nil)
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
	_ caddyfile.Unmarshaler       = (*Handler)(nil)
)

// clientIP is the client's IP as Caddy resolved it, behind the server's
// trusted_proxies when it has some.
func clientIP(r *http.Request) string {
	ip, _ := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string)
	return ip // "": the server takes the remote address
}
