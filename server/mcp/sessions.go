package mcp

// The sessions of the MCP endpoint (protocol 2025-11-25 and the versions
// before; 2026-07-28 has none): who owns each, what each holds, the bounds
// on them in count and in bytes, and their end as a configuration is
// replaced.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/server"
)

const sessionHeader = "Mcp-Session-Id"

// maxInitializeBytes bounds the request that opens a session (an
// initialize: a client's name, version and capabilities, a few hundred
// bytes from real clients). The SDK keeps what it reads of it for the
// session's life, so a larger one is refused before the SDK reads it.
const maxInitializeBytes = 16 << 10

// What a session costs against the sessions' byte budget: sessionOverhead,
// the SDK's session and transport with their maps and timer and the
// binding's note of its owner, plus initializeCopies times the initialize
// request the SDK read (its body, its decoded message and the params the
// session keeps: TestMCPSessionMemory holds the estimate to the heap).
const (
	sessionOverhead  = 8 << 10
	initializeCopies = 3
)

// DefaultMaxSessionBytes is Config.MaxSessionBytes's default.
const DefaultMaxSessionBytes = 32 << 20

// MinSessionBytes is the least a byte budget of the sessions may be:
// what one session may cost.
const MinSessionBytes = maxSessionCost

// maxSessionCost is the most one session may cost.
const maxSessionCost = sessionOverhead + initializeCopies*maxInitializeBytes

// holding is what sessions hold: how many, and their bytes.
type holding struct {
	sessions int
	bytes    int64
}

func (h holding) plus(o holding) holding {
	return holding{h.sessions + o.sessions, h.bytes + o.bytes}
}

func (h holding) minus(o holding) holding {
	return holding{h.sessions - o.sessions, h.bytes - o.bytes}
}

// String says h for a refusal: "3 sessions, 168 KiB".
func (h holding) String() string {
	unit := "sessions"
	if h.sessions == 1 {
		unit = "session"
	}
	return fmt.Sprintf("%d %s, %d KiB", h.sessions, unit, (h.bytes+1023)>>10)
}

// within reports whether h is inside limit in count and in bytes.
func (h holding) within(limit holding) bool {
	return h.sessions <= limit.sessions && h.bytes <= limit.bytes
}

// sessionLimits bound what the sessions hold: all of them, one caller's,
// and the anonymous callers' together (half of all of them, when there
// are authenticated callers to keep the rest for).
type sessionLimits struct {
	all, perCaller, anonymous holding
}

// newSessionLimits is mc's limits, their defaults filled.
func newSessionLimits(mc *Config) sessionLimits {
	all := holding{cmp.Or(mc.MaxSessions, DefaultMaxSessions), cmp.Or(mc.MaxSessionBytes, DefaultMaxSessionBytes)}
	return sessionLimits{
		all: all,
		perCaller: holding{cmp.Or(mc.MaxSessionsPerCaller, max(1, all.sessions/10)),
			cmp.Or(mc.MaxSessionBytesPerCaller, max(maxSessionCost, all.bytes/10))},
		anonymous: holding{max(1, all.sessions/2), max(maxSessionCost, all.bytes/2)},
	}
}

// sessionOpener is who opened a session: its owner, and the caller whose
// share of the sessions it takes (the owner, or an anonymous caller's
// client address); what it holds; and when its last request came, to pick
// the session a full server closes for another caller (roomForSession).
type sessionOpener struct {
	owner, caller string
	anonymous     bool
	cost          holding
	used          time.Time
	evicted       bool // closing to make room: counted and picked no more
}

// opener is who opens a session with request r of caller. Anonymous
// callers share one owner; each client address has its share.
func (b *binding) opener(r *http.Request, caller *authn.Identity) sessionOpener {
	return sessionOpener{owner: caller.Owner(), caller: b.h.Share(r, caller), anonymous: caller == nil}
}

