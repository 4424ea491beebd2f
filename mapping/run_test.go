package mapping_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/mapping"
)

// answer is an upstream handler that answers status, content type and body.
func answer(status int, contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		} else {
			w.Header()["Content-Type"] = nil // no sniffing
		}
		w.Header().Set("X-Count", "3")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

const oneSkill = `upstream: {url: "http://ignored"}
skills:
  - id: a
    description: d
    request:
      path: /a
`

func TestDefaultResponse(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		state       a2a.TaskState
		part        a2a.Part // the artifact's one part; zero when no artifact
		message     string   // in the status message
	}{
		{"json", 200, "application/json; charset=utf-8", `{"city":"Paris","temperatureC":17}`, a2a.TaskStateCompleted,
			a2a.Part{Kind: a2a.PartData, Data: json.RawMessage(`{"city":"Paris","temperatureC":17}`)}, ""},
		{"json media type suffix", 201, "application/problem+json", `[1,2]`, a2a.TaskStateCompleted,
			a2a.Part{Kind: a2a.PartData, Data: json.RawMessage(`[1,2]`)}, ""},
		{"json without a content type", 200, "", `{"a":1}`, a2a.TaskStateCompleted,
			a2a.Part{Kind: a2a.PartData, Data: json.RawMessage(`{"a":1}`)}, ""},
		{"text", 200, "text/plain; charset=utf-8", "hello", a2a.TaskStateCompleted, a2a.TextPart("hello"), ""},
		{"html", 200, "text/html", "<p>hi</p>", a2a.TaskStateCompleted, a2a.Part{Kind: a2a.PartText, Text: "<p>hi</p>", MediaType: "text/html"}, ""},
		{"invalid json is text", 200, "application/json", "{oops", a2a.TaskStateCompleted,
			a2a.Part{Kind: a2a.PartText, Text: "{oops", MediaType: "application/json"}, ""},
		{"binary", 200, "image/png", "\x89PNG\x00\xff", a2a.TaskStateCompleted,
			a2a.Part{Kind: a2a.PartRaw, Raw: []byte("\x89PNG\x00\xff"), MediaType: "image/png"}, ""},
		{"no content", 204, "", "", a2a.TaskStateCompleted, a2a.Part{}, ""},
		{"not found", 404, "application/json", `{"error":"unknown city"}`, a2a.TaskStateFailed, a2a.Part{},
			`Skill "a" failed: the service answered HTTP 404 Not Found.`},
		{"server error", 500, "application/json", `{"error":"boom"}`, a2a.TaskStateFailed, a2a.Part{},
			`Skill "a" failed: the service answered HTTP 500 Internal Server Error.`},
		{"redirects are not followed", 302, "", "", a2a.TaskStateFailed, a2a.Part{},
			`Skill "a" failed: the service answered HTTP 302 Found.`},
		{"unknown status", 299, "", "", a2a.TaskStateCompleted, a2a.Part{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := answer(tt.status, tt.contentType, tt.body)
			if tt.status == 302 {
				h = func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) }
			}
			srv, _ := recorder(t, h)
			out := runSkill(t, load(t, oneSkill, srv.URL, mapping.Options{}), message("", nil, ""))
			if out.State != tt.state {
				t.Fatalf("state %v (%v), want %v", out.State, out.Err, tt.state)
			}
			if tt.part.Kind == 0 {
				if len(out.Artifacts) != 0 {
					t.Errorf("artifacts %+v; want none", out.Artifacts)
				}
			} else if len(out.Artifacts) != 1 || !reflect.DeepEqual(out.Artifacts[0].Parts, []a2a.Part{tt.part}) {
				t.Errorf("artifacts %+v\nwant one with %+v", out.Artifacts, tt.part)
			}
			if got := messageText(out); got != tt.message {
				t.Errorf("message %q, want %q", got, tt.message)
			}
			if strings.Contains(messageText(out), "127.0.0.1") {
				t.Errorf("the message shows the upstream's address: %q", messageText(out))
			}
			if (tt.state == a2a.TaskStateFailed) != (out.Err != nil) {
				t.Errorf("Err = %v", out.Err)
			}
			// The task manager gives the message its id.
			if out.Message != nil && (out.Message.Role != a2a.RoleAgent || out.Message.TaskID != "task-1" ||
				out.Message.ContextID != "ctx-1" || out.Message.MessageID != "") {
				t.Errorf("message envelope %+v", out.Message)
			}
		})
	}
}

