package caddymodule

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// The MCP sessions' budgets through a real Caddy, as an attacker met them:
// initializes of 3.9 MB (a large experimental capability), one anonymous
// address after another, opened a session each and held three copies of
// it. Now they are refused before the SDK reads them; sessions with the
// largest initialize allowed, from as many addresses as it takes, stay
// within max_session_bytes; and however many addresses the anonymous
// callers use, an authenticated caller still opens a session.
func TestIntegrationMCPSessionBudgets(t *testing.T) {
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	const budget = 1 << 20
	tester := newTester(t)
	initServer(t, tester, proxiedSite(port, fmt.Sprintf(`	a2a {
		skills "%s"
		upstream %s
		url %s/
		name "MCP Agent"
		description "Sessions within their budgets"
		security {
			api_key key header X-API-Key {
				key %s alice
			}
			require anonymous
			require key
		}
		mcp {
			max_session_bytes 1MiB
		}
	}`, writeSkills(t, "skills:\n  - id: whoami\n    description: Tells the upstream who is calling\n    request:\n      path: /whoami\n"),
		headerEcho(t), base, aliceKey)))
	open := func(body, client, key string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-Forwarded-For", client)
		if key != "" {
			req.Header.Set("X-API-Key", key)
		}
		resp, err := tester.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	initialize := func(capabilities, name string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
			`"clientInfo":{"name":"` + name + `","version":"1"},"capabilities":{` + capabilities + `}}}`
	}
	heap := func() int64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}

	before := heap()
	huge := initialize(`"experimental":{"x":"`+strings.Repeat("x", 3900<<10)+`"}`, "c")
	for i := range 20 {
		status, body := open(huge, fmt.Sprintf("203.0.113.%d", i), "")
		if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, `"code":-32600`) {
			t.Fatalf("an initialize of 3.9 MB: HTTP %d, %.200s", status, body)
		}
	}
	// The largest initialize allowed, of the shape a session keeps (its
	// client's name), from 120 addresses.
	large := initialize("", strings.Repeat("n", 16<<10-len(initialize("", ""))))
	opened, refused := 0, 0
	for i := range 120 {
		switch status, body := open(large, fmt.Sprintf("198.51.100.%d", i), ""); status {
		case http.StatusOK:
			opened++
		case http.StatusServiceUnavailable:
			refused++
		default:
			t.Fatalf("session %d: HTTP %d, %.200s", i, status, body)
		}
	}
	grown := heap() - before
	t.Logf("%d sessions opened, %d refused; the heap grew by %d bytes", opened, refused, grown)
	if opened == 0 || refused == 0 {
		t.Errorf("%d sessions opened, %d refused: the budget did not bound them", opened, refused)
	}
	// The anonymous callers' half of the budget, and a margin for the
	// test's connections and Caddy's own.
	if grown > budget/2+2<<20 {
		t.Errorf("the sessions grew the heap by %d bytes, past the anonymous callers' half of %d", grown, budget)
	}
	for range 3 {
		if status, body := open(initialize("", "alice"), "198.51.100.200", aliceKey); status != http.StatusOK {
			t.Errorf("alice, with the anonymous callers at their half: HTTP %d, %.200s", status, body)
		}
	}
}
