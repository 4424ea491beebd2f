package caddymodule

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestUnmarshalCaddyfileREST(t *testing.T) {
	for _, tc := range []struct {
		input string
		want  *RESTConfig
		err   string
	}{
		{"a2a {\n rest /rest\n}", &RESTConfig{Path: "/rest"}, ""},
		{"a2a {\n rest /rest https://agent.example/a2a/rest\n}", &RESTConfig{Path: "/rest", URL: "https://agent.example/a2a/rest"}, ""},
		{"a2a {\n rest\n}", nil, "rest: want <path> [<url>], got 0 arguments"},
		{"a2a {\n rest /a /b /c\n}", nil, "rest: want <path> [<url>], got 3 arguments"},
	} {
		var h Handler
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want %q", tc.input, err, tc.err)
		case tc.err == "" && (err != nil || !reflect.DeepEqual(h.REST, tc.want)):
			t.Errorf("%q: %+v %v, want %+v", tc.input, h.REST, err, tc.want)
		}
	}
}

func TestValidateREST(t *testing.T) {
	for _, tc := range []struct {
		rest RESTConfig
		err  string
	}{
		{RESTConfig{Path: "/rest"}, ""},
		{RESTConfig{Path: "/"}, ""},
		{RESTConfig{}, "rest: path: the request path of the binding is required"},
		{RESTConfig{Path: "rest"}, "rest: path:"},
		{RESTConfig{Path: "/rest/"}, "rest: path:"},
		{RESTConfig{Path: "/rest", URL: "/rest"}, "rest: url: not an absolute http or https URL"},
	} {
		h := Handler{Skills: "s.yaml", URL: "https://agent.example/", Name: "n", Description: "d", REST: &tc.rest}
		err := h.Validate()
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%+v: %v, want %q", tc.rest, err, tc.err)
		}
	}
	h := Handler{URL: "https://agent.example/a2a/", REST: &RESTConfig{Path: "/rest"}}
	if got := h.restURL(); got != "https://agent.example/rest" {
		t.Errorf("default REST URL %q", got)
	}
}

// Through a real Caddy: the card lists the binding at its URL, and a
// message sent, streamed, read and listed over it reaches the upstream and
// its task is the one JSON-RPC sees.
func TestIntegrationREST(t *testing.T) {
	a := startAgent(t)
	a.loadWith(a.publicURL(), "REST", "rest /rest")
	base := fmt.Sprintf("http://localhost:%d", a.port)

	_, card := a.get(base+"/.well-known/agent-card.json", nil)
	if !strings.Contains(card, `{"url":"`+base+`/rest","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"}`) {
		t.Errorf("the card does not list the binding: %s", card)
	}

	rest := func(method, path, body string) (*http.Response, []byte) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, base+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("A2A-Version", "1.0")
		req.Header.Set("Content-Type", "application/a2a+json")
		resp, err := a.tester.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, raw
	}
	msg := `{"message":{"messageId":"m1","role":"ROLE_USER","metadata":{"skill":"weather"},"parts":[{"data":{"city":"Paris"}}]}}`
	resp, raw := rest("POST", "/rest/message:send", msg)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/a2a+json" {
		t.Fatalf("send: %d %s", resp.StatusCode, raw)
	}
	tk := decodeTask10(t, raw)
	if tk.Status.State != "TASK_STATE_COMPLETED" || tk.weatherData("Paris") == "" {
		t.Fatalf("send: %s", raw)
	}
	if resp, raw := rest("GET", "/rest/tasks/"+tk.ID, ""); resp.StatusCode != 200 || decodeTask(t, raw).ID != tk.ID {
		t.Errorf("get: %d %s", resp.StatusCode, raw)
	}
	if r := a.call("1.0", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"`+tk.ID+`"}}`); r.Error != nil {
		t.Errorf("JSON-RPC GetTask of the REST task: %+v", r.Error)
	}
	resp, raw = rest("GET", "/rest/tasks?pageSize=5", "")
	var list struct{ Tasks []task }
	if err := json.Unmarshal(raw, &list); resp.StatusCode != 200 || err != nil || len(list.Tasks) == 0 {
		t.Errorf("list: %d %s", resp.StatusCode, raw)
	}
	if resp, raw := rest("GET", "/rest/tasks/nope", ""); resp.StatusCode != 404 || !strings.Contains(string(raw), `"reason":"TASK_NOT_FOUND"`) {
		t.Errorf("unknown task: %d %s", resp.StatusCode, raw)
	}

	// The stream ends with the task, so its whole body can be read.
	resp, raw = rest("POST", "/rest/message:stream", strings.Replace(msg, `"m1"`, `"m2"`, 1))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, raw)
	}
	var events []string
	if err := readSSE(bytes.NewReader(raw), func(data []byte) bool { events = append(events, string(data)); return true }); err != nil {
		t.Fatal(err)
	}
	if len(events) < 2 || !strings.HasPrefix(events[0], `{"task":`) || !strings.Contains(events[len(events)-1], "TASK_STATE_COMPLETED") {
		t.Errorf("stream: %q", events)
	}
}
