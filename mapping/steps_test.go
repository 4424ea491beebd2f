package mapping_test

import (
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/mapping"
)

func TestMultipartBody(t *testing.T) {
	srv, ch := recorder(t, nil)
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - id: upload
    description: d
    arguments:
      image: {type: file, required: true}
      title: string
    request:
      method: POST
      path: /upload
      body_format: multipart
      body: '{"file": args.image, "title": args.title, "tags": ["a", "b"], "n": 3, "skip": nil}'
  - id: bad
    description: d
    arguments:
      v: object
    request:
      method: POST
      path: /bad
      body_format: multipart
      body: '{"v": args.v}'
`, srv.URL, mapping.Options{})

	png := a2a.Part{Kind: a2a.PartRaw, Raw: []byte("\x89PNG\r\n"), MediaType: "image/png", Filename: `a "b".png`}
	msg := &a2a.Message{MessageID: "m", Role: a2a.RoleUser, Metadata: map[string]any{"skill": "upload"},
		Parts: []a2a.Part{png, a2a.DataPart(map[string]any{"title": "Hi"})}}
	out := runSkill(t, s, msg)
	if out.State != a2a.TaskStateCompleted {
		t.Fatalf("state %v (%v)", out.State, out.Err)
	}
	got := received(t, ch)
	mt, params, err := mime.ParseMediaType(got.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		t.Fatalf("Content-Type %q", got.Header.Get("Content-Type"))
	}
	r := multipart.NewReader(strings.NewReader(got.Body), params["boundary"])
	var parts []string
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p)
		parts = append(parts, p.FormName()+"|"+p.FileName()+"|"+p.Header.Get("Content-Type")+"|"+string(b))
	}
	want := []string{"file|a \"b\".png|image/png|\x89PNG\r\n", "n|||3", "tags|||a", "tags|||b", "title|||Hi"}
	if strings.Join(parts, "\n") != strings.Join(want, "\n") {
		t.Errorf("parts\n%q\nwant\n%q", parts, want)
	}

	for _, tt := range []struct {
		name  string
		msg   *a2a.Message
		state a2a.TaskState
		text  string
	}{
		{"a file by URL", &a2a.Message{Metadata: map[string]any{"skill": "upload"}, Parts: []a2a.Part{{Kind: a2a.PartURL, URL: "https://x/y.png"}}},
			a2a.TaskStateRejected, `Skill "upload" cannot use this input: the file file is given by URL only: a multipart body needs its bytes.`},
		{"a map that is not a file", message("bad", map[string]any{"v": map[string]any{"k": 1.0}}, ""),
			a2a.TaskStateRejected, `the multipart field v holds a map that is not a file (a file has bytes)`},
		{"bytes that are not bytes", message("bad", map[string]any{"v": map[string]any{"bytes": []any{}}}, ""),
			a2a.TaskStateRejected, `the multipart field v holds a map that is not a file`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := runSkill(t, s, tt.msg)
			noRequest(t, ch)
			if out.State != tt.state || !strings.Contains(messageText(out), tt.text) {
				t.Errorf("state %v, message %q (%v)", out.State, messageText(out), out.Err)
			}
		})
	}
}

func TestFormBody(t *testing.T) {
	srv, ch := recorder(t, nil)
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - id: form
    description: d
    request:
      method: POST
      path: /form
      body_format: form
      body: '{"q": args.q, "tag": ["x", "y z"], "none": nil}'
`, srv.URL, mapping.Options{})
	runSkill(t, s, message("", map[string]any{"q": "a&b=c"}, ""))
	got := received(t, ch)
	if got.Body != "q=a%26b%3Dc&tag=x&tag=y+z" || got.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		t.Errorf("body %q, type %q", got.Body, got.Header.Get("Content-Type"))
	}
}

// twoSteps looks a user up, then places an order in their name.
const twoSteps = `upstream: {url: "http://ignored"}
skills:
  - id: order_for
    description: d
    arguments:
      user: {type: integer, required: true}
      item: {type: string, required: true}
    steps:
      - name: lookup
        request:
          path: /users/{args.user}
        response:
          - when: response.status == 404
            state: rejected
            message: There is no user {args.user}.
      - name: order
        request:
          method: POST
          path: /orders
          headers:
            X-User: "{steps.lookup.body.email}"
          body: '{"item": args.item, "for": steps.lookup.body.name}'
    response:
      - when: response.status == 201
        state: completed
        message: Order {response.body.id} for {steps.lookup.body.name} ({steps.order.status}).
`

