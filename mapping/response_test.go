package mapping_test

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/mapping"
)

func TestFileParts(t *testing.T) {
	pdf := "%PDF-1.7\x00\xff binary"
	srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Type", "application/zip")
			io.WriteString(w, strings.Repeat("z", 2048))
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"pdf": "JVBERg==", "link": "https://files/r.pdf"}`)
		default:
			w.Header().Set("Content-Type", "application/pdf")
			w.Header().Set("Content-Disposition", `attachment; filename="../reports/report 7.pdf"`)
			io.WriteString(w, pdf)
		}
	})
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - id: default
    description: the default mapping
    max_file_bytes: 1KiB
    request: {path: /report}
  - id: big
    description: too large
    max_file_bytes: 1KiB
    request: {path: /big}
  - id: rules
    description: file artifacts from rules
    request: {path: /report}
    response:
      - state: completed
        artifacts:
          - name: as sent
            file: {}
          - name: renamed
            file:
              filename: "{args.name}.pdf"
              media_type: application/x-pdf
  - id: built
    description: bytes and URLs from expressions
    request: {path: /json}
    max_file_bytes: 8
    response:
      - when: args.big ?? false
        state: completed
        artifacts:
          - name: too big
            file: {bytes: 'repeat("x", 9)'}
      - state: completed
        artifacts:
          - file:
              bytes: response.body.pdf
              media_type: application/pdf
          - file:
              url: "{response.body.link}"
              media_type: application/pdf
              filename: r.pdf
          - name: left out
            file: {bytes: response.body.missing}
`, srv.URL, mapping.Options{})

	tests := []struct {
		name  string
		skill string
		args  map[string]any
		parts []a2a.Part // one per artifact
		fail  string
	}{
		{"default: raw bytes with the name from Content-Disposition", "default", nil,
			[]a2a.Part{{Kind: a2a.PartRaw, Raw: []byte(pdf), MediaType: "application/pdf", Filename: "report 7.pdf"}}, ""},
		{"default: over the inline limit", "big", nil, nil,
			`Skill "big" failed: the file is 2 KiB, larger than the limit of 1 KiB for files sent inline.`},
		{"rules: the body, as sent or renamed", "rules", map[string]any{"name": "q3"}, []a2a.Part{
			{Kind: a2a.PartRaw, Raw: []byte(pdf), MediaType: "application/pdf", Filename: "report 7.pdf"},
			{Kind: a2a.PartRaw, Raw: []byte(pdf), MediaType: "application/x-pdf", Filename: "q3.pdf"},
		}, ""},
		{"rules: bytes and a URL from expressions", "built", nil, []a2a.Part{
			{Kind: a2a.PartRaw, Raw: []byte("JVBERg=="), MediaType: "application/pdf"},
			{Kind: a2a.PartURL, URL: "https://files/r.pdf", MediaType: "application/pdf", Filename: "r.pdf"},
		}, ""},
		{"rules: over the inline limit", "built", map[string]any{"big": true}, nil,
			`Skill "built" failed: the file "too big" is 9 bytes, larger than the limit of 8 bytes for files sent inline.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := runSkill(t, s, message(tt.skill, tt.args, ""))
			if tt.fail != "" {
				if out.State != a2a.TaskStateFailed || messageText(out) != tt.fail || out.Err == nil {
					t.Fatalf("state %v, message %q, err %v", out.State, messageText(out), out.Err)
				}
				return
			}
			if out.State != a2a.TaskStateCompleted {
				t.Fatalf("state %v, message %q, err %v", out.State, messageText(out), out.Err)
			}
			var parts []a2a.Part
			for _, a := range out.Artifacts {
				parts = append(parts, a.Parts...)
			}
			if !reflect.DeepEqual(parts, tt.parts) {
				t.Errorf("parts\n%+v\nwant\n%+v", parts, tt.parts)
			}
		})
	}
}

const clientErrorSkills = `upstream: {url: "http://ignored"}
skills:
  - id: ask
    description: a 4xx asks for the fields, with the service's words
    client_errors: input-required
    error_detail: true
    arguments:
      item: {type: string, required: true}
      quantity: {type: integer, required: true}
    request:
      method: POST
      path: /orders
      body: args
  - id: quiet
    description: a 4xx asks for the fields, without the service's words
    client_errors: input-required
    arguments:
      item: string
      quantity: integer
    request:
      method: POST
      path: /orders
      body: args
  - id: reject
    description: a 4xx rejects
    client_errors: rejected
    error_detail: true
    request: {path: /orders}
  - id: plain
    description: the default, failed, without detail
    request: {path: /orders}
`

func TestClientErrors(t *testing.T) {
	tests := []struct {
		name        string
		skill       string
		status      int
		contentType string
		body        string
		state       a2a.TaskState
		text        string
		asked       []string // the input schema's required list
	}{
		{"422 with field errors, detail allowed", "ask", 422, "application/json",
			`{"error": "validation failed", "fields": {"quantity": "must be at least 1", "color": "unknown"}}`, a2a.TaskStateInputRequired,
			`Skill "ask" needs different input: the service answered HTTP 422 Unprocessable Entity. It said: "validation failed". ` +
				`It cannot use the argument quantity: it must be at least 1. Reply on this task with data such as {"quantity": …}, or with the value as text.`,
			[]string{"quantity"}},
		{"a list of field errors, no detail", "quiet", 400, "application/problem+json",
			`{"title": "Bad", "invalid-params": [{"name": "item", "reason": "is required"}, {"name": "quantity", "reason": "too big"}]}`,
			a2a.TaskStateInputRequired,
			`Skill "quiet" needs different input: the service answered HTTP 400 Bad Request. It needs the arguments item (string); quantity (integer). ` +
				`Reply on this task with data such as {"item": …, "quantity": …}, or with the value of item as text.`,
			[]string{"item", "quantity"}},
		{"FastAPI's shape", "ask", 422, "application/json",
			`{"detail": [{"loc": ["body", "item"], "msg": "field required"}]}`, a2a.TaskStateInputRequired,
			`It cannot use the argument item: it was refused: field required.`, []string{"item"}},
		{"no fields", "ask", 409, "text/plain", "out of stock\n", a2a.TaskStateInputRequired,
			`Skill "ask" needs different input: the service answered HTTP 409 Conflict. It said: "out of stock".`, nil},
		{"a long text detail on one line", "reject", 400, "text/plain", "bad\n\trequest " + strings.Repeat("é", 200), a2a.TaskStateRejected,
			`It said: "bad request ` + strings.Repeat("é", 144) + `…".`, nil},
		{"a 5xx still fails", "ask", 503, "application/json", `{"error": "down"}`, a2a.TaskStateFailed,
			`Skill "ask" failed: the service answered HTTP 503 Service Unavailable. It said: "down".`, nil},
		{"rejected, with detail", "reject", 404, "application/json", `{"error": {"message": "no such order"}}`, a2a.TaskStateRejected,
			`Skill "reject" cannot do this: the service answered HTTP 404 Not Found. It said: "no such order".`, nil},
		{"failed, without detail", "plain", 404, "application/json", `{"error": "secret internals"}`, a2a.TaskStateFailed,
			`Skill "plain" failed: the service answered HTTP 404 Not Found.`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := recorder(t, answer(tt.status, tt.contentType, tt.body))
			s := load(t, clientErrorSkills, srv.URL, mapping.Options{})
			out := runSkill(t, s, message(tt.skill, map[string]any{"item": "x", "quantity": 1.0}, ""))
			if out.State != tt.state || !strings.Contains(messageText(out), tt.text) {
				t.Fatalf("state %v, message\n%s\nwant %v with\n%s", out.State, messageText(out), tt.state, tt.text)
			}
			if got := askedFor(out); !reflect.DeepEqual(got, tt.asked) {
				t.Errorf("asked for %v, want %v", got, tt.asked)
			}
		})
	}
}

// askedFor is the required list of an outcome's input schema part.
func askedFor(out mapping.Outcome) []string {
	if out.Message == nil {
		return nil
	}
	for _, p := range out.Message.Parts {
		if p.Kind == a2a.PartData && p.Metadata["input_schema"] == true {
			b, _ := json.Marshal(p.Data)
			var schema struct{ Required []string }
			json.Unmarshal(b, &schema)
			return schema.Required
		}
	}
	return nil
}

func TestRuleAsks(t *testing.T) {
	srv, _ := recorder(t, answer(422, "application/json", `{"fields": {"quantity": "must be at least 1", "color": ["unknown", "not in stock"]}}`))
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - id: map
    description: ask with the service's field map
    arguments:
      quantity: integer
      color: string
    request: {path: /o}
    response:
      - when: response.status == 422
        state: input-required
        ask: response.body.fields
  - id: list
    description: ask for a list of names, with a message
    arguments:
      quantity: integer
      color: string
    request: {path: /o}
    response:
      - when: response.status == 422
        state: input-required
        message: Which quantity and color?
        ask: '["quantity", "color", "undeclared"]'
  - id: one
    description: ask for one name, without a schema
    request: {path: /o}
    response:
      - state: input-required
        ask: '"size"'
  - id: bad
    description: ask for something that is not a name
    request: {path: /o}
    response:
      - state: input-required
        ask: '[1]'
`, srv.URL, mapping.Options{})
	tests := []struct {
		skill string
		state a2a.TaskState
		text  string
		asked []string
	}{
		{"map", a2a.TaskStateInputRequired, `Skill "map" cannot use the argument color: it was refused: unknown; not in stock; quantity: it must be at least 1.`,
			[]string{"color", "quantity"}},
		{"list", a2a.TaskStateInputRequired, "Which quantity and color?", []string{"quantity", "color"}},
		{"one", a2a.TaskStateInputRequired, `Skill "one" needs the argument size. Reply on this task with data such as {"size": …}, or with the value as text.`,
			[]string{"size"}},
		{"bad", a2a.TaskStateFailed, `Skill "bad" could not read the service's answer.`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.skill, func(t *testing.T) {
			out := runSkill(t, s, message(tt.skill, nil, ""))
			if out.State != tt.state || !strings.Contains(messageText(out), tt.text) {
				t.Fatalf("state %v, message %q (%v)", out.State, messageText(out), out.Err)
			}
			if got := askedFor(out); !reflect.DeepEqual(got, tt.asked) {
				t.Errorf("asked for %v, want %v", got, tt.asked)
			}
		})
	}
	_, err := mapping.Parse("t.yaml", []byte(`upstream: {url: "http://ignored"}
skills:
  - id: a
    description: d
    request: {path: /a}
    response:
      - state: failed
        ask: '"x"'
`), mapping.Options{})
	if err == nil || !strings.Contains(err.Error(), `t.yaml:8: skill "a": response[0].ask: is only for rules whose state is input-required`) {
		t.Errorf("ask on a failed rule: %v", err)
	}
}

