package cardgen_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a/a2atest"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
)

func newDocument(t testing.TB, opts ...cardgen.Option) *cardgen.Document {
	t.Helper()
	card, err := cardgen.Build(fullConfig())
	if err != nil {
		t.Fatal(err)
	}
	d, err := cardgen.NewDocument(card, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func serve(d http.Handler, method string, header http.Header) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "/.well-known/agent-card.json", nil)
	for k, v := range header {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	d.ServeHTTP(w, r)
	return w
}

func TestDocumentETag(t *testing.T) {
	d := newDocument(t)
	if ok, _ := regexp.MatchString(`^"[A-Za-z0-9_-]{43}"$`, d.ETag()); !ok {
		t.Errorf("ETag %s is not a quoted, strong, 256-bit hash", d.ETag())
	}
	if again := newDocument(t); again.ETag() != d.ETag() {
		t.Errorf("the same card gave ETags %s and %s", d.ETag(), again.ETag())
	}
	cfg := fullConfig()
	cfg.Version = "1.2.1"
	card, _ := cardgen.Build(cfg)
	other, err := cardgen.NewDocument(card)
	if err != nil {
		t.Fatal(err)
	}
	if other.ETag() == d.ETag() {
		t.Errorf("different cards share the ETag %s", d.ETag())
	}
}

func TestServeHTTP(t *testing.T) {
	d := newDocument(t)
	first := serve(d, http.MethodGet, nil)
	body := first.Body.Bytes()
	etag := d.ETag()
	opaque := etag[1 : len(etag)-1]
	lastModified := first.Header().Get("Last-Modified")
	modified, err := http.ParseTime(lastModified)
	if err != nil || time.Since(modified) > time.Hour || time.Until(modified) > time.Second {
		t.Fatalf("Last-Modified %q (%v): want when the document was made", lastModified, err)
	}
	before := modified.Add(-time.Second).Format(http.TimeFormat)
	ok200 := http.Header{
		"Etag":           {etag},
		"Cache-Control":  {"public, max-age=300"},
		"Last-Modified":  {lastModified},
		"Content-Type":   {"application/json"},
		"Content-Length": {strconv.Itoa(len(body))},
	}
	notModified := http.Header{"Etag": {etag}, "Cache-Control": {"public, max-age=300"}, "Last-Modified": {lastModified}}

	tests := []struct {
		name     string
		method   string
		inm      []string // If-None-Match field lines
		ims      string   // If-Modified-Since
		status   int
		header   http.Header
		withBody bool
	}{
		{"GET", "GET", nil, "", 200, ok200, true},
		{"HEAD", "HEAD", nil, "", 200, ok200, false},
		{"exact", "GET", []string{etag}, "", 304, notModified, false},
		{"exact on HEAD", "HEAD", []string{etag}, "", 304, notModified, false},
		{"weak matches (weak comparison)", "GET", []string{"W/" + etag}, "", 304, notModified, false},
		{"star", "GET", []string{"*"}, "", 304, notModified, false},
		{"in a list", "GET", []string{`"old", W/"older",` + etag}, "", 304, notModified, false},
		{"list with odd spacing", "GET", []string{" ,\t\"old\" ,, " + etag + " "}, "", 304, notModified, false},
		{"in a second field line", "GET", []string{`"old"`, etag}, "", 304, notModified, false},
		{"other tags", "GET", []string{`"old", W/"older"`}, "", 200, ok200, true},
		{"unquoted is not a tag", "GET", []string{opaque}, "", 200, ok200, true},
		{"prefix of the tag", "GET", []string{`"` + opaque[:10] + `"`}, "", 200, ok200, true},
		{"lower-case w/ is not weak", "GET", []string{"w/" + etag}, "", 200, ok200, true},
		{"malformed member ends the list", "GET", []string{`"old" junk, ` + etag}, "", 200, ok200, true},
		{"unterminated", "GET", []string{`"` + opaque}, "", 200, ok200, true},
		{"empty", "GET", []string{""}, "", 200, ok200, true},
		{"modified since: not", "GET", nil, lastModified, 304, notModified, false},
		{"modified since: yes", "GET", nil, before, 200, ok200, true},
		{"If-None-Match wins over If-Modified-Since", "GET", []string{`"old"`}, lastModified, 200, ok200, true},
		{"a date that is not one", "GET", nil, "yesterday", 200, ok200, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.inm != nil {
				h["If-None-Match"] = tt.inm
			}
			if tt.ims != "" {
				h.Set("If-Modified-Since", tt.ims)
			}
			w := serve(d, tt.method, h)
			if w.Code != tt.status {
				t.Errorf("status %d, want %d", w.Code, tt.status)
			}
			if !reflect.DeepEqual(w.Header(), tt.header) {
				t.Errorf("header %v\nwant %v", w.Header(), tt.header)
			}
			if got := w.Body.Bytes(); tt.withBody != (len(got) > 0) || (tt.withBody && !bytes.Equal(got, body)) {
				t.Errorf("body %q (want body: %v)", got, tt.withBody)
			}
		})
	}
}

func TestServeHTTPOtherMethods(t *testing.T) {
	d := newDocument(t)
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS"} {
		w := serve(d, m, nil)
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: %d Allow %q, want 405 Allow \"GET, HEAD\"", m, w.Code, w.Header().Get("Allow"))
		}
		if w.Header().Get("Etag") != "" || bytes.Contains(w.Body.Bytes(), []byte(`"name"`)) {
			t.Errorf("%s: the 405 carries the card", m)
		}
	}
}

