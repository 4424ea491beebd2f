// Package server is the A2A endpoint as a plain http.Handler: the three
// bindings of A2A (JSON-RPC and HTTP+JSON with SSE streaming, and gRPC),
// one dispatch of their methods on the internal model (invoke), and
// blocking, non-blocking and streamed answers; beside them, any binding the
// adapter gives it (Config.Bindings: the MCP binding, server/mcp, on the
// surface of transport.go). It wires a2a, tasks, mapping and cardgen
// together and knows nothing of Caddy.
//
// The gRPC binding, when enabled, is served on the same handler by grpc-go's
// Server.ServeHTTP rather than connect-go: grpc-go is already in Caddy's
// build graph and under the official Go SDK's gRPC transport, and
// ServeHTTP leaves TLS, h2c and connections to Caddy (grpc.go).
package server

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// Defaults for the zero values of Config.
const (
	DefaultMaxRequestBytes   = 4 << 20
	DefaultHeartbeatInterval = 15 * time.Second
	DefaultReadBodyTimeout   = 10 * time.Second
	DefaultWriteTimeout      = 10 * time.Second
)

// Card paths: the 1.0 well-known path and the older one 0.3 clients may ask.
const (
	CardPath       = "/.well-known/agent-card.json"
	LegacyCardPath = "/.well-known/agent.json"
)

// Config is what the handler serves. Skills, Tasks and Card are required.
type Config struct {
	Skills *mapping.Skills
	Tasks  *tasks.Manager
	Card   *cardgen.Document
	// ExtendedCard answers GetExtendedAgentCard; nil answers -32007.
	ExtendedCard *cardgen.Document
	// MaxRequestBytes caps a request body of any binding (a gRPC message too;
	// default 4 MiB).
	MaxRequestBytes int64
	// HeartbeatInterval is how often an SSE stream, A2A's or MCP's, gets a
	// comment (default 15 s), so that proxies and clients keep an idle one
	// open.
	HeartbeatInterval time.Duration
	// ReadBodyTimeout bounds reading one request body (default 10 s).
	// Caddy's read timeout restarts with every byte, so without it a body
	// sent a byte at a time holds a connection for ever.
	ReadBodyTimeout time.Duration
	// WriteTimeout bounds writing one answer: a JSON answer, or one event
	// of a stream (default 10 s), so that a client that stops reading does
	// not hold the answer's memory. Caddy's own write timeout cannot serve:
	// it counts from the request and would cut streams and long blocking
	// calls.
	WriteTimeout time.Duration
	Logger       *zap.Logger

	// JWKS, when set, answers requests for JWKSPath: the public keys that
	// verify the card's signatures (cardgen.JWKS).
	JWKS     http.Handler
	JWKSPath string

	// Auth authenticates every request, of every binding, before its body is read,
	// makes the caller the owner of the tasks it creates, and authorizes
	// the use of skills that declare security. Nil: every caller is the
	// anonymous owner, and no skill may declare security.
	Auth Authenticator
	// ProtectCard makes the Agent Card ask what A2A requests ask
	// (Auth's agent-wide requirement). Default: the card is public.
	ProtectCard bool
	// ResourceMetadata, when set, is served on its well-known paths
	// (cardgen.ResourceMetadata.Serves), always public: the OAuth 2.0
	// Protected Resource Metadata that tells a client without a token
	// where to get one, which Auth's Bearer challenges name
	// (authn.Options.ResourceMetadata = its URL).
	ResourceMetadata *cardgen.ResourceMetadata
	// Push, when set, enables push notifications: the push config methods
	// and configs in SendMessage, whose URLs it checks. Delivery is the
	// task manager's pusher (tasks.Manager.SetPusher). Nil: every push
	// method answers PushNotificationNotSupported, as the card says.
	Push URLChecker
	// ClientAddress names the client of a request, for the share of the
	// store each anonymous client may hold (default, and when it answers
	// "": the remote address's IP; behind proxies the adapter gives the
	// client IP they forwarded).
	// IPv6 addresses count by their /48 prefix: one host usually has a
	// whole /64, and one site a /48 (or a /56) of them.
	ClientAddress func(*http.Request) string
	// Observer is told what the handler does, for metrics, traces and the
	// access log. Nil: nothing is observed.
	Observer Observer
	// Bindings are the bindings served beside JSON-RPC (GRPC, HTTPJSON,
	// server/mcp's New), tried in this order: one whose paths lie below
	// another's comes first, as gRPC's below HTTP+JSON's at "/".
	// JSON-RPC, A2A's own, is always served, and takes every request none
	// of them takes.
	Bindings []NewBinding
}

