// Package mcp is the MCP binding: the skills as the tools of an MCP
// server, on the official Go SDK's Streamable HTTP transport, served on the
// engine's Handler beside the A2A bindings (server.Binding), by the same
// task store, authentication, limits and observer. Each call runs as a
// blocking SendMessage's task.
//
// By job: mcp.go takes a request (its checks, its caller, its body) and
// hands it to the SDK; sessions.go holds the sessions and their bounds;
// stream.go writes the SDK's answers within the deadlines, with
// heartbeats; requests.go hands a call's request to the SDK's handlers
// through its context; tools.go defines the tools and their results;
// resources.go serves a task's artifacts as resources to its owner;
// call.go runs a call and says its errors in MCP's terms; input.go asks
// for missing input and resumes with the answer; direct.go answers a
// plain stateless tools/call without the SDK; tasks.go serves the tasks
// extension (a long call's task handle, tasks/get, tasks/update,
// tasks/cancel); envelope.go reads the request as the SDK would, strictly.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/confval"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// Binding names the MCP endpoint's calls to the observer (server.Call's
// Binding), beside the A2A bindings. It is no A2A binding: no
// AgentInterface names it.
const Binding = "MCP"

// Defaults of Config.
const (
	DefaultPath           = "/mcp"
	DefaultSessionTimeout = 5 * time.Minute
	DefaultMaxSessions    = 1000
)

// Config turns on the MCP binding: the skills as the tools of an MCP
// server (Streamable HTTP; protocol 2026-07-28 without sessions, the
// versions before with them). Its JSON is the adapter's (caddymodule's
// mcp).
type Config struct {
	// Path is the endpoint's request path, as the handler sees it (after
	// any handle_path). Default: /mcp.
	Path string `json:"path,omitempty"`

	// SessionTimeout closes a session (protocol 2025-11-25 and earlier)
	// that has had no request for this long. Default: 5m.
	SessionTimeout confval.Duration `json:"session_timeout,omitempty"`

	// MaxSessions caps the sessions open at once. Past it, a caller that
	// holds at least two fewer than the caller holding the most still
	// opens one, and that caller's least recently used session is closed;
	// any other is answered 503 with Retry-After until one closes or times
	// out. When the agent declares security schemes, anonymous callers
	// together hold at most half of max_sessions and of max_session_bytes,
	// so that the rest stays for authenticated callers. Requests at
	// 2026-07-28 need no session. Default: 1000.
	MaxSessions int `json:"max_sessions,omitempty"`

	// MaxSessionBytes bounds the memory the sessions hold together, with
	// the same rules as max_sessions: each counts 8 KiB and three times
	// what it keeps of its initialize request (an initialize is at most
	// 16 KiB). Default: 32 MiB; at least 56 KiB, what one session may
	// hold.
	MaxSessionBytes int64 `json:"max_session_bytes,omitempty"`

	// MaxSessionsPerCaller caps the sessions one caller holds open: an
	// authenticated caller (its owner), or one client address of the
	// anonymous ones. Past it, that caller is answered 429 with
	// Retry-After until one of its sessions closes. Default: a tenth
	// of max_sessions, at least 1.
	MaxSessionsPerCaller int `json:"max_sessions_per_caller,omitempty"`

	// MaxSessionBytesPerCaller bounds the memory of one caller's sessions,
	// as max_sessions_per_caller bounds their count. Default: a tenth of
	// max_session_bytes; at least 56 KiB.
	MaxSessionBytesPerCaller int64 `json:"max_session_bytes_per_caller,omitempty"`

	// AnyHostOnLoopback takes requests that arrive on a loopback address
	// with any Host header. By default such a request must name a loopback
	// host, which stops DNS rebinding (a web page whose name resolves to
	// 127.0.0.1 reaching a local agent); set it when a proxy on the same
	// machine forwards requests to Caddy on loopback with their public
	// Host.
	AnyHostOnLoopback bool `json:"any_host_on_loopback,omitempty"`
}

