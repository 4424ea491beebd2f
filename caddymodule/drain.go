package caddymodule

import (
	"context"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
)

// DefaultDrainTimeout is how long running tasks may take to finish when
// Caddy stops, unless drain_timeout says otherwise.
const DefaultDrainTimeout = 20 * time.Second

// drainOnExit drains the task manager when the server this handler serves
// in shuts down because the process exits (SIGTERM, SIGINT, caddy stop),
// and only then: on a reload the old server shuts down too, but the next
// config takes the manager over with its tasks and streams.
//
// The server's shutdown starts after Caddy's shutdown_delay, when one is
// set: until then the agent serves as usual while readiness already says
// no (see Health), which is what the delay is for.
func (h *Handler) drainOnExit(ctx caddy.Context) {
	srv, ok := ctx.Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	if !ok {
		return
	}
	manager, logger := h.shared.manager, h.logger
	timeout := time.Duration(h.DrainTimeout)
	if timeout == 0 {
		timeout = DefaultDrainTimeout
	}
	// Go's HTTP server runs this on a goroutine of its own, as its shutdown
	// begins, and waits for the requests under way: the drain ends them.
	srv.RegisterOnShutdown(func() {
		if !caddy.Exiting() {
			return
		}
		manager.BeginDrain()
		logger.Info("draining: new tasks are refused; running tasks may finish until the deadline",
			zap.Duration("drain_timeout", timeout), zap.Int("open_streams", manager.OpenStreams()))
		deadline, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		manager.Drain(deadline)
		logger.Info("drained: tasks still running were failed and stored, and every stream was ended")
	})
}
