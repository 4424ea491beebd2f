package mcp

import (
	"net/http"
	"strings"
	"sync"
	"time"
)

// heartbeatComment is the SSE comment an idle stream gets, as A2A's
// streams get theirs.
var heartbeatComment = []byte(": keep-alive\n\n")

// deadlineWriter writes the SDK's answers and events each within the
// write timeout, as the other bindings write theirs, notes the status of
// an answer the SDK refuses (an HTTP error) for the call's report, and gives an SSE
// answer (a call's stream, a session's standalone stream) a comment every
// heartbeat interval, as A2A's streams get, so that proxies and clients
// keep it open while a call runs or nothing happens.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	b  *binding
	in *inbound
	// mu serializes the SDK's writes and the heartbeats; beat is the
	// heartbeats' timer once the answer is a stream, and ended stops them
	// as the request ends.
	mu      sync.Mutex
	started bool
	beat    *time.Timer
	ended   bool
}

func (d *deadlineWriter) WriteHeader(status int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.in.answered(status)
	d.start(status)
	d.ResponseWriter.WriteHeader(status)
}

func (d *deadlineWriter) Write(p []byte) (n int, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.start(http.StatusOK)
	err = d.b.h.WriteWithin(d.rc, func() error {
		n, err = d.ResponseWriter.Write(p)
		return err
	})
	return n, err
}

func (d *deadlineWriter) Flush() {
	d.mu.Lock()
	defer d.mu.Unlock()
	_ = d.b.h.WriteWithin(d.rc, d.rc.Flush)
}

// start notes the answer's status as its header goes out (d.mu held), and
// starts the heartbeats when it is a stream.
func (d *deadlineWriter) start(status int) {
	if d.started {
		return
	}
	d.started = true
	if status == http.StatusOK && strings.HasPrefix(d.Header().Get("Content-Type"), "text/event-stream") {
		d.beat = time.AfterFunc(d.b.heartbeat, d.heartbeat)
	}
}

// heartbeat writes an SSE comment, and the next one after the interval
// unless the write failed (the stream is broken: the SDK finds out) or the
// request ended.
func (d *deadlineWriter) heartbeat() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ended {
		return
	}
	err := d.b.h.WriteWithin(d.rc, func() error {
		if _, err := d.ResponseWriter.Write(heartbeatComment); err != nil {
			return err
		}
		return d.rc.Flush()
	})
	if err == nil {
		d.beat.Reset(d.b.heartbeat)
	}
}

// end stops the heartbeats: the handler is returning, after which nothing
// may write.
func (d *deadlineWriter) end() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ended = true
	if d.beat != nil {
		d.beat.Stop()
	}
}

func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }
