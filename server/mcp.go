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
	// MaxSessions caps the stateful sessions open at once (default 1000).
	// Past it, a caller that holds at least two fewer than the caller
	// holding the most still opens one, and that caller's least recently
	// used session is closed; another is refused with 503 until one
	// closes. Protocol 2026-07-28 is stateless and counts against no cap.
	MaxSessions int
	// MaxSessionsPerCaller caps the sessions one caller holds open (an
	// authenticated owner, or one client address of the anonymous ones),
	// so that no caller can take them all (default a tenth of MaxSessions,
	// at least 1: clients that leave their sessions to time out, as test
	// suites do, open dozens); past it, 429 until one of its closes.
	MaxSessionsPerCaller int
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
	maxSessions         int
	maxPerCaller        int
	// opening counts the new sessions being opened, so that concurrent
	// ones cannot pass the cap together.
	opening atomic.Int64
	// owners are who opened each session, by session id: a session
	// serves only its owner (authn.Identity.Owner).
	ownersMu sync.Mutex
	owners   map[string]sessionOpener
	// openingBy counts each caller's sessions being opened (ownersMu).
	openingBy map[string]int
	origins   *http.CrossOriginProtection
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
	// standalone streams (EndMCPStreams).
	shutdown    context.Context
	endShutdown context.CancelFunc
	// onSessions counts the requests under way on the sessions; once
	// closing (CloseSessions), the last one to end closes them all, and
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

