package server_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// TestBlockingSendEndsWithCaller: a blocking SendMessage, of any binding,
// stops waiting for its task when its request's context ends (the client
// hangs up, a gRPC deadline passes), and is observed so; the task runs on
// and can be fetched (spec 1.0 §3.5.2: a task's lifecycle is independent
// of any connection's).
func TestBlockingSendEndsWithCaller(t *testing.T) {
	obs := make(observations, 64)
	a := newAgent(t, func(c *server.Config) {
		c.Bindings, c.Observer = []server.NewBinding{server.GRPC(), server.HTTPJSON("/rest")}, obs
	})
	a.CancelOnCleanup()
	slow := map[string]any{"seconds": 30}
	answered := func(binding string, code int) []string {
		return []string{"start " + binding + " SendMessage 1.0", "annotate slow true", "detach span=SendMessage",
			fmt.Sprintf("end SendMessage 1.0 %d span=SendMessage", code)}
	}

	// hangUp sends req over HTTP/2 (h2c), where a request holds a stream
	// of a shared connection, and resets it once the upstream call has
	// started.
	h2c := &http.Transport{Protocols: new(http.Protocols)}
	h2c.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(h2c.CloseIdleConnections)
	hangUp := func(t *testing.T, path, body string) {
		t.Helper()
		before := a.API.Stats().SlowStarted
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		go func() {
			if resp, err := (&http.Client{Transport: h2c}).Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		if _, err := a.API.WaitStats(t.Context(), func(s demoapi.Stats) bool { return s.SlowStarted > before }); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("JSON-RPC", func(t *testing.T) {
		hangUp(t, "/", rpcBody("SendMessage", map[string]any{"message": message("1.0", "slow", slow)}))
		obs.Expect(t, answered(a2a.BindingJSONRPC, server.CodeCanceled)...)
	})
	t.Run("HTTP+JSON", func(t *testing.T) {
		hangUp(t, "/rest/message:send", sendBody(t, message("1.0", "slow", slow), nil))
		obs.Expect(t, answered(a2a.BindingHTTPJSON, server.CodeCanceled)...)
	})
	t.Run("gRPC", func(t *testing.T) {
		// A client that waits past its own deadline reads the status the
		// agent gives the call when it passes.
		resp := rawGRPC(t, a.URL, "SendMessage", &a2apb.SendMessageRequest{Message: pbMessage(t, "slow", "", slow)},
			"grpc-timeout", "300m")
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatal(err)
		}
		if got := cmp.Or(resp.Header.Get("Grpc-Status"), resp.Trailer.Get("Grpc-Status")); got != fmt.Sprint(int(codes.DeadlineExceeded)) {
			t.Errorf("grpc-status %q; want DEADLINE_EXCEEDED", got)
		}
		obs.Expect(t, answered(a2a.BindingGRPC, server.CodeDeadlineExceeded)...)
	})

	// The tasks run on.
	list, err := a.Tasks.List("", &a2a.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tasks) != 3 {
		t.Fatalf("%d tasks; want the 3 sent", len(list.Tasks))
	}
	for _, task := range list.Tasks {
		if task.Status.State != a2a.TaskStateWorking {
			t.Errorf("task %s is %s; want it still working", task.ID, task.Status.State)
		}
	}
}