// sessionOf reports whether owner may use the session id: the one that
// opened it, or anyone for an id the binding does not know (the SDK
// answers that it has no such session). A request of its owner's marks
// the session used.
func (b *binding) sessionOf(id, owner string) bool {
	b.ownersMu.Lock()
	defer b.ownersMu.Unlock()
	opener, known := b.owners[id]
	if known && opener.owner == owner {
		opener.used = time.Now()
		b.owners[id] = opener
	}
	return !known || opener.owner == owner
}

// openSession serves a request that opens a stateful session (an
// initialize, of which the session keeps only what it needs), when the
// limits allow one more, and notes the session's owner before its id
// reaches the client.
func (b *binding) openSession(w http.ResponseWriter, r *http.Request, c *server.Exchange, body []byte, opener sessionOpener) {
	if len(body) > maxInitializeBytes {
		b.h.WriteError(w, http.StatusRequestEntityTooLarge, c, a2a.InvalidRequest(fmt.Sprintf(
			"the request that opens an MCP session (initialize) is limited to %d bytes, and this one has %d: "+
				"send the client's name, version and capabilities alone", maxInitializeBytes, len(body))))
		return
	}
	kept, ok, refused := keptInitialize(body)
	if refused != nil {
		b.h.WriteError(w, http.StatusBadRequest, c, refused)
		return
	}
	if ok {
		body = kept
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(kept)), int64(len(kept))
	}
	opener.cost = holding{1, sessionOverhead + initializeCopies*int64(len(body))}
	refusal, evict := b.roomForSession(opener)
	for _, id := range evict {
		// Closing waits for the session's calls under way: not this
		// request's business.
		go b.closeSession(id)
	}
	if refusal != nil {
		// A share is full, as a quota of the task store is: the same code.
		w.Header().Set("Retry-After", "60")
		b.h.WriteError(w, refusal.status, c, &a2a.Error{Code: CodeResourceExhausted, Message: "Resource exhausted",
			Reason: "RESOURCE_EXHAUSTED", Description: fmt.Sprintf("%s, or use protocol %s, which needs none", refusal.why, statelessVersion)})
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

// keptInitialize is body, an initialize request, with only what a session
// needs of it: the protocol version, who the client says it is, and the
// capabilities the server acts on. Experimental and extension
// capabilities, _meta, icons and descriptions are dropped before the SDK
// reads the request, since it keeps what it reads for the session's life.
// ok is false for a body that is not one initialize request of that
// shape, which the SDK reads as it is, and answers. refused is the strict
// reader's refusal of a look-alike of a member kept (initializeReader).
func keptInitialize(body []byte) (kept []byte, ok bool, refused *a2a.Error) {
	var req initializeRequest
	fits, refused := initializeReader.Read(body, &req)
	if !fits || req.Method != "initialize" || req.Params == nil {
		return nil, false, refused
	}
	kept, err := json.Marshal(req)
	return kept, err == nil, nil
}

// initializeReader reads an initialize request as the SDK would, its
// members matched by their exact names. The body has passed the
// envelope's check (envelopeReader); this reader also refuses a look-alike
// of a member it keeps ("Roots" beside "roots"), since what it drops the
// SDK never sees.
var initializeReader = a2a.NewRequestReader[initializeRequest](nil)

// initializeRequest is what a session keeps of an initialize request.
type initializeRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  *struct {
		ProtocolVersion string `json:"protocolVersion"`
		ClientInfo      *struct {
			Name    string `json:"name"`
			Title   string `json:"title,omitempty"`
			Version string `json:"version"`
		} `json:"clientInfo"`
		Capabilities *struct {
			Roots *struct {
				ListChanged bool `json:"listChanged,omitempty"`
			} `json:"roots,omitempty"`
			Sampling *struct {
				Context *struct{} `json:"context,omitempty"`
				Tools   *struct{} `json:"tools,omitempty"`
			} `json:"sampling,omitempty"`
			Elicitation *struct {
				Form *struct{} `json:"form,omitempty"`
				URL  *struct{} `json:"url,omitempty"`
			} `json:"elicitation,omitempty"`
		} `json:"capabilities"`
	} `json:"params"`
}

