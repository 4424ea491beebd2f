package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
	"github.com/caddy-a2a/caddy-a2a/server"
	mcpbinding "github.com/caddy-a2a/caddy-a2a/server/mcp"
	"github.com/caddy-a2a/caddy-a2a/server/servertest"
)

// initializeBody is an initialize request at 2025-11-25 whose capabilities
// and client hold what extra says.
func initializeBody(capabilities, clientName string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
		`"clientInfo":{"name":` + quote(clientName) + `,"version":"1"},"capabilities":{` + capabilities + `}}}`
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// padTo is an initialize of size bytes, its padding in shape: an
// experimental capability (which a session does not keep), many small
// extension capabilities (which decode to many small maps), or the
// client's name (which it keeps).
func padTo(shape string, size int) string {
	body := func(pad int) string {
		switch shape {
		case "experimental":
			return initializeBody(`"experimental":{"x":"`+strings.Repeat("e", pad)+`"}`, "c")
		case "extensions":
			var b strings.Builder
			for i := 0; b.Len() < pad; i++ {
				fmt.Fprintf(&b, `"%d":{},`, i)
			}
			return initializeBody(`"extensions":{`+strings.TrimSuffix(b.String(), ",")+`}`, "c")
		}
		return initializeBody("", strings.Repeat("n", pad))
	}
	// Extensions come in whole members: the client's name makes up the
	// few bytes they fall short by.
	padded := body(size - len(body(0)) - 16)
	return strings.Replace(padded, `"c"`, quote(strings.Repeat("c", size-len(padded)+1)), 1)
}

// openSessionAs posts an initialize body as client (an anonymous client
// address, "" none) with key (an API key, "" none), and answers the HTTP
// status, the session id, and the body of a refusal.
func openSessionAs(t *testing.T, a *servertest.Agent, body, client, key string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, a.URL+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if client != "" {
		req.Header.Set("X-Test-Client", client)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, err := a.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(raw)
}

// byClient has the agent tell anonymous clients apart by X-Test-Client.
func byClient(cfg *server.Config) {
	cfg.ClientAddress = func(r *http.Request) string { return r.Header.Get("X-Test-Client") }
}

// heapInUse is the live heap, after the garbage is collected.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// An initialize larger than 16 KiB opens no session: 413, -32600, before
// the SDK reads it (it would keep it for the session's life). One of
// 16 KiB does.
func TestMCPInitializeIsBounded(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	for _, tc := range []struct {
		size   int
		status int
	}{{16 << 10, http.StatusOK}, {16<<10 + 1, http.StatusRequestEntityTooLarge}, {3900 << 10, http.StatusRequestEntityTooLarge}} {
		status, session, body := openSessionAs(t, a, padTo("experimental", tc.size), "", "")
		if status != tc.status || (session != "") != (tc.status == http.StatusOK) {
			t.Errorf("an initialize of %d bytes: HTTP %d, session %q, %.200s", tc.size, status, session, body)
		}
		if tc.status != http.StatusOK && (!strings.Contains(body, `"code":-32600`) || !strings.Contains(body, "limited to 16384 bytes")) {
			t.Errorf("an initialize of %d bytes: %.300s", tc.size, body)
		}
	}
}

// A session keeps what the strict reader reads of its initialize, the
// members it keeps matched by their exact names: a look-alike of one is
// refused (400, -32600, naming it), where a reader that ignores case
// would take it for the member; a capability it does not keep may be
// named anyhow.
func TestMCPInitializeLookAlikes(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	for _, tc := range []struct {
		name, body string
		refused    string
	}{
		{"a look-alike of roots", initializeBody(`"roots":{},"Roots":{"listChanged":true}`, "c"), `params.capabilities.Roots differs from \"roots\"`},
		{"a look-alike of listChanged", initializeBody(`"roots":{"listchanged":true}`, "c"), `params.capabilities.roots.listchanged differs from \"listChanged\"`},
		{"a look-alike in the client", strings.Replace(initializeBody("", "c"), `"name":"c"`, `"name":"c","NAME":"d"`, 1),
			`params.clientInfo.NAME differs from \"name\"`},
		{"capabilities it does not keep", initializeBody(`"experimental":{"Roots":{},"roots":{}},"extensions":{"X":{},"x":{}}`, "c"), ""},
	} {
		status, session, body := openSessionAs(t, a, tc.body, "", "")
		switch {
		case tc.refused == "" && (status != http.StatusOK || session == ""):
			t.Errorf("%s: HTTP %d, session %q: %.300s", tc.name, status, session, body)
		case tc.refused != "" && (status != http.StatusBadRequest || session != "" || !strings.Contains(body, `"code":-32600`) ||
			!strings.Contains(body, tc.refused)):
			t.Errorf("%s: HTTP %d, session %q: %.300s; want 400, -32600: %s", tc.name, status, session, body, tc.refused)
		}
	}
}

// What all sessions hold stays within their byte budget: sessions opened
// from many anonymous addresses, with initializes as large as may be and
// of every shape, until the budget refuses them, grow the heap by no more
// than the budget and a margin. The margin (1 MiB) is for what the test's
// own connections hold, and under the race detector (2 MiB) its
// bookkeeping too.
func TestMCPSessionMemory(t *testing.T) {
	const budget = 2 << 20
	a := servertest.NewAgent(t, func(cfg *server.Config) {
		withMCPConfig(cfg, mcpbinding.Config{MaxSessionBytes: budget})
		byClient(cfg)
	})
	before := heapInUse()
	opened, refused := 0, 0
	for client := range 40 {
		for i, shape := range []string{"experimental", "extensions", "name", "experimental", "extensions", "name"} {
			status, _, body := openSessionAs(t, a, padTo(shape, 16<<10), fmt.Sprintf("192.0.2.%d", client), "")
			switch status {
			case http.StatusOK:
				opened++
			case http.StatusServiceUnavailable, http.StatusTooManyRequests:
				refused++
				if !strings.Contains(body, `"code":-32029`) || !strings.Contains(body, "RESOURCE_EXHAUSTED") ||
					!strings.Contains(body, "may hold") && !strings.Contains(body, "keeps") {
					t.Errorf("a refused session of client %d: HTTP %d: %.300s, want -32029 naming the bound", client, status, body)
				}
			default:
				t.Fatalf("session %d of client %d: HTTP %d: %.200s", i, client, status, body)
			}
		}
	}
	grown := heapInUse() - before
	t.Logf("%d sessions opened, %d refused; the heap grew by %d bytes (%d a session)", opened, refused, grown, grown/int64(max(opened, 1)))
	if refused == 0 || opened < 30 {
		t.Errorf("%d sessions opened, %d refused: the budget did not bound them", opened, refused)
	}
	margin := int64(1 << 20)
	if raceEnabled {
		margin = 2 << 20 // a session measured 8 to 12 KiB without it, 12 to 17 KiB with it
	}
	if grown > budget+margin {
		t.Errorf("the sessions hold %d bytes, past their budget of %d and a margin of %d", grown, budget, margin)
	}
}

// The anonymous callers together hold at most half of the sessions when
// callers can authenticate: however many addresses they come from, an
// authenticated caller still opens one. Room is made among the anonymous
// callers for an address that holds fewer than another by two.
func TestMCPAnonymousSessionsLeaveRoom(t *testing.T) {
	a := servertest.NewAuthAgent(t, []a2a.SecurityRequirement{{}, {"key": nil}}, func(cfg *server.Config) {
		withMCPConfig(cfg, mcpbinding.Config{MaxSessions: 10, MaxSessionsPerCaller: 3})
		byClient(cfg)
	})
	open := func(client, key string) int {
		t.Helper()
		status, _, _ := openSessionAs(t, a.Agent, initializeBody("", "c"), client, key)
		return status
	}
	for i, want := range []int{200, 200, 200, 200, 200} { // 198.51.100.0 holds three, .1 two: the anonymous half
		if got := open(fmt.Sprintf("198.51.100.%d", min(i/3, 1)), ""); got != want {
			t.Fatalf("anonymous session %d: HTTP %d", i, got)
		}
	}
	// New addresses make room while an address holds two more than the
	// newcomer would: .0's least recently used sessions close, then .1's.
	for _, client := range []string{"198.51.100.2", "198.51.100.3", "198.51.100.4"} {
		if got := open(client, ""); got != http.StatusOK {
			t.Errorf("%s, anonymous callers at their half: HTTP %d", client, got)
		}
	}
	// Now five addresses hold one each: nobody holds two more.
	for _, client := range []string{"198.51.100.5", "198.51.100.2"} {
		if got := open(client, ""); got != http.StatusServiceUnavailable {
			t.Errorf("%s past the anonymous half: HTTP %d", client, got)
		}
	}
	for _, key := range []string{servertest.AliceKey, servertest.AliceKey, servertest.BobKey, servertest.BobKey, servertest.BobKey} {
		if got := open("198.51.100.4", key); got != http.StatusOK {
			t.Errorf("an authenticated caller, anonymous ones at their half: HTTP %d", got)
		}
	}
}

// No MCP request leaves more behind than its bound: a session, counted
// against the sessions' budget until it closes, and nothing else. Many
// rounds of every kind of request, on a session and without, the refused
// ones too, leave the heap where it was, within what pools and caches
// hold.
func TestMCPRequestsLeaveNothingBehind(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	cs := connectMCP(t, a, mcpStateful, "", nil)
	post := func(body string, header ...string) {
		t.Helper()
		postMCP(t, a, body, append([]string{"Mcp-Protocol-Version", mcpStateful, "Mcp-Session-Id", cs.ID()}, header...)...)
	}
	round := func() {
		if err := cs.Ping(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.ListTools(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "no-such-tool"}); err == nil {
			t.Fatal("an unknown tool was called")
		}
		post(`{"jsonrpc":"2.0","id":1,"method":"no/such/method"}`)
		post(`{"jsonrpc":"2.0","id":1,"method":`)
		post(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
		postMCP(t, a, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
		// A session opened and closed, and one refused.
		status, session, body := openSessionAs(t, a, padTo("name", 16<<10), "", "")
		if status != http.StatusOK {
			t.Fatalf("initialize: HTTP %d: %.200s", status, body)
		}
		closeSessionOf(t, a, session)
		if status, _, _ := openSessionAs(t, a, padTo("experimental", 64<<10), "", ""); status != http.StatusRequestEntityTooLarge {
			t.Fatalf("a large initialize: HTTP %d", status)
		}
	}
	// The first rounds fill pools and caches and grow maps to their
	// working size, which takes the race detector's build some 100 KiB.
	for range 100 {
		round()
	}
	before := heapInUse()
	const rounds = 300
	for range rounds {
		round()
	}
	grown := heapInUse() - before
	t.Logf("%d rounds of 11 requests grew the heap by %d bytes", rounds, grown)
	// What a refused initialize would hold is 64 KiB a round; a body kept
	// by any request, hundreds of bytes a request.
	if grown > 256<<10 {
		t.Errorf("%d rounds of 11 requests left %d bytes behind", rounds, grown)
	}
}

// closeSessionOf closes the session id (DELETE).
func closeSessionOf(t *testing.T, a *servertest.Agent, id string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, a.URL+"/mcp", nil)
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", mcpStateful)
	resp, err := a.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("DELETE of session %s: HTTP %d", id, resp.StatusCode)
	}
}

// A request other than initialize without a session, at a version that
// has sessions, is the transport's 400 in JSON-RPC terms, and opens no
// session: the only one the cap allows is still there for initialize.
func TestMCPRequestWithoutSession(t *testing.T) {
	a := servertest.NewAgent(t, func(cfg *server.Config) { withMCPConfig(cfg, mcpbinding.Config{MaxSessions: 1}) })
	for range 3 {
		_, msg := postMCP(t, a, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather","arguments":{"city":"Paris"}}}`,
			"Mcp-Protocol-Version", mcpStateful)
		e, _ := msg["error"].(map[string]any)
		if msg["httpStatus"] != float64(http.StatusBadRequest) || e["code"] != float64(-32600) ||
			!strings.Contains(fmt.Sprint(e["message"]), "tools/call needs a session: send initialize first") {
			t.Errorf("tools/call without a session: %v", msg)
		}
	}
	connectMCP(t, a, mcpStateful, "", nil)
}

func TestMCPSessionCap(t *testing.T) {
	a := servertest.NewAgent(t, func(cfg *server.Config) {
		withMCPConfig(cfg, mcpbinding.Config{MaxSessions: 1, MaxSessionsPerCaller: 2})
	})
	first := connectMCP(t, a, mcpStateful, "", nil)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	transport := &mcp.StreamableClientTransport{Endpoint: a.URL + "/mcp", HTTPClient: a.HTTP}
	if cs, err := client.Connect(t.Context(), transport, &mcp.ClientSessionOptions{ProtocolVersion: mcpStateful}); err == nil {
		cs.Close()
		t.Fatal("a session past the cap was opened")
	} else if !strings.Contains(err.Error(), "Service Unavailable") {
		t.Errorf("past the cap: %v", err)
	}
	// Stateless calls need no session.
	callTool(t, connectMCP(t, a, mcpStateless, "", nil), "weather", map[string]any{"city": "Paris"})
	// A session closed makes room for another.
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	connectMCP(t, a, mcpStateful, "", nil)
}

// No caller holds more than its share of the sessions: past it, 429 for
// that caller alone, until one of its sessions closes.
func TestMCPSessionsPerCaller(t *testing.T) {
	a := servertest.NewAuthAgent(t, nil, func(cfg *server.Config) { withMCPConfig(cfg, mcpbinding.Config{MaxSessionsPerCaller: 2}) })
	open := func(key string) (*mcp.ClientSession, error) {
		client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		return client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: a.URL + "/mcp",
			HTTPClient: &http.Client{Transport: withKey{key, a.HTTP.Transport}}}, &mcp.ClientSessionOptions{ProtocolVersion: mcpStateful})
	}
	connectMCP(t, a.Agent, mcpStateful, servertest.AliceKey, nil)
	second := connectMCP(t, a.Agent, mcpStateful, servertest.AliceKey, nil)
	if cs, err := open(servertest.AliceKey); err == nil {
		cs.Close()
		t.Fatal("alice opened a third session")
	} else if !strings.Contains(err.Error(), "Too Many Requests") {
		t.Errorf("alice's third session: %v", err)
	}
	connectMCP(t, a.Agent, mcpStateful, servertest.BobKey, nil) // others are not locked out
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	connectMCP(t, a.Agent, mcpStateful, servertest.AliceKey, nil)
}

