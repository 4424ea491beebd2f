package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// A gRPC call that ends while grpc-go still waits for its request message
// never reaches the service's method; it is observed as what ended it, not
// as a success: the client canceling it, or its grpc-timeout passing.
func TestGRPCCallEndedBeforeItsMessage(t *testing.T) {
	for _, c := range []struct {
		name     string
		deadline string // grpc-timeout, or "" for a client that cancels
		want     int
	}{
		{"canceled", "", server.CodeCanceled},
		{"deadline", "100m", server.CodeDeadlineExceeded},
	} {
		t.Run(c.name, func(t *testing.T) {
			obs := make(observations, 64)
			a := newAgent(t, func(cfg *server.Config) { withGRPC(cfg); cfg.Observer = obs })
			body, never := io.Pipe() // the request message never comes
			defer never.Close()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost,
				a.URL+"/"+a2apb.A2AService_ServiceDesc.ServiceName+"/GetTask", body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/grpc")
			req.Header.Set("TE", "trailers")
			req.Header.Set("A2A-Version", "1.0")
			if c.deadline != "" {
				req.Header.Set("grpc-timeout", c.deadline)
			}
			h2c := &http.Transport{Protocols: new(http.Protocols)}
			h2c.Protocols.SetUnencryptedHTTP2(true)
			defer h2c.CloseIdleConnections()
			done := make(chan struct{})
			go func() {
				defer close(done)
				if resp, err := (&http.Client{Transport: h2c}).Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
			next := func() string {
				t.Helper()
				select {
				case got := <-obs:
					return got
				case <-time.After(10 * time.Second):
					t.Fatal("nothing observed within 10s")
				}
				return ""
			}
			if got := next(); got != "start GRPC GetTask 1.0" {
				t.Fatalf("observed %q first; want the call's start", got)
			}
			if c.deadline == "" {
				cancel()
			}
			<-done
			if got, want := next(), fmt.Sprintf("end GetTask 1.0 %d span=GetTask", c.want); got != want {
				t.Errorf("observed %q; want %q", got, want)
			}
		})
	}
}