// Validate says what in c cannot be served, naming the setting as its
// JSON does.
func (c *Config) Validate() error {
	switch {
	case c.Path != "" && (!strings.HasPrefix(c.Path, "/") || c.Path == server.CardPath || c.Path == server.LegacyCardPath):
		return fmt.Errorf("path: %q must start with / and not be a card path", c.Path)
	case c.SessionTimeout < 0:
		return fmt.Errorf("session_timeout: %s is negative", time.Duration(c.SessionTimeout))
	case c.MaxSessions < 0:
		return fmt.Errorf("max_sessions: %d is negative", c.MaxSessions)
	case c.MaxSessionsPerCaller < 0:
		return fmt.Errorf("max_sessions_per_caller: %d is negative", c.MaxSessionsPerCaller)
	case c.MaxSessionBytes != 0 && c.MaxSessionBytes < MinSessionBytes:
		return fmt.Errorf("max_session_bytes: %d is less than one session may hold (%d)", c.MaxSessionBytes, MinSessionBytes)
	case c.MaxSessionBytesPerCaller != 0 && c.MaxSessionBytesPerCaller < MinSessionBytes:
		return fmt.Errorf("max_session_bytes_per_caller: %d is less than one session may hold (%d)",
			c.MaxSessionBytesPerCaller, MinSessionBytes)
	}
	return nil
}

// PathOrDefault is the endpoint's request path: Path, or DefaultPath.
func (c *Config) PathOrDefault() string {
	if c.Path == "" {
		return DefaultPath
	}
	return c.Path
}

// The MCP protocol version from which requests are stateless (SEP-2575):
// they carry their version in the Mcp-Protocol-Version header.
const statelessVersion = "2026-07-28"

// binding is the MCP endpoint: requests to its path are authenticated as
// every binding's, then served by the SDK's Streamable HTTP handlers, one
// stateless (protocol 2026-07-28) and one with sessions (the versions
// before).
type binding struct {
	h         *server.Handler
	tasks     *tasks.Manager
	log       *zap.Logger
	heartbeat time.Duration
	path      string
	// stateless serves 2026-07-28 requests; stateful the others, on
	// sessions of statefulServer.
	stateless, stateful http.Handler
	statefulServer      *sdk.Server
	limits              sessionLimits
	// reserveForAuthenticated holds the anonymous callers to their share
	// of the sessions (limits.anonymous): there is someone to keep the
	// rest for.
	reserveForAuthenticated bool
	// owners are who opened each session, by session id: a session
	// serves only its owner (authn.Identity.Owner).
	ownersMu sync.Mutex
	owners   map[string]sessionOpener
	// opening are the sessions being opened, by caller, their costs summed
	// (ownersMu): they count before their owners are noted, so that
	// concurrent ones cannot pass a bound together.
	opening map[string]sessionOpener
	origins *http.CrossOriginProtection
	// anyHostOnLoopback turns the DNS rebinding check (rebound) off.
	anyHostOnLoopback bool
	tools             tools
	// serverInfo is the server's identity, which results carry;
	// serverInfoJSON its _meta member.
	serverInfo     *sdk.Implementation
	serverInfoJSON []byte
	// bySDK leaves every request to the SDK, also a plain tools/call
	// (callDirect): for the tests that compare the two.
	bySDK bool
	// shutdown ends as the server shuts down, and with it the sessions'
	// standalone streams (Shutdown).
	shutdown    context.Context
	endShutdown context.CancelFunc
	// onSessions counts the requests under way on the sessions; once
	// closing (Close), the last one to end closes them all, and
	// closed refuses the requests that come after.
	sessionsMu      sync.Mutex
	onSessions      int
	closing, closed bool
	// listens counts the tasks the open listens follow, by caller's share
	// (server.Handler.Share): listen.go.
	listensMu sync.Mutex
	listens   map[string]int
}