func TestSteps(t *testing.T) {
	srv, ch := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/users/1":
			io.WriteString(w, `{"name": "Ada", "email": "ada@example.com"}`)
		case r.URL.Path == "/users/5":
			w.WriteHeader(500)
		case r.URL.Path == "/orders":
			w.WriteHeader(201)
			io.WriteString(w, `{"id": "o-1"}`)
		default:
			w.WriteHeader(404)
		}
	})
	s := load(t, twoSteps, srv.URL, mapping.Options{})

	out := runSkill(t, s, message("", map[string]any{"user": 1.0, "item": "tea"}, ""))
	if out.State != a2a.TaskStateCompleted || messageText(out) != "Order o-1 for Ada (201)." {
		t.Fatalf("state %v, message %q (%v)", out.State, messageText(out), out.Err)
	}
	if got := received(t, ch); got.RequestURI != "/users/1" || got.Method != "GET" {
		t.Errorf("first call %s %s", got.Method, got.RequestURI)
	}
	got := received(t, ch)
	if got.RequestURI != "/orders" || got.Body != `{"for":"Ada","item":"tea"}` || got.Header.Get("X-User") != "ada@example.com" {
		t.Errorf("second call %s %s %s %v", got.Method, got.RequestURI, got.Body, got.Header)
	}

	out = runSkill(t, s, message("", map[string]any{"user": 2.0, "item": "tea"}, ""))
	if out.State != a2a.TaskStateRejected || messageText(out) != "There is no user 2." {
		t.Errorf("a step's rule: state %v, message %q", out.State, messageText(out))
	}
	received(t, ch)
	noRequest(t, ch)

	out = runSkill(t, s, message("", map[string]any{"user": 5.0, "item": "tea"}, ""))
	if out.State != a2a.TaskStateFailed || messageText(out) != `Skill "order_for" failed: the service answered HTTP 500 Internal Server Error.` {
		t.Errorf("a step's error: state %v, message %q", out.State, messageText(out))
	}
	received(t, ch)
	noRequest(t, ch)
}

func TestStepErrors(t *testing.T) {
	head := "upstream: {url: \"http://ignored\"}\nskills:\n  - id: a\n    description: d\n"
	tests := []struct{ name, yaml, want string }{
		{"a later step", "    steps:\n      - name: one\n        request: {path: '/a/{steps.two.status}'}\n      - name: two\n        request: {path: /b}\n",
			`t.yaml:7: skill "a": steps[0].request.path: steps.two is not a step whose answer is known here (known: none)`},
		{"an unknown step in the response", "    steps:\n      - name: one\n        request: {path: /a}\n    response:\n      - when: steps.uno.status == 200\n        state: completed\n",
			`response[0].when: steps.uno is not a step whose answer is known here (known: one)`},
		{"steps without steps", "    request: {path: /a}\n    response:\n      - when: steps.x.status == 200\n        state: completed\n",
			`response[0].when: steps.x is not a step whose answer is known here (known: none)`},
		{"a repeated name", "    steps:\n      - {name: one, request: {path: /a}}\n      - {name: one, request: {path: /b}}\n",
			`t.yaml:7: skill "a": steps[1].name: repeated step name "one"`},
		{"no name", "    steps:\n      - request: {path: /a}\n", `t.yaml:6: skill "a": steps[0].name: is required`},
		{"no request", "    steps:\n      - name: one\n", `steps[0].request: is required`},
		{"request and steps", "    request: {path: /a}\n    steps:\n      - {name: one, request: {path: /a}}\n",
			`steps: and request are two ways to say the same: give one`},
		{"rules on the last step", "    steps:\n      - name: one\n        request: {path: /a}\n        response:\n          - state: completed\n",
			`steps[0].response: the last step's answer is mapped by the skill's response rules`},
		{"a bad request in a step", "    steps:\n      - {name: one, request: {path: a}}\n", `steps[0].request.path: must start with /`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mapping.Parse("t.yaml", []byte(head+tt.yaml), mapping.Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v\nwant %q", err, tt.want)
			}
		})
	}
}

