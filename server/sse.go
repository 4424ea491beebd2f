package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

var heartbeatComment = []byte(": keep-alive\n\n")

// sseWriter writes answers as SSE events. It holds no buffer between
// events: an open stream mostly waits, and thousands may be open.
type sseWriter struct {
	h  *Handler
	w  http.ResponseWriter
	rc *http.ResponseController
	c  *Exchange // its form writes the events
}

// startSSE starts a stream. Each write must finish within the write
// timeout: a client that stops reading is dropped instead of holding a
// goroutine for ever.
func (h *Handler) startSSE(w http.ResponseWriter, c *Exchange) *sseWriter {
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{h: h, w: w, rc: http.NewResponseController(w), c: c}
}

// event writes one answer and flushes it.
func (s *sseWriter) event(ev *a2a.StreamResponse) error {
	if err := s.put(ev); err != nil {
		return err
	}
	return s.flush()
}

// put writes one answer without flushing it, so that answers already
// queued behind it leave in the same write. One that cannot be encoded
// ends the stream with an error event, so the client is told rather than
// cut off.
func (s *sseWriter) put(ev *a2a.StreamResponse) error {
	buf := getBuffer()
	defer putBuffer(buf)
	out, err := s.c.form.appendResult(append((*buf)[:0], "data: "...), s.c, ev)
	if err != nil {
		if writeErr := s.error(a2a.InternalError("an update could not be encoded")); writeErr != nil {
			return writeErr
		}
		return fmt.Errorf("encoding a stream event: %w", err)
	}
	*buf = append(out, '\n', '\n')
	return s.write(*buf)
}

// error writes an error event, which ends the call, and flushes it.
func (s *sseWriter) error(e *a2a.Error) error {
	s.c.Code = e.Code
	buf := getBuffer()
	defer putBuffer(buf)
	*buf = append(s.c.form.appendError(append((*buf)[:0], s.c.form.errorEvent()...), s.c, 0, e), '\n', '\n')
	if err := s.write(*buf); err != nil {
		return err
	}
	return s.flush()
}

func (s *sseWriter) write(b []byte) error {
	return s.h.withWriteDeadline(s.rc, func() error {
		_, err := s.w.Write(b)
		return err
	})
}

func (s *sseWriter) flush() error { return s.h.withWriteDeadline(s.rc, s.rc.Flush) }

func (s *sseWriter) heartbeat() error {
	if err := s.write(heartbeatComment); err != nil {
		return err
	}
	return s.flush()
}

// end flushes what is left within the write timeout.
func (s *sseWriter) end() { _ = s.flush() }

// eventSink is where relay writes a stream's events: an SSE response, or
// a gRPC server stream.
type eventSink interface {
	// put writes one event, which may wait in a buffer until flush.
	put(ev *a2a.StreamResponse) error
	// event writes one event and flushes it.
	event(ev *a2a.StreamResponse) error
	flush() error
	// error ends the stream with a protocol error.
	error(e *a2a.Error) error
	// heartbeat tells an idle connection's proxies and client that the
	// stream is alive.
	heartbeat() error
}

// stream answers a streaming call c with SSE in c's form (see relay).
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, c *Exchange, first *a2a.StreamResponse, sub *tasks.Subscription) {
	s := h.startSSE(w, c)
	defer s.end()
	if err := h.relay(r.Context(), s, first, sub); err != nil {
		c.EndedBy(err)
	}
}

// relay sends first, then the subscription's events (none when sub is
// nil) until the task ends or is interrupted, the client goes away (ctx is
// done: relay returns ctx's error), or the client falls too far behind
// (see tasks.ErrSlowConsumer): then it gets an error and can resubscribe
// to pick up the current task.
//
// Events already queued when one arrives are written with it and flushed
// once.
func (h *Handler) relay(ctx context.Context, s eventSink, first *a2a.StreamResponse, sub *tasks.Subscription) error {
	if sub != nil {
		defer sub.Close()
	}
	if err := s.event(first); err != nil || sub == nil {
		return h.cut(ctx, err)
	}
	heartbeat := time.NewTicker(h.heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case ev, open := <-sub.Events():
			for {
				if !open {
					switch err := sub.Err(); {
					case errors.Is(err, tasks.ErrShutdown):
						h.endForShutdown(s, sub)
					case errors.Is(err, tasks.ErrSlowConsumer):
						h.logStreamEnd(s.error(a2a.InternalError("the stream fell behind the task's updates; subscribe again to resume")))
					case err != nil:
						h.logStreamEnd(s.error(a2a.InternalError("the stream was interrupted; subscribe again to resume")))
					}
					return nil
				}
				if err := s.put(&ev); err != nil {
					return h.cut(ctx, err)
				}
				select {
				case ev, open = <-sub.Events():
					continue
				default:
				}
				break
			}
			if err := s.flush(); err != nil {
				return h.cut(ctx, err)
			}
		case <-heartbeat.C:
			if err := s.heartbeat(); err != nil {
				return h.cut(ctx, err)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// cut ends a stream whose write failed with err (nil: none did): when the
// client went away (ctx is done) that is why, and cut returns ctx's error.
func (h *Handler) cut(ctx context.Context, err error) error {
	h.logStreamEnd(err)
	if err != nil {
		return ctx.Err()
	}
	return nil
}

// endForShutdown writes the last event of a stream the task manager ended
// because the agent is going away: the task's final status when it ended
// (the drain failed it), or an error that asks to subscribe again, which
// another replica serves.
func (h *Handler) endForShutdown(s eventSink, sub *tasks.Subscription) {
	if final := h.tasks.FinalStatus(sub); final != nil {
		h.logStreamEnd(s.event(final))
		return
	}
	h.logStreamEnd(s.error(tasks.ShuttingDown("subscribe again")))
}

func (h *Handler) logStreamEnd(err error) {
	if err != nil {
		h.log.Debug("stream ended early", zap.Error(err))
	}
}
