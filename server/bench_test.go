package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

const benchSkills = `
upstream:
  url: http://upstream.invalid
  headers:
    X-Api-Key: k3y
skills:
  - id: weather
    name: Weather
    description: Current weather for a city.
    request:
      path: /weather/{args.city}
  - id: user
    name: User
    description: A user by id.
    request:
      path: /users/{args.id}
`

// weatherBody is a typical small JSON answer of the upstream.
const weatherBody = `{"city":"Paris","temperatureC":18.5,"conditions":"partly cloudy","humidity":0.62,"wind":{"speedKph":14,"direction":"WSW"}}`

// answering is an upstream that answers every request in memory with the
// JSON body, so that a benchmark measures the module's own work and not the
// network.
type answering string

func (body answering) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, ContentLength: int64(len(body)), Request: req,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(string(body)))}, nil
}

// discardWriter is a ResponseWriter that keeps nothing, reusing its header
// map, so the figures are the handler's and not a recorder's.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }

// Deadlines and flushing, as the HTTP server's own writer supports them.
func (w *discardWriter) SetReadDeadline(time.Time) error  { return nil }
func (w *discardWriter) SetWriteDeadline(time.Time) error { return nil }
func (w *discardWriter) FlushError() error                { return nil }

// BenchmarkSendMessage is one blocking SendMessage: decode, select the
// skill, create the task, build and send the upstream request (answered in
// memory), map the answer to a completed task, encode it.
func BenchmarkSendMessage(b *testing.B) {
	h := memoryHandler(b, "bench.yaml", benchSkills, answering(weatherBody), nil)
	// The same handler with an observer that does nothing: what observing
	// costs the handler itself (the observer's own work is caddymodule's
	// BenchmarkObserver).
	observed := memoryHandler(b, "bench.yaml", benchSkills, answering(weatherBody), func(cfg *server.Config) { cfg.Observer = nopObserver{} })
	for _, tc := range []struct {
		name, version, body string
		h                   *server.Handler
	}{
		{"1.0", "1.0", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-0000000000000000","role":"ROLE_USER","metadata":{"skill":"weather"},"parts":[{"data":{"city":"Paris"}}]}}}`, h},
		{"0.3", "", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m-0000000000000000","role":"user","metadata":{"skill":"weather"},"parts":[{"kind":"data","data":{"city":"Paris"}}]}}}`, h},
		{"1.0-observed", "1.0", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-0000000000000000","role":"ROLE_USER","metadata":{"skill":"weather"},"parts":[{"data":{"city":"Paris"}}]}}}`, observed},
	} {
		b.Run(tc.name, func(b *testing.B) { benchSend(b, tc.h, tc.version, tc.body) })
	}
}

// memoryHandler serves the skills src (named name), the upstream answered
// in memory by upstream, with the configuration tune makes (nil: none).
func memoryHandler(b testing.TB, name, src string, upstream http.RoundTripper, tune func(*server.Config)) *server.Handler {
	skills, err := mapping.Parse(name, []byte(src), mapping.Options{Transport: upstream})
	if err != nil {
		b.Fatal(err)
	}
	manager := tasks.NewManager(tasks.Options{MaxTasks: 1000})
	b.Cleanup(manager.Close)
	card, err := cardgen.Build(cardgen.Config{Name: "Bench", Description: "Bench", Version: "1", URL: "http://localhost/"})
	if err != nil {
		b.Fatal(err)
	}
	doc, err := cardgen.NewDocument(card)
	if err != nil {
		b.Fatal(err)
	}
	cfg := server.Config{Skills: skills, Tasks: manager, Card: doc}
	if tune != nil {
		tune(&cfg)
	}
	h, err := server.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return h
}

// benchSend measures h answering the JSON-RPC request body (in version,
// when set), whose message id is m-0000000000000000: a new one each time,
// as one sent again is answered from the store without running the skill.
func benchSend(b *testing.B, h http.Handler, version, request string) {
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	req.Header.Set("Content-Type", "application/json")
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	body := []byte(request)
	// The benchmark must measure a run that completes.
	rec := httptest.NewRecorder()
	req.Body = io.NopCloser(bytes.NewReader(body))
	h.ServeHTTP(rec, req)
	if !strings.Contains(strings.ToLower(rec.Body.String()), "completed") || !strings.Contains(rec.Body.String(), "partly cloudy") {
		b.Fatalf("the benchmarked request does not complete with the upstream's data: %s", rec.Body)
	}
	reader := bytes.NewReader(body)
	w := &discardWriter{header: http.Header{}}
	id := body[bytes.Index(body, []byte("m-0000000000000000"))+2:][:16]
	b.ReportAllocs()
	for b.Loop() {
		newMessageNumber(id)
		reader.Reset(body)
		req.Body = io.NopCloser(reader)
		clear(w.header)
		h.ServeHTTP(w, req)
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}
}

// benchMessages numbers the benchmarks' messages.
var benchMessages atomic.Uint64

// newMessageNumber writes a new number over id, in hexadecimal, in place.
func newMessageNumber(id []byte) {
	var digits [16]byte
	n := strconv.AppendUint(digits[:0], benchMessages.Add(1), 16)
	copy(id, "0000000000000000"[:len(id)-len(n)])
	copy(id[len(id)-len(n):], n)
}

// nopObserver is a server.Observer that does nothing.
type nopObserver struct{}

func (nopObserver) StartMethod(r *http.Request, _ server.Call) context.Context { return r.Context() }
func (nopObserver) EndRequest(context.Context, server.Call)                    {}
func (nopObserver) Detach(_, run context.Context) context.Context              { return run }
func (nopObserver) TaskEnded(string, a2a.TaskState)                            {}
func (nopObserver) TaskRun(string, time.Duration)                              {}
func (nopObserver) AuthFailure(*authn.Failure)                                 {}
func (nopObserver) Annotate(context.Context, string, string)                   {}