// New serves the skills as the tools of an MCP server, as c says.
func New(c Config) server.NewBinding {
	return func(h *server.Handler) (server.Binding, error) { return newBinding(h, &c) }
}

func newBinding(h *server.Handler, c *Config) (*binding, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("server: mcp: %w", err)
	}
	res := h.Resources()
	b := &binding{h: h, tasks: res.Tasks, log: res.Logger, heartbeat: res.HeartbeatInterval, path: c.PathOrDefault(),
		origins: http.NewCrossOriginProtection(), anyHostOnLoopback: c.AnyHostOnLoopback,
		owners: make(map[string]sessionOpener), opening: make(map[string]sessionOpener), listens: make(map[string]int),
		limits: newSessionLimits(c), reserveForAuthenticated: res.Authenticates}
	card := res.Card.Card()
	b.serverInfo = &sdk.Implementation{Name: card.Name, Version: card.Version}
	info, err := json.Marshal(map[string]any{sdk.MetaKeyServerInfo: b.serverInfo})
	if err != nil {
		return nil, fmt.Errorf("server: mcp: the server's identity: %w", err)
	}
	b.serverInfoJSON = info[1 : len(info)-1]
	b.shutdown, b.endShutdown = context.WithCancel(context.Background())
	timeout := time.Duration(c.SessionTimeout)
	if timeout == 0 {
		timeout = DefaultSessionTimeout
	}
	if err := b.tools.build(res.Skills); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	// The binding checks Host itself (rebound), for the requests it
	// answers without the SDK too.
	opts := sdk.StreamableHTTPOptions{MaxRequestBodyBytes: res.MaxRequestBytes, DisableLocalhostProtection: true}
	stateless := opts
	stateless.Stateless, stateless.PropagateRequestCancellation = true, true
	// The tasks extension is for 2026-07-28 (tasks.go).
	statelessServer := b.server(card.Description, map[string]any{tasksExtension: struct{}{}})
	b.stateless = carrying(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return statelessServer }, &stateless))
	stateful := opts
	stateful.SessionTimeout = timeout
	b.statefulServer = b.server(card.Description, nil)
	b.statefulServer.AddReceivingMiddleware(b.boundInputWaits)
	b.stateful = carrying(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return b.statefulServer }, &stateful))
	return b, nil
}

// server makes an MCP server with the skills as its tools, the tasks'
// artifacts as its resources, the agent's description as its
// instructions, and the extensions it declares.
func (b *binding) server(instructions string, extensions map[string]any) *sdk.Server {
	s := sdk.NewServer(b.serverInfo, &sdk.ServerOptions{Instructions: instructions,
		// Prompts: none, but prompts/list answers (an empty list), so the
		// capability is declared, as discovery must show what is answered.
		// Resources: the artifacts' template, which never changes, and no
		// subscriptions (the SDK would declare listChanged).
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}, Prompts: &sdk.PromptCapabilities{},
			Resources: &sdk.ResourceCapabilities{}, Extensions: extensions},
		// Declares completions.
		CompletionHandler: complete})
	b.tools.addTo(s, b)
	b.addResources(s)
	return s
}