// Handler serves the Agent Card and the endpoints of the bindings.
type Handler struct {
	skills       *mapping.Skills
	tasks        *tasks.Manager
	card         *cardgen.Document
	extendedCard *cardgen.Document
	maxBody      int64
	heartbeat    time.Duration
	readBody     time.Duration
	writeTimeout time.Duration
	log          *zap.Logger
	jwks         http.Handler
	jwksPath     string
	resourceMeta *cardgen.ResourceMetadata
	auth         Authenticator
	protectCard  bool
	clientAddr   func(*http.Request) string
	push         URLChecker
	obs          Observer
	// bindings serve the requests, tried in turn: Config.Bindings, then
	// JSON-RPC.
	bindings []Binding
	// skillRequirements are the skills' own requirements, compiled once.
	skillRequirements map[*mapping.Skill]*authn.Requirements
	// taskMetadata is each skill's tasks' metadata (skillMetadata), one map
	// that all of them share.
	taskMetadata map[*mapping.Skill]map[string]any
}

// New checks cfg and applies its defaults.
func New(cfg Config) (*Handler, error) {
	switch {
	case cfg.Skills == nil:
		return nil, errors.New("server: no skills configured")
	case cfg.Tasks == nil:
		return nil, errors.New("server: no task manager configured")
	case cfg.Card == nil:
		return nil, errors.New("server: no agent card configured")
	case cfg.MaxRequestBytes < 0:
		return nil, fmt.Errorf("server: max request bytes %d is negative", cfg.MaxRequestBytes)
	case cfg.HeartbeatInterval < 0:
		return nil, fmt.Errorf("server: heartbeat interval %s is negative", cfg.HeartbeatInterval)
	case cfg.ReadBodyTimeout < 0:
		return nil, fmt.Errorf("server: read body timeout %s is negative", cfg.ReadBodyTimeout)
	case cfg.WriteTimeout < 0:
		return nil, fmt.Errorf("server: write timeout %s is negative", cfg.WriteTimeout)
	case cfg.JWKS != nil && (!strings.HasPrefix(cfg.JWKSPath, "/") || cfg.JWKSPath == CardPath || cfg.JWKSPath == LegacyCardPath):
		return nil, fmt.Errorf("server: JWKS path %q must start with / and not be a card path", cfg.JWKSPath)
	case cfg.Auth == nil && cfg.ExtendedCard != nil:
		return nil, errors.New("server: the extended card is for authenticated callers: it needs an authenticator")
	case cfg.Auth == nil && cfg.ProtectCard:
		return nil, errors.New("server: a protected card needs an authenticator")
	case cfg.Auth == nil && cfg.ResourceMetadata != nil:
		return nil, errors.New("server: protected resource metadata describes an authenticator's token schemes: it needs one")
	}
	skillRequirements, err := compileSkillRequirements(cfg.Auth, cfg.Skills)
	if err != nil {
		return nil, err
	}
	h := &Handler{
		skills:       cfg.Skills,
		tasks:        cfg.Tasks,
		card:         cfg.Card,
		extendedCard: cfg.ExtendedCard,
		maxBody:      cfg.MaxRequestBytes,
		heartbeat:    cfg.HeartbeatInterval,
		readBody:     cmp.Or(cfg.ReadBodyTimeout, DefaultReadBodyTimeout),
		writeTimeout: cmp.Or(cfg.WriteTimeout, DefaultWriteTimeout),
		log:          cfg.Logger,
		jwks:         cfg.JWKS,
		jwksPath:     cfg.JWKSPath,
		resourceMeta: cfg.ResourceMetadata,
		auth:         cfg.Auth,
		protectCard:  cfg.ProtectCard,
		clientAddr:   cfg.ClientAddress,
		push:         cfg.Push,
		obs:          cfg.Observer,

		skillRequirements: skillRequirements,
		taskMetadata:      make(map[*mapping.Skill]map[string]any),
	}
	for _, skill := range cfg.Skills.All() {
		h.taskMetadata[skill] = skillMetadata(skill)
	}
	if h.maxBody == 0 {
		h.maxBody = DefaultMaxRequestBytes
	}
	if h.heartbeat == 0 {
		h.heartbeat = DefaultHeartbeatInterval
	}
	if h.log == nil {
		h.log = zap.NewNop()
	}
	for _, newBinding := range cfg.Bindings {
		b, err := newBinding(h)
		if err != nil {
			return nil, err
		}
		h.bindings = append(h.bindings, b)
	}
	h.bindings = append(h.bindings, jsonRPC{h: h})
	return h, nil
}