func TestServeHTTPBytesStable(t *testing.T) {
	d := newDocument(t)
	first := serve(d, http.MethodGet, nil)
	for range 3 {
		w := serve(d, http.MethodGet, nil)
		if !bytes.Equal(w.Body.Bytes(), first.Body.Bytes()) || w.Header().Get("Etag") != d.ETag() {
			t.Fatalf("bytes or ETag changed between calls")
		}
	}
	// Another document of the same card serves the same bytes.
	if w := serve(newDocument(t), http.MethodGet, nil); !bytes.Equal(w.Body.Bytes(), first.Body.Bytes()) {
		t.Errorf("two documents of one card differ:\n%s\n%s", w.Body.Bytes(), first.Body.Bytes())
	}
}

// Response-header rewriters (Caddy's `header` replace) edit value slices in
// place; one response's edits must not reach the next.
func TestServeHTTPHeadersNotShared(t *testing.T) {
	d := newDocument(t)
	w := serve(d, http.MethodGet, nil)
	for _, vals := range w.Header() {
		for i := range vals {
			vals[i] = "rewritten"
		}
	}
	w = serve(d, http.MethodGet, nil)
	if w.Header().Get("Cache-Control") != "public, max-age=300" || w.Header().Get("Etag") != d.ETag() {
		t.Errorf("an earlier response's rewrite leaked: %v", w.Header())
	}
}

func TestDocumentCardParsesBack(t *testing.T) {
	card, err := cardgen.Build(fullConfig())
	if err != nil {
		t.Fatal(err)
	}
	d, err := cardgen.NewDocument(card)
	if err != nil {
		t.Fatal(err)
	}
	body := serve(d, http.MethodGet, nil).Body.Bytes()
	if !json.Valid(body) {
		t.Fatalf("not JSON: %s", body)
	}
	back, err := a2atest.UnmarshalAgentCard(body)
	if err != nil {
		t.Fatalf("UnmarshalAgentCard: %v\n%s", err, body)
	}
	if !reflect.DeepEqual(back, d.Card()) {
		t.Errorf("the served card parses back differently:\n got %+v\nwant %+v", back, d.Card())
	}

	// What a 1.0 client reads first, and what a 0.3 client reads.
	var wire map[string]any
	if err := json.Unmarshal(body, &wire); err != nil {
		t.Fatal(err)
	}
	wantIface := []any{
		map[string]any{"url": "https://agent.example.com/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
		map[string]any{"url": "https://agent.example.com/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
	}
	if !reflect.DeepEqual(wire["supportedInterfaces"], wantIface) {
		t.Errorf("supportedInterfaces %v, want %v", wire["supportedInterfaces"], wantIface)
	}
	if wire["url"] != "https://agent.example.com/a2a" {
		t.Errorf("0.3 url %v", wire["url"])
	}
	caps, _ := wire["capabilities"].(map[string]any)
	if caps["streaming"] != true || caps["pushNotifications"] != false {
		t.Errorf("capabilities %v", caps)
	}
}

func TestDocumentCard(t *testing.T) {
	card, _ := cardgen.Build(fullConfig())
	d, err := cardgen.NewDocument(card)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.Card(), card) {
		t.Errorf("Card() %+v, want %+v", d.Card(), card)
	}
}

func TestWithMaxAge(t *testing.T) {
	tests := []struct {
		maxAge time.Duration
		want   string
	}{
		{0, "public, max-age=0"},
		{90*time.Second + 500*time.Millisecond, "public, max-age=90"},
		{24 * time.Hour, "public, max-age=86400"},
	}
	for _, tt := range tests {
		d := newDocument(t, cardgen.WithMaxAge(tt.maxAge))
		for _, h := range []http.Header{nil, {"If-None-Match": {d.ETag()}}} {
			if got := serve(d, http.MethodGet, h).Header().Get("Cache-Control"); got != tt.want {
				t.Errorf("WithMaxAge(%s): Cache-Control %q, want %q", tt.maxAge, got, tt.want)
			}
		}
	}
	card, _ := cardgen.Build(fullConfig())
	if _, err := cardgen.NewDocument(card, cardgen.WithMaxAge(-time.Second)); err == nil {
		t.Error("a negative max-age was accepted")
	}
}

func TestNewDocumentNilCard(t *testing.T) {
	if _, err := cardgen.NewDocument(nil); err == nil {
		t.Error("NewDocument(nil) succeeded")
	}
}

// discard is the least a ResponseWriter can be, so that the benchmarks
// count the handler's own allocations. net/http makes a fresh Header map per
// request; clearing one map stands in for that.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

func benchmarkServe(b *testing.B, method string, header http.Header) {
	d := newDocument(b)
	r := httptest.NewRequest(method, "/.well-known/agent-card.json", nil)
	for k, v := range header {
		r.Header[k] = v
	}
	w := &discard{h: make(http.Header)}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		d.ServeHTTP(w, r)
	}
}

func BenchmarkServeHTTP(b *testing.B) {
	etag := newDocument(b).ETag()
	b.Run("GET", func(b *testing.B) { benchmarkServe(b, http.MethodGet, nil) })
	b.Run("HEAD", func(b *testing.B) { benchmarkServe(b, http.MethodHead, nil) })
	b.Run("304", func(b *testing.B) {
		benchmarkServe(b, http.MethodGet, http.Header{"If-None-Match": {`"a", W/"b", ` + etag}})
	})
	b.Run("GET-stale-tag", func(b *testing.B) {
		benchmarkServe(b, http.MethodGet, http.Header{"If-None-Match": {`"a", W/"b"`}})
	})
}
