// Package push delivers A2A push notifications (spec 1.0 §3.1.7, §4.3,
// §13.2): each change of a task that has push configs is POSTed to every
// config's URL, in the order of the changes, signed by the agent.
//
// What is sent. The body is written in the protocol version of the request
// that registered the config (see a2a.AppendPushNotification): a 1.0
// receiver gets one StreamResponse per event, the first being the task
// itself when the config came with the message; a 0.3 receiver gets the
// Task after each change. Headers:
//
//   - Authorization: the config's own scheme and credentials when it has
//     credentials (spec 1.0 §4.3.3: the agent MUST send them); otherwise
//     "Bearer <JWT>", the agent's own proof (the 0.3 example and the A2A
//     guide's JWT + JWKS flow).
//   - X-A2A-Notification-JWT: the same JWT when Authorization carries the
//     client's credentials, so that a receiver can always verify the agent.
//   - X-A2A-Notification-Token: the config's token, when it has one (the
//     0.3 specification's header; 1.0 names none).
//
// The JWT follows the A2A guide on push notification security: it is
// signed with the agent's key, published in the JWKS the agent serves, with
// kid in its header, and claims iss (the agent's URL), aud (the receiver's
// URL), iat, exp (a short lifetime, 5 minutes), jti (unique), taskId, and
// request_body_sha256 (hex SHA-256 of the body), so that a receiver can
// check that the token was made for this very body and reject replays.
//
// How. Each config of each task is a receiver with its own bounded queue
// (in count and bytes) and at most one delivery under way; a receiver's
// queue drains in order and its goroutine ends when it is empty. A slow or
// dead receiver fills only its own queue: what no longer fits is dropped
// and logged. All queues together are bounded too, in receivers
// (MaxReceivers) and in bytes (MaxBytes), since many receivers that hang at
// once would otherwise hold many queues' worth: a change's body is encoded
// once per version, shared by the configs that receive it and counted
// once. Each notification is tried up to MaxAttempts times with
// exponential backoff and jitter; a receiver whose notification finally
// failed gets one attempt for each later one until one succeeds again. A
// final failure or a drop is logged at warn level once until the receiver
// recovers, with its reason (a drop for the total bounds: once until a
// receiver ends, or half of MaxBytes is free again); never the body, the
// token or credentials.
package push

import (
	"bytes"
	"cmp"
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"time"
	"unsafe"

	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/zap"
	"golang.org/x/net/http/httpguts"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/keys"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// Defaults for the zero values of Options.
const (
	DefaultTimeout        = 10 * time.Second
	DefaultMaxAttempts    = 4
	DefaultInitialBackoff = time.Second
	DefaultMaxBackoff     = 30 * time.Second
	DefaultQueueLength    = 32
	DefaultQueueBytes     = 1 << 20
	DefaultMaxReceivers   = 1024
	// DefaultMaxBytes is a quarter of the task store's default budget.
	DefaultMaxBytes = 64 << 20
	// TokenLifetime is how long a notification's JWT is valid.
	TokenLifetime = 5 * time.Minute
)

// Header names.
const (
	TokenHeader = "X-A2A-Notification-Token"
	JWTHeader   = "X-A2A-Notification-JWT"
)

// maxResponseBytes is what is read of a receiver's answer before the
// connection is closed instead of reused.
const maxResponseBytes = 64 << 10

// Options configure a Sender. Zero values take the defaults.
type Options struct {
	// Key signs the notifications' JWTs; it must have a private part and be
	// published in the agent's JWKS. Required.
	Key keys.Key
	// Issuer is the JWT's iss: the agent's URL. Required.
	Issuer string
	// AllowInsecure accepts http URLs (default: https only).
	AllowInsecure bool
	// AllowPrivate accepts loopback, private, link-local and other
	// non-public addresses (for tests and development).
	AllowPrivate bool
	// AllowedNetworks are ranges accepted although not public: receivers
	// inside the operator's own network.
	AllowedNetworks []netip.Prefix
	// AllowedOrigins, when not empty, are the only origins
	// (scheme://host[:port], see AllowedOrigin) receivers may have; their
	// addresses are checked all the same.
	AllowedOrigins []string
	// Timeout bounds one delivery attempt, connection included (default
	// 10s, as spec 1.0 §4.3.3 recommends 10 to 30 seconds).
	Timeout time.Duration
	// MaxAttempts bounds the attempts of one notification (default 4).
	MaxAttempts int
	// InitialBackoff is the wait before the first retry (default 1s); it
	// doubles with each retry up to MaxBackoff (default 30s).
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// QueueLength and QueueBytes bound the notifications waiting for one
	// receiver (default 32 and 1 MiB); a notification larger than
	// QueueBytes is never sent.
	QueueLength int
	QueueBytes  int64
	// MaxReceivers bounds the receivers with notifications under way at
	// once (default 1024): past it, notifications for new receivers are
	// dropped.
	MaxReceivers int
	// MaxBytes bounds what all notifications queued or under way hold,
	// across receivers (default 64 MiB): each body once, however many
	// receivers share it, and each notification's config and task id.
	// Past it, notifications are dropped.
	MaxBytes int64
	// Logger reports drops and failures.
	Logger *zap.Logger
	// OnOutcome, when set, hears what became of each notification and
	// attempt (for metrics). It must not block.
	OnOutcome func(Outcome)
}

// Outcome is what became of one attempt, or of one notification.
type Outcome string

// The outcomes OnOutcome hears: an attempt delivered, an attempt that
// failed and will be tried again, a notification whose last attempt
// failed, and one dropped before any attempt (queue full, too many
// receivers, configuration unloaded).
const (
	Delivered Outcome = "delivered"
	Retried   Outcome = "retried"
	Failed    Outcome = "failed"
	Dropped   Outcome = "dropped"
)

// Outcomes are every Outcome, for callers that count them by label.
var Outcomes = []Outcome{Delivered, Retried, Failed, Dropped}

// outcome tells OnOutcome, if set, of n outcomes o.
func (s *Sender) outcome(o Outcome, n int) {
	if s.opts.OnOutcome != nil {
		for range n {
			s.opts.OnOutcome(o)
		}
	}
}

// Sender delivers push notifications; it is a tasks.Pusher. It is safe for
// concurrent use.
type Sender struct {
	opts   Options
	guard  guard
	client *http.Client
	method jwt.SigningMethod
	log    *zap.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	receivers map[receiverKey]*receiver
	closed    bool
	unloaded  int // notifications Close kept from being delivered
	// saturated: a drop for MaxReceivers was logged, until one ends.
	saturated bool
	// held is what the queued notifications hold, counted against
	// MaxBytes; overBudget: a drop for MaxBytes was logged, until held
	// falls to half of it.
	held       int64
	overBudget bool
}

// receiverKey names one config of one task.
type receiverKey struct{ task, config string }

// receiver is one config's queue; a goroutine drains it while it is not
// empty.
type receiver struct {
	queue []notification
	bytes int64
	// failing: a notification finally failed; later ones get one attempt
	// until one succeeds. warned: the failure or a drop was logged.
	failing, warned bool
}

// notification is one POST.
type notification struct {
	taskID string
	config tasks.PushConfig
	body   *payload
}

// payload is one encoded body, shared by the notifications of one change
// in one version.
type payload struct {
	data []byte
	refs int // queued notifications holding it, under Sender.mu
}

// bytesBesideBody is what n holds besides its body.
func (n *notification) bytesBesideBody() int64 {
	c := &n.config
	return int64(unsafe.Sizeof(*n)) +
		int64(len(n.taskID)+len(c.ID)+len(c.URL)+len(c.Token)+len(c.AuthScheme)+len(c.AuthCredentials))
}

// cost is what queueing n adds to Sender.held: its body too if no other
// queued notification holds it.
func (n *notification) cost() int64 {
	if n.body.refs > 0 {
		return n.bytesBesideBody()
	}
	return n.bytesBesideBody() + int64(len(n.body.data))
}

// New checks opts and returns a Sender. Close stops it.
func New(opts Options) (*Sender, error) {
	if opts.Key.Private == nil {
		return nil, errors.New("push: the signing key has no private part")
	}
	method := jwt.GetSigningMethod(opts.Key.Algorithm)
	if method == nil || opts.Key.ID == "" {
		return nil, fmt.Errorf("push: the key needs an id and a JWS algorithm (got %q, %q)", opts.Key.ID, opts.Key.Algorithm)
	}
	if opts.Issuer == "" {
		return nil, errors.New("push: no issuer (the agent's URL)")
	}
	switch {
	case opts.Timeout < 0, opts.MaxAttempts < 0, opts.InitialBackoff < 0, opts.MaxBackoff < 0,
		opts.QueueLength < 0, opts.QueueBytes < 0, opts.MaxReceivers < 0, opts.MaxBytes < 0:
		return nil, errors.New("push: negative limit")
	}
	opts.Timeout = cmp.Or(opts.Timeout, DefaultTimeout)
	opts.MaxAttempts = cmp.Or(opts.MaxAttempts, DefaultMaxAttempts)
	opts.InitialBackoff = cmp.Or(opts.InitialBackoff, DefaultInitialBackoff)
	opts.MaxBackoff = max(cmp.Or(opts.MaxBackoff, DefaultMaxBackoff), opts.InitialBackoff)
	opts.QueueLength = cmp.Or(opts.QueueLength, DefaultQueueLength)
	opts.QueueBytes = cmp.Or(opts.QueueBytes, DefaultQueueBytes)
	opts.MaxReceivers = cmp.Or(opts.MaxReceivers, DefaultMaxReceivers)
	opts.MaxBytes = cmp.Or(opts.MaxBytes, DefaultMaxBytes)
	origins := make(map[string]bool, len(opts.AllowedOrigins))
	for _, o := range opts.AllowedOrigins {
		origin, err := AllowedOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("push: allowed origin: %w", err)
		}
		origins[origin] = true
	}
	s := &Sender{
		opts: opts,
		guard: guard{allowInsecure: opts.AllowInsecure, allowPrivate: opts.AllowPrivate, allowed: opts.AllowedNetworks,
			origins: origins},
		method:    method,
		log:       cmp.Or(opts.Logger, zap.NewNop()),
		receivers: make(map[receiverKey]*receiver),
	}
	s.client = &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil, // never through a proxy from the environment
			DialContext:           s.guard.dialer().DialContext,
			TLSHandshakeTimeout:   opts.Timeout,
			ResponseHeaderTimeout: opts.Timeout,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       90 * time.Second,
			ForceAttemptHTTP2:     true,
		},
		Timeout: opts.Timeout,
		// A redirect could lead anywhere: it is an answer, not followed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// CheckURL says why raw cannot be a receiver URL (an https URL, http only