// ServeHTTP answers card requests on the well-known paths (and those of
// the JWKS and the protected resource metadata, when served), and every
// other request by the first binding that takes it (Config.Bindings: gRPC
// calls, HTTP+JSON requests below the REST path, MCP's on its path), and
// JSON-RPC requests (POST) on any other path that routes here.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == CardPath || r.URL.Path == LegacyCardPath {
		if h.protectCard {
			if _, f := h.authenticate(r); f != nil {
				// Refused as JSON-RPC refuses a request it has not read.
				c := &Exchange{Call: Call{Version: a2a.V10}, form: jsonRPC{h: h}, contentType: "application/json"}
				h.refuse(w, c, f)
				return
			}
		}
		h.card.ServeHTTP(w, r)
		return
	}
	if h.jwks != nil && r.URL.Path == h.jwksPath {
		h.jwks.ServeHTTP(w, r)
		return
	}
	if h.resourceMeta != nil && h.resourceMeta.Serves(r.URL.Path) {
		h.resourceMeta.ServeHTTP(w, r)
		return
	}
	c := h.newCall(r.Context())
	defer h.endCall(c)
	for _, b := range h.bindings {
		if b.Serve(w, r, c) {
			return
		}
	}
}

// Shutdown ends what would hold the HTTP server's shutdown for ever: the
// bindings' long-lived streams (Binding.Shutdown). Register it with the
// server (http.Server.RegisterOnShutdown), for a reload too: the calls
// under way still answer.
func (h *Handler) Shutdown() {
	for _, b := range h.bindings {
		b.Shutdown()
	}
}

// Close releases what the bindings hold, each once its calls under way
// end (Binding.Close): for a handler that is discarded (Caddy discards a
// config it replaces before its requests have ended).
func (h *Handler) Close() {
	for _, b := range h.bindings {
		b.Close()
	}
}

// requestVersion is the version a JSON-RPC or HTTP+JSON request speaks:
// its A2A-Version header, or else its A2A-Version query parameter.
func requestVersion(r *http.Request) (a2a.Version, *a2a.Error) {
	s := r.Header.Get(a2a.VersionParameter)
	if s == "" {
		s = r.URL.Query().Get(a2a.VersionParameter)
	}
	return a2a.ParseVersion(s)
}

// readRequestBody reads r's body into buf within the read timeout and the
// size cap; when it cannot, it returns the HTTP status and error to answer.
func (h *Handler) readRequestBody(w http.ResponseWriter, r *http.Request, buf *[]byte) ([]byte, int, *a2a.Error) {
	rc := http.NewResponseController(w)
	h.setDeadline(rc.SetReadDeadline, h.readBody)
	body, err := readBody(buf, http.MaxBytesReader(w, r.Body, h.maxBody))
	h.setDeadline(rc.SetReadDeadline, 0)
	if err == nil {
		return body, 0, nil
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, http.StatusRequestEntityTooLarge,
			a2a.InvalidRequest(fmt.Sprintf("request body exceeds the limit of %d bytes", h.maxBody))
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, http.StatusRequestTimeout,
			a2a.InvalidRequest(fmt.Sprintf("the request body did not arrive within %s", h.readBody))
	}
	return nil, http.StatusBadRequest, a2a.InvalidRequest("reading the request body: " + err.Error())
}

// writeResult encodes a successful answer to c.
func (h *Handler) writeResult(w http.ResponseWriter, c *Exchange, result any) {
	buf := getBuffer()
	defer putBuffer(buf)
	out, err := c.form.appendResult((*buf)[:0], c, result)
	if err != nil {
		h.log.Error("encoding a result", zap.Error(err))
		h.writeError(w, http.StatusInternalServerError, c, a2a.InternalError("the answer could not be encoded"))
		return
	}
	*buf = out
	h.writeJSON(w, http.StatusOK, c.contentType, out)
}