func TestResponseRules(t *testing.T) {
	src := `upstream: {url: "http://ignored"}
skills:
  - id: rules
    description: d
    request:
      path: /r
    response:
      - when: response.status == 200 && response.body.ok
        state: completed
        message: "ok, {response.headers['x-count']} items, {response.body.items}"
        artifacts:
          - name: items
            description: the items
            data: response.body.items
          - name: first
            text: "first={response.body.items[0]}"
          - name: nothing
            data: response.body.missing
      - when: response.status == 200
        state: input-required
        message: "{response.text}"
      - when: response.status == 401
        state: auth-required
      - when: response.status == 409
        state: rejected
        message: "conflict: {response.body.error}"
      - when: response.status == 418
        state: failed
        message: "teapot: {response.body.error.detail}{response.body.list[0].name}{args.a.b.c}"
  - id: whole
    description: d
    request:
      path: /w
    response:
      - state: completed
        artifacts:
          - data: '{"status": response.status, "type": response.headers["content-type"]}'
`
	tests := []struct {
		name    string
		skill   string
		upsteam http.HandlerFunc
		state   a2a.TaskState
		message string
		arts    []a2a.Artifact // ids are ignored
	}{
		{"first rule", "rules", answer(200, "application/json", `{"ok":true,"items":[1,2]}`), a2a.TaskStateCompleted,
			"ok, 3 items, [1,2]", []a2a.Artifact{
				{Name: "items", Description: "the items", Parts: []a2a.Part{a2a.DataPart(json.RawMessage(`[1,2]`))}},
				{Name: "first", Parts: []a2a.Part{a2a.TextPart("first=1")}},
			}},
		{"second rule", "rules", answer(200, "text/plain", `not json`), a2a.TaskStateInputRequired, "not json", nil},
		{"a rule with no message", "rules", answer(401, "", ``), a2a.TaskStateAuthRequired, `Skill "rules" needs authorization.`, nil},
		{"rejected", "rules", answer(409, "application/json", `{"error":"taken"}`), a2a.TaskStateRejected, "conflict: taken", nil},
		{"reading into null gives null", "rules", answer(418, "text/html", `<h1>teapot</h1>`), a2a.TaskStateFailed, "teapot: ", nil},
		{"no rule matches", "rules", answer(503, "", ``), a2a.TaskStateFailed,
			`Skill "rules" failed: the service answered HTTP 503 Service Unavailable.`, nil},
		{"response as a whole", "whole", answer(202, "text/plain", `x`), a2a.TaskStateCompleted, "", []a2a.Artifact{
			{Parts: []a2a.Part{a2a.DataPart(json.RawMessage(`{"status":202,"type":"text/plain"}`))}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := recorder(t, tt.upsteam)
			out := runSkill(t, load(t, src, srv.URL, mapping.Options{}), message(tt.skill, nil, ""))
			if out.State != tt.state || messageText(out) != tt.message {
				t.Fatalf("state %v, message %q (%v); want %v, %q", out.State, messageText(out), out.Err, tt.state, tt.message)
			}
			// tt.arts have no ids: the task manager gives them.
			if !reflect.DeepEqual(out.Artifacts, tt.arts) {
				t.Errorf("artifacts %+v\nwant %+v", out.Artifacts, tt.arts)
			}
		})
	}
}

func TestReturnsMessage(t *testing.T) {
	srv, _ := recorder(t, answer(200, "application/json", `{"a":1}`))
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - id: rules
    description: d
    returns: message
    request: {path: /r}
    response:
      - when: response.status == 200
        state: completed
        message: got it
        artifacts:
          - data: response.body
  - id: default
    description: d
    returns: message
    request: {path: /d}
`, srv.URL, mapping.Options{})

	out := runSkill(t, s, message("rules", nil, ""))
	want := []a2a.Part{a2a.TextPart("got it"), a2a.DataPart(json.RawMessage(`{"a":1}`))}
	if out.State != a2a.TaskStateCompleted || len(out.Artifacts) != 0 || out.Message == nil || !reflect.DeepEqual(out.Message.Parts, want) {
		t.Errorf("rules: %+v; want a message with %+v", out, want)
	}
	out = runSkill(t, s, message("default", nil, ""))
	want = []a2a.Part{{Kind: a2a.PartData, Data: json.RawMessage(`{"a":1}`)}}
	if out.State != a2a.TaskStateCompleted || len(out.Artifacts) != 0 || out.Message == nil || !reflect.DeepEqual(out.Message.Parts, want) {
		t.Errorf("default: %+v; want a message with %+v", out, want)
	}
}

// progressFunc implements mapping.Progress.
type progressFunc func(*a2a.Message)

func (f progressFunc) Working(m *a2a.Message) { f(m) }
func (f progressFunc) Artifact(a2a.Artifact, bool, bool) (string, error) {
	return "", nil
}

func TestEnvironment(t *testing.T) {
	srv, ch := recorder(t, nil)
	s := load(t, `upstream: {url: "http://ignored"}
config:
  unit: metric
  limit: 5
skills:
  - id: env
    description: d
    config:
      limit: 10
    working_message: "Looking up {args.city} for {caller.subject}…"
    request:
      path: /env
      query:
        text: "{message.text}"
        kinds: "{map(message.parts, .kind)}"
        meta: "{message.metadata.trace}"
        data: "{message.data.city}"
        sub: "{caller.subject}"
        admin: "{'admin' in caller.scopes}"
        claim: "{caller.claims.tenant}"
        unit: "{config.unit}"
        limit: "{config.limit}"
        task: "{task.id}"
        ctx: "{task.context_id}"
`, srv.URL, mapping.Options{})

	msg := &a2a.Message{Metadata: map[string]any{"trace": "t1"}, Parts: []a2a.Part{
		a2a.TextPart("hello"), a2a.DataPart(map[string]any{"city": "Paris", "n": 1.0}), a2a.TextPart("world"),
		{Kind: a2a.PartData, Data: json.RawMessage(`{"n": 2}`)}, {Kind: a2a.PartURL, URL: "https://x/y.png", MediaType: "image/png"},
	}}
	var working []string
	progress := progressFunc(func(m *a2a.Message) { working = append(working, m.Parts[0].Text) })
	out := s.All()[0].Run(t.Context(), mapping.Call{Message: msg, TaskID: "t-1", ContextID: "c-1",
		Caller: mapping.Caller{Subject: "bob", Scopes: []string{"admin"}, Claims: map[string]any{"tenant": "acme"}}}, progress)
	if out.State != a2a.TaskStateCompleted {
		t.Fatalf("state %v: %v", out.State, out.Err)
	}
	want := "/env?text=hello%0Aworld&kinds=text&kinds=data&kinds=text&kinds=data&kinds=url&meta=t1&data=Paris" +
		"&sub=bob&admin=true&claim=acme&unit=metric&limit=10&task=t-1&ctx=c-1"
	if got := received(t, ch).RequestURI; got != want {
		t.Errorf("upstream saw\n%s\nwant\n%s", got, want)
	}
	if len(working) != 1 || working[0] != "Looking up Paris for bob…" {
		t.Errorf("working messages %q", working)
	}
}

func TestArgumentsMerge(t *testing.T) {
	srv, ch := recorder(t, nil)
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - id: a
    description: d
    request:
      path: /a
      body: args
`, srv.URL, mapping.Options{})
	msg := &a2a.Message{Parts: []a2a.Part{
		a2a.DataPart(map[string]any{"a": 1.0, "b": 1.0}), a2a.DataPart([]any{"not", "an", "object"}),
		{Kind: a2a.PartData, Data: json.RawMessage(`{"b": 2, "c": 3}`)},
	}}
	runSkill(t, s, msg)
	if got := received(t, ch).Body; got != `{"a":1,"b":2,"c":3}` {
		t.Errorf("args = %s", got)
	}
	if a, ok := msg.Parts[0].Data.(map[string]any); !ok || len(a) != 2 {
		t.Errorf("merging modified the message's first data part: %v", msg.Parts[0].Data)
	}
}

