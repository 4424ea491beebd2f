package dryrun_test

import (
	"context"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/tools/dryrun"
)

var update = flag.Bool("update", false, "rewrite the dry run's golden files")

// dryRunEnv is the environment the dry run's skills file reads; none of its
// values may show in a report.
var dryRunEnv = map[string]string{
	"DRY_API_KEY":       "key-1234secret",
	"DRY_QUERY_TOKEN":   "q/tok+en 9",
	"DRY_ORDER_TOKEN":   "order-token-77",
	"DRY_CLIENT_ID":     "dry-client",
	"DRY_CLIENT_SECRET": "dry-client-secret-5",
}

func dryRunOptions() mapping.Options {
	return mapping.Options{LookupEnv: func(name string) (string, bool) {
		v, ok := dryRunEnv[name]
		return v, ok
	}}
}

const dryRunDir = "testdata"

func TestDryRunGolden(t *testing.T) {
	tests := []struct {
		name      string
		skills    string // default skills.yaml
		message   string
		version   string
		responses []string
		mcp       bool // also the MCP view
	}{
		{name: "weather-by-predicate", message: "weather-text.json", responses: []string{"weather-200.yaml"}},
		{name: "weather-404-raw-http", message: "weather-text.json", version: "1.0", responses: []string{"weather-404.http"}},
		{name: "weather-no-response", message: "weather-text.json"},
		{name: "weather-missing-argument", message: "weather-missing.json"},
		{name: "order-steps-0.3", message: "order-03.json", responses: []string{"order-responses.yaml"}},
		{name: "order-second-response-missing", message: "order-03.json", responses: []string{"weather-200.yaml"}},
		{name: "flaky-retry", message: "flaky.json", responses: []string{"flaky-responses.yaml"}},
		{name: "avatar-file", message: "avatar.json", responses: []string{"avatar-200.yaml"}},
		{name: "avatar-output-modes", message: "avatar-json-only.json"},
		{name: "echo-message-stream", message: "echo-stream.json", responses: []string{"echo-200.yaml"}},
		{name: "no-skill", message: "unmatched.json"},
		{name: "unknown-skill", message: "unknown-skill.json"},
		{name: "agent-role", message: "agent-role.json"},
		{name: "only-skill", skills: "one-skill.yaml", message: "search.json", responses: []string{"echo-200.yaml"}},
		// The token endpoint is not asked: the request carries a stand-in
		// token, masked as every credential is.
		{name: "oauth2-token", skills: "oauth2.yaml", message: "search.json", responses: []string{"echo-200.yaml"}},
		{name: "job-polled", skills: "long-running.yaml", message: "report.json", responses: []string{"report-responses.yaml"}},
		{name: "job-samples-run-out", skills: "long-running.yaml", message: "report.json", responses: []string{"report-202.yaml"}},
		{name: "chat-streamed", skills: "long-running.yaml", message: "chat.json", responses: []string{"chat-200.yaml"}},
		{name: "mcp-weather", message: "weather-text.json", responses: []string{"weather-200.yaml"}, mcp: true},
		{name: "mcp-weather-404", message: "weather-text.json", version: "1.0", responses: []string{"weather-404.http"}, mcp: true},
		{name: "mcp-missing-argument", message: "weather-missing.json", mcp: true},
		{name: "mcp-avatar-file", message: "avatar.json", responses: []string{"avatar-200.yaml"}, mcp: true},
		{name: "mcp-echo-message", message: "echo-stream.json", responses: []string{"echo-200.yaml"}, mcp: true},
		{name: "mcp-no-skill", message: "unmatched.json", mcp: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(dryRunDir, tt.message))
			if err != nil {
				t.Fatal(err)
			}
			sample, err := dryrun.ParseSampleMessage(src, tt.version)
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, r := range tt.responses {
				paths = append(paths, filepath.Join(dryRunDir, r))
			}
			responses, err := dryrun.ReadSampleResponses(paths...)
			if err != nil {
				t.Fatal(err)
			}
			skills := tt.skills
			if skills == "" {
				skills = "skills.yaml"
			}
			rep, err := dryrun.Run(context.Background(), filepath.Join(dryRunDir, skills), dryRunOptions(),
				dryrun.Input{Sample: sample, Responses: responses, MCP: tt.mcp})
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tt.name, rep.String())
		})
	}
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	for k, v := range dryRunEnv {
		if strings.Contains(got, v) {
			t.Errorf("the report shows the value of %s", k)
		}
	}
	path := filepath.Join(dryRunDir, "golden", name+".txt")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestDryRun -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("the report differs from %s (go test -run TestDryRun -update rewrites it):\n%s", path, got)
	}
}

