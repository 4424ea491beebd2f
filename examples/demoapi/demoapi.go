// Package demoapi is a small REST API for trying the a2a module out and for
// testing it end to end: weather, users (and their avatars), orders,
// search, feedback (a form), documents (a multipart upload), a flaky
// endpoint that fails once, a slow endpoint that records cancellations,
// reports made by jobs to poll, a count streamed as server-sent events, a
// few small files (an image, a sound, a text and a JSON document), a
// failing endpoint and an echo endpoint. Every answer is JSON except the
// avatars (PNG), the count (SSE) and the files. Every endpoint except /echo
// and /stats requires the X-Api-Key header.
package demoapi

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultAPIKey is the key New uses when Options.APIKey is empty.
const DefaultAPIKey = "demo-secret"

// MaxSlowSeconds bounds GET /slow?seconds=N.
const MaxSlowSeconds = 60

// maxBodyBytes bounds request bodies (POST /orders, /echo).
const maxBodyBytes = 1 << 20

// Options configures the API.
type Options struct {
	// APIKey is the value the X-Api-Key header must carry; empty means
	// DefaultAPIKey.
	APIKey string
}

// Stats counts what GET /slow saw. A canceled request is one whose context
// ended (the client went away or canceled it) before the wait was over.
type Stats struct {
	SlowStarted  int64 `json:"slowStarted"`
	SlowCanceled int64 `json:"slowCanceled"`
}

// API is the demo API; it is an http.Handler.
type API struct {
	mux      *http.ServeMux
	key      []byte
	orderSeq atomic.Int64

	feedbackSeq, documentSeq, reportSeq atomic.Int64

	mu    sync.Mutex
	stats Stats
	// flaky counts the calls of GET /flaky/{key}, per key.
	flaky map[string]int
	// reports holds each report job, by id.
	reports map[string]reportJob
	// changed is closed and replaced whenever stats change, so WaitStats
	// can wake without polling.
	changed chan struct{}
}

// New returns the demo API.
func New(opts Options) *API {
	key := opts.APIKey
	if key == "" {
		key = DefaultAPIKey
	}
	a := &API{mux: http.NewServeMux(), key: []byte(key), changed: make(chan struct{}), flaky: map[string]int{},
		reports: map[string]reportJob{}}

	a.route("GET", "/weather/{city}", a.requireKey(a.weather))
	a.route("GET", "/users/{id}", a.requireKey(a.user))
	a.route("GET", "/users/{id}/avatar", a.requireKey(a.avatar))
	a.route("POST", "/orders", a.requireKey(a.placeOrder))
	a.route("POST", "/feedback", a.requireKey(a.feedback))
	a.route("POST", "/documents", a.requireKey(a.document))
	a.route("GET", "/flaky/{key}", a.requireKey(a.flakyHandler))
	a.route("GET", "/search", a.requireKey(a.search))
	a.route("GET", "/slow", a.requireKey(a.slow))
	a.route("GET", "/fail", a.requireKey(a.fail))
	a.route("GET", "/stats", a.statsHandler)
	a.route("POST", "/reports", a.requireKey(a.startReport))
	a.mux.HandleFunc("GET /reports/{id}", a.requireKey(a.report))
	a.mux.HandleFunc("DELETE /reports/{id}", a.requireKey(a.cancelReport))
	a.mux.HandleFunc("/reports/{id}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", "GET, HEAD, DELETE")
		writeError(w, http.StatusMethodNotAllowed, "method not allowed")
	})
	a.route("GET", "/count", a.requireKey(a.countUp))
	a.route("GET", "/files/{name}", a.requireKey(a.fileHandler))
	// /echo answers every method, so that callers can see the body they sent.
	a.mux.HandleFunc("/echo", a.echo)
	a.mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "not found")
	})
	return a
}

// route registers h for method and path, and a JSON 405 for other methods
// (ServeMux's own 405 and 404 answers are plain text).
func (a *API) route(method, path string, h http.HandlerFunc) {
	a.mux.HandleFunc(method+" "+path, h)
	allow := method
	if method == http.MethodGet {
		allow = "GET, HEAD"
	}
	a.mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, "method not allowed")
	})
}

func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// Stats returns the current counters.
func (a *API) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

// WaitStats blocks until cond holds for the counters, or ctx ends, and
// returns the counters it last saw. Tests use it to learn that the upstream
// saw a request, or its cancellation, without sleeping.
func (a *API) WaitStats(ctx context.Context, cond func(Stats) bool) (Stats, error) {
	for {
		a.mu.Lock()
		s, changed := a.stats, a.changed
		a.mu.Unlock()
		if cond(s) {
			return s, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return s, context.Cause(ctx)
		}
	}
}

func (a *API) count(f func(*Stats)) {
	a.mu.Lock()
	f(&a.stats)
	close(a.changed)
	a.changed = make(chan struct{})
	a.mu.Unlock()
}

func (a *API) requireKey(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("X-Api-Key")), a.key) != 1 {
			writeError(w, http.StatusUnauthorized, "missing or wrong API key")
			return
		}
		h(w, r)
	}
}

type weatherReport struct {
	City         string  `json:"city"`
	TemperatureC float64 `json:"temperatureC"`
	Conditions   string  `json:"conditions"`
}

// cities is keyed by lower-case name; "new york" and "são paulo" exercise
// path escaping.
var cities = map[string]weatherReport{
	"london":    {City: "London", TemperatureC: 12.5, Conditions: "drizzle"},
	"paris":     {City: "Paris", TemperatureC: 17, Conditions: "sunny"},
	"tokyo":     {City: "Tokyo", TemperatureC: 22.3, Conditions: "cloudy"},
	"new york":  {City: "New York", TemperatureC: 9.8, Conditions: "windy"},
	"são paulo": {City: "São Paulo", TemperatureC: 26.1, Conditions: "thunderstorms"},
}

func (a *API) weather(w http.ResponseWriter, r *http.Request) {
	rep, ok := cities[strings.ToLower(r.PathValue("city"))]
	if !ok {
		writeError(w, http.StatusNotFound, "unknown city")
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

type user struct {
	ID    int    `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email"`
}

var users = map[string]user{
	"1": {ID: 1, Name: "Ada Lovelace", Email: "ada@example.com"},
	"2": {ID: 2, Name: "Alan Turing", Email: "alan@example.com"},
	"3": {ID: 3, Name: "Grace Hopper", Email: "grace@example.com"},
}

func (a *API) user(w http.ResponseWriter, r *http.Request) {
	u, ok := users[r.PathValue("id")]
	if !ok {
		writeError(w, http.StatusNotFound, "no such user")
		return
	}
	writeJSON(w, http.StatusOK, u)
}

type order struct {
	ID       string `json:"id"`
	Item     string `json:"item"`
	Quantity int    `json:"quantity"`
	Customer string `json:"customer,omitempty"`
	Status   string `json:"status"`
}

type validationError struct {
	Error  string            `json:"error"`
	Fields map[string]string `json:"fields"`
}

func (a *API) placeOrder(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Item     string `json:"item"`
		Quantity int    `json:"quantity"`
		Customer string `json:"customer"`
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "body too large")
		return
	}
	fields := map[string]string{}
	if err := json.Unmarshal(body, &in); err != nil {
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) || typeErr.Field == "" {
			writeError(w, http.StatusBadRequest, "body must be a JSON object")
			return
		}
		switch typeErr.Field {
		case "quantity":
			fields["quantity"] = "must be an integer"
		case "item":
			fields["item"] = "must be a string"
		}
	}
	if _, bad := fields["item"]; !bad && strings.TrimSpace(in.Item) == "" {
		fields["item"] = "is required"
	}
	if _, bad := fields["quantity"]; !bad && in.Quantity < 1 {
		fields["quantity"] = "must be at least 1"
	}
	if len(fields) > 0 {
		writeJSON(w, http.StatusUnprocessableEntity, validationError{Error: "validation failed", Fields: fields})
		return
	}
	id := "ord-" + strconv.FormatInt(a.orderSeq.Add(1), 10)
	writeJSON(w, http.StatusCreated, order{ID: id, Item: in.Item, Quantity: in.Quantity, Customer: in.Customer, Status: "placed"})
}

