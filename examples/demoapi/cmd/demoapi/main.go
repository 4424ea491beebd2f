// Command demoapi serves the demo REST API (package demoapi) until it gets
// SIGINT or SIGTERM, then drains in-flight requests.
//
//	demoapi [-addr 127.0.0.1:9090]
//
// The API key comes from the environment variable DEMO_API_KEY (default
// "demo-secret").
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
)

// drainTimeout bounds the graceful shutdown; requests still running after it
// (GET /slow waits up to a minute) are cut off.
const drainTimeout = 10 * time.Second

func main() {
	addr := flag.String("addr", "127.0.0.1:9090", "address to listen on")
	flag.Parse()
	if err := run(*addr); err != nil {
		log.Fatalf("demoapi: %v", err)
	}
}

func run(addr string) error {
	key := os.Getenv("DEMO_API_KEY")
	if key == "" {
		key = demoapi.DefaultAPIKey
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Listening before serving lets "-addr 127.0.0.1:0" report the port it got.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{
		Handler:           demoapi.New(demoapi.Options{APIKey: key}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	log.Printf("demoapi: listening on http://%s", ln.Addr())

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	stop() // a second signal kills the process at once

	log.Printf("demoapi: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		// Closing the connections cancels the requests' contexts.
		srv.Close()
		if !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("shutdown: %w", err)
		}
		log.Printf("demoapi: requests still running after %s were cut off", drainTimeout)
	}
	return nil
}
