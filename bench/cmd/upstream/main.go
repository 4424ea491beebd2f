// Command upstream is the REST API every benchmark contender calls: one small
// Go HTTP server on loopback.
//
//	GET  /item     a fixed JSON body of exactly 1,024 bytes (the throughput scenarios)
//	GET  /small    a fixed JSON body of a few bytes (the task-store scenario)
//	GET  /hold     answers only when /release is called (or after -hold-max),
//	               so a task stays working while streams subscribe to it
//	POST /release  answers every waiting /hold at once
//	GET  /stats    {"holding": n}: how many /hold requests are waiting
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/caddy-a2a/caddy-a2a/bench/internal/fixture"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback)")
	holdMax := flag.Duration("hold-max", 5*time.Minute, "longest a /hold request waits for /release")
	flag.Parse()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("upstream: %v", err)
	}
	// The benchmark reads the port from the first line of stdout.
	fmt.Println(ln.Addr().String())

	u := &upstream{holdMax: *holdMax}
	gate := make(chan struct{})
	u.gate.Store(&gate)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /item", fixed(fixture.Item()))
	mux.HandleFunc("GET /small", fixed(fixture.Small()))
	mux.HandleFunc("GET /hold", u.hold)
	mux.HandleFunc("POST /release", u.release)
	mux.HandleFunc("GET /stats", u.stats)

	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		log.Fatalf("upstream: %v", err)
	}
}

// fixed answers body with a precomputed Content-Length, as a cheap REST API would.
func fixed(body []byte) http.HandlerFunc {
	length := strconv.Itoa(len(body))
	return func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		h["Content-Length"] = []string{length}
		w.Write(body)
	}
}

// upstream holds /hold calls until /release. The holding calls share no
// lock, so that releasing thousands of them at once measures the HTTP
// server, not contention in this one.
type upstream struct {
	holdMax   time.Duration
	gate      atomic.Pointer[chan struct{}] // closed by /release, then replaced
	releaseMu sync.Mutex
	holding   atomic.Int64
}

func (u *upstream) hold(w http.ResponseWriter, r *http.Request) {
	gate := *u.gate.Load()
	u.holding.Add(1)
	timer := time.NewTimer(u.holdMax)
	select {
	case <-gate:
	case <-timer.C:
	case <-r.Context().Done():
	}
	timer.Stop()
	u.holding.Add(-1)
	if r.Context().Err() == nil {
		small(w, r)
	}
}

var small = fixed(fixture.Small())

func (u *upstream) release(w http.ResponseWriter, r *http.Request) {
	u.releaseMu.Lock()
	next := make(chan struct{})
	close(*u.gate.Swap(&next))
	u.releaseMu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (u *upstream) stats(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]int64{"holding": u.holding.Load()})
}
