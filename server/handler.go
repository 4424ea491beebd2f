// Package server is the A2A endpoint as a plain http.Handler: the JSON-RPC
// transport with SSE streaming, method dispatch, and blocking, non-blocking
// and streamed answers. It wires a2a, tasks, mapping and cardgen together
// and knows nothing of Caddy.
package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// Defaults for the zero values of Config.
const (
	DefaultMaxRequestBytes   = 4 << 20
	DefaultHeartbeatInterval = 15 * time.Second
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
	// MaxRequestBytes caps a JSON-RPC request body (default 4 MiB).
	MaxRequestBytes int64
	// HeartbeatInterval is how often an idle stream gets an SSE comment
	// (default 15 s), so proxies and clients keep it open.
	HeartbeatInterval time.Duration
	Logger            *zap.Logger

	// JWKS, when set, answers requests for JWKSPath: the public keys that
	// verify the card's signatures (cardgen.JWKS).
	JWKS     http.Handler
	JWKSPath string

	// Auth authenticates every JSON-RPC request before its body is read,
	// makes the caller the owner of the tasks it creates, and authorizes
	// the use of skills that declare security. Nil: every caller is the
	// anonymous owner, and no skill may declare security.
	Auth Authenticator
	// ProtectCard makes the Agent Card ask what JSON-RPC requests ask
	// (Auth's agent-wide requirement). Default: the card is public.
	ProtectCard bool
}

// Handler serves the Agent Card and the JSON-RPC endpoint.
type Handler struct {
	skills       *mapping.Skills
	tasks        *tasks.Manager
	card         *cardgen.Document
	extendedCard *cardgen.Document
	maxBody      int64
	heartbeat    time.Duration
	log          *zap.Logger
	jwks         http.Handler
	jwksPath     string
	auth         Authenticator
	protectCard  bool
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
	case cfg.JWKS != nil && (!strings.HasPrefix(cfg.JWKSPath, "/") || cfg.JWKSPath == CardPath || cfg.JWKSPath == LegacyCardPath):
		return nil, fmt.Errorf("server: JWKS path %q must start with / and not be a card path", cfg.JWKSPath)
	case cfg.Auth == nil && cfg.ExtendedCard != nil:
		return nil, errors.New("server: the extended card is for authenticated callers: it needs an authenticator")
	case cfg.Auth == nil && cfg.ProtectCard:
		return nil, errors.New("server: a protected card needs an authenticator")
	}
	if cfg.Auth == nil {
		// Without an authenticator a skill's requirement could not be
		// checked: refuse it rather than ignore it.
		for _, sk := range cfg.Skills.All() {
			if len(sk.Security) > 0 || sk.Extended {
				return nil, fmt.Errorf("server: skill %q declares security or extended, but no authenticator is configured", sk.ID)
			}
		}
	}
	h := &Handler{
		skills:       cfg.Skills,
		tasks:        cfg.Tasks,
		card:         cfg.Card,
		extendedCard: cfg.ExtendedCard,
		maxBody:      cfg.MaxRequestBytes,
		heartbeat:    cfg.HeartbeatInterval,
		log:          cfg.Logger,
		jwks:         cfg.JWKS,
		jwksPath:     cfg.JWKSPath,
		auth:         cfg.Auth,
		protectCard:  cfg.ProtectCard,
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
	return h, nil
}

// ServeHTTP answers card requests on the well-known paths and JSON-RPC
// requests (POST) on any other path that routes here.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == CardPath || r.URL.Path == LegacyCardPath {
		if h.protectCard {
			if _, f := h.authenticate(r); f != nil {
				h.refuse(w, a2a.V10, nil, f)
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
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "A2A JSON-RPC endpoint: use POST with Content-Type: application/json", http.StatusMethodNotAllowed)
		return
	}

	versionParam := r.Header.Get(a2a.VersionParameter)
	if versionParam == "" {
		versionParam = r.URL.Query().Get(a2a.VersionParameter)
	}
	version, versionErr := a2a.ParseVersion(versionParam)

	// Who is calling is settled before the body is read: an unauthenticated
	// caller costs a header lookup, never a body of up to maxBody bytes.
	caller, failure := h.authenticate(r)
	if failure != nil {
		h.refuse(w, version, nil, failure)
		return
	}

	if mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mediaType != "application/json" {
		h.writeError(w, http.StatusUnsupportedMediaType, version, nil,
			a2a.InvalidRequest("Content-Type must be application/json"))
		return
	}

	if req, ok := h.decode(w, r, version, versionErr); ok {
		h.dispatch(w, r, version, req, caller)
	}
}

// decode reads the body into a pooled buffer and decodes it, answering
// the error itself when it fails. The buffer goes back to the pool before
// dispatch: the decoded request holds copies of what it needs, so a stream
// that stays open for hours does not pin the body.
func (h *Handler) decode(w http.ResponseWriter, r *http.Request, version a2a.Version, versionErr *a2a.Error) (*a2a.Request, bool) {
	buf := getBuffer()
	defer putBuffer(buf)
	body, err := readBody(buf, http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.writeError(w, http.StatusRequestEntityTooLarge, version, nil,
				a2a.InvalidRequest(fmt.Sprintf("request body exceeds the limit of %d bytes", h.maxBody)))
			return nil, false
		}
		h.writeError(w, http.StatusBadRequest, version, nil, a2a.InvalidRequest("reading the request body: "+err.Error()))
		return nil, false
	}

	if versionErr != nil {
		h.writeError(w, http.StatusOK, version, requestID(body), versionErr)
		return nil, false
	}
	req, protoErr := a2a.DecodeRequest(version, body)
	if protoErr != nil {
		if req != nil {
			h.fail(w, version, req, protoErr)
		} else {
			h.writeError(w, http.StatusOK, version, nil, protoErr)
		}
		return nil, false
	}
	return req, true
}

// requestID digs the id out of a request that will not be decoded further,
// so even an early error answers the caller's id.
func requestID(body []byte) json.RawMessage {
	var envelope struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &envelope) != nil {
		return nil
	}
	return envelope.ID
}

// writeResult encodes a successful JSON-RPC answer in the caller's version.
func (h *Handler) writeResult(w http.ResponseWriter, v a2a.Version, id json.RawMessage, result any) {
	buf := getBuffer()
	defer putBuffer(buf)
	out, err := a2a.AppendResult((*buf)[:0], v, id, result)
	if err != nil {
		h.log.Error("encoding a JSON-RPC result", zap.Error(err))
		h.writeError(w, http.StatusInternalServerError, v, id, a2a.InternalError("the answer could not be encoded"))
		return
	}
	*buf = out
	writeJSON(w, http.StatusOK, out)
}

// writeError encodes a JSON-RPC error. Protocol errors travel with 200, as
// JSON-RPC over HTTP expects; transport problems carry their HTTP status.
func (h *Handler) writeError(w http.ResponseWriter, status int, v a2a.Version, id json.RawMessage, e *a2a.Error) {
	buf := getBuffer()
	defer putBuffer(buf)
	*buf = a2a.AppendError((*buf)[:0], v, id, e)
	writeJSON(w, status, *buf)
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
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
