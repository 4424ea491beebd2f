package caddymodule

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	zapobserver "go.uber.org/zap/zaptest/observer"

	"github.com/caddy-a2a/caddy-a2a/authn"
)

// loadHostile loads the agent with extra lines in its a2a block, behind
// trusted proxies on loopback so that X-Forwarded-For names the client. Its
// url differs from startAgent's, so that it gets a store of its own with
// the limits it sets (a reload keeps a store's limits).
func (a *agent) loadHostile(extra string) {
	a.t.Helper()
	initServer(a.t, a.tester, proxiedSite(a.port, fmt.Sprintf(`	a2a {
		skills "%s"
		upstream %s
		url %s
		name "Test Agent"
		description "Hostile input"
%s
	}`, a.skills, a.upstream, fmt.Sprintf("http://127.0.0.1:%d/", a.port), extra)))
}

// proxiedSite is a Caddyfile of one site on loopback at port, body its
// directives, behind trusted proxies on loopback so that X-Forwarded-For
// names the client.
func proxiedSite(port int, body string) string {
	return fmt.Sprintf(`{
	admin localhost:%d
	persist_config off
	servers {
		trusted_proxies static 127.0.0.0/8
	}
}

:%d {
	bind 127.0.0.1
%s
}
`, adminPort, port, body)
}

// postFrom sends a 1.0 JSON-RPC request as the client at addr, forwarded
// by a trusted proxy.
func (a *agent) postFrom(addr, body string) rpcResponse {
	a.t.Helper()
	return a.rpcFrom("", a.port, body, "X-Forwarded-For", addr)
}

// sendMessage is a 1.0 SendMessage of a new message (a message id of its
// own: one sent again would not run again) for skill with data.
func sendMessage(skill, data string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"` + newMessageID() +
		`","role":"ROLE_USER","metadata":{"skill":"` + skill + `"},"parts":[{"data":` + data + `}]}}}`
}

// messageIDs numbers the messages that tests make.
var messageIDs atomic.Int64

func newMessageID() string { return fmt.Sprint("msg-", messageIDs.Add(1)) }