func TestExpressionErrorsFail(t *testing.T) {
	srv, ch := recorder(t, answer(200, "application/json", `{"items":[]}`))
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - id: modulo
    description: d
    request:
      path: /m
      query:
        x: "{args.a % args.b}"
  - id: index
    description: d
    request:
      path: /i
    response:
      - state: completed
        message: "{response.body.items[5] + 1}"
`, srv.URL, mapping.Options{})

	out := runSkill(t, s, message("modulo", map[string]any{"a": 1, "b": 0}, ""))
	noRequest(t, ch)
	var re *mapping.RunError
	if out.State != a2a.TaskStateFailed || !errors.As(out.Err, &re) || re.Skill != "modulo" || re.Stage != "request" {
		t.Errorf("modulo: state %v, err %#v", out.State, out.Err)
	}
	if !strings.Contains(out.Err.Error(), `skill "modulo"`) || !strings.Contains(out.Err.Error(), "divide by zero") {
		t.Errorf("modulo: err %v", out.Err)
	}
	// The caller is told the expression's error and where, on one line.
	if got := messageText(out); got != `Skill "modulo" could not build its request: runtime error: integer divide by zero (1:8) in args.a % args.b.` {
		t.Errorf("modulo: message %q", got)
	}
	// The agent failed, not the service: its message says so.
	if !mapping.AgentFault(out.Message) {
		t.Errorf("modulo: the message does not say the agent failed: %+v", out.Message.Metadata)
	}

	out = runSkill(t, s, message("index", nil, ""))
	if out.State != a2a.TaskStateFailed || !errors.As(out.Err, &re) || re.Skill != "index" || re.Stage != "response" {
		t.Errorf("index: state %v, err %v", out.State, out.Err)
	}
	if got := messageText(out); got != `Skill "index" could not read the service's answer: response rule 1: message: index out of range: 5 (array length is 0) (1:20) in response.body.items[5] + 1.` {
		t.Errorf("index: message %q", got)
	}
	if !mapping.AgentFault(out.Message) {
		t.Errorf("index: the message does not say the agent failed: %+v", out.Message.Metadata)
	}
}

