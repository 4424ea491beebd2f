package mapping_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/mapping"
)

// countingTransport records which skill sent each attempt, and whether the
// attempt carried the run's context.
type countingTransport struct {
	skill string
	next  http.RoundTripper
	mu    *sync.Mutex
	seen  *[]string
}

type runKey struct{}

func (c countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	*c.seen = append(*c.seen, c.skill+":"+req.Context().Value(runKey{}).(string))
	c.mu.Unlock()
	return c.next.RoundTrip(req)
}

// Every attempt of every upstream call passes through the wrapper made for
// its skill, once at load, with the context the run was given.
func TestWrapTransportSeesEveryAttempt(t *testing.T) {
	var calls atomic.Int32
	srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	})
	var (
		mu      sync.Mutex
		seen    []string
		wrapped []string
	)
	s := load(t, `
upstream:
  url: http://placeholder
skills:
  - id: flaky
    description: d
    request:
      path: /r
      retry: {attempts: 2, backoff: 1ms, statuses: [503]}
  - id: other
    description: d
    request:
      path: /o
`, srv.URL, mapping.Options{WrapTransport: func(skill string, rt http.RoundTripper) http.RoundTripper {
		wrapped = append(wrapped, skill)
		return countingTransport{skill: skill, next: rt, mu: &mu, seen: &seen}
	}})
	if len(wrapped) != 2 || wrapped[0] != "flaky" || wrapped[1] != "other" {
		t.Fatalf("wrapped at load: %v, want [flaky other]", wrapped)
	}
	msg := message("flaky", map[string]any{}, "")
	sk, serr := s.Select(msg)
	if serr != nil {
		t.Fatal(serr)
	}
	ctx := context.WithValue(context.Background(), runKey{}, "run-1")
	if out := sk.Run(ctx, mapping.Call{Message: msg, TaskID: "t", ContextID: "c"}, nil); out.Err != nil {
		t.Fatal(out.Err)
	}
	if len(seen) != 2 || seen[0] != "flaky:run-1" || seen[1] != "flaky:run-1" {
		t.Fatalf("attempts seen: %v, want two of flaky with the run's context", seen)
	}
}