// with AllowInsecure, whose host is not a non-public address or a loopback
// name unless allowed), or nil. Addresses a name resolves to are checked
// when connecting.
func (s *Sender) CheckURL(raw string) error { return s.guard.checkURL(raw) }

// CheckHeaders says why the token, authentication scheme or credentials
// of c cannot be sent in a notification's headers, or nil: the scheme must
// be an HTTP token (RFC 9110 §11.1), the others header field values, with
// no CR, LF or other control character. A request could not carry them, so
// the config could never be delivered.
func (*Sender) CheckHeaders(c *tasks.PushConfig) error {
	switch {
	case c.AuthScheme != "" && !httpguts.ValidHeaderFieldName(c.AuthScheme):
		return errors.New("push: the authentication scheme must be an HTTP token (letters, digits, and !#$%&'*+-.^_`|~)")
	case !httpguts.ValidHeaderFieldValue(c.AuthCredentials):
		return errors.New("push: the authentication credentials hold a control character (CR, LF, …), which a header cannot carry")
	case !httpguts.ValidHeaderFieldValue(c.Token):
		return errors.New("push: the token holds a control character (CR, LF, …), which a header cannot carry")
	}
	return nil
}

// Close stops delivery: what is queued is dropped, deliveries under way
// are canceled, and Close waits for their goroutines.
func (s *Sender) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	// Counted by each receiver's goroutine as it stops (see drain), so that
	// a notification under way is counted once: dropped, not failed.
	if s.unloaded > 0 {
		s.log.Info("push notifications dropped as the agent's configuration was unloaded", zap.Int("count", s.unloaded))
	}
}