// A service that answers an error fails the task without the agent's
// fault: MCP reports it as the tool's error, not a protocol error.
func TestServiceFailureIsNoAgentFault(t *testing.T) {
	srv, _ := recorder(t, answer(500, "text/plain", "down"))
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - id: a
    description: d
    request: {path: /a}
`, srv.URL, mapping.Options{})
	out := runSkill(t, s, message("a", nil, ""))
	if out.State != a2a.TaskStateFailed || mapping.AgentFault(out.Message) {
		t.Errorf("state %v, agent fault %v; want failed, not the agent's fault", out.State, mapping.AgentFault(out.Message))
	}
}

func TestRunNeverPanics(t *testing.T) {
	srv, _ := recorder(t, nil)
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - id: a
    description: d
    working_message: working
    request: {path: /a}
`, srv.URL, mapping.Options{})
	boom := progressFunc(func(*a2a.Message) { panic("progress exploded") })
	out := s.All()[0].Run(t.Context(), mapping.Call{Message: message("", nil, "")}, boom)
	if out.State != a2a.TaskStateFailed || out.Err == nil || !strings.Contains(out.Err.Error(), `skill "a"`) ||
		!strings.Contains(out.Err.Error(), "progress exploded") {
		t.Errorf("state %v, err %v", out.State, out.Err)
	}
	if got := messageText(out); got != `Skill "a" failed unexpectedly.` {
		t.Errorf("message %q", got)
	}
	if !mapping.AgentFault(out.Message) {
		t.Errorf("a panic is not the agent's fault: %+v", out.Message.Metadata)
	}
	// A nil message is no reason to panic either.
	if out := s.All()[0].Run(t.Context(), mapping.Call{}, nil); out.State != a2a.TaskStateCompleted {
		t.Errorf("nil message: state %v, %v", out.State, out.Err)
	}
}