// What one anonymous caller can make the agent hold, or do to others, is
// bounded: each case failed before the limits it tests were there.
func TestIntegrationHostileInput(t *testing.T) {
	a := startAgent(t)
	a.loadHostile(`		read_body_timeout 1s
		tasks {
			max_live_per_owner 2
			max_task_bytes 8MiB
		}`)

	t.Run("a message that decodes to more than a task may hold", func(t *testing.T) {
		// 1.5 MB on the wire, over 30 MB once decoded.
		objects := "[" + strings.TrimSuffix(strings.Repeat("{},", 500_000), ",") + "]"
		r := a.postFrom("192.0.2.10", sendMessage("weather", `{"city":"Paris","pad":`+objects+`}`))
		if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "Invalid") {
			t.Fatalf("answer %+v, want -32602", r.Error)
		}
	})

	for _, tc := range []struct{ name, body string }{
		{"nesting 200 levels deep", sendMessage("weather", `{"city":"Paris","deep":`+strings.Repeat("[", 200)+strings.Repeat("]", 200)+`}`)},
		{"a member named twice", sendMessage("weather", `{"city":"Paris","city":"Tokyo"}`)},
		{"an integer beyond 2^53", sendMessage("weather", `{"city":"Paris","id":12345678901234567890}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := a.postFrom("192.0.2.11", tc.body); r.Error == nil || r.Error.Code != -32602 {
				t.Fatalf("answer %+v, want -32602", r.Error)
			}
		})
	}

	t.Run("an id that cannot be echoed", func(t *testing.T) {
		r := a.postFrom("192.0.2.12", `{"jsonrpc":"2.0","id":{"x":1},"method":"GetTask","params":{"id":"t"}}`)
		if r.Error == nil || r.Error.Code != -32600 || string(r.ID) != "null" {
			t.Fatalf("answer id %s, error %+v; want null and -32600", r.ID, r.Error)
		}
	})

	t.Run("one anonymous client cannot lock out the others", func(t *testing.T) {
		ask := func() string { return sendMessage("weather", `{}`) } // no city: the task waits for input
		for range 2 {
			if r := a.postFrom("192.0.2.20", ask()); r.Error != nil {
				t.Fatalf("first tasks of a client: %+v", r.Error)
			}
		}
		if r := a.postFrom("192.0.2.20", ask()); r.Error == nil || r.Error.Code != -32603 {
			t.Fatalf("a client past its share: %+v, want -32603 RESOURCE_EXHAUSTED", r.Error)
		}
		if r := a.postFrom("192.0.2.21", ask()); r.Error != nil {
			t.Fatalf("another client was locked out: %+v", r.Error)
		}
	})

	t.Run("a body sent a byte at a time", func(t *testing.T) {
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", a.port))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: 100\r\n\r\n{")
		// The agent gives up on the body after read_body_timeout (1s); the
		// deadline here only keeps a regression from hanging the test.
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer to a stalled body: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("status %d, want 408", resp.StatusCode)
		}
	})
}

// A JWKS endpoint that never answers delays neither a config load (caddy
// reload) nor the callers of another scheme.
func TestIntegrationHangingJWKS(t *testing.T) {
	hang := make(chan struct{})
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hang }))
	t.Cleanup(func() { close(hang); jwks.Close() })
	a := startAgent(t)
	a.loadHostile(fmt.Sprintf(`		security {
			api_key key header X-API-Key {
				key %s alice
			}
			bearer jwt {
				issuer https://issuer.test
				audience a2a-test
				jwks_url %s
				fetch_timeout 1h
			}
		}`, strings.Repeat("k", 32), jwks.URL))
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("http://localhost:%d/", a.port),
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"none"}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("X-API-Key", strings.Repeat("k", 32))
	resp, err := a.tester.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r rpcResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Error == nil || r.Error.Code != -32001 {
		t.Fatalf("an API-key caller while the JWKS hangs: status %d, %+v, %v; want TaskNotFound", resp.StatusCode, r.Error, err)
	}
}

// Caddy's access log writes the request's headers and URI before any
// handler runs. The log directive the handler advises keeps the API keys
// it reads out of it: here, one in a header and one in a query parameter.
func TestIntegrationAccessLogAdvice(t *testing.T) {
	a := startAgent(t)
	security := &SecurityConfig{Config: authn.Config{Schemes: map[string]*authn.Scheme{
		"header": {Type: "apiKey", In: "header", Name: "x-api-key"},
		"query":  {Type: "apiKey", In: "query", Name: "api_key"},
		"bearer": {Type: "http"},
	}}}
	advice := newAccessLogAdvice(security)
	if advice == nil || !slices.Equal(advice.headers, []string{"X-Api-Key"}) || !slices.Equal(advice.queries, []string{"api_key"}) {
		t.Fatalf("advice %+v, want the X-Api-Key header and the api_key parameter", advice)
	}
	headerKey, queryKey := strings.Repeat("h", 32), strings.Repeat("q", 32)
	logFile := filepath.Join(t.TempDir(), "access.log")
	directive := strings.Replace(advice.directive(), "log {", "log {\n\toutput file "+logFile, 1)
	initServer(t, a.tester, fmt.Sprintf(`{
	admin localhost:%d
	persist_config off
}

:%d {
	bind 127.0.0.1
%s
	a2a {
		skills "%s"
		upstream %s
		url http://127.0.0.1:%d/logged
		name "Test Agent"
		description "Logged"
		security {
			api_key header header X-API-Key {
				key %s alice
			}
			api_key query query api_key {
				key %s bob
			}
			require header
			require query
		}
	}
}
`, adminPort, a.port, directive, a.skills, a.upstream, a.port, headerKey, queryKey))
	for _, req := range []struct{ query, header string }{{"", headerKey}, {"?api_key=" + queryKey, ""}} {
		r, err := http.NewRequest(http.MethodPost, fmt.Sprintf("http://localhost:%d/%s", a.port, req.query),
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"none"}}`))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("A2A-Version", "1.0")
		if req.header != "" {
			r.Header.Set("X-API-Key", req.header)
		}
		resp, err := a.tester.Client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("a caller with a key: status %d", resp.StatusCode)
		}
	}
	initServer(t, a.tester, fmt.Sprintf("{\n\tadmin localhost:%d\n\tpersist_config off\n}\n", adminPort)) // closes the log
	logged, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logged), "handled request") {
		t.Fatalf("nothing logged: %s", logged)
	}
	for _, key := range []string{headerKey, queryKey} {
		if strings.Contains(string(logged), key) {
			t.Errorf("the access log holds a key:\n%s", logged)
		}
	}
}

// The advice is logged when the handler is provisioned in a server that
// keeps an access log, and only then.
func TestAccessLogAdviceWarnsAtProvision(t *testing.T) {
	advice := newAccessLogAdvice(&SecurityConfig{Config: authn.Config{Schemes: map[string]*authn.Scheme{
		"header": {Type: "apiKey", In: "header", Name: "x-api-key"}}}})
	for _, tt := range []struct {
		name string
		srv  *caddyhttp.Server
		want int
	}{
		{"a server with an access log", &caddyhttp.Server{Logs: &caddyhttp.ServerLogConfig{}}, 1},
		{"a server without one", &caddyhttp.Server{}, 0},
		{"no server known", nil, 0},
	} {
		core, logs := zapobserver.New(zap.WarnLevel)
		advice.warn(tt.srv, zap.New(core))
		if got := logs.FilterMessageSnippet("access log writes API keys").Len(); got != tt.want {
			t.Errorf("%s: %d warnings, want %d", tt.name, got, tt.want)
		}
	}
	var none *accessLogAdvice // no API key a log would write
	core, logs := zapobserver.New(zap.WarnLevel)
	none.warn(&caddyhttp.Server{Logs: &caddyhttp.ServerLogConfig{}}, zap.New(core))
	if logs.Len() != 0 {
		t.Errorf("a warning with no API key to advise on")
	}
}