// Push implements tasks.Pusher: the bodies are encoded once per version and
// queued for each config.
func (s *Sender) Push(task *a2a.Task, configs []tasks.PushConfig, events []a2a.StreamResponse) {
	var bodies [2][]*payload // by version
	for _, c := range configs {
		v := c.Version
		if int(v) >= len(bodies) {
			v = a2a.V10 // not a version a request sets; a stored config read back wrong
		}
		if bodies[v] == nil {
			bodies[v] = s.encode(v, task, events)
		}
		for _, body := range bodies[v] {
			s.enqueue(notification{taskID: task.ID, config: c, body: body})
		}
	}
}

// encode writes the bodies of one change in version v: 1.0 one per event,
// 0.3 the task.
func (s *Sender) encode(v a2a.Version, task *a2a.Task, events []a2a.StreamResponse) []*payload {
	if v != a2a.V10 {
		events = []a2a.StreamResponse{{Task: task}} // one body: the task
	}
	out := make([]*payload, 0, len(events))
	for i := range events {
		body, err := a2a.AppendPushNotification(nil, v, task, &events[i])
		if err != nil {
			s.log.Error("a push notification could not be encoded", zap.String("task", task.ID), zap.Error(err))
			continue
		}
		out = append(out, &payload{data: body})
	}
	return out
}

func (s *Sender) enqueue(n notification) {
	key := receiverKey{n.taskID, n.config.ID}
	size := int64(len(n.body.data))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	r := s.receivers[key]
	if r == nil {
		if len(s.receivers) >= s.opts.MaxReceivers {
			s.outcome(Dropped, 1)
			if s.saturated {
				return
			}
			s.saturated = true
			s.log.Warn("push notification dropped: too many receivers have notifications under way",
				zap.String("task", n.taskID), zap.String("config", n.config.ID), zap.Int("max_receivers", s.opts.MaxReceivers))
			return
		}
		r = &receiver{}
	}
	if len(r.queue) >= s.opts.QueueLength || r.bytes+size > s.opts.QueueBytes {
		s.outcome(Dropped, 1)
		if !r.warned {
			r.warned = true
			s.log.Warn("push notification dropped: the receiver's queue is full (it is slow or down)",
				zap.String("task", n.taskID), zap.String("config", n.config.ID),
				zap.Int("queued", len(r.queue)), zap.Int64("queued_bytes", r.bytes), zap.Int64("bytes", size))
		}
		return
	}
	cost := n.cost()
	if s.held+cost > s.opts.MaxBytes {
		s.outcome(Dropped, 1)
		if !s.overBudget {
			s.overBudget = true
			s.log.Warn("push notification dropped: the notifications queued for all receivers hold max_bytes (receivers are slow or down)",
				zap.String("task", n.taskID), zap.String("config", n.config.ID),
				zap.Int64("held_bytes", s.held), zap.Int64("bytes", cost), zap.Int64("max_bytes", s.opts.MaxBytes))
		}
		return
	}
	s.held += cost
	n.body.refs++
	r.queue = append(r.queue, n)
	r.bytes += size
	if s.receivers[key] == nil {
		s.receivers[key] = r
		s.wg.Add(1)
		go s.drain(key, r)
	}
}

// drain delivers r's queue in order until it is empty, then forgets r.
func (s *Sender) drain(key receiverKey, r *receiver) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		if len(r.queue) == 0 || s.ctx.Err() != nil {
			s.unloaded += len(r.queue)
			s.outcome(Dropped, len(r.queue))
			for i := range r.queue {
				s.release(&r.queue[i])
			}
			delete(s.receivers, key)
			s.saturated = false
			s.mu.Unlock()
			return
		}
		n := r.queue[0]
		attempts := s.opts.MaxAttempts
		if r.failing {
			attempts = 1
		}
		s.mu.Unlock()

		err := s.deliver(n, attempts)

		s.mu.Lock()
		if err != nil && s.ctx.Err() != nil {
			// Stopped by Close: n stays queued, and is counted as dropped
			// above.
			s.mu.Unlock()
			continue
		}
		s.release(&r.queue[0])
		r.queue[0] = notification{}
		r.queue = r.queue[1:]
		r.bytes -= int64(len(n.body.data))
		switch {
		case err == nil:
			r.failing, r.warned = false, false
		default:
			r.failing = true
			if !r.warned {
				r.warned = true
				s.log.Warn("push notification failed; later ones to this receiver get one attempt until one succeeds",
					zap.String("task", n.taskID), zap.String("config", n.config.ID), zap.Error(err))
			} else {
				s.log.Debug("push notification failed", zap.String("task", n.taskID), zap.String("config", n.config.ID), zap.Error(err))
			}
		}
		s.mu.Unlock()
	}
}