func TestTimeout(t *testing.T) {
	srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - id: slow
    description: d
    timeout: 50ms
    request: {path: /slow}
`, srv.URL, mapping.Options{})
	out := runSkill(t, s, message("", nil, ""))
	if out.State != a2a.TaskStateFailed || !errors.Is(out.Err, context.DeadlineExceeded) {
		t.Errorf("state %v, err %v", out.State, out.Err)
	}
	if got := messageText(out); got != `Skill "slow" timed out: the service did not answer within 50ms.` {
		t.Errorf("message %q", got)
	}
}

func TestTimeoutWhileReadingTheBody(t *testing.T) {
	srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"partial":`))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - id: slow
    description: d
    timeout: 50ms
    request: {path: /slow}
`, srv.URL, mapping.Options{})
	out := runSkill(t, s, message("", nil, ""))
	if out.State != a2a.TaskStateFailed || !strings.Contains(messageText(out), "did not answer within 50ms") {
		t.Errorf("state %v, message %q, err %v", out.State, messageText(out), out.Err)
	}
}

func TestCancellationReachesTheUpstream(t *testing.T) {
	started, canceled := make(chan struct{}), make(chan struct{})
	srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
		close(canceled)
	})
	s := load(t, oneSkill, srv.URL, mapping.Options{})
	ctx, cancel := context.WithCancelCause(t.Context())
	done := make(chan mapping.Outcome, 1)
	go func() { done <- s.All()[0].Run(ctx, mapping.Call{Message: message("", nil, "")}, nil) }()

	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("gave up waiting for %s", what)
		}
	}
	wait(started, "the upstream to get the request")
	cancel(errors.New("client canceled the task"))
	wait(canceled, "the upstream to see its request canceled")
	var out mapping.Outcome
	select {
	case out = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context was canceled")
	}
	if out.State != a2a.TaskStateCanceled || !strings.Contains(out.Err.Error(), "client canceled the task") {
		t.Errorf("state %v, err %v", out.State, out.Err)
	}
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := load(t, oneSkill, "http://"+addr, mapping.Options{})
	out := runSkill(t, s, message("", nil, ""))
	if out.State != a2a.TaskStateFailed || messageText(out) != `Skill "a" failed: the service is unavailable.` {
		t.Errorf("state %v, message %q", out.State, messageText(out))
	}
	var re *mapping.RunError
	if !errors.As(out.Err, &re) || re.Stage != "upstream" || !strings.Contains(out.Err.Error(), "refused") {
		t.Errorf("err %v", out.Err)
	}
}

func TestResponseCap(t *testing.T) {
	src := `upstream: {url: "http://ignored"}
skills:
  - id: a
    description: d
    max_response_bytes: 1KiB
    request: {path: /a}
`
	tests := []struct {
		name    string
		size    int
		chunked bool
		ok      bool
	}{
		{"at the limit", 1024, false, true},
		{"at the limit, chunked", 1024, true, true},
		{"over the limit", 1025, false, false},
		{"over the limit, chunked", 4000, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := strings.Repeat("x", tt.size)
			srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				if !tt.chunked {
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				}
				for i := 0; i < len(body); i += 100 {
					io.WriteString(w, body[i:min(i+100, len(body))])
					w.(http.Flusher).Flush()
				}
			})
			out := runSkill(t, load(t, src, srv.URL, mapping.Options{}), message("", nil, ""))
			if tt.ok {
				if out.State != a2a.TaskStateCompleted || out.Artifacts[0].Parts[0].Text != body {
					t.Errorf("state %v (%v)", out.State, out.Err)
				}
				return
			}
			if out.State != a2a.TaskStateFailed || messageText(out) != `Skill "a" failed: the service's answer is larger than the limit of 1 KiB.` {
				t.Errorf("state %v, message %q", out.State, messageText(out))
			}
		})
	}
}

func TestSelect(t *testing.T) {
	two := load(t, `upstream: {url: "http://ignored"}
skills:
  - {id: weather, description: d, request: {path: /w}}
  - {id: user, description: d, request: {path: /u}}
`, "http://127.0.0.1:1", mapping.Options{})
	one := load(t, oneSkill, "http://127.0.0.1:1", mapping.Options{})

	tests := []struct {
		name   string
		s      *mapping.Skills
		msg    *a2a.Message
		want   string // the skill id, or "" for a SelectionError
		errMsg string
	}{
		{"named", two, message("user", nil, ""), "user", ""},
		{"the only skill", one, message("", nil, "hi"), "a", ""},
		{"the only skill, named", one, message("a", nil, ""), "a", ""},
		{"nil message, one skill", one, nil, "a", ""},
		{"not named", two, message("", nil, "hi"), "",
			`the message does not say which skill it is for; the skills are: weather, user. Name one in the message metadata, e.g. "metadata": {"skill": "weather"}`},
		{"unknown", two, message("nope", nil, ""), "",
			`there is no skill "nope"; the skills are: weather, user.`},
		{"unknown, even with one skill", one, message("nope", nil, ""), "", `there is no skill "nope"; the skills are: a.`},
		{"not a string", two, &a2a.Message{Metadata: map[string]any{"skill": 3.0}}, "", `there is no skill "3"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sk, serr := tt.s.Select(tt.msg)
			if tt.want != "" {
				if serr != nil || sk.ID != tt.want {
					t.Fatalf("got %v, %v; want %s", sk, serr, tt.want)
				}
				return
			}
			if serr == nil || !strings.Contains(serr.Error(), tt.errMsg) {
				t.Fatalf("error %v; want %q", serr, tt.errMsg)
			}
		})
	}
}

func TestKeepAlive(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(answer(200, "application/json", `{"ok":true}`))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	s := load(t, oneSkill, srv.URL, mapping.Options{})
	for range 5 {
		if out := runSkill(t, s, message("", nil, "")); out.State != a2a.TaskStateCompleted {
			t.Fatalf("state %v: %v", out.State, out.Err)
		}
	}
	s.Close()
	srv.Close()
	if n := conns.Load(); n != 1 {
		t.Errorf("5 sequential calls used %d connections; want 1", n)
	}
}

func TestConcurrentRuns(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"path": r.URL.Path})
	}))
	defer srv.Close()
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - id: a
    description: d
    request: {path: "/items/{args.n}"}
    response:
      - when: response.status == 200
        state: completed
        message: "{args.n} {response.body.path}"
`, srv.URL, mapping.Options{})
	const goroutines, runs = 8, 25
	errs := make(chan string, goroutines*runs)
	done := make(chan struct{})
	for g := range goroutines {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range runs {
				n := strconv.Itoa(g*runs + i)
				out := s.All()[0].Run(t.Context(), mapping.Call{Message: message("", map[string]any{"n": n}, "")}, nil)
				if got, want := messageText(out), n+" /items/"+n; got != want {
					errs <- fmt.Sprintf("got %q, want %q (%v)", got, want, out.Err)
				}
			}
		}()
	}
	for range goroutines {
		<-done
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