func TestRetries(t *testing.T) {
	src := `upstream: {url: "http://ignored"}
skills:
  - id: get
    description: d
    request:
      path: /r
      retry: {attempts: 3, backoff: 1ms}
  - id: put
    description: d
    request:
      method: PUT
      path: /r
      body: '{"a": 1}'
      retry: {attempts: 2, backoff: 1ms, statuses: [500]}
  - id: once
    description: d
    request:
      path: /r
  - id: patient
    description: d
    timeout: 10s
    request:
      path: /r
      retry: {attempts: 2, backoff: 1ms, max_backoff: 2ms}
  - id: hurried
    description: d
    timeout: 200ms
    request:
      path: /r
      retry: {attempts: 2, backoff: 1s}
`
	tests := []struct {
		name     string
		skill    string
		failures int    // answers before a 200
		status   int    // of the failing answers
		header   string // Retry-After of the failing answers
		drop     bool   // fail by closing the connection instead
		calls    int
		state    a2a.TaskState
	}{
		{"two 503s, then 200", "get", 2, 503, "", false, 3, a2a.TaskStateCompleted},
		{"three 503s: out of attempts", "get", 3, 503, "", false, 3, a2a.TaskStateFailed},
		{"a status not listed", "get", 1, 500, "", false, 1, a2a.TaskStateFailed},
		{"a listed status on a PUT, body resent", "put", 1, 500, "", false, 2, a2a.TaskStateCompleted},
		{"a dropped connection", "get", 1, 0, "", true, 2, a2a.TaskStateCompleted},
		{"no retry unless asked", "once", 1, 503, "", false, 1, a2a.TaskStateFailed},
		{"Retry-After is capped by max_backoff", "patient", 1, 503, "3600", false, 2, a2a.TaskStateCompleted},
		{"no wait past the deadline", "hurried", 1, 503, "", false, 1, a2a.TaskStateFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			srv, ch := recorder(t, func(w http.ResponseWriter, r *http.Request) {
				if int(calls.Add(1)) <= tt.failures {
					if tt.drop {
						conn, _, _ := w.(http.Hijacker).Hijack()
						conn.Close()
						return
					}
					if tt.header != "" {
						w.Header().Set("Retry-After", tt.header)
					}
					w.WriteHeader(tt.status)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"ok":true}`)
			})
			start := time.Now()
			out := runSkill(t, load(t, src, srv.URL, mapping.Options{}), message(tt.skill, nil, ""))
			if out.State != tt.state || int(calls.Load()) != tt.calls {
				t.Fatalf("state %v after %d calls (%v, %q); want %v after %d", out.State, calls.Load(), out.Err, messageText(out), tt.state, tt.calls)
			}
			if tt.skill == "put" {
				for range tt.calls {
					if got := received(t, ch); got.Body != `{"a":1}` {
						t.Errorf("body %q", got.Body)
					}
				}
			}
			if tt.skill == "hurried" && !strings.Contains(messageText(out), "HTTP 503") {
				t.Errorf("message %q: want the 503 it got", messageText(out))
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestRetryErrors(t *testing.T) {
	head := "upstream: {url: \"http://ignored\"}\nskills:\n  - id: a\n    description: d\n    request:\n      path: /a\n"
	tests := []struct{ name, yaml, want string }{
		{"a POST", "      method: POST\n      retry: {attempts: 2}\n", `t.yaml:8: skill "a": request.retry: a POST sent twice may be applied twice: it is sent again only with an idempotency_key the service honours, or with idempotent: true when that does no harm (GET, HEAD, PUT, DELETE, OPTIONS are idempotent)`},
		{"a PATCH", "      method: PATCH\n      retry: {attempts: 2}\n", `request.retry: a PATCH sent twice may be applied twice`},
		{"no attempts", "      retry: {backoff: 1s}\n", `t.yaml:7: skill "a": request.retry.attempts: is required`},
		{"too many attempts", "      retry: {attempts: 50}\n", `request.retry.attempts: must be at most 10, not 50`},
		{"a bad status", "      retry: {attempts: 2, statuses: [200]}\n", `request.retry.statuses[0]: must be an HTTP status from 400 to 599, not "200"`},
		{"a bad backoff", "      retry: {attempts: 2, backoff: soon}\n", `request.retry.backoff: must be a positive duration`},
		{"an unknown key", "      retry: {attempts: 2, jitter: true}\n", `request.retry.jitter: unknown key`},
		{"multipart with a Content-Type", "      method: POST\n      body_format: multipart\n      headers: {Content-Type: text/plain}\n",
			`request.headers.Content-Type: is set by body_format multipart`},
		{"a bad body format", "      body_format: xml\n", `request.body_format: must be json, form or multipart, not "xml"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mapping.Parse("t.yaml", []byte(head+tt.yaml), mapping.Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v\nwant %q", err, tt.want)
			}
		})
	}
}