// A live dry run sends the requests to the upstream and reports its
// answers; the recorded request is what the upstream got.
func TestDryRunLive(t *testing.T) {
	var gotKey, gotPath string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey, gotPath = r.Header.Get("X-Api-Key"), r.URL.EscapedPath()
		w.Header().Set("Content-Type", "application/json")
		w.Header()["Date"] = nil // the report's golden file has none
		w.Write([]byte(`{"city": "São Paulo", "temperatureC": 26.1}`))
	}))
	defer up.Close()
	sample, err := dryrun.ParseSampleMessage([]byte(`{"role": "ROLE_USER", "messageId": "m",
		"parts": [{"data": {"city": "São Paulo"}}], "metadata": {"skill": "weather"}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	opts := dryRunOptions()
	opts.UpstreamURL = up.URL + "/v1"
	rep, err := dryrun.Run(context.Background(), filepath.Join(dryRunDir, "skills.yaml"), opts,
		dryrun.Input{Sample: sample, Live: true})
	if err != nil {
		t.Fatal(err)
	}
	if gotKey != dryRunEnv["DRY_API_KEY"] || gotPath != "/v1/weather/S%C3%A3o%20Paulo" {
		t.Errorf("the upstream got key %q, path %q", gotKey, gotPath)
	}
	if rep.Outcome == nil || rep.Outcome.State != a2a.TaskStateCompleted {
		t.Fatalf("outcome %+v, want completed", rep.Outcome)
	}
	checkGolden(t, "live", strings.ReplaceAll(rep.String(), up.URL, "http://upstream.test"))
}

func TestDryRunErrors(t *testing.T) {
	sample, err := dryrun.ParseSampleMessage([]byte(`{"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "x"}]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	skills := filepath.Join(dryRunDir, "skills.yaml")
	tests := []struct {
		name string
		path string
		opts mapping.Options
		in   dryrun.Input
		want string
	}{
		{"no message", skills, dryRunOptions(), dryrun.Input{}, "no message"},
		{"live and samples", skills, dryRunOptions(),
			dryrun.Input{Sample: sample, Live: true, Responses: []dryrun.SampleResponse{{Status: 200}}}, "exclude each other"},
		{"unset environment", skills, mapping.Options{LookupEnv: func(string) (string, bool) { return "", false }},
			dryrun.Input{Sample: sample}, "DRY_API_KEY"},
		{"missing file", filepath.Join(dryRunDir, "nope.yaml"), dryRunOptions(), dryrun.Input{Sample: sample}, "nope.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := dryrun.Run(context.Background(), tt.path, tt.opts, tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one that mentions %q", err, tt.want)
			}
		})
	}
}

func TestParseSampleMessage(t *testing.T) {
	tests := []struct {
		name, src, version string
		want               a2a.Version
		wantID             string
		wantErr            string
	}{
		{name: "1.0 message", src: `{"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "hi"}]}`, want: a2a.V10},
		{name: "0.3 message", src: `{"kind": "message", "role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "hi"}]}`, want: a2a.V03},
		{name: "0.3 by its parts", src: `{"messageId": "m", "parts": [{"kind": "text", "text": "hi"}]}`, want: a2a.V03,
			wantErr: "role"},
		{name: "1.0 params", src: `{"message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "hi"}]}}`, want: a2a.V10},
		{name: "0.3 request", src: `{"jsonrpc": "2.0", "id": "a", "method": "message/stream", "params": {"message":
			{"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "hi"}]}}}`, want: a2a.V03, wantID: `"a"`},
		{name: "1.0 request", src: `{"jsonrpc": "2.0", "id": 9, "method": "SendMessage", "params": {"message":
			{"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "hi"}]}}}`, want: a2a.V10, wantID: "9"},
		{name: "version given", src: `{"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "hi"}]}`,
			version: "1.0", wantErr: "params.message.role"},
		{name: "missing messageId", src: `{"role": "ROLE_USER", "parts": [{"text": "hi"}]}`, wantErr: "params.message.messageId"},
		{name: "not a send", src: `{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t"}}`, wantErr: "GetTask"},
		{name: "unknown method", src: `{"jsonrpc": "2.0", "id": 1, "method": "nope"}`, wantErr: `"nope"`},
		{name: "bad version", src: `{}`, version: "2.0", wantErr: "want 0.3 or 1.0"},
		{name: "not JSON", src: `hello`, wantErr: "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := dryrun.ParseSampleMessage([]byte(tt.src), tt.version)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one that mentions %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Version != tt.want || string(s.RequestID) != tt.wantID || s.Message.MessageID != "m" {
				t.Errorf("got version %s, id %s, message %+v", s.Version, s.RequestID, s.Message)
			}
		})
	}
}

func TestParseSampleResponses(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.png"), []byte("\x89PNG"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, src string
		want      []dryrun.SampleResponse
		wantErr   string
	}{
		{name: "defaults", src: `{}`, want: []dryrun.SampleResponse{{Status: 200, Header: http.Header{}}}},
		{name: "json body", src: "status: 201\nbody: {a: [1, 2.5]}",
			want: []dryrun.SampleResponse{{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"a":[1,2.5]}`)}}},
		{name: "text with its own type", src: "headers: {content-type: text/csv, X-Many: [a, b]}\ntext: \"a,b\"",
			want: []dryrun.SampleResponse{{Status: 200, Header: http.Header{"Content-Type": {"text/csv"}, "X-Many": {"a", "b"}}, Body: []byte("a,b")}}},
		{name: "base64", src: "base64: aGk=",
			want: []dryrun.SampleResponse{{Status: 200, Header: http.Header{"Content-Type": {"application/octet-stream"}}, Body: []byte("hi")}}},
		{name: "file", src: "file: a.png",
			want: []dryrun.SampleResponse{{Status: 200, Header: http.Header{"Content-Type": {"image/png"}}, Body: []byte("\x89PNG")}}},
		{name: "list", src: "- status: 404\n- status: 204",
			want: []dryrun.SampleResponse{{Status: 404, Header: http.Header{}}, {Status: 204, Header: http.Header{}}}},
		{name: "raw", src: "HTTP/1.1 418 I'm a teapot\r\nX-A: 1\r\nContent-Length: 99\r\n\r\nshort",
			want: []dryrun.SampleResponse{{Status: 418, Header: http.Header{"X-A": {"1"}}, Body: []byte("short")}}},
		{name: "unknown key", src: "stauts: 200", wantErr: `line 1: unknown key "stauts"`},
		{name: "two bodies", src: "text: a\nbase64: aGk=", wantErr: "give one of body, text, base64 and file"},
		{name: "bad status", src: "status: 99", wantErr: "status: must be an HTTP status"},
		{name: "bad base64", src: "base64: '%%'", wantErr: "must be base64"},
		{name: "missing file", src: "file: nope.bin", wantErr: "cannot read the file"},
		{name: "empty list", src: "[]", wantErr: "empty"},
		{name: "raw without status", src: "HTTP/1.1 OK\r\n\r\n", wantErr: "no HTTP status"},
		{name: "item in a list", src: "- status: 200\n- nope: 1", wantErr: "r.yaml[1]: line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := dryrun.ParseSampleResponses(filepath.Join(dir, "r.yaml"), []byte(tt.src))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one that mentions %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d responses, want %d", len(got), len(tt.want))
			}
			for i := range got {
				g, w := got[i], tt.want[i]
				if g.Status != w.Status || string(g.Body) != string(w.Body) || !equalHeader(g.Header, w.Header) || g.Source == "" {
					t.Errorf("response %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func equalHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, "\x00") != strings.Join(b[k], "\x00") {
			return false
		}
	}
	return true
}

// The dry run is served as the server serves a request: a skill's
// security is not checked (the dry run has no schemes), a request that
// asks for an answer at once still shows the outcome, and what the server
// refuses is refused.
func TestDryRunServes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "skills.yaml")
	skills := `upstream: {url: "http://api.test"}
skills:
  - id: secret
    description: For staff only.
    security: [staff]
    extended: true
    request: {path: /secret}
`
	if err := os.WriteFile(path, []byte(skills), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, message string
		want          []string
	}{
		{"security", `{"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "x"}]}`,
			[]string{"Outcome: completed", `"state": "TASK_STATE_COMPLETED"`}},
		{"at once", `{"message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "x"}]},
			"configuration": {"returnImmediately": true}}`,
			[]string{"the dry run waits for the outcome", "Outcome: completed"}},
		{"push config", `{"message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "x"}]},
			"configuration": {"taskPushNotificationConfig": {"url": "https://hook.test/"}}}`,
			[]string{"refuses the request before running anything (error -32003)", "Push Notification is not supported"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sample, err := dryrun.ParseSampleMessage([]byte(tt.message), "")
			if err != nil {
				t.Fatal(err)
			}
			rep, err := dryrun.Run(context.Background(), path, mapping.Options{},
				dryrun.Input{Sample: sample, Responses: []dryrun.SampleResponse{{Status: 200}}})
			if err != nil {
				t.Fatal(err)
			}
			out := rep.String()
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("the report lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