// release gives back to held what queued notification n held. Under s.mu.
func (s *Sender) release(n *notification) {
	n.body.refs--
	s.held -= n.cost()
	if s.overBudget && s.held <= s.opts.MaxBytes/2 {
		s.overBudget = false
	}
}

// deliver tries n up to attempts times, with backoff in between, and
// returns the last failure.
func (s *Sender) deliver(n notification, attempts int) error {
	backoff := s.opts.InitialBackoff
	var err error
	for attempt := 1; ; attempt++ {
		var retry bool
		if retry, err = s.post(n); err == nil {
			s.outcome(Delivered, 1)
			return nil
		}
		if s.ctx.Err() != nil {
			return err // Close stopped it: drain counts it as dropped
		}
		if !retry || attempt >= attempts {
			s.outcome(Failed, 1)
			return fmt.Errorf("after %d attempt(s): %w", attempt, err)
		}
		s.outcome(Retried, 1)
		// Full jitter within the backoff's upper half: receivers that
		// failed together do not come back together.
		wait := backoff/2 + rand.N(backoff/2+1)
		t := time.NewTimer(wait)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return s.ctx.Err()
		case <-t.C:
		}
		backoff = min(backoff*2, s.opts.MaxBackoff)
	}
}

// post sends n once; retry says whether another attempt could succeed.
func (s *Sender) post(n notification) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.config.URL, bytes.NewReader(n.body.data))
	if err != nil {
		return false, fmt.Errorf("push: the receiver URL: %w", err)
	}
	// Refused when the config was created; one stored before that was
	// checked is refused here, for good.
	if err := s.CheckHeaders(&n.config); err != nil {
		return false, err
	}
	token, err := s.sign(n)
	if err != nil {
		return false, err
	}
	h := req.Header
	h.Set("Content-Type", a2a.PushContentType(n.config.Version))
	if n.config.AuthCredentials != "" {
		h.Set("Authorization", n.config.AuthScheme+" "+n.config.AuthCredentials)
		h.Set(JWTHeader, token)
	} else {
		h.Set("Authorization", "Bearer "+token)
	}
	if n.config.Token != "" {
		h.Set(TokenHeader, n.config.Token)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		// The URL is left out: its query may hold the client's secrets.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if errors.Is(err, errRefused) {
			return false, err
		}
		return true, fmt.Errorf("push: POST to %s: %w", req.URL.Host, err)
	}
	_, _ = io.CopyN(io.Discard, resp.Body, maxResponseBytes)
	resp.Body.Close()
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return false, nil
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests, code >= 500:
		return true, fmt.Errorf("push: the receiver answered %s", resp.Status)
	default:
		return false, fmt.Errorf("push: the receiver answered %s", resp.Status)
	}
}

// sign makes the JWT of one notification (see the package comment).
func (s *Sender) sign(n notification) (string, error) {
	now := time.Now()
	sum := sha256.Sum256(n.body.data)
	claims := jwt.MapClaims{
		"iss":                 s.opts.Issuer,
		"aud":                 n.config.URL,
		"iat":                 now.Unix(),
		"exp":                 now.Add(TokenLifetime).Unix(),
		"jti":                 crand.Text(),
		"taskId":              n.taskID,
		"request_body_sha256": hex.EncodeToString(sum[:]),
	}
	t := jwt.NewWithClaims(s.method, claims)
	t.Header["kid"] = s.opts.Key.ID
	signed, err := t.SignedString(s.opts.Key.Private)
	if err != nil {
		return "", fmt.Errorf("push: signing the notification: %w", err)
	}
	return signed, nil
}
