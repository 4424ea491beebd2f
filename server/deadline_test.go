package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/server"
)

// stalledClient is a connection whose client reads nothing: a write blocks
// until the write deadline passes, and for ever without one.
type stalledClient struct {
	header http.Header
	mu     sync.Mutex
	at     time.Time // the write deadline; zero: none
}

func (w *stalledClient) Header() http.Header { return w.header }
func (w *stalledClient) WriteHeader(int)     {}

func (w *stalledClient) SetWriteDeadline(t time.Time) error {
	w.mu.Lock()
	w.at = t
	w.mu.Unlock()
	return nil
}

func (w *stalledClient) Write([]byte) (int, error) {
	w.mu.Lock()
	at := w.at
	w.mu.Unlock()
	if at.IsZero() {
		select {} // the client never reads: only a deadline ends this
	}
	time.Sleep(time.Until(at)) // the stalled client, not synchronization
	return 0, os.ErrDeadlineExceeded
}

// An answer, JSON or streamed, to a client that reads nothing is given up
// at the write timeout instead of holding its goroutine and memory.
func TestWriteTimeoutDropsStalledClients(t *testing.T) {
	a := newAgent(t, func(c *server.Config) { c.WriteTimeout = 50 * time.Millisecond })
	cfg := a.Config
	a.Call("1.0", "SendMessage", map[string]any{"message": message("1.0", "weather", map[string]any{"city": "Paris"})})
	h, err := server.New(cfg) // the agent's skills and tasks, called directly
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{
		rpcBody("GetTask", map[string]any{"id": "unknown"}),
		rpcBody("ListTasks", map[string]any{}),
		rpcBody("SendStreamingMessage", map[string]any{"message": message("1.0", "weather", map[string]any{"city": "Tokyo"})}),
	} {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("A2A-Version", "1.0")
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() { _ = recover() }() // an aborted answer panics with http.ErrAbortHandler
			h.ServeHTTP(&stalledClient{header: http.Header{}}, r)
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second): // a guard: without the deadline the write never ends
			t.Fatalf("%.40s: the answer to a client that reads nothing was not given up", body)
		}
	}
}

// A stream that waits longer than the write timeout for its next event
// is not cut: the deadline covers each write, not the wait between them.
// Over HTTP/2 a deadline left set resets the stream when it passes.
func TestStreamOutlivesWriteTimeoutOverHTTP2(t *testing.T) {
	a := newAgent(t, func(c *server.Config) {
		c.WriteTimeout = 100 * time.Millisecond
		c.HeartbeatInterval = time.Minute
	})
	client := &http.Client{Transport: &http.Transport{Protocols: new(http.Protocols)}}
	client.Transport.(*http.Transport).Protocols.SetUnencryptedHTTP2(true)
	a.HTTP = client
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, events := a.Stream(ctx, "1.0", "SendStreamingMessage",
		map[string]any{"message": message("1.0", "slow", map[string]any{"seconds": 1})})
	if resp.ProtoMajor != 2 {
		t.Fatalf("served over %s, want HTTP/2", resp.Proto)
	}
	var last map[string]any
	for ev := range events {
		last = ev
	}
	result, _ := last["result"].(map[string]any)
	update, _ := result["statusUpdate"].(map[string]any)
	if status, _ := update["status"].(map[string]any); status["state"] != "TASK_STATE_COMPLETED" {
		t.Fatalf("last event %v, want the completed status a second after the write timeout", last)
	}
}
