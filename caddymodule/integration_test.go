package caddymodule

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
)

// The integration tests run Caddy in this process (caddytest) with the a2a
// handler in front of the demo API, configured with examples/skills.yaml.
// caddytest starts one Caddy per process, on the admin port of the first
// tester, so every test shares that port; each loads its own config.

const testAPIKey = "caddymodule-test-key"

var (
	adminPortOnce sync.Once
	adminPort     int
)

// freePort asks the kernel for a free loopback port. Another process could
// take it before Caddy binds it; on loopback in a test run that does not
// happen in practice, and a clash shows up as a failed config load.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// agent is one running configuration: Caddy on port in front of the demo API.
type agent struct {
	t      *testing.T
	tester *caddytest.Tester
	demo   *demoapi.API
	// upstream is the demo API's URL; skills the skills file's absolute path.
	upstream, skills string
	port             int
}

// startAgent starts the demo API and loads a config with the a2a handler.
func startAgent(t *testing.T) *agent {
	t.Helper()
	t.Setenv("DEMO_API_KEY", testAPIKey)
	skills, err := filepath.Abs(filepath.Join("..", "examples", "skills.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	demo := demoapi.New(demoapi.Options{APIKey: testAPIKey})
	a := newAgent(t, skills, demo)
	a.demo = demo
	a.load(a.publicURL(), "Before the reload")
	return a
}

// newAgent starts upstream on loopback and readies an agent in front of it
// with the skills file at skills, not loaded yet.
func newAgent(t *testing.T, skills string, upstream http.Handler) *agent {
	t.Helper()
	adminPortOnce.Do(func() { adminPort = freePort(t) })
	srv := httptest.NewServer(upstream)
	t.Cleanup(func() {
		// Close waits for requests in flight; a failed test may leave a
		// slow one running.
		srv.CloseClientConnections()
		srv.Close()
	})
	return &agent{
		t: t,
		tester: caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{
			AdminPort:          adminPort,
			TestRequestTimeout: 30 * time.Second,
			LoadRequestTimeout: 30 * time.Second,
		}),
		upstream: srv.URL,
		skills:   skills,
		port:     freePort(t),
	}
}

// publicURL is the agent's url, as its first config says.
func (a *agent) publicURL() string { return fmt.Sprintf("http://localhost:%d/", a.port) }

// load (re)loads Caddy's config: the a2a handler with url and description.
func (a *agent) load(url, description string) {
	a.t.Helper()
	a.loadWith(url, description, "")
}

// loadWith is load with extra subdirectives in the a2a block.
func (a *agent) loadWith(url, description, extra string) {
	a.t.Helper()
	initServer(a.t, a.tester, fmt.Sprintf(`{
	admin localhost:%d
	persist_config off
}

:%d {
	bind 127.0.0.1
	a2a {
		skills "%s"
		upstream %s
		url %s
		name "Test Agent"
		description "%s"
		%s
	}
}
`, adminPort, a.port, a.skills, a.upstream, url, description, extra))
}

// initServer loads a Caddyfile into the test Caddy. A reload closes the
// old server's connections: idle keep-alive ones, and one it accepted from
// the shared listener as it stopped. A request on such a connection fails
// with EOF or a reset, as it would for any client, which reconnects; so the
// test client drops its idle connections and resends a request whose
// connection closed under it.
func initServer(t *testing.T, tester *caddytest.Tester, caddyfile string) {
	t.Helper()
	tester.InitServer(caddyfile, "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	tester.Client.CloseIdleConnections()
	if _, ok := tester.Client.Transport.(resendOnClose); !ok {
		tester.Client.Transport = resendOnClose{next: tester.Client.Transport}
	}
}

// resendOnClose resends, up to twice, a request whose connection closed
// before any answer came: while a reload stops the old server, the new
// connection of a resend may be accepted by it too.
type resendOnClose struct{ next http.RoundTripper }

func (rt resendOnClose) RoundTrip(req *http.Request) (*http.Response, error) {
	next := rt.transport()
	resp, err := next.RoundTrip(req)
	for resends := 0; resends < 2; resends++ {
		if err == nil || !(errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
			return resp, err
		}
		if req.Body != nil {
			if req.GetBody == nil {
				return resp, err
			}
			body, bodyErr := req.GetBody()
			if bodyErr != nil {
				return resp, err
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
		resp, err = next.RoundTrip(req)
	}
	return resp, err
}

// CloseIdleConnections reaches the wrapped transport, so that the next
// reload drops the idle connections again.
func (rt resendOnClose) CloseIdleConnections() {
	if c, ok := rt.transport().(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (rt resendOnClose) transport() http.RoundTripper {
	if rt.next == nil {
		return http.DefaultTransport
	}
	return rt.next
}

// post sends a JSON-RPC request; version "" is 0.3 (no A2A-Version header).
func (a *agent) post(version, body string) *http.Response {
	a.t.Helper()
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("http://localhost:%d/", a.port), strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	resp, err := a.tester.Client.Do(req)
	if err != nil {
		a.t.Fatalf("POST %s: %v", body, err)
	}
	return resp
}

// rpcResponse is a JSON-RPC answer, its result left raw.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// call sends a JSON-RPC request and decodes its (non-streamed) answer.
func (a *agent) call(version, body string) rpcResponse {
	a.t.Helper()
	resp := a.post(version, body)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatalf("reading the answer to %s: %v", body, err)
	}
	if resp.StatusCode != http.StatusOK {
		a.t.Fatalf("%s: status %d: %s", body, resp.StatusCode, raw)
	}
	var r rpcResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		a.t.Fatalf("%s: answer is not JSON-RPC: %v: %s", body, err, raw)
	}
	if r.JSONRPC != "2.0" {
		a.t.Fatalf("%s: answer has jsonrpc %q: %s", body, r.JSONRPC, raw)
	}
	return r
}

// Just enough of a task, in either version's JSON, for the checks here.
type task struct {
	Kind   string `json:"kind"` // 0.3 only
	ID     string `json:"id"`
	Status struct {
		State string `json:"state"`
	} `json:"status"`
	Artifacts []struct {
		Parts []struct {
			Kind string          `json:"kind"` // 0.3 only
			Data json.RawMessage `json:"data"`
		} `json:"parts"`
	} `json:"artifacts"`
}

// weatherData returns the data part of the task's artifacts that holds the
// weather report for city, or "" if there is none.
func (tk *task) weatherData(city string) string {
	for _, art := range tk.Artifacts {
		for _, p := range art.Parts {
			if bytes.Contains(p.Data, []byte(`"`+city+`"`)) && bytes.Contains(p.Data, []byte(`"conditions"`)) {
				return string(p.Data)
			}
		}
	}
	return ""
}

func decodeTask(t *testing.T, raw json.RawMessage) *task {
	t.Helper()
	var tk task
	if err := json.Unmarshal(raw, &tk); err != nil {
		t.Fatalf("not a task: %v: %s", err, raw)
	}
	return &tk
}

// decodeTask10 unwraps a 1.0 result, {"task": {...}}.
func decodeTask10(t *testing.T, raw json.RawMessage) *task {
	t.Helper()
	var wrapped struct {
		Task json.RawMessage `json:"task"`
	}
	if err := json.Unmarshal(raw, &wrapped); err != nil || wrapped.Task == nil {
		t.Fatalf("1.0 result is not {\"task\": ...}: %s", raw)
	}
	return decodeTask(t, wrapped.Task)
}

// readSSE reads the data of each event of an SSE stream, skipping comments
// (heartbeats), until the stream ends or each returns false.
func readSSE(body io.Reader, each func(data []byte) bool) error {
	r := bufio.NewReader(body)
	var data []byte
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF && len(line) == 0 {
			return nil
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("reading the stream: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if data != nil {
				if !each(data) {
					return nil
				}
				data = nil
			}
		case line[0] == ':':
		case bytes.HasPrefix(line, []byte("data:")):
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
		}
	}
}

// get fetches url with the tester's client and returns the answer and its body.
func (a *agent) get(url string, header http.Header) (*http.Response, string) {
	a.t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header = header
	resp, err := a.tester.Client.Do(req)
	if err != nil {
		a.t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	return resp, string(body)
}

func TestIntegrationAgentCard(t *testing.T) {
	a := startAgent(t)
	cardURL := fmt.Sprintf("http://localhost:%d/.well-known/agent-card.json", a.port)

	resp, body := a.get(cardURL, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d: %s", cardURL, resp.StatusCode, body)
	}
	etag := resp.Header.Get("ETag")
	if etag == "" || !strings.HasPrefix(etag, `"`) {
		t.Errorf("ETag %q: want a strong entity-tag", etag)
	}
	if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "max-age=") {
		t.Errorf("Cache-Control %q: want a max-age", cc)
	}
	var card struct {
		Name                string `json:"name"`
		Description         string `json:"description"`
		Version             string `json:"version"`
		SupportedInterfaces []struct {
			URL string `json:"url"`
		} `json:"supportedInterfaces"`
		URL    string `json:"url"` // 0.3
		Skills []struct {
			ID string `json:"id"`
		} `json:"skills"`
	}
	if err := json.Unmarshal([]byte(body), &card); err != nil {
		t.Fatalf("the card is not JSON: %v: %s", err, body)
	}
	if card.Name != "Test Agent" || card.Description != "Before the reload" || card.Version != DefaultVersion {
		t.Errorf("card name/description/version = %q/%q/%q, want the config's and the default version", card.Name, card.Description, card.Version)
	}
	if card.URL != a.publicURL() || len(card.SupportedInterfaces) == 0 || card.SupportedInterfaces[0].URL != a.publicURL() {
		t.Errorf("card url %q, interfaces %+v: want %s", card.URL, card.SupportedInterfaces, a.publicURL())
	}
	var ids []string
	for _, sk := range card.Skills {
		ids = append(ids, sk.ID)
	}
	if !strings.Contains(" "+strings.Join(ids, " ")+" ", " weather ") {
		t.Errorf("card skills %v: want the skills file's, weather among them", ids)
	}

	resp, notModified := a.get(cardURL, http.Header{"If-None-Match": {etag}})
	if resp.StatusCode != http.StatusNotModified || notModified != "" {
		t.Errorf("GET with If-None-Match: status %d, body %q: want 304 and no body", resp.StatusCode, notModified)
	}
	if got := resp.Header.Get("ETag"); got != etag {
		t.Errorf("304 ETag %q, want %q", got, etag)
	}

	// The older well-known path serves the same card.
	legacy, legacyBody := a.get(fmt.Sprintf("http://localhost:%d/.well-known/agent.json", a.port), nil)
	if legacy.StatusCode != http.StatusOK || legacyBody != body || legacy.Header.Get("ETag") != etag {
		t.Errorf("legacy path: status %d, ETag %q: want 200 and the same card and ETag", legacy.StatusCode, legacy.Header.Get("ETag"))
	}
}

func TestIntegrationSendMessage(t *testing.T) {
	a := startAgent(t)

	t.Run("1.0 SendMessage", func(t *testing.T) {
		r := a.call("1.0", `{"jsonrpc":"2.0","id":"req-1","method":"SendMessage","params":{"message":{
			"messageId":"m-1","role":"ROLE_USER","metadata":{"skill":"weather"},
			"parts":[{"data":{"city":"London"}}]}}}`)
		if r.Error != nil {
			t.Fatalf("error %d: %s", r.Error.Code, r.Error.Message)
		}
		if string(r.ID) != `"req-1"` {
			t.Errorf("id %s, want \"req-1\"", r.ID)
		}
		tk := decodeTask10(t, r.Result)
		if tk.ID == "" || tk.Status.State != "TASK_STATE_COMPLETED" {
			t.Fatalf("task %q in state %q, want a completed task: %s", tk.ID, tk.Status.State, r.Result)
		}
		if tk.weatherData("London") == "" {
			t.Errorf("no data artifact with London's weather: %s", r.Result)
		}
	})

	t.Run("0.3 message/send", func(t *testing.T) {
		r := a.call("", `{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":{
			"kind":"message","messageId":"m-2","role":"user","metadata":{"skill":"weather"},
			"parts":[{"kind":"data","data":{"city":"Paris"}}]}}}`)
		if r.Error != nil {
			t.Fatalf("error %d: %s", r.Error.Code, r.Error.Message)
		}
		if string(r.ID) != `7` {
			t.Errorf("id %s, want 7", r.ID)
		}
		tk := decodeTask(t, r.Result)
		if tk.Kind != "task" || tk.ID == "" || tk.Status.State != "completed" {
			t.Fatalf("result kind %q, task %q in state %q: want a completed task: %s", tk.Kind, tk.ID, tk.Status.State, r.Result)
		}
		if tk.weatherData("Paris") == "" || tk.Artifacts[0].Parts[0].Kind != "data" {
			t.Errorf("no data artifact with Paris's weather: %s", r.Result)
		}
	})
}

func TestIntegrationMessageStream(t *testing.T) {
	a := startAgent(t)
	resp := a.post("", `{"jsonrpc":"2.0","id":"s-1","method":"message/stream","params":{"message":{
		"kind":"message","messageId":"m-3","role":"user","metadata":{"skill":"weather"},
		"parts":[{"kind":"data","data":{"city":"Tokyo"}}]}}}`)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, Content-Type %q: want an SSE stream: %s", resp.StatusCode, ct, raw)
	}

	var kinds []string
	var taskID, finalState string
	var sawWeather bool
	err := readSSE(resp.Body, func(data []byte) bool {
		var ev struct {
			ID     json.RawMessage `json:"id"`
			Result struct {
				Kind   string `json:"kind"`
				ID     string `json:"id"`     // task
				TaskID string `json:"taskId"` // updates
				Final  bool   `json:"final"`
				Status struct {
					State string `json:"state"`
				} `json:"status"`
				Artifact struct {
					Parts []struct {
						Data json.RawMessage `json:"data"`
					} `json:"parts"`
				} `json:"artifact"`
			} `json:"result"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Errorf("event is not JSON: %v: %s", err, data)
			return false
		}
		if string(ev.ID) != `"s-1"` {
			t.Errorf("event id %s, want \"s-1\": %s", ev.ID, data)
		}
		res := ev.Result
		kinds = append(kinds, res.Kind)
		switch res.Kind {
		case "task":
			taskID = res.ID
		case "artifact-update":
			for _, p := range res.Artifact.Parts {
				sawWeather = sawWeather || bytes.Contains(p.Data, []byte(`"Tokyo"`))
			}
		case "status-update":
			if res.Final {
				finalState = res.Status.State
			}
		}
		return !res.Final
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(kinds) == 0 || kinds[0] != "task" {
		t.Errorf("events %v: want the task first", kinds)
	}
	if taskID == "" {
		t.Errorf("no task id in the stream; events %v", kinds)
	}
	if !sawWeather {
		t.Errorf("no artifact-update with Tokyo's weather; events %v", kinds)
	}
	if finalState != "completed" {
		t.Errorf("final state %q, want completed; events %v", finalState, kinds)
	}
}

// TestIntegrationReload: `caddy reload` hands the task store to the new
// config's handler. A task created before the reload is readable after it;
// a task running across it can be canceled through the new handler, and
// the stream opened on the old one sees the cancellation. A reload that
// changes the url starts a fresh store.
func TestIntegrationReload(t *testing.T) {
	a := startAgent(t)

	done := a.call("1.0", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{
		"messageId":"m-4","role":"ROLE_USER","metadata":{"skill":"weather"},"parts":[{"data":{"city":"London"}}]}}}`)
	if done.Error != nil {
		t.Fatalf("SendMessage: error %d: %s", done.Error.Code, done.Error.Message)
	}
	finished := decodeTask10(t, done.Result)

	// A slow task, streamed: the 1.0 stream starts with the Task.
	stream := a.post("1.0", `{"jsonrpc":"2.0","id":"slow","method":"SendStreamingMessage","params":{"message":{
		"messageId":"m-5","role":"ROLE_USER","metadata":{"skill":"slow"},"parts":[{"data":{"seconds":30}}]}}}`)
	defer stream.Body.Close()
	// Buffered beyond the few events the stream carries, so the reader
	// never blocks if the test ends early.
	events := make(chan []byte, 64)
	streamErr := make(chan error, 1)
	go func() {
		defer close(events)
		streamErr <- readSSE(stream.Body, func(data []byte) bool { events <- data; return true })
	}()
	var first struct {
		Result struct {
			Task *task `json:"task"`
		} `json:"result"`
	}
	if err := json.Unmarshal(<-events, &first); err != nil || first.Result.Task == nil {
		t.Fatalf("the stream's first event is not the task (%v)", err)
	}
	running := first.Result.Task
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := a.demo.WaitStats(ctx, func(s demoapi.Stats) bool { return s.SlowStarted > 0 }); err != nil {
		t.Fatalf("the slow upstream call did not start: %v", err)
	}

	a.load(a.publicURL(), "After the reload")

	// The new handler serves: the card changed.
	_, card := a.get(fmt.Sprintf("http://localhost:%d/.well-known/agent-card.json", a.port), nil)
	if !strings.Contains(card, `"After the reload"`) {
		t.Errorf("the card after the reload does not have the new description: %s", card)
	}

	// The finished task is still there.
	got := a.call("1.0", fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":%q}}`, finished.ID))
	if got.Error != nil {
		t.Fatalf("GetTask %s after the reload: error %d: %s", finished.ID, got.Error.Code, got.Error.Message)
	}
	if tk := decodeTask(t, got.Result); tk.ID != finished.ID || tk.Status.State != "TASK_STATE_COMPLETED" || tk.weatherData("London") == "" {
		t.Errorf("GetTask after the reload: %s, want task %s completed with its artifact", got.Result, finished.ID)
	}

	// The running task is canceled through the new handler.
	canceled := a.call("1.0", fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"CancelTask","params":{"id":%q}}`, running.ID))
	if canceled.Error != nil {
		t.Fatalf("CancelTask %s after the reload: error %d: %s", running.ID, canceled.Error.Code, canceled.Error.Message)
	}
	if tk := decodeTask(t, canceled.Result); tk.Status.State != "TASK_STATE_CANCELED" {
		t.Errorf("CancelTask answered %s, want the task canceled", canceled.Result)
	}
	if _, err := a.demo.WaitStats(ctx, func(s demoapi.Stats) bool { return s.SlowCanceled > 0 }); err != nil {
		t.Errorf("the upstream call was not canceled: %v", err)
	}
	// The stream opened before the reload ends with the canceled status.
	var last []byte
	for data := range events {
		last = data
	}
	if err := <-streamErr; err != nil {
		t.Errorf("the stream opened before the reload: %v", err)
	}
	if !bytes.Contains(last, []byte(`"statusUpdate"`)) || !bytes.Contains(last, []byte(`"TASK_STATE_CANCELED"`)) {
		t.Errorf("the stream's last event is %s, want the canceled status update", last)
	}

	// Another url is another agent, with a store of its own.
	a.load(fmt.Sprintf("http://127.0.0.1:%d/", a.port), "Another agent")
	other := a.call("1.0", fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"GetTask","params":{"id":%q}}`, finished.ID))
	if other.Error == nil || other.Error.Code != -32001 {
		t.Errorf("GetTask %s after a reload with another url: %s, want error -32001 (task not found)", finished.ID, other.Result)
	}
}