// writeList answers ListTasks. A large page is written as it is encoded,
// 64 KiB at a time, each write within the write timeout, rather than built
// whole.
func (h *Handler) writeList(w http.ResponseWriter, c *Exchange, list *a2a.ListTasksResponse) {
	buf := getBuffer()
	defer putBuffer(buf)
	rc := http.NewResponseController(w)
	started := false
	out, err := c.form.appendList((*buf)[:0], c, list, func(b []byte) ([]byte, error) {
		if !started {
			started = true
			w.Header().Set("Content-Type", c.contentType)
			w.WriteHeader(http.StatusOK)
		}
		h.setDeadline(rc.SetWriteDeadline, h.writeTimeout)
		_, err := w.Write(b)
		return b[:0], err
	})
	switch {
	case err != nil && started:
		// Part of the answer is out: cut the connection rather than end
		// it with JSON that stops half-way.
		h.log.Debug("a ListTasks answer was cut short", zap.Error(err))
		h.setDeadline(rc.SetWriteDeadline, 0)
		panic(http.ErrAbortHandler)
	case err != nil:
		h.log.Error("encoding a result", zap.Error(err))
		h.writeError(w, http.StatusInternalServerError, c, a2a.InternalError("the answer could not be encoded"))
	case !started:
		*buf = out
		h.writeJSON(w, http.StatusOK, c.contentType, out)
	default:
		*buf = out
		h.setDeadline(rc.SetWriteDeadline, h.writeTimeout)
		if _, err := w.Write(out); err == nil {
			_ = rc.Flush()
		}
		h.setDeadline(rc.SetWriteDeadline, 0)
	}
}

// writeError encodes an error answer, which ends call c, with HTTP status
// status. JSON-RPC protocol errors travel with 200, as JSON-RPC over HTTP
// expects; transport problems, and every error of the HTTP+JSON binding,
// carry their HTTP status.
func (h *Handler) writeError(w http.ResponseWriter, status int, c *Exchange, e *a2a.Error) {
	c.Code = e.Code
	buf := getBuffer()
	defer putBuffer(buf)
	*buf = c.form.appendError((*buf)[:0], c, status, e)
	h.writeJSON(w, status, c.contentType, *buf)
}

// writeJSON writes a whole JSON answer within the write timeout.
func (h *Handler) writeJSON(w http.ResponseWriter, status int, contentType string, body []byte) {
	rc := http.NewResponseController(w)
	h.setDeadline(rc.SetWriteDeadline, h.writeTimeout)
	hdr := w.Header()
	hdr.Set("Content-Type", contentType)
	// A length, so that the flush below does not turn the answer chunked.
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if _, err := w.Write(body); err == nil {
		// Flushed here, within the deadline, rather than by the HTTP server
		// after the handler returns, when no deadline would apply.
		_ = rc.Flush()
	}
	h.setDeadline(rc.SetWriteDeadline, 0)
}

// setDeadline sets a read or write deadline d from now, or clears it
// (d == 0) so that it does not outlive the answer on a kept-alive
// connection. Not every ResponseWriter supports deadlines (httptest's does
// not); without one the HTTP server's own timeouts still apply.
// withWriteDeadline runs write within the write timeout, then clears the
// deadline: on HTTP/2 a deadline left set resets the stream when it passes,
// even while nothing is being written (a stream waiting for its next
// event), and on a kept-alive HTTP/1 connection it would outlive the
// answer.
func (h *Handler) withWriteDeadline(rc *http.ResponseController, write func() error) error {
	h.setDeadline(rc.SetWriteDeadline, h.writeTimeout)
	defer h.setDeadline(rc.SetWriteDeadline, 0)
	return write()
}

func (h *Handler) setDeadline(set func(time.Time) error, d time.Duration) {
	var at time.Time
	if d > 0 {
		at = time.Now().Add(d)
	}
	if err := set(at); err != nil && !errors.Is(err, http.ErrNotSupported) {
		h.log.Debug("setting a connection deadline", zap.Error(err))
	}
}

// readBody reads r into buf's storage, growing it as needed.
func readBody(buf *[]byte, r io.Reader) ([]byte, error) {
	b := bytes.NewBuffer((*buf)[:0])
	_, err := b.ReadFrom(r)
	*buf = b.Bytes()
	return *buf, err
}

// Buffers for request bodies and encoded answers. Large ones are not kept,
// so one huge request does not pin memory.
const maxPooledBuffer = 64 << 10

var bufferPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func getBuffer() *[]byte { return bufferPool.Get().(*[]byte) }

func putBuffer(b *[]byte) {
	if cap(*b) <= maxPooledBuffer {
		*b = (*b)[:0]
		bufferPool.Put(b)
	}
}

// clientAddress names the client of r for its share of the store: its IP,
// or the /48 prefix of an IPv6 address (see Config.ClientAddress).
func (h *Handler) clientAddress(r *http.Request) string { return authn.ClientAddress(r, h.clientAddr) }

// CheckRESTPath says why p cannot be the HTTP+JSON binding's path.
func CheckRESTPath(p string) error {
	if p != "/" && (!strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/")) {
		return fmt.Errorf("%q must start with / and, unless it is /, not end with /", p)
	}
	return nil
}