type searchResult struct {
	Title string `json:"title"`
	URL   string `json:"url"`
}

var corpus = []searchResult{
	{"Getting started with A2A", "https://docs.example.com/a2a/start"},
	{"A2A task lifecycle", "https://docs.example.com/a2a/tasks"},
	{"Streaming A2A events with SSE", "https://docs.example.com/a2a/streaming"},
	{"Agent Card reference", "https://docs.example.com/a2a/agent-card"},
	{"Caddy reverse proxy", "https://docs.example.com/caddy/reverse-proxy"},
	{"Caddy modules", "https://docs.example.com/caddy/modules"},
	{"Weather API guide", "https://docs.example.com/api/weather"},
	{"Orders API guide", "https://docs.example.com/api/orders"},
	{"Users API guide", "https://docs.example.com/api/users"},
	{"Search API guide", "https://docs.example.com/api/search"},
	{"API keys and authentication", "https://docs.example.com/api/auth"},
	{"Rate limits", "https://docs.example.com/api/limits"},
}

type searchResponse struct {
	Query   string         `json:"query"`
	Results []searchResult `json:"results"`
}

// search matches q case-insensitively against the titles of a fixed corpus.
func (a *API) search(w http.ResponseWriter, r *http.Request) {
	query := strings.TrimSpace(r.URL.Query().Get("q"))
	if query == "" {
		writeError(w, http.StatusBadRequest, "missing query parameter q")
		return
	}
	limit, ok := queryInt(w, r, "limit", 5, 50)
	if !ok {
		return
	}
	needle := strings.ToLower(query)
	results := []searchResult{}
	for _, doc := range corpus {
		if len(results) == limit {
			break
		}
		if strings.Contains(strings.ToLower(doc.Title), needle) {
			results = append(results, doc)
		}
	}
	writeJSON(w, http.StatusOK, searchResponse{Query: query, Results: results})
}

// slow waits ?seconds=N (fractions allowed, at most MaxSlowSeconds) unless
// the request's context ends first, which it counts as a cancellation.
func (a *API) slow(w http.ResponseWriter, r *http.Request) {
	secs, err := strconv.ParseFloat(r.URL.Query().Get("seconds"), 64)
	if err != nil || math.IsNaN(secs) || secs < 0 || secs > MaxSlowSeconds {
		writeError(w, http.StatusBadRequest, "seconds must be a number between 0 and 60")
		return
	}
	a.count(func(s *Stats) { s.SlowStarted++ })
	t := time.NewTimer(time.Duration(secs * float64(time.Second)))
	defer t.Stop()
	select {
	case <-t.C:
		writeJSON(w, http.StatusOK, struct {
			Waited float64 `json:"waited"`
		}{secs})
	case <-r.Context().Done():
		// Nobody is listening any more: count it and answer nothing.
		a.count(func(s *Stats) { s.SlowCanceled++ })
	}
}

func (a *API) statsHandler(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, a.Stats())
}

func (a *API) fail(w http.ResponseWriter, _ *http.Request) {
	writeError(w, http.StatusInternalServerError, "boom")
}

type echoResponse struct {
	Method  string              `json:"method"`
	Path    string              `json:"path"`
	Query   map[string][]string `json:"query"`
	Headers map[string][]string `json:"headers"`
	Body    string              `json:"body,omitempty"`
}

// echo answers with what it received, so tests can check the exact request
// an upstream saw (path escaping, query, headers, credentials, body).
func (a *API) echo(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "body too large")
		return
	}
	writeJSON(w, http.StatusOK, echoResponse{
		Method:  r.Method,
		Path:    r.URL.Path,
		Query:   r.URL.Query(),
		Headers: r.Header,
		Body:    string(body),
	})
}

// queryInt reads the query parameter name, an integer from 1 to max, def
// when absent; a bad value is answered 400, and ok is false.
func queryInt(w http.ResponseWriter, r *http.Request, name string, def, max int) (n int, ok bool) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > max {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%s must be an integer from 1 to %d", name, max))
		return 0, false
	}
	return n, true
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, struct {
		Error string `json:"error"`
	}{msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Every value written here is a plain struct or map of strings.
		panic("demoapi: encoding a response: " + err.Error())
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}