// Serve answers a request to the endpoint's path.
func (b *binding) Serve(w http.ResponseWriter, r *http.Request, c *server.Exchange) bool {
	if r.URL.Path != b.path {
		return false
	}
	h := b.h
	// Refusals are JSON-RPC errors, as MCP's transport errors are.
	c.Begin(Binding)
	in := &inbound{r: r}
	defer in.report(c)
	// The answers the binding writes itself (WriteJSON) set their own
	// deadline; the rest go through the deadline writer.
	direct := w
	dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), b: b, in: in}
	defer dw.end()
	w = dw
	if !b.anyHostOnLoopback && rebound(r) {
		http.Error(w, fmt.Sprintf("MCP endpoint: Host %q is not a loopback host, and the request came to a loopback address "+
			"(DNS rebinding protection; see any_host_on_loopback)", r.Host), http.StatusForbidden)
		return true
	}
	// Who is calling is settled before the body is read, as for every
	// binding.
	caller, ok := h.Authenticate(w, r, c)
	if !ok {
		return true
	}
	in.caller = caller
	if err := b.origins.Check(r); err != nil {
		http.Error(w, "MCP endpoint: "+err.Error(), http.StatusForbidden)
		return true
	}

	var body []byte
	var env envelope
	plain := false
	if r.Method == http.MethodPost {
		if body, ok = h.ReadBody(w, r, c); !ok {
			return true
		}
		// The SDK reads the body again, from memory: the size cap and the
		// read timeout applied here. First the strict reader holds it to
		// what every binding's body is held to (envelopeReader).
		var refused *a2a.Error
		if plain, refused = readEnvelope(body, &env); refused != nil {
			h.WriteError(w, http.StatusBadRequest, c, refused)
			return true
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	operation := server.UnknownMethod
	if plain {
		operation = operationOf(env.Method)
	}
	r = h.StartOperation(r, c, operation)
	in.r = r

	stateless := r.Header.Get("Mcp-Protocol-Version") >= statelessVersion
	if stateless && plain && b.serveTasks(direct, in, &env, body) {
		return true
	}
	if stateless && plain && !b.bySDK && b.callDirect(direct, in, &env) {
		return true
	}
	r = carry(r, in)

	session := r.Header.Get(sessionHeader)
	switch {
	case stateless:
		b.stateless.ServeHTTP(w, r)
	case session == "" && needsSession(r, &env, plain):
		h.WriteError(w, http.StatusBadRequest, c, a2a.InvalidRequest(fmt.Sprintf(
			"%s needs a session: send initialize first, and its Mcp-Session-Id with every request (or use protocol %s, which needs none)",
			env.Method, statelessVersion)))
	case r.Method == http.MethodPost && session == "":
		b.openSession(w, r, c, body, b.opener(r, caller))
	case !b.sessionOf(session, caller.Owner()):
		http.Error(w, "MCP endpoint: the session belongs to another caller", http.StatusForbidden)
	default:
		b.serveOnSession(w, r)
	}
	return true
}

// The methods the observer is told of, by their names: tools/call,
// tools/list, and any other (initialize, server/discover, ping, a
// notification) as one.
const (
	operationToolsCall = "tools/call"
	operationToolsList = "tools/list"
	operationOther     = "mcp/other"
)

// operationOf is the observer's name of the MCP method method: one of a
// fixed few, so that metrics stay bounded.
func operationOf(method string) string {
	switch method {
	case "":
		return server.UnknownMethod
	case operationToolsCall, operationToolsList:
		return method
	}
	return operationOther
}

// needsSession reports whether r, a request without a session at a version
// that has them, is one the SDK would take but not an initialize: only an
// initialize opens a session (the transport's 400 for the others), where
// the SDK would open one to refuse the request. What the SDK refuses first
// (another content type, an Accept without both kinds) is left to it.
func needsSession(r *http.Request, env *envelope, plain bool) bool {
	return r.Method == http.MethodPost && plain && env.Method != "initialize" &&
		isJSONContent(r.Header.Get("Content-Type")) && acceptsJSONAndSSE(r.Header.Values("Accept"))
}

// rebound reports whether r came to a loopback address but names another
// host: a web page whose name was made to resolve to 127.0.0.1 (DNS
// rebinding), reaching an agent that only local programs should.
func rebound(r *http.Request) bool {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return local != nil && isLoopback(local.String()) && !isLoopback(r.Host)
}

// isLoopback reports whether a host, or host:port, is localhost or a
// loopback IP address.
func isLoopback(hostPort string) bool {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		host = strings.Trim(hostPort, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