// serveOnSession has the SDK serve a request on a session. A session's
// standalone stream (a GET) lasts until its client leaves: it ends as the
// server shuts down, which would otherwise wait for it.
func (b *binding) serveOnSession(w http.ResponseWriter, r *http.Request) {
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
		if r.Header.Get(sessionHeader) == "" {
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

// sessionRefusal is why a session is not opened, and the HTTP status that
// says so.
type sessionRefusal struct {
	status int
	why    string
}

// roomForSession reports why o's session may not be opened, or, when it
// may, counts it among those opening and returns the sessions to close to
// make room for it. What is counted: the sessions noted open but those
// closing to make room, and those opening. It forgets the owners of the
// sessions closed since. A session is open before its owner is noted, so
// the owners are held while the open ones are read: none is forgotten as
// it opens.
//
// Three bounds apply, each in count and in bytes: o's caller's share; for
// an anonymous caller, the anonymous callers' share; and the server's.
// Past either of the last two, room is still made for a caller that holds
// fewer sessions than another by two or more: the least recently used
// sessions of the caller that holds the most (within the share that is
// full) are closed, so that no few callers keep all the sessions from the
// others.
func (b *binding) roomForSession(o sessionOpener) (*sessionRefusal, []string) {
	b.ownersMu.Lock()
	defer b.ownersMu.Unlock()
	open := make(map[string]bool, len(b.owners))
	for s := range b.statefulServer.Sessions() {
		open[s.ID()] = true
	}
	t := sessionTally{by: make(map[string]holding, len(b.owners)+len(b.opening)), anonymous: make(map[string]bool)}
	for id, held := range b.owners {
		switch {
		case !open[id]:
			delete(b.owners, id)
		case !held.evicted:
			t.add(held.caller, held.anonymous, held.cost)
		}
	}
	for caller, opening := range b.opening {
		t.add(caller, opening.anonymous, opening.cost)
	}
	l := b.limits
	if !t.by[o.caller].plus(o.cost).within(l.perCaller) {
		return &sessionRefusal{http.StatusTooManyRequests, fmt.Sprintf(
			"this caller's sessions hold %s, and one caller's may hold %s; close one (DELETE)", t.by[o.caller], l.perCaller)}, nil
	}
	total, anonymous := t.total, t.anonymousTotal
	var evict []string
	if o.anonymous && b.reserveForAuthenticated {
		ids, ok := b.makeRoom(&t, o, l.anonymous, true)
		if !ok {
			return &sessionRefusal{http.StatusServiceUnavailable, fmt.Sprintf(
				"the anonymous callers' sessions hold %s, and they may hold %s together (the rest is kept for authenticated callers); "+
					"retry later, or authenticate", anonymous, l.anonymous)}, nil
		}
		evict = ids
	}
	ids, ok := b.makeRoom(&t, o, l.all, false)
	if !ok {
		return &sessionRefusal{http.StatusServiceUnavailable, fmt.Sprintf(
			"the sessions open hold %s, and this server keeps %s at most; retry later", total, l.all)}, nil
	}
	for _, id := range append(evict, ids...) {
		held := b.owners[id]
		held.evicted = true
		b.owners[id] = held
	}
	opening := b.opening[o.caller]
	opening.anonymous, opening.cost = o.anonymous, opening.cost.plus(o.cost)
	b.opening[o.caller] = opening
	return nil, append(evict, ids...)
}

// sessionTally is what the sessions hold: by caller, in all, and the
// anonymous callers' together.
type sessionTally struct {
	by                    map[string]holding
	anonymous             map[string]bool // the anonymous callers
	total, anonymousTotal holding
	// chosen are the sessions picked to close, counted out already.
	chosen map[string]bool
}

func (t *sessionTally) add(caller string, anonymous bool, h holding) {
	t.by[caller] = t.by[caller].plus(h)
	t.total = t.total.plus(h)
	if anonymous {
		t.anonymous[caller] = true
		t.anonymousTotal = t.anonymousTotal.plus(h)
	}
}

func (t *sessionTally) remove(caller string, anonymous bool, h holding) {
	t.by[caller] = t.by[caller].minus(h)
	t.total = t.total.minus(h)
	if anonymous {
		t.anonymousTotal = t.anonymousTotal.minus(h)
	}
}

// makeRoom picks the sessions to close so that o's session fits within
// limit: of all the callers, or of the anonymous ones alone. Each is the
// least recently used session of the caller, among those the limit is
// on, that holds the most, while that caller holds at least two more than
// o's caller would with its new session; false when that is not enough
// (ownersMu held).
func (b *binding) makeRoom(t *sessionTally, o sessionOpener, limit holding, anonymousOnly bool) ([]string, bool) {
	var ids []string
	for {
		held := t.total
		if anonymousOnly {
			held = t.anonymousTotal
		}
		if held.plus(o.cost).within(limit) {
			return ids, true
		}
		id := b.leastRecentOfMost(t, t.by[o.caller].sessions+1, anonymousOnly)
		if id == "" {
			return nil, false
		}
		if t.chosen == nil {
			t.chosen = make(map[string]bool)
		}
		t.chosen[id] = true
		victim := b.owners[id]
		t.remove(victim.caller, victim.anonymous, victim.cost)
		ids = append(ids, id)
	}
}

// leastRecentOfMost is the least recently used session of the caller that
// holds the most sessions (of the anonymous callers alone, with
// anonymousOnly), if it holds more than after sessions (what the newcomer
// will hold); "" when none does (ownersMu held).
func (b *binding) leastRecentOfMost(t *sessionTally, after int, anonymousOnly bool) string {
	most, count := "", 0
	for caller, held := range t.by {
		if anonymousOnly && !t.anonymous[caller] {
			continue
		}
		if n := held.sessions; n > count || (n == count && caller < most) {
			most, count = caller, n
		}
	}
	if count <= after {
		return ""
	}
	var id string
	var used time.Time
	for sid, o := range b.owners {
		if o.caller == most && !o.evicted && !t.chosen[sid] && (id == "" || o.used.Before(used)) {
			id, used = sid, o.used
		}
	}
	return id
}

// closeSession closes the session id, if it is still open.
func (b *binding) closeSession(id string) {
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
	b       *binding
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
	if id := s.Header().Get(sessionHeader); id != "" {
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
	caller := s.opener.caller
	opening := s.b.opening[caller]
	if opening.cost = opening.cost.minus(s.opener.cost); opening.cost.sessions == 0 {
		delete(s.b.opening, caller)
	} else {
		s.b.opening[caller] = opening
	}
}

func (s *sessionWriter) WriteHeader(status int) { s.note(); s.ResponseWriter.WriteHeader(status) }

func (s *sessionWriter) Write(p []byte) (int, error) { s.note(); return s.ResponseWriter.Write(p) }

func (s *sessionWriter) Flush() { s.note(); http.NewResponseController(s.ResponseWriter).Flush() }

func (s *sessionWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Shutdown ends the standalone streams of the MCP endpoint's sessions (a
// client's GET, which lasts until the client leaves), and those opened
// after it at once, so that a server that shuts down, for a reload too,
// waits only for the calls under way: they still answer on their
// sessions.
func (b *binding) Shutdown() { b.endShutdown() }

// Close ends the sessions' standalone streams and closes the sessions
// once no request is under way on any of them, at once when none is.
// Requests that come after are refused. Their clients open new sessions.
func (b *binding) Close() {
	b.endShutdown()
	b.sessionsMu.Lock()
	b.closing = true
	idle := b.onSessions == 0 && !b.closed
	b.closed = b.closed || idle
	b.sessionsMu.Unlock()
	if idle {
		b.closeSessions()
	}
}

// closeSessions closes every session.
func (b *binding) closeSessions() {
	for s := range b.statefulServer.Sessions() {
		_ = s.Close()
	}
}
