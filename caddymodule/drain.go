package caddymodule

import (
	"context"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
)

// DefaultDrainTimeout is how long running tasks may take to finish when
// Caddy stops, unless drain_timeout says otherwise.
const DefaultDrainTimeout = 20 * time.Second

// drainOnExit makes h drain its task manager when the process exits
// (SIGTERM, SIGINT, caddy stop), and only then: on a reload the old server
// shuts down too, but the next config takes the manager over with its
// tasks and streams.
//
// The drain starts as the server's shutdown begins, so that streams and
// blocking calls end by the deadline and the shutdown can complete (after
// Caddy's shutdown_delay, when one is set: until then the agent serves as
// usual while readiness already says no, which is what the delay is for).
// Cleanup then waits for it, or runs it when the server had nothing to
// shut down: tasks that run without a connection (returnImmediately) get
// their time too, and the process exits only once they are stored.
func (h *Handler) drainOnExit(ctx caddy.Context) {
	manager, logger, timeout := h.shared.manager, h.logger, h.drainTimeout()
	h.drain = sync.OnceFunc(func() {
		manager.BeginDrain()
		logger.Info("draining: new tasks are refused; running tasks may finish until the deadline",
			zap.Duration("drain_timeout", timeout), zap.Int("open_streams", manager.OpenStreams()))
		deadline, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		manager.Drain(deadline)
		logger.Info("drained: tasks still running were failed and stored, and every stream was ended")
	})
	if srv, ok := ctx.Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server); ok {
		drain := h.drain
		// Go's HTTP server runs this on a goroutine of its own as its
		// shutdown begins, then waits for the requests under way.
		srv.RegisterOnShutdown(func() {
			if caddy.Exiting() {
				drain()
			}
		})
	}
}

// drainTimeout is the configured drain timeout, or its default.
func (h *Handler) drainTimeout() time.Duration {
	if h.DrainTimeout > 0 {
		return time.Duration(h.DrainTimeout)
	}
	return DefaultDrainTimeout
}