// A full server makes room for a caller that holds fewer sessions than
// another by two or more: the least recently used session of the one that
// holds the most is closed. Callers that hold as many wait.
func TestMCPFullServerMakesRoom(t *testing.T) {
	a := servertest.NewAuthAgent(t, nil, func(cfg *server.Config) {
		withMCPConfig(cfg, mcpbinding.Config{MaxSessions: 3, MaxSessionsPerCaller: 3})
	})
	open := func(key string) (*mcp.ClientSession, error) {
		return mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(),
			&mcp.StreamableClientTransport{Endpoint: a.URL + "/mcp", HTTPClient: &http.Client{Transport: withKey{key, a.HTTP.Transport}},
				DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: mcpStateful})
	}
	var alice [3]*mcp.ClientSession
	for i := range alice {
		cs, err := open(servertest.AliceKey)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		alice[i] = cs
	}
	if _, err := alice[0].ListTools(t.Context(), nil); err != nil { // alice[1] is now the least recently used
		t.Fatal(err)
	}
	bob, err := open(servertest.BobKey)
	if err != nil {
		t.Fatalf("bob, on a server alice filled: %v", err)
	}
	defer bob.Close()
	// It closes once its calls under way end: none here.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		if _, err := alice[1].ListTools(ctx, nil); err != nil {
			if ctx.Err() != nil {
				t.Fatal("alice's least recently used session is still open")
			}
			break
		}
	}
	for _, cs := range []*mcp.ClientSession{alice[0], alice[2], bob} {
		if _, err := cs.ListTools(t.Context(), nil); err != nil {
			t.Errorf("session %s: %v", cs.ID(), err)
		}
	}
	// Alice holds two, bob would too: nobody's session is taken.
	if cs, err := open(servertest.BobKey); err == nil {
		cs.Close()
		t.Error("bob's second session was opened")
	} else if !strings.Contains(err.Error(), "Service Unavailable") {
		t.Errorf("bob's second session: %v", err)
	}
}