// TestAskedFieldsComeBack: after a 422 asks for a field, a follow-up that
// gives it in plain text completes the task.
func TestAskedFieldsComeBack(t *testing.T) {
	var calls atomic.Int32
	srv, ch := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if calls.Add(1) == 1 {
			w.WriteHeader(422)
			io.WriteString(w, `{"fields": {"quantity": "must be at least 1"}}`)
			return
		}
		w.WriteHeader(201)
		io.WriteString(w, `{"id": "o-1"}`)
	})
	s := load(t, clientErrorSkills, srv.URL, mapping.Options{})
	c := &conversation{t: t, s: s, skill: "ask"}
	if out := c.say(map[string]any{"item": "tea", "quantity": 0.0}, ""); out.State != a2a.TaskStateInputRequired {
		t.Fatalf("first: %v %q", out.State, messageText(out))
	}
	received(t, ch)
	if out := c.say(nil, "2"); out.State != a2a.TaskStateCompleted {
		t.Fatalf("follow-up: %v %q", out.State, messageText(out))
	}
	if got := received(t, ch).Body; got != `{"item":"tea","quantity":2}` {
		t.Errorf("second call's body %s", got)
	}
}

func TestClientErrorsSetting(t *testing.T) {
	_, err := mapping.Parse("t.yaml", []byte(minimal+"    client_errors: completed\n    error_detail: sometimes\n"), mapping.Options{})
	for _, want := range []string{`t.yaml:8: skill "a": client_errors: must be failed, rejected or input-required, not "completed"`,
		`t.yaml:9: skill "a": error_detail: must be true or false, not "sometimes"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nwant %q", err, want)
		}
	}
}

func TestCanProduce(t *testing.T) {
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - {id: json, description: d, output_modes: [application/json, text/plain], request: {path: /a}}
  - {id: images, description: d, output_modes: ["image/*"], request: {path: /a}}
  - {id: any, description: d, request: {path: /a}}
`, "http://127.0.0.1:1", mapping.Options{})
	tests := []struct {
		skill    string
		accepted []string
		want     bool
	}{
		{"json", nil, true},
		{"json", []string{"application/json"}, true},
		{"json", []string{"Text/Plain; charset=utf-8"}, true},
		{"json", []string{"image/png", "text/*"}, true},
		{"json", []string{"*/*"}, true},
		{"json", []string{"image/png"}, false},
		{"json", []string{"application/xml", "text"}, false},
		{"images", []string{"image/png"}, true},
		{"images", []string{"application/json"}, false},
		{"any", []string{"application/x-anything"}, true},
	}
	for _, tt := range tests {
		if got := s.ByID(tt.skill).CanProduce(tt.accepted); got != tt.want {
			t.Errorf("%s.CanProduce(%q) = %v, want %v", tt.skill, tt.accepted, got, tt.want)
		}
	}
}
