package mapping_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/mapping"
)

// defaultKeyForm is the agent's own key: a quoted UUID, as the draft's
// examples send it.
var defaultKeyForm = regexp.MustCompile(`^"[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"$`)

// failingFirst answers 503 to the first n requests, then 201.
func failingFirst(n int32) http.HandlerFunc {
	var count atomic.Int32
	return func(w http.ResponseWriter, r *http.Request) {
		if count.Add(1) <= n {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		jsonAnswer(w, http.StatusCreated, `{"id": 1}`)
	}
}

// keys are the Idempotency-Key headers of the requests ch got, "-" for a
// request without one.
func keys(ch chan seen) []string {
	var out []string
	for {
		select {
		case r := <-ch:
			k := strings.Join(r.Header.Values("Idempotency-Key"), ",")
			if k == "" {
				k = "-"
			}
			out = append(out, r.Method+" "+k)
		default:
			return out
		}
	}
}

const keyedPost = `upstream: {url: "http://ignored", headers: {Idempotency-Key: "upstream's"}}
skills:
  - id: order
    description: d
    request:
      method: POST
      path: /orders
      body: args
      idempotency_key: %s
      retry: {attempts: 3, backoff: 1ms}
`

// One request keeps its key through its retries: an upstream that fails
// twice sees the same key three times, and it replaces upstream.headers'.
func TestIdempotencyKeyAcrossRetries(t *testing.T) {
	srv, ch := recorder(t, failingFirst(2))
	s := load(t, fmt.Sprintf(keyedPost, "true"), srv.URL, mapping.Options{})
	out := s.ByID("order").Run(context.Background(), mapping.Call{Message: message("order", nil, ""), TaskID: "t1"}, nil)
	if out.State != a2a.TaskStateCompleted {
		t.Fatalf("outcome %v %q (%v), want completed after two retries", out.State, messageText(out), out.Err)
	}
	got := keys(ch)
	if len(got) != 3 || got[0] != got[1] || got[1] != got[2] {
		t.Fatalf("requests %q, want three with one key", got)
	}
	if k := strings.TrimPrefix(got[0], "POST "); !defaultKeyForm.MatchString(k) {
		t.Errorf("key %s, want a quoted UUID", k)
	}
}

// The default key is one per request of a turn: the same when the same
// message runs the task's skill again, another for a later message (a turn
// of a multi-turn task), another task, another step; a run without a task
// gets a key of its own.
func TestIdempotencyKeyPerRequest(t *testing.T) {
	srv, ch := recorder(t, func(w http.ResponseWriter, r *http.Request) { jsonAnswer(w, http.StatusCreated, `{}`) })
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - id: two
    description: d
    steps:
      - name: reserve
        request: {method: POST, path: /reserve, idempotency_key: true}
      - name: look
        request: {path: /look}
      - name: pay
        request: {method: POST, path: /pay, idempotency_key: true}
`, srv.URL, mapping.Options{})
	run := func(taskID, messageID string) []string {
		t.Helper()
		msg := message("two", nil, "")
		msg.MessageID = messageID
		if out := s.ByID("two").Run(context.Background(), mapping.Call{Message: msg, TaskID: taskID}, nil); out.State != a2a.TaskStateCompleted {
			t.Fatalf("outcome %v (%v)", out.State, out.Err)
		}
		got := keys(ch)
		if len(got) != 3 || got[1] != "GET -" {
			t.Fatalf("requests %q, want POST, GET without a key, POST", got)
		}
		return []string{got[0], got[2]}
	}
	first := run("t1", "m1")
	if first[0] == first[1] {
		t.Errorf("the two steps sent one key: %q", first)
	}
	seenKeys := map[string]string{first[0]: "t1 m1 reserve", first[1]: "t1 m1 pay"}
	if again := run("t1", "m1"); again[0] != first[0] || again[1] != first[1] {
		t.Errorf("the same message again sent %q, want %q", again, first)
	}
	for _, tt := range []struct{ task, msg string }{{"t1", "m2"}, {"t2", "m1"}, {"", "m1"}, {"", "m1"}} {
		for i, k := range run(tt.task, tt.msg) {
			if was, ok := seenKeys[k]; ok {
				t.Errorf("task %q message %q step %d sent the key of %s", tt.task, tt.msg, i, was)
			}
			seenKeys[k] = fmt.Sprintf("%s %s %d", tt.task, tt.msg, i)
		}
	}
}

// An expression may give the key; it is sent as a structured-field string,
// and a key that cannot be sent stops the request.
func TestIdempotencyKeyExpression(t *testing.T) {
	for _, tt := range []struct {
		name, key string
		args      map[string]any
		want      string // the key sent; "" for none, the task rejected
	}{
		{"from the task", `"{task.id}/{message.id}/{args.n}"`, map[string]any{"n": 7}, `"t1/m1/7"`},
		{"escaped", `"{args.n}"`, map[string]any{"n": `a"b\c`}, `"a\"b\\c"`},
		{"null", `"{args.n}"`, map[string]any{}, ""},
		{"empty", `"{args.n}"`, map[string]any{"n": ""}, ""},
		{"a list", `"{args.n}"`, map[string]any{"n": []any{"a"}}, ""},
		{"not ASCII", `"{args.n}"`, map[string]any{"n": "clé"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, ch := recorder(t, nil)
			s := load(t, fmt.Sprintf(keyedPost, tt.key), srv.URL, mapping.Options{})
			out := s.ByID("order").Run(context.Background(), mapping.Call{Message: message("order", tt.args, ""), TaskID: "t1"}, nil)
			if tt.want == "" {
				if out.State != a2a.TaskStateRejected || !strings.Contains(messageText(out), "cannot use this input: the idempotency key") {
					t.Errorf("outcome %v %q, want rejected for its key", out.State, messageText(out))
				}
				noRequest(t, ch)
				return
			}
			if got := received(t, ch).Header.Values("Idempotency-Key"); len(got) != 1 || got[0] != tt.want {
				t.Errorf("key %q, want %s", got, tt.want)
			}
		})
	}
}

// A POST or PATCH is sent once unless it has a key or says it is
// idempotent; a poll does not send the starting request's key.
func TestIdempotentRetries(t *testing.T) {
	for _, tt := range []struct {
		name, request string
		want          []string
	}{
		{"a POST without retry", "method: POST", []string{"POST -"}},
		{"a POST said idempotent", "method: POST, idempotent: true, retry: {attempts: 3, backoff: 1ms}", []string{"POST -", "POST -", "POST -"}},
		{"a PATCH with a key", `method: PATCH, idempotency_key: "{task.id}", retry: {attempts: 2, backoff: 1ms}`, []string{`PATCH "t1"`, `PATCH "t1"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, ch := recorder(t, failingFirst(5))
			s := load(t, `upstream: {url: "http://ignored"}
skills:
  - {id: a, description: d, request: {path: /a, `+tt.request+`}}
`, srv.URL, mapping.Options{})
			out := s.ByID("a").Run(context.Background(), mapping.Call{Message: message("a", nil, ""), TaskID: "t1"}, nil)
			if out.State != a2a.TaskStateFailed {
				t.Errorf("outcome %v, want failed by the 503", out.State)
			}
			if got := keys(ch); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("requests %q, want %q", got, tt.want)
			}
		})
	}

	srv, ch := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.Header().Set("Location", "/jobs/1")
			w.WriteHeader(http.StatusAccepted)
			return
		}
		jsonAnswer(w, http.StatusOK, `{}`)
	})
	s := load(t, fmt.Sprintf(jobSkill, "        interval: 1ms")+"      idempotency_key: '{task.id}'\n", srv.URL, mapping.Options{})
	out := s.ByID("job").Run(context.Background(), mapping.Call{Message: message("job", nil, ""), TaskID: "t"}, nil)
	if out.State != a2a.TaskStateCompleted {
		t.Fatalf("job: %v (%v)", out.State, out.Err)
	}
	if got, want := keys(ch), []string{`POST "t"`, "GET -"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("requests %q, want %q: the poll without the POST's key", got, want)
	}
}