// As the server shuts down, the sessions' standalone streams end, which
// its graceful shutdown would otherwise wait for, while a call under way
// still answers on its session. Closing the sessions, which Caddy does as
// it discards a config, before the old server's calls have ended on a
// reload, waits for those calls too.
func TestMCPShutdownEndsStreamsNotCalls(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(*server.Handler)
	}{
		{"Shutdown", (*server.Handler).Shutdown},
		{"Close", (*server.Handler).Close},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := servertest.NewAgent(t, withMCP)
			cs, err := connectSession(t, a)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			stream := openStream(t, t.Context(), a, cs)
			defer stream.Body.Close()

			before := a.API.Stats()
			answered := make(chan error, 1)
			go func() {
				res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 0.5}})
				if err == nil && res.IsError {
					err = fmt.Errorf("the call failed: %v", res.Content)
				}
				answered <- err
			}()
			if _, err := a.API.WaitStats(t.Context(), func(s demoapi.Stats) bool { return s.SlowStarted > before.SlowStarted }); err != nil {
				t.Fatal(err)
			}
			h := a.Handler.(*server.Handler)
			tc.end(h)
			if _, err := io.Copy(io.Discard, stream.Body); err != nil {
				t.Errorf("the stream ended with %v", err)
			}
			// A stream opened since ends at once.
			late := openStream(t, t.Context(), a, cs)
			defer late.Body.Close()
			if _, err := io.Copy(io.Discard, late.Body); err != nil {
				t.Errorf("the late stream ended with %v", err)
			}
			if err := <-answered; err != nil {
				t.Errorf("the call under way: %v", err)
			}

			if tc.name == "Shutdown" {
				h.Close()
			}
			// The session closes as its last request ends, which may be just
			// after its answer reached the client: a request that slips in
			// before is answered, and closes it as it ends.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			for {
				if _, err := cs.ListTools(ctx, nil); err != nil {
					if ctx.Err() != nil {
						t.Fatal("the session stayed open")
					}
					break
				}
			}
			// A session opened since is refused, for the client to retry
			// on the config that replaces this one.
			if _, err := connectSession(t, a); err == nil || !strings.Contains(err.Error(), "Service Unavailable") {
				t.Errorf("opening a session once they closed: %v; want 503", err)
			}
		})
	}
}
