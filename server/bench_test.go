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
	"github.com/caddy-a2a/caddy-a2a/server"
)

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
	w := &discardWriter{HeaderMap: http.Header{}}
	id := body[bytes.Index(body, []byte("m-0000000000000000"))+2:][:16]
	b.ReportAllocs()
	for b.Loop() {
		newMessageNumber(id)
		reader.Reset(body)
		req.Body = io.NopCloser(reader)
		clear(w.HeaderMap)
		h.ServeHTTP(w, req)
		if w.Status != http.StatusOK {
			b.Fatalf("status %d", w.Status)
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
