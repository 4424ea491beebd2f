package cardgen

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// DefaultMaxAge is how long clients and shared caches may reuse the card
// before revalidating it (Cache-Control max-age), unless WithMaxAge says
// otherwise.
const DefaultMaxAge = 300 * time.Second

// Option tunes NewDocument.
type Option func(*settings)

type settings struct {
	maxAge time.Duration
	signer *Signer
	shape  a2a.CardShape
}

// WithMaxAge sets the Cache-Control max-age, in whole seconds (a fraction
// is dropped). Zero makes clients revalidate every time; negative is an
// error.
func WithMaxAge(d time.Duration) Option {
	return func(s *settings) { s.maxAge = d }
}

// WithShape serves the card in another shape than the union card: the 1.0
// members only, or scopes as bare arrays (see a2a.CardShape). A card with
// bare scopes carries only the served form's signature: the other forms
// are projections of a 1.0 card, which bare scopes are not.
func WithShape(shape a2a.CardShape) Option {
	return func(s *settings) { s.shape = shape }
}

// WithSigner signs the card (spec 1.0 §8.4): NewDocument adds s's
// signatures last, after every field is set, so the bytes served are the
// bytes signed.
func WithSigner(s *Signer) Option {
	return func(st *settings) { st.signer = s }
}

// Document is an Agent Card ready to serve: its bytes and validators are
// computed once, by NewDocument, and never change. It is safe for
// concurrent use.
type Document struct {
	card *a2a.AgentCard
	res  resource
}

// NewDocument encodes card (a2a.MarshalAgentCard: the union of the 1.0 and
// 0.3 fields), signs it when WithSigner says so, and derives a strong ETag
// from the bytes. Document takes ownership of card: do not modify it, or
// anything it refers to, afterwards.
func NewDocument(card *a2a.AgentCard, opts ...Option) (*Document, error) {
	if card == nil {
		return nil, errors.New("cardgen: NewDocument: nil card")
	}
	s := settings{maxAge: DefaultMaxAge}
	for _, o := range opts {
		o(&s)
	}
	if s.maxAge < 0 {
		return nil, fmt.Errorf("cardgen: max-age %s is negative", s.maxAge)
	}
	// A shallow copy: signing sets Signatures on the served card without
	// touching the caller's.
	c := *card
	var body []byte
	var err error
	if s.signer != nil {
		body, err = s.signer.sign(&c, s.shape)
	} else {
		body, err = a2a.MarshalAgentCardAs(&c, s.shape)
	}
	if err != nil {
		return nil, fmt.Errorf("cardgen: encoding agent card %q: %w", c.Name, err)
	}
	return &Document{card: &c, res: newResource(body, "application/json", s.maxAge, time.Now())}, nil
}

// Card returns the card the document serves. It is shared: read-only.
func (d *Document) Card() *a2a.AgentCard { return d.card }

// JSON returns the served bytes, for answers that embed the card (the
// extended card method). Shared: read-only.
func (d *Document) JSON() json.RawMessage { return d.res.body }

// ETag returns the strong entity-tag of the card's bytes, quoted as it
// appears in the ETag header.
func (d *Document) ETag() string { return d.res.headers[hETag] }

// ServeHTTP answers GET and HEAD with the card, and with 304 Not Modified
// when If-None-Match names the current ETag, or, without If-None-Match,
// when If-Modified-Since is not before the document was made (RFC 9110
// §13.1.2, §13.1.3). Last-Modified is when the document was made (the
// configuration loaded): caches that only know dates get one, while the
// ETag, the same on every replica serving the same card, stays the
// validator to rely on. Other methods get 405 with Allow.
func (d *Document) ServeHTTP(w http.ResponseWriter, r *http.Request) { d.res.serveHTTP(w, r) }

// resource is a static JSON representation with precomputed validators and
// cache headers: the card, or the JWKS that verifies it.
type resource struct {
	body []byte
	// opaque is the entity-tag without quotes, what If-None-Match compares.
	opaque string
	// modified is when the resource was made, to the second (HTTP dates
	// have no finer grain).
	modified time.Time
	// headers holds the values of a 200 answer, in header order; serveHTTP
	// copies them for each response (see there).
	headers [numHeaders]string
}

