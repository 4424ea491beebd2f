package caddymodule

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads Caddy's metrics from the admin API, as Prometheus would.
func scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://localhost:%d/metrics", adminPort))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing the metrics: %v", err)
	}
	return families
}

// sample is the value of the series of name with exactly labels: a
// counter's or gauge's value, a histogram's count; -1 when there is none.
func sample(families map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := families[name]
	if f == nil {
		return -1
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if !maps.Equal(got, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return 0 // a family without this series: nothing counted yet
}

// buckets are the finite upper bounds of a histogram series.
func buckets(families map[string]*dto.MetricFamily, name, label, value string) []float64 {
	for _, m := range families[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				var out []float64
				for _, b := range m.GetHistogram().GetBucket() {
					if !math.IsInf(b.GetUpperBound(), 1) {
						out = append(out, b.GetUpperBound())
					}
				}
				return out
			}
		}
	}
	return nil
}

const observedSkills = `
upstream:
  url: http://placeholder
skills:
  - id: weather
    description: The weather.
    request: {path: "/weather/{args.city}"}
  - id: broken
    description: An upstream that fails.
    request: {path: /broken}
  - id: slow
    description: An upstream that answers when the test says.
    request: {path: /slow}
`

// observedUpstream serves the skills above and reports each request's
// traceparent; /slow answers once release is closed.
func observedUpstream(t *testing.T) (url string, traceparents chan string, release func()) {
	t.Helper()
	traceparents = make(chan string, 16)
	released := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/broken":
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		case r.URL.Path == "/slow":
			select {
			case <-released:
			case <-r.Context().Done():
				return
			}
		default:
			traceparents <- r.Header.Get("Traceparent")
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	release = func() { once.Do(func() { close(released) }) }
	t.Cleanup(func() {
		release()
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL, traceparents, release
}

// TestIntegrationObservability runs a Caddy with two agents (their
// metrics registered twice in one config) and an access log, makes calls,
// and reads the metrics on the admin API, the upstream's traceparents and
// the access log; then it reloads with Caddy's tracing on.
func TestIntegrationObservability(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "none") // Caddy's tracing records spans and exports none
	upstream, traceparents, release := observedUpstream(t)
	skills := writeSkills(t, observedSkills)
	port, other := freePort(t), freePort(t)
	const key = "observed-key-0123456789"
	config := func(site string) string {
		agent := func(port int) string {
			return fmt.Sprintf(`
:%d {
	bind 127.0.0.1
%s
	a2a {
		skills "%s"
		upstream %s
		url http://127.0.0.1:%d/
		name "Observed"
		description "Observed"
		security {
			api_key key header X-API-Key {
				key %s alice
			}
		}
	}
}
`, port, site, skills, upstream, port, key)
		}
		return fmt.Sprintf("{\n\tadmin localhost:%d\n\tpersist_config off\n}\n", adminPort) + agent(port) +
			strings.Replace(agent(other), site, "", 1)
	}
	logFile := filepath.Join(t.TempDir(), "access.log")
	tester := newTester(t)
	initServer(t, tester, config(fmt.Sprintf("\tlog {\n\t\toutput file %s\n\t\tformat filter {\n\t\t\trequest>headers>X-Api-Key delete\n\t\t}\n\t}", logFile)))

	call := func(key, version, traceparent, body string) (int, rpcResponse) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/", port), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if version != "" {
			req.Header.Set("A2A-Version", version)
		}
		if key != "" {
			req.Header.Set("X-API-Key", key)
		}
		if traceparent != "" {
			req.Header.Set("Traceparent", traceparent)
		}
		resp, err := tester.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r rpcResponse
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		return resp.StatusCode, r
	}
	// send is a SendMessage request for skill, in version's shape.
	send := func(version, skill, config string) string {
		method, role, kind, dataKind := "message/send", "user", `"kind":"message",`, `"kind":"data",`
		if version == "1.0" {
			method, role, kind, dataKind = "SendMessage", "ROLE_USER", "", ""
		}
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{"message":{%s"messageId":%q,"role":%q,"metadata":{"skill":%q},"parts":[{%s"data":{"city":"Paris"}}]}%s}}`,
			method, kind, newMessageID(), role, skill, dataKind, config)
	}

	before := scrape(t)
	const callersTrace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	_, r := call(key, "1.0", callersTrace, send("1.0", "weather", ""))
	weatherTask := decodeTask10(t, r.Result)
	if weatherTask.Status.State != "TASK_STATE_COMPLETED" {
		t.Fatalf("weather: %s", r.Result)
	}
	if tp := <-traceparents; tp != callersTrace {
		t.Errorf("without Caddy's tracing the upstream got traceparent %q; want the caller's %q", tp, callersTrace)
	}
	if _, r = call(key, "", "", send("0.3", "broken", "")); decodeTask(t, r.Result).Status.State != "failed" {
		t.Fatalf("broken: %s", r.Result)
	}
	if _, r = call(key, "", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/frobnicate","params":{}}`); r.Error == nil {
		t.Fatal("an unknown method was answered")
	}
	if status, _ := call("wrong-key-0123456789", "1.0", "", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`); status != http.StatusUnauthorized {
		t.Fatalf("a wrong key: HTTP %d", status)
	}
	if status, _ := call("", "1.0", "", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`); status != http.StatusUnauthorized {
		t.Fatalf("no key: HTTP %d", status)
	}

	// A stream open on a task whose upstream call waits.
	_, r = call(key, "1.0", "", send("1.0", "slow", `,"configuration":{"returnImmediately":true}`))
	slowTask := decodeTask10(t, r.Result)
	streamReq, err := http.NewRequest(http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/", port),
		strings.NewReader(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"SubscribeToTask","params":{"id":%q}}`, slowTask.ID)))
	if err != nil {
		t.Fatal(err)
	}
	streamReq.Header = http.Header{"Content-Type": {"application/json"}, "A2A-Version": {"1.0"}, "X-Api-Key": {key}}
	stream, err := tester.Client.Do(streamReq)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	events := bufio.NewReader(stream.Body)
	if line, err := events.ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("the stream's first event: %q, %v", line, err)
	}
	during := scrape(t)
	release()
	if err := readSSE(events, func([]byte) bool { return true }); err != nil {
		t.Fatal(err)
	}
	// A request is counted once its answer is out, so a scrape may come
	// before the last ones are: it is repeated for a while.
	want := []struct {
		name   string
		labels []string
		delta  float64
	}{
		{"caddy_a2a_requests_total", []string{"binding", "JSONRPC", "method", "SendMessage", "version", "1.0", "code", "ok"}, 2},
		{"caddy_a2a_requests_total", []string{"binding", "JSONRPC", "method", "SendMessage", "version", "0.3", "code", "ok"}, 1},
		{"caddy_a2a_requests_total", []string{"binding", "JSONRPC", "method", "unknown", "version", "0.3", "code", "-32601"}, 1},
		{"caddy_a2a_requests_total", []string{"binding", "JSONRPC", "method", "unknown", "version", "1.0", "code", "-31401"}, 2},
		{"caddy_a2a_requests_total", []string{"binding", "JSONRPC", "method", "SubscribeToTask", "version", "1.0", "code", "ok"}, 1},
		{"caddy_a2a_tasks_total", []string{"skill", "weather", "state", "completed"}, 1},
		{"caddy_a2a_tasks_total", []string{"skill", "broken", "state", "failed"}, 1},
		{"caddy_a2a_tasks_total", []string{"skill", "slow", "state", "completed"}, 1},
		{"caddy_a2a_task_duration_seconds", []string{"skill", "weather"}, 1},
		{"caddy_a2a_upstream_requests_total", []string{"skill", "weather", "status", "200"}, 1},
		{"caddy_a2a_upstream_requests_total", []string{"skill", "broken", "status", "503"}, 1},
		{"caddy_a2a_upstream_request_duration_seconds", []string{"skill", "broken"}, 1},
		{"caddy_a2a_auth_failures_total", []string{"scheme", "key", "reason", "the API key is not valid"}, 1},
		{"caddy_a2a_auth_failures_total", []string{"scheme", "", "reason", "no credentials"}, 1},
	}
	var after map[string]*dto.MetricFamily
	for deadline := time.Now().Add(5 * time.Second); ; {
		after = scrape(t)
		all := true
		for _, c := range want {
			all = all && sample(after, c.name, c.labels...)-max(sample(before, c.name, c.labels...), 0) == c.delta
		}
		if all || time.Now().After(deadline) {
			break
		}
	}
	for _, c := range want {
		was, now := max(sample(before, c.name, c.labels...), 0), sample(after, c.name, c.labels...)
		if now-was != c.delta {
			t.Errorf("%s%v went from %v to %v; want +%v", c.name, c.labels, was, now, c.delta)
		}
	}
	if got := buckets(after, "caddy_a2a_task_duration_seconds", "skill", "weather"); !slices.Equal(got,
		[]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}) {
		t.Errorf("task duration buckets %v", got)
	}
	if got := buckets(after, "caddy_a2a_upstream_request_duration_seconds", "skill", "weather"); len(got) != 14 || got[0] != .001 {
		t.Errorf("upstream duration buckets %v", got)
	}
	if open, closed := sample(during, "caddy_a2a_open_streams"), sample(after, "caddy_a2a_open_streams"); open != closed+1 {
		t.Errorf("open streams: %v while one was open, %v after; want one more while open", open, closed)
	}
	if stored := sample(after, "caddy_a2a_stored_tasks"); stored < 3 {
		t.Errorf("stored tasks %v; want the 3 tasks made", stored)
	}

	// Reload with Caddy's tracing: the registry is new, the counts go on,
	// and the upstream continues the caller's trace under new spans.
	initServer(t, tester, config("\ttracing {\n\t\tspan caddy\n\t}"))
	_, r = call(key, "1.0", callersTrace, send("1.0", "weather", ""))
	if tk := decodeTask10(t, r.Result); tk.Status.State != "TASK_STATE_COMPLETED" {
		t.Fatalf("weather after the reload: %s", r.Result)
	}
	tp := <-traceparents
	if parts := strings.Split(tp, "-"); len(parts) != 4 || parts[1] != "4bf92f3577b34da6a3ce929d0e0e4736" || parts[2] == "00f067aa0ba902b7" {
		t.Errorf("with Caddy's tracing the upstream got traceparent %q; want the caller's trace id under a new span", tp)
	}
	// The request is counted once its answer is out: the scrape may come
	// first, so it is repeated for a while.
	name, labels := "caddy_a2a_requests_total", []string{"binding", "JSONRPC", "method", "SendMessage", "version", "1.0", "code", "ok"}
	was, now := sample(after, name, labels...), 0.0
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if now = sample(scrape(t), name, labels...); now == was+1 {
			break
		}
	}
	if now != was+1 {
		t.Errorf("across the reload %s went from %v to %v; want +1", name, was, now)
	}

	// The reload closed the access log: the A2A fields of the weather call
	// are in it, with the caller, and the API key is not.
	logged, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(logged), key) {
		t.Errorf("the access log holds the API key:\n%s", logged)
	}
	var found bool
	for line := range strings.Lines(string(logged)) {
		var entry struct {
			A2A    map[string]string `json:"a2a"`
			UserID string            `json:"user_id"`
		}
		if json.Unmarshal([]byte(line), &entry) != nil || entry.A2A["task_id"] != weatherTask.ID {
			continue
		}
		found = true
		want := map[string]string{"method": "SendMessage", "version": "1.0", "skill": "weather", "task_id": weatherTask.ID, "caller": "alice"}
		if !maps.Equal(entry.A2A, want) || entry.UserID != "alice" {
			t.Errorf("access log a2a %v, user_id %q; want %v and alice: %s", entry.A2A, entry.UserID, want, line)
		}
	}
	if !found {
		t.Errorf("no access log entry of task %s:\n%s", weatherTask.ID, logged)
	}
}
