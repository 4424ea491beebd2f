// Package caddymodule plugs caddy-a2a into Caddy: it registers the
// http.handlers.a2a module and the a2a Caddyfile directive, turns their
// configuration into the options of the server package, and keeps the task
// store alive across config reloads. It is the only package that imports
// Caddy; all protocol logic lives in server and the packages below it.
package caddymodule

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

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

	// The blocks of the features (see features), each documented by its
	// type, in the feature's file, off without it.
	Signing      *SigningConfig      `json:"signing,omitempty"`
	Tasks        *TasksConfig        `json:"tasks,omitempty"`
	Security     *SecurityConfig     `json:"security,omitempty"`
	ExtendedCard *ExtendedCardConfig `json:"extended_card,omitempty"`
	Push         *PushConfig         `json:"push,omitempty"`
	REST         *RESTConfig         `json:"rest,omitempty"`
	GRPC         *GRPCConfig         `json:"grpc,omitempty"`

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

// provision runs the steps of provisioning in order, each feature's part
// of a step (see feature) for every feature before the next step.
func (h *Handler) provision(ctx caddy.Context) error {
	// Caddy validates only after provisioning; checking first means no file
	// is read and no store is taken for a configuration that cannot work.
	if err := h.Validate(); err != nil {
		return err
	}
	if err := registerMetrics(ctx.GetMetricsRegistry()); err != nil {
		return fmt.Errorf("registering the metrics: %w", err)
	}
	a := h.assembly(ctx)
	for _, step := range []func() error{
		a.each(feature.authenticate), // first: the skills' requirements are checked as they load
		a.each(feature.sign),
		a.each(feature.configure),
		a.build, // the skills, the cards, then each feature's acquire
		a.each(feature.start),
	} {
		if err := step(); err != nil {
			return err
		}
	}
	h.drainOnExit(ctx)
	agents.add(h)
	return nil
}

// Validate checks the configuration: required fields, absolute URLs, and
// no negative sizes, durations or limits; then each feature's block. The
// card's own rules (media types, URLs without credentials) are cardgen's
// to check.
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
	if err := h.validateCard(); err != nil {
		return err
	}
	return h.validateFeatures()
}

// Cleanup releases what provisioning took: each feature's part (the gRPC
// listener, the authenticator's key refreshes, push, the task store: the
// last handler to release one stops or closes it), and the skills'
// upstream connections. When the process exits, it first lets the drain
// finish (see drainOnExit), while the gRPC listener still answers (its
// health service: NOT_SERVING).
func (h *Handler) Cleanup() error {
	agents.remove(h)
	if h.drain != nil && caddy.Exiting() {
		h.drain()
	}
	if h.srv != nil {
		h.srv.Close() // once the calls still under way on it end (a reload does not wait for them)
	}
	err := h.cleanupFeatures()
	if h.skills != nil {
		h.skills.Close()
		h.skills = nil
	}
	return err
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