func newMCP(h *Handler, cfg Config) (binding, error) {
	mc := cfg.MCP
	if mc == nil {
		return nil, nil
	}
	switch {
	case mc.Path != "" && (!strings.HasPrefix(mc.Path, "/") || mc.Path == CardPath || mc.Path == LegacyCardPath):
		return nil, fmt.Errorf("server: MCP path %q must start with / and not be a card path", mc.Path)
	case mc.SessionTimeout < 0:
		return nil, fmt.Errorf("server: MCP session timeout %s is negative", mc.SessionTimeout)
	case mc.MaxSessions < 0:
		return nil, fmt.Errorf("server: MCP max sessions %d is negative", mc.MaxSessions)
	case mc.MaxSessionsPerCaller < 0:
		return nil, fmt.Errorf("server: MCP max sessions per caller %d is negative", mc.MaxSessionsPerCaller)
	}
	b := &mcpBinding{h: h, path: mc.Path, maxSessions: mc.MaxSessions, origins: http.NewCrossOriginProtection(),
		anyHostOnLoopback: mc.AnyHostOnLoopback,
		maxPerCaller:      mc.MaxSessionsPerCaller, owners: make(map[string]sessionOpener), openingBy: make(map[string]int)}
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
	if b.maxSessions == 0 {
		b.maxSessions = DefaultMCPMaxSessions
	}
	if b.maxPerCaller == 0 {
		b.maxPerCaller = max(1, b.maxSessions/10)
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
	c.begin(a2a.BindingMCP, a2a.V10, jsonRPC{h}, "application/json")
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
		// read timeout applied here. Both its parser and the binding's
		// recurse once per level, so the nesting is bounded first, as for
		// every binding's body (tool arguments become a task's data).
		if !a2a.NestsWithin(body, a2a.MaxJSONDepth) {
			h.writeError(w, http.StatusBadRequest, c,
				a2a.InvalidRequest(fmt.Sprintf("the request nests deeper than %d levels", a2a.MaxJSONDepth)))
			return true
		}
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
		opener := sessionOpener{owner: caller.Owner(), caller: caller.Owner()}
		if caller == nil {
			// Anonymous callers share one owner; each address its share.
			opener.caller = "client " + b.h.clientAddress(r)
		}
		b.openSession(w, r, opener)
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

const mcpSessionHeader = "Mcp-Session-Id"

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

// sessionOf reports whether owner may use the session id: the one that
// opened it, or anyone for an id the binding does not know (the SDK
// answers that it has no such session). A request of its owner's marks
// the session used.
func (b *mcpBinding) sessionOf(id, owner string) bool {
	b.ownersMu.Lock()
	defer b.ownersMu.Unlock()
	opener, known := b.owners[id]
	if known && opener.owner == owner {
		opener.used = time.Now()
		b.owners[id] = opener
	}
	return !known || opener.owner == owner
}

// sessionOpener is who opened a session: its owner, and the caller whose
// share of the sessions it takes (the owner, or an anonymous caller's
// client address); and when its last request came, to pick the session a
// full server closes for another caller (roomForSession).
type sessionOpener struct {
	owner, caller string
	used          time.Time
	evicted       bool // closing to make room: counted and picked no more
}

// openSession serves a request that opens a stateful session (an
// initialize), when the cap allows one more, and notes the session's
// owner before its id reaches the client.
func (b *mcpBinding) openSession(w http.ResponseWriter, r *http.Request, opener sessionOpener) {
	full, callerFull, evict := b.roomForSession(b.opening.Add(1)-1, opener.caller)
	if evict != "" {
		// Closing waits for the session's calls under way: not this
		// request's business.
		go b.closeSession(evict)
	}
	if full || callerFull {
		b.opening.Add(-1)
		status, why := http.StatusServiceUnavailable, fmt.Sprintf("%d sessions are open, the most this server keeps; retry later", b.maxSessions)
		if callerFull {
			status, why = http.StatusTooManyRequests, fmt.Sprintf("this caller has %d sessions open, the most one caller may; close one (DELETE)", b.maxPerCaller)
		}
		w.Header().Set("Retry-After", "60")
		http.Error(w, fmt.Sprintf("MCP endpoint: %s, or use protocol %s, which needs none", why, mcpStatelessVersion), status)
		return
	}
	sw := &sessionWriter{ResponseWriter: w, b: b, opener: opener, opening: true}
	defer func() {
		b.ownersMu.Lock()
		sw.opened()
		b.ownersMu.Unlock()
	}()
	b.serveOnSession(sw, r)
}

// serveOnSession has the SDK serve a request on a session. A session's
// standalone stream (a GET) lasts until its client leaves: it ends as the
// server shuts down, which would otherwise wait for it.
func (b *mcpBinding) serveOnSession(w http.ResponseWriter, r *http.Request) {
	b.sessionsMu.Lock()
	closed := b.closed
	if !closed {
		b.onSessions++
	}
	b.sessionsMu.Unlock()
	if closed {
		// A request that was on its way as the sessions closed: as for a
		// session that expired, the client opens a new one.
		status := http.StatusNotFound
		if r.Header.Get(mcpSessionHeader) == "" {
			status = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", "1")
		}
		http.Error(w, "MCP endpoint: the sessions of this configuration are closed (it was replaced or stopped); open a new session", status)
		return
	}
	defer func() {
		b.sessionsMu.Lock()
		b.onSessions--
		last := b.onSessions == 0 && b.closing && !b.closed
		b.closed = b.closed || last
		b.sessionsMu.Unlock()
		if last {
			b.closeSessions()
		}
	}()
	if r.Method == http.MethodGet {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(b.shutdown, cancel)()
		r = r.WithContext(ctx)
	}
	b.stateful.ServeHTTP(w, r)
}

// roomForSession reports whether the server is full (the sessions noted
// open, but those closing to make room, and those opening, others of
// them) or caller's share is (its open ones and those it is opening),
// forgets the owners of the sessions closed since, and, when there is
// room, counts one more opening for caller. A session is open before its
// owner is noted, so the owners are held while the open ones are read:
// none is forgotten as it opens.
//
// A full server still makes room for a caller that holds fewer sessions
// than another does by two or more: the least recently used session of the
// caller that holds the most is returned, for openSession to close, so
// that no few callers keep all the sessions from the others.
func (b *mcpBinding) roomForSession(opening int64, caller string) (full, callerFull bool, evict string) {
	b.ownersMu.Lock()
	defer b.ownersMu.Unlock()
	open := make(map[string]bool, len(b.owners))
	for s := range b.statefulServer.Sessions() {
		open[s.ID()] = true
	}
	holds, total := make(map[string]int), int64(0)
	for id, o := range b.owners {
		switch {
		case !open[id]:
			delete(b.owners, id)
		case !o.evicted:
			holds[o.caller]++
			total++
		}
	}
	held := holds[caller] + b.openingBy[caller]
	// The sessions noted, and those opening: a session is both in the SDK's
	// list and opening until its answer goes out.
	if total+opening >= int64(b.maxSessions) {
		if held >= b.maxPerCaller {
			return true, false, ""
		}
		if evict = b.leastRecentOfMost(holds, held+1); evict == "" {
			return true, false, ""
		}
		o := b.owners[evict]
		o.evicted = true
		b.owners[evict] = o
	}
	if held >= b.maxPerCaller {
		return false, true, ""
	}
	b.openingBy[caller]++
	return false, false, evict
}

// leastRecentOfMost is the least recently used session of the caller that
// holds the most (holds: by caller), if it holds more than after sessions
// (what the newcomer will hold); "" when none does (ownersMu held).
func (b *mcpBinding) leastRecentOfMost(holds map[string]int, after int) string {
	most, count := "", 0
	for caller, n := range holds {
		if n > count || (n == count && caller < most) {
			most, count = caller, n
		}
	}
	if count <= after {
		return ""
	}
	var id string
	var used time.Time
	for sid, o := range b.owners {
		if o.caller == most && !o.evicted && (id == "" || o.used.Before(used)) {
			id, used = sid, o.used
		}
	}
	return id
}

// closeSession closes the session id, if it is still open.
func (b *mcpBinding) closeSession(id string) {
	for s := range b.statefulServer.Sessions() {
		if s.ID() == id {
			_ = s.Close()
			return
		}
	}
}

// sessionWriter notes the owner of the session an answer opens, as its
// header is written.
type sessionWriter struct {
	http.ResponseWriter
	b       *mcpBinding
	opener  sessionOpener
	written bool
	// opening: the session still counts among those opening (roomForSession)
	opening bool
}

// note notes the session's owner as the answer's header goes out, and
// counts it as open from then on rather than opening: its client may open
// the next one as soon as it has the answer, before this request ends.
func (s *sessionWriter) note() {
	if s.written {
		return
	}
	s.written = true
	if id := s.Header().Get(mcpSessionHeader); id != "" {
		s.b.ownersMu.Lock()
		opener := s.opener
		opener.used = time.Now()
		s.b.owners[id] = opener
		s.opened()
		s.b.ownersMu.Unlock()
	}
}

// opened counts the session out of those opening, once (ownersMu held).
func (s *sessionWriter) opened() {
	if !s.opening {
		return
	}
	s.opening = false
	s.b.opening.Add(-1)
	if s.b.openingBy[s.opener.caller]--; s.b.openingBy[s.opener.caller] == 0 {
		delete(s.b.openingBy, s.opener.caller)
	}
}

func (s *sessionWriter) WriteHeader(status int) { s.note(); s.ResponseWriter.WriteHeader(status) }

func (s *sessionWriter) Write(p []byte) (int, error) { s.note(); return s.ResponseWriter.Write(p) }

func (s *sessionWriter) Flush() { s.note(); http.NewResponseController(s.ResponseWriter).Flush() }

func (s *sessionWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// EndMCPStreams ends the standalone streams of the MCP endpoint's
// sessions (a client's GET, which lasts until the client leaves), and
// those opened after it at once, so that a server that shuts down, for a
// reload too, waits only for the calls under way: they still answer on
// their sessions.
func (h *Handler) EndMCPStreams() {
	for _, b := range h.bindings {
		if m, ok := b.(*mcpBinding); ok {
			m.endShutdown()
		}
	}
}

// CloseSessions ends the MCP sessions' standalone streams and closes the
// sessions once no request is under way on any of them, at once when none
// is: for a handler that is discarded (Caddy discards a config it
// replaces before its requests have ended). Requests that come after are
// refused. Their clients open new sessions.
func (h *Handler) CloseSessions() {
	for _, b := range h.bindings {
		if m, ok := b.(*mcpBinding); ok {
			m.endShutdown()
			m.sessionsMu.Lock()
			m.closing = true
			idle := m.onSessions == 0 && !m.closed
			m.closed = m.closed || idle
			m.sessionsMu.Unlock()
			if idle {
				m.closeSessions()
			}
		}
	}
}

// closeSessions closes every session.
func (b *mcpBinding) closeSessions() {
	for s := range b.statefulServer.Sessions() {
		_ = s.Close()
	}
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
