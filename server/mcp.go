package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
)

// Defaults of MCPConfig.
const (
	DefaultMCPPath           = "/mcp"
	DefaultMCPSessionTimeout = 5 * time.Minute
	DefaultMCPMaxSessions    = 1000
)

// MCPConfig turns on the MCP binding (mcp*.go): the skills as the tools of
// an MCP server, on the official Go SDK's Streamable HTTP transport.
type MCPConfig struct {
	// Path is the endpoint's request path (default /mcp).
	Path string
	// SessionTimeout closes a stateful session (protocol 2025-11-25 and
	// earlier) that has had no request for this long (default 5 min).
	SessionTimeout time.Duration
	// MaxSessions caps the stateful sessions open at once (default 1000),
	// and MaxSessionBytes the memory they hold together (default 32 MiB:
	// each counts a fixed overhead and what it keeps of its initialize
	// request, which is at most 16 KiB). Past either, a caller that holds
	// at least two fewer than the caller holding the most still opens one,
	// and that caller's least recently used sessions are closed; another
	// is refused with 503 until one closes. When Auth can authenticate
	// callers, the anonymous ones together hold at most half of each, so
	// that the rest stays for authenticated callers. Protocol 2026-07-28
	// is stateless and counts against no bound.
	MaxSessions     int
	MaxSessionBytes int64
	// MaxSessionsPerCaller and MaxSessionBytesPerCaller cap what one
	// caller's sessions hold (an authenticated owner, or one client
	// address of the anonymous ones), so that no caller can take them all
	// (default a tenth of MaxSessions, at least 1, and a tenth of
	// MaxSessionBytes: clients that leave their sessions to time out, as
	// test suites do, open dozens); past it, 429 until one of its closes.
	MaxSessionsPerCaller     int
	MaxSessionBytesPerCaller int64
	// AnyHostOnLoopback takes requests that arrive on a loopback address
	// with any Host. By default they must name a loopback host: DNS
	// rebinding protection, as MCP's security practices ask of a local
	// server.
	AnyHostOnLoopback bool
}

// The MCP protocol version from which requests are stateless (SEP-2575):
// they carry their version in the Mcp-Protocol-Version header.
const mcpStatelessVersion = "2026-07-28"

// mcpCallHeader carries, from the binding to the SDK's handlers, the key
// under which the binding keeps the request's caller: the SDK passes a
// request's headers to its handlers (RequestExtra.Header), not its
// context. The binding sets it on every request, so a client cannot.
const mcpCallHeader = "Caddy-A2a-Mcp-Call"

// The MCP binding: requests to its path are authenticated as every
// binding's, then served by the SDK's Streamable HTTP handlers, one
// stateless (protocol 2026-07-28) and one with sessions (the versions
// before). Tools, their calls and their results are in mcptools.go.
type mcpBinding struct {
	h    *Handler
	path string
	// stateless serves 2026-07-28 requests; stateful the others, on
	// sessions of statefulServer.
	stateless, stateful http.Handler
	statefulServer      *mcp.Server
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
	tools             mcpTools
	// serverInfo is the server's identity, which results carry;
	// serverInfoJSON its _meta member.
	serverInfo     *mcp.Implementation
	serverInfoJSON []byte
	// bySDK leaves every request to the SDK, also a plain tools/call
	// (callDirect): for the tests that compare the two.
	bySDK bool
	// requests are the requests being served, by their mcpCallHeader
	// value; lastRequest numbers them.
	requests    sync.Map
	lastRequest atomic.Uint64
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
}

// mcpRequest is what a tool handler knows of the HTTP request that
// carries its call.
type mcpRequest struct {
	r      *http.Request
	caller *authn.Identity
	// rpcError is the code of the first JSON-RPC error a method of the
	// request answered (recordErrors): the call's code, which an error
	// inside a 200 answer does not show.
	rpcError atomic.Int64
}

// MCP serves the skills as the tools of an MCP server on mc.Path.
func MCP(mc MCPConfig) NewBinding {
	return func(h *Handler) (Binding, error) { return newMCP(h, &mc) }
}

func newMCP(h *Handler, mc *MCPConfig) (*mcpBinding, error) {
	switch {
	case mc.Path != "" && (!strings.HasPrefix(mc.Path, "/") || mc.Path == CardPath || mc.Path == LegacyCardPath):
		return nil, fmt.Errorf("server: MCP path %q must start with / and not be a card path", mc.Path)
	case mc.SessionTimeout < 0:
		return nil, fmt.Errorf("server: MCP session timeout %s is negative", mc.SessionTimeout)
	case mc.MaxSessions < 0:
		return nil, fmt.Errorf("server: MCP max sessions %d is negative", mc.MaxSessions)
	case mc.MaxSessionsPerCaller < 0:
		return nil, fmt.Errorf("server: MCP max sessions per caller %d is negative", mc.MaxSessionsPerCaller)
	case mc.MaxSessionBytes != 0 && mc.MaxSessionBytes < maxSessionCost:
		return nil, fmt.Errorf("server: MCP max session bytes %d is less than one session may hold (%d)", mc.MaxSessionBytes, maxSessionCost)
	case mc.MaxSessionBytesPerCaller != 0 && mc.MaxSessionBytesPerCaller < maxSessionCost:
		return nil, fmt.Errorf("server: MCP max session bytes per caller %d is less than one session may hold (%d)",
			mc.MaxSessionBytesPerCaller, maxSessionCost)
	}
	b := &mcpBinding{h: h, path: mc.Path, origins: http.NewCrossOriginProtection(), anyHostOnLoopback: mc.AnyHostOnLoopback,
		owners: make(map[string]sessionOpener), opening: make(map[string]sessionOpener),
		limits: newSessionLimits(mc), reserveForAuthenticated: h.auth != nil}
	card := h.card.Card()
	b.serverInfo = &mcp.Implementation{Name: card.Name, Version: card.Version}
	info, err := json.Marshal(map[string]any{mcp.MetaKeyServerInfo: b.serverInfo})
	if err != nil {
		return nil, fmt.Errorf("server: mcp: the server's identity: %w", err)
	}
	b.serverInfoJSON = info[1 : len(info)-1]
	b.shutdown, b.endShutdown = context.WithCancel(context.Background())
	if b.path == "" {
		b.path = DefaultMCPPath
	}
	timeout := mc.SessionTimeout
	if timeout == 0 {
		timeout = DefaultMCPSessionTimeout
	}
	if err := b.tools.build(h); err != nil {
		return nil, err
	}
	// The binding checks Host itself (rebound), for the requests it
	// answers without the SDK too.
	opts := mcp.StreamableHTTPOptions{MaxRequestBodyBytes: h.maxBody, DisableLocalhostProtection: true}
	stateless := opts
	stateless.Stateless, stateless.PropagateRequestCancellation = true, true
	statelessServer := b.server()
	b.stateless = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return statelessServer }, &stateless)
	stateful := opts
	stateful.SessionTimeout = timeout
	b.statefulServer = b.server()
	b.statefulServer.AddReceivingMiddleware(b.boundInputWaits)
	b.stateful = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return b.statefulServer }, &stateful)
	return b, nil
}

