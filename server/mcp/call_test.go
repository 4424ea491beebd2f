package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
	mcpbinding "github.com/caddy-a2a/caddy-a2a/server/mcp"
	"github.com/caddy-a2a/caddy-a2a/server/servertest"
)

func TestMCPProgress(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	for _, version := range mcpVersions {
		t.Run(version, func(t *testing.T) {
			progress := make(chan *mcp.ProgressNotificationParams, 256)
			cs := connectMCP(t, a, version, "", &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
					progress <- req.Params
				}})
			for _, tc := range []struct {
				tool string
				args map[string]any
				want string // in a notification's message
			}{
				{"report", nil, "% done"},               // a polled job
				{"count", map[string]any{"to": 3}, "3"}, // a streamed answer
			} {
				params := &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args}
				params.SetProgressToken("p-" + tc.tool)
				res, err := cs.CallTool(t.Context(), params)
				if err != nil || res.IsError {
					t.Fatalf("%s: %v, %+v", tc.tool, err, res)
				}
				for seen := false; !seen; {
					select {
					case p := <-progress:
						// The client may handle the last notifications of
						// a call after its result.
						seen = p.ProgressToken == "p-"+tc.tool && strings.Contains(p.Message, tc.want)
					case <-t.Context().Done():
						t.Fatalf("%s: no progress says %q", tc.tool, tc.want)
					}
				}
			}
		})
	}
}

func TestMCPCancel(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	a.CancelOnCleanup()
	for _, version := range mcpVersions {
		t.Run(version, func(t *testing.T) {
			cs := connectMCP(t, a, version, "", nil)
			before := a.API.Stats()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			ended := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 30}})
				ended <- err
			}()
			if _, err := a.API.WaitStats(t.Context(), func(s demoapi.Stats) bool { return s.SlowStarted > before.SlowStarted }); err != nil {
				t.Fatal(err)
			}
			cancel()
			if err := <-ended; err == nil {
				t.Error("a canceled call answered")
			}
			// The task's upstream call is canceled with it.
			if _, err := a.API.WaitStats(t.Context(), func(s demoapi.Stats) bool { return s.SlowCanceled > before.SlowCanceled }); err != nil {
				t.Fatal(err)
			}
			list, err := a.Tasks.List("", &a2a.ListTasksRequest{})
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range list.Tasks {
				if skillOfTask(&task) == "slow" && task.Status.State != a2a.TaskStateCanceled {
					t.Errorf("task %s is %s; want it canceled", task.ID, task.Status.State)
				}
			}
		})
	}
}

func skillOfTask(task *a2a.Task) string {
	s, _ := task.Metadata["skill"].(string)
	return s
}

// An MCP call refused because the store failed, or the agent shuts down,
// is told what an MCP client can do, which is not A2A's advice to send
// the same message again: a call made again runs the skill again. So the
// text says whether the skill ran, as the error's data does.
func TestMCPUnavailableTexts(t *testing.T) {
	a, store, manager := servertest.AgentOnFailingStore(t, withMCP)
	call := func(version string) (string, map[string]any) {
		t.Helper()
		_, err := connectMCP(t, a, version, "", nil).CallTool(t.Context(), &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{"city": "Paris"}})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != mcpbinding.CodeUnavailable {
			t.Fatalf("at %s: %v, want %d", version, err, mcpbinding.CodeUnavailable)
		}
		var data struct{ Metadata map[string]any }
		_ = json.Unmarshal(rpcErr.Data, &data)
		return rpcErr.Message, data.Metadata
	}
	for _, version := range mcpVersions {
		t.Run(version, func(t *testing.T) {
			store.FailInsert.Store(true)
			msg, meta := call(version)
			store.FailInsert.Store(false)
			if !strings.Contains(msg, "has not run, so calling the tool again is safe") || meta["skillRan"] != "false" ||
				meta["taskId"] == nil || strings.Contains(msg, "messageId") {
				t.Errorf("an insert that failed: %q, %v", msg, meta)
			}
			store.FailAfterInsert.Store(true)
			msg, meta = call(version)
			store.FailAfterInsert.Store(false)
			store.FailUpdate.Store(false)
			if !strings.Contains(msg, "The skill ran: calling the tool again runs it again. Read the task over A2A instead (GetTask") ||
				meta["skillRan"] != "true" || meta["taskId"] == nil || strings.Contains(msg, "messageId") {
				t.Errorf("an outcome that could not be stored: %q, %v", msg, meta)
			}
		})
	}
	manager.BeginDrain()
	if msg, meta := call(mcpStateless); !strings.Contains(msg, "shutting down, and the skill has not run: call the tool again") ||
		meta["skillRan"] != "false" || strings.Contains(msg, "message") {
		t.Errorf("while the agent drains: %q, %v", msg, meta)
	}
}

// An MCP call whose run the agent stopped as its drain's deadline passed
// is told so in MCP's terms: A2A's text asks for a new message, where an
// MCP client calls the tool again.
func TestMCPCallStoppedByDrain(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	ended := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := connectMCP(t, a, mcpStateless, "", nil).CallTool(t.Context(),
			&mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 30}})
		if err != nil {
			t.Error(err)
		}
		ended <- res
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := a.API.WaitStats(ctx, func(s demoapi.Stats) bool { return s.SlowStarted > 0 }); err != nil {
		t.Fatal(err)
	}
	deadlinePassed, pass := context.WithCancel(context.Background())
	pass()
	a.Tasks.Drain(deadlinePassed)
	res := <-ended
	if got := texts(res); res == nil || !res.IsError || len(got) != 1 ||
		got[0] != "The agent stopped while this call ran, so whether its work was done is unknown; calling the tool again runs it again." {
		t.Errorf("the call the drain stopped: %+v", res)
	}
}

// Two calls under way at once on one session each run for the HTTP
// request that carries it, not for the session: the upstream gets each
// call's own X-Trace-Id, forwarded from its request. Both calls reach the
// upstream before either is answered.
func TestMCPCallsOnOneSessionRunForTheirOwnRequests(t *testing.T) {
	const skills = `
upstream:
  url: http://upstream.invalid
skills:
  - id: traced
    description: forwards the trace header of its request
    forward_headers: [X-Trace-Id]
    arguments:
      trace: {type: string, required: true}
    request: {path: "/traced/{args.trace}"}
`
	upstream := &meetingUpstream{arrived: make(chan *http.Request, 2), release: make(chan struct{})}
	h := servertest.MemoryHandler(t, "traced.yaml", skills, upstream, withMCP)
	front := httptest.NewServer(h)
	t.Cleanup(front.Close)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: front.URL + "/mcp",
		HTTPClient: &http.Client{Transport: tracingCalls{front.Client().Transport}}}, &mcp.ClientSessionOptions{ProtocolVersion: mcpStateful})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	answered := make(chan error, 2)
	for _, trace := range []string{"a", "b"} {
		go func() {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "traced", Arguments: map[string]any{"trace": trace}})
			if err == nil && res.IsError {
				err = fmt.Errorf("%s: %v", trace, texts(res))
			}
			answered <- err
		}()
	}
	for range 2 {
		select {
		case r := <-upstream.arrived:
			if want := "/traced/" + r.Header.Get("X-Trace-Id"); r.URL.Path != want {
				t.Errorf("the upstream got %s with X-Trace-Id %q: the call ran for another request", r.URL.Path, r.Header.Get("X-Trace-Id"))
			}
		case <-t.Context().Done():
			t.Fatal("the two calls did not reach the upstream together")
		}
	}
	close(upstream.release)
	for range 2 {
		if err := <-answered; err != nil {
			t.Error(err)
		}
	}
}

// meetingUpstream answers each request once release is closed, after
// telling arrived of it.
type meetingUpstream struct {
	arrived chan *http.Request
	release chan struct{}
}

func (u *meetingUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	u.arrived <- r
	select {
	case <-u.release:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"ok":true}`)), Request: r}, nil
}

// tracingCalls sets, on each request that carries a tools/call, the
// X-Trace-Id its arguments name.
type tracingCalls struct{ next http.RoundTripper }

func (c tracingCalls) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		var call struct {
			Params struct {
				Arguments struct{ Trace string } `json:"arguments"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &call)
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
		if call.Params.Arguments.Trace != "" {
			r.Header.Set("X-Trace-Id", call.Params.Arguments.Trace)
		}
	}
	return c.next.RoundTrip(r)
}