// Indexes into resource.headers. A 304 answer sends only the first three.
const (
	hETag = iota
	hCacheControl
	hLastModified
	hContentType
	hContentLength
	numHeaders
)

// headerKeys are in canonical form (textproto.CanonicalMIMEHeaderKey), so
// they can index an http.Header directly.
var headerKeys = [numHeaders]string{
	hETag:          "Etag",
	hCacheControl:  "Cache-Control",
	hLastModified:  "Last-Modified",
	hContentType:   "Content-Type",
	hContentLength: "Content-Length",
}

func newResource(body []byte, contentType string, maxAge time.Duration, modified time.Time) resource {
	sum := sha256.Sum256(body)
	opaque := base64.RawURLEncoding.EncodeToString(sum[:])
	modified = modified.UTC().Truncate(time.Second)
	return resource{
		body:     body,
		opaque:   opaque,
		modified: modified,
		headers: [numHeaders]string{
			hETag:          `"` + opaque + `"`,
			hCacheControl:  "public, max-age=" + strconv.FormatInt(int64(maxAge/time.Second), 10),
			hLastModified:  modified.Format(http.TimeFormat),
			hContentType:   contentType,
			hContentLength: strconv.Itoa(len(body)),
		},
	}
}

func (res *resource) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	// One allocation holds every value. Sharing precomputed slices between
	// responses would save it, but response-header rewriters (Caddy's
	// `header` handler among them) edit value slices in place.
	vals := new([numHeaders]string)
	*vals = res.headers
	h := w.Header()
	if res.notModified(r) {
		// A 304 carries the validators and cache directives, not the
		// representation's own metadata (RFC 9110 §15.4.5).
		for i := range hLastModified + 1 {
			h[headerKeys[i]] = vals[i : i+1 : i+1]
		}
		w.WriteHeader(http.StatusNotModified)
		return
	}
	for i, k := range headerKeys {
		h[k] = vals[i : i+1 : i+1]
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(res.body)
	}
}

// notModified evaluates the request's preconditions: If-None-Match when
// present, otherwise If-Modified-Since (RFC 9110 §13.2.2).
func (res *resource) notModified(r *http.Request) bool {
	if inm, ok := r.Header["If-None-Match"]; ok {
		return matchesAny(inm, res.opaque)
	}
	ims := r.Header.Get("If-Modified-Since")
	if ims == "" {
		return false
	}
	since, err := http.ParseTime(ims)
	return err == nil && !res.modified.After(since)
}

// matchesAny evaluates If-None-Match field lines against the opaque part of
// a strong ETag: true for "*" or for any listed entity-tag whose opaque part
// is equal, weak (W/) or not, since If-None-Match uses the weak comparison.
// A malformed member ends the scan, as net/http's own handling does.
func matchesAny(lines []string, opaque string) bool {
	for _, s := range lines {
		for {
			s = trimLeft(s)
			if s == "" {
				break
			}
			if s[0] == ',' {
				s = s[1:]
				continue
			}
			if s[0] == '*' {
				return true
			}
			tag, rest, ok := scanETag(s)
			if !ok {
				break
			}
			if tag == opaque {
				return true
			}
			s = rest
		}
	}
	return false
}

// scanETag reads one entity-tag, [W/] DQUOTE *etagc DQUOTE, from the start
// of s and returns its opaque part (without quotes) and the rest of s.
func scanETag(s string) (opaque, rest string, ok bool) {
	if len(s) >= 2 && s[0] == 'W' && s[1] == '/' {
		s = s[2:]
	}
	if len(s) < 2 || s[0] != '"' {
		return "", "", false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			return s[1:i], s[i+1:], true
		case c == 0x21 || (c >= 0x23 && c <= 0x7E) || c >= 0x80: // etagc
		default:
			return "", "", false
		}
	}
	return "", "", false
}

func trimLeft(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	return s
}