// A skill that answers with a message keeps no task, so a message sent
// again runs it again: its requests must be safe to send twice.
func TestIdempotencyLoadErrors(t *testing.T) {
	for _, tt := range []struct{ skill, want string }{
		{"    request: {method: POST, path: /a, retry: {attempts: 2}}",
			`t.yaml:5: skill "a": request.retry: a POST sent twice may be applied twice: it is sent again only with an idempotency_key the service honours, or with idempotent: true`},
		{"    request: {method: PATCH, path: /a, idempotency_key: false, idempotent: false, retry: {attempts: 2}}",
			`t.yaml:5: skill "a": request.retry: a PATCH sent twice may be applied twice`},
		{"    steps:\n      - name: s\n        request:\n          method: POST\n          path: /a\n          retry: {attempts: 2}",
			`t.yaml:10: skill "a": steps[0].request.retry: a POST sent twice`},
		{"    request: {method: POST, path: /a, idempotency_key: fixed}",
			`t.yaml:5: skill "a": request.idempotency_key: would be the same for every request`},
		{"    request: {method: POST, path: /a, idempotency_key: '{env.KEY}'}",
			`t.yaml:5: skill "a": request.idempotency_key: {env.KEY}: environment placeholders are allowed only`},
		{"    request: {method: POST, path: /a, idempotency_key: '{args.x +}'}",
			`t.yaml:5: skill "a": request.idempotency_key: unexpected token`},
		{"    request: {method: POST, path: /a, idempotency_key: true, headers: {idempotency-key: x}}",
			`t.yaml:5: skill "a": request.headers.Idempotency-Key: is set by idempotency_key: keep one`},
		{"    request: {method: GET, path: /a, idempotent: true}",
			`t.yaml:5: skill "a": request.idempotent: is for POST and PATCH: a GET is idempotent already`},
		{"    returns: message\n    request: {method: POST, path: /a}",
			`t.yaml:5: skill "a": returns: message keeps no task, so the same message sent again runs the skill again, and its POST (the request) may be applied twice`},
		{"    returns: message\n    steps:\n      - name: look\n        request: {path: /a}\n      - name: buy\n        request: {method: PATCH, path: /b, idempotency_key: true}",
			`t.yaml:5: skill "a": returns: message keeps no task, so the same message sent again runs the skill again, and its PATCH (step "buy") may be applied twice`},
		{"    forward_headers: [idempotency-key]\n    request: {method: POST, path: /a}",
			`t.yaml:5: skill "a": forward_headers[0]: Idempotency-Key cannot be forwarded: a caller could send the key of another caller's request`},
	} {
		src := "upstream: {url: \"http://ignored\"}\nskills:\n  - id: a\n    description: d\n" + tt.skill + "\n"
		_, err := mapping.Parse("t.yaml", []byte(src), mapping.Options{LookupEnv: func(string) (string, bool) { return "k", true }})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s\nerror %v\nwant %q", tt.skill, err, tt.want)
		}
	}
}