// server makes an MCP server with the skills as its tools.
func (b *mcpBinding) server() *mcp.Server {
	s := mcp.NewServer(b.serverInfo,
		&mcp.ServerOptions{Instructions: b.h.card.Card().Description, Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
	b.tools.addTo(s, b)
	return s
}

func (b *mcpBinding) serve(w http.ResponseWriter, r *http.Request, c *call) bool {
	if r.URL.Path != b.path {
		return false
	}
	h := b.h
	// Refusals are JSON-RPC errors, as MCP's transport errors are.
	c.begin(a2a.BindingMCP, a2a.V10, jsonRPC{h: h}, "application/json")
	// The answers the binding writes itself (writeJSON) set their own
	// deadline; the rest go through the deadline writer.
	direct := w
	dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), h: h, c: c}
	defer dw.end()
	w = dw
	if !b.anyHostOnLoopback && rebound(r) {
		http.Error(w, fmt.Sprintf("MCP endpoint: Host %q is not a loopback host, and the request came to a loopback address "+
			"(DNS rebinding protection; see any_host_on_loopback)", r.Host), http.StatusForbidden)
		return true
	}
	// Who is calling is settled before the body is read, as for every
	// binding.
	caller, failure := h.authenticate(r)
	if failure != nil {
		h.refuse(w, c, failure)
		return true
	}
	c.Caller = caller
	if err := b.origins.Check(r); err != nil {
		http.Error(w, "MCP endpoint: "+err.Error(), http.StatusForbidden)
		return true
	}

	var body []byte
	if r.Method == http.MethodPost {
		buf := getBuffer()
		defer putBuffer(buf)
		var status int
		var readErr *a2a.Error
		if body, status, readErr = h.readRequestBody(w, r, buf); readErr != nil {
			h.writeError(w, status, c, readErr)
			return true
		}
		// The SDK reads the body again, from memory: the size cap and the
		// read timeout applied here. First the strict reader holds it to
		// what every binding's body is held to, the nesting bound among
		// them: both the SDK's parser and the binding's recurse once per
		// level (tool arguments become a task's data).
		if err := checkMCPBody(body); err != nil {
			h.writeError(w, http.StatusBadRequest, c, err)
			return true
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	env, plain := decodeMCPEnvelope(body)
	m := a2a.MethodUnknown
	if plain {
		m = a2a.LookupMCPMethod(env.Method)
	}
	r = h.startMethod(r, c, m)

	in := &mcpRequest{r: r, caller: caller}
	stateless := r.Header.Get("Mcp-Protocol-Version") >= mcpStatelessVersion
	if stateless && plain && !b.bySDK && b.callDirect(direct, in, c, &env) {
		return true
	}
	// The SDK gives a tool handler the request's headers, not its context.
	key := strconv.FormatUint(b.lastRequest.Add(1), 36)
	r.Header.Set(mcpCallHeader, key)
	b.requests.Store(key, in)
	defer b.requests.Delete(key)

	session := r.Header.Get(mcpSessionHeader)
	switch {
	case stateless:
		b.stateless.ServeHTTP(w, r)
	case session == "" && needsSession(r, &env, plain):
		h.writeError(w, http.StatusBadRequest, c, a2a.InvalidRequest(fmt.Sprintf(
			"%s needs a session: send initialize first, and its Mcp-Session-Id with every request (or use protocol %s, which needs none)",
			env.Method, mcpStatelessVersion)))
	case r.Method == http.MethodPost && session == "":
		b.openSession(w, r, c, body, b.opener(r, caller))
	case !b.sessionOf(session, caller.Owner()):
		http.Error(w, "MCP endpoint: the session belongs to another caller", http.StatusForbidden)
	default:
		b.serveOnSession(w, r)
	}
	if code := in.rpcError.Load(); code != 0 {
		c.Code = int(code) // more exact than the HTTP status the SDK gave it, if any
	}
	return true
}

// needsSession reports whether r, a request without a session at a version
// that has them, is one the SDK would take but not an initialize: only an
// initialize opens a session (the transport's 400 for the others), where
// the SDK would open one to refuse the request. What the SDK refuses first
// (another content type, an Accept without both kinds) is left to it.
func needsSession(r *http.Request, env *mcpEnvelope, plain bool) bool {
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

// request is the HTTP request of a call, from its headers; nil when the
// binding does not serve it (any more).
func (b *mcpBinding) request(extra *mcp.RequestExtra) *mcpRequest {
	if extra == nil {
		return nil
	}
	in, _ := b.requests.Load(extra.Header.Get(mcpCallHeader))
	req, _ := in.(*mcpRequest)
	return req
}

// deadlineWriter writes the SDK's answers and events each within the
// write timeout, as the other bindings write theirs, records on the call
// how an answer the SDK refuses ended (an HTTP error), and gives an SSE
// answer (a call's stream, a session's standalone stream) a comment every
// heartbeat interval, as A2A's streams get, so that proxies and clients
// keep it open while a call runs or nothing happens.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	h  *Handler
	c  *call
	// mu serializes the SDK's writes and the heartbeats; beat is the
	// heartbeats' timer once the answer is a stream, and ended stops them
	// as the request ends.
	mu      sync.Mutex
	started bool
	beat    *time.Timer
	ended   bool
}

func (d *deadlineWriter) WriteHeader(status int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.c.Code != 0: // the binding's own error answer
	case status >= 500:
		d.c.Code = a2a.CodeInternalError
	case status >= 400:
		d.c.Code = a2a.CodeInvalidRequest
	}
	d.start(status)
	d.ResponseWriter.WriteHeader(status)
}

func (d *deadlineWriter) Write(p []byte) (n int, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.start(http.StatusOK)
	err = d.h.withWriteDeadline(d.rc, func() error {
		n, err = d.ResponseWriter.Write(p)
		return err
	})
	return n, err
}

func (d *deadlineWriter) Flush() {
	d.mu.Lock()
	defer d.mu.Unlock()
	_ = d.h.withWriteDeadline(d.rc, d.rc.Flush)
}

// start notes the answer's status as its header goes out (d.mu held), and
// starts the heartbeats when it is a stream.
func (d *deadlineWriter) start(status int) {
	if d.started {
		return
	}
	d.started = true
	if status == http.StatusOK && strings.HasPrefix(d.Header().Get("Content-Type"), "text/event-stream") {
		d.beat = time.AfterFunc(d.h.heartbeat, d.heartbeat)
	}
}

// heartbeat writes an SSE comment, and the next one after the interval
// unless the write failed (the stream is broken: the SDK finds out) or the
// request ended.
func (d *deadlineWriter) heartbeat() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ended {
		return
	}
	err := d.h.withWriteDeadline(d.rc, func() error {
		if _, err := d.ResponseWriter.Write(heartbeatComment); err != nil {
			return err
		}
		return d.rc.Flush()
	})
	if err == nil {
		d.beat.Reset(d.h.heartbeat)
	}
}

// end stops the heartbeats: the handler is returning, after which nothing
// may write.
func (d *deadlineWriter) end() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ended = true
	if d.beat != nil {
		d.beat.Stop()
	}
}

func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }
