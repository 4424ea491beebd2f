package mapping_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/mapping"
)

func TestPathEscaping(t *testing.T) {
	srv, ch := recorder(t, nil)
	s := load(t, `upstream:
  url: http://ignored/api/v1/
skills:
  - id: file
    description: d
    request:
      path: /files/{args.name}
  - id: suffix
    description: d
    request:
      path: /files/{args.name}.json
  - id: two
    description: d
    request:
      path: /p/{args.a}{args.b}/x
  - id: fixed
    description: d
    request:
      path: /static/a%20b
`, srv.URL+"/api/v1/", mapping.Options{})

	tests := []struct {
		name  string
		skill string
		args  map[string]any
		want  string // the request URI the upstream sees; "" when nothing may be sent
	}{
		{"plain", "file", map[string]any{"name": "report"}, "/api/v1/files/report"},
		{"traversal", "file", map[string]any{"name": "../admin"}, "/api/v1/files/..%2Fadmin"},
		{"slash", "file", map[string]any{"name": "a/b"}, "/api/v1/files/a%2Fb"},
		{"query", "file", map[string]any{"name": "x?y=1"}, "/api/v1/files/x%3Fy=1"},
		{"fragment", "file", map[string]any{"name": "#frag"}, "/api/v1/files/%23frag"},
		{"escaped dots", "file", map[string]any{"name": "%2e%2e"}, "/api/v1/files/%252e%252e"},
		{"escaped slash", "file", map[string]any{"name": "a%2Fb"}, "/api/v1/files/a%252Fb"},
		{"backslash", "file", map[string]any{"name": `..\admin`}, "/api/v1/files/..%5Cadmin"},
		{"space and unicode", "file", map[string]any{"name": "São Paulo"}, "/api/v1/files/S%C3%A3o%20Paulo"},
		{"number", "file", map[string]any{"name": 42.0}, "/api/v1/files/42"},
		{"boolean", "file", map[string]any{"name": true}, "/api/v1/files/true"},
		{"dots inside a segment", "suffix", map[string]any{"name": ".."}, "/api/v1/files/...json"},
		{"dot dot", "file", map[string]any{"name": ".."}, ""},
		{"dot", "file", map[string]any{"name": "."}, ""},
		{"dot dot from two holes", "two", map[string]any{"a": ".", "b": "."}, ""},
		{"empty", "file", map[string]any{"name": ""}, ""},
		{"missing", "file", map[string]any{}, ""},
		{"list: simple style", "file", map[string]any{"name": []any{"a", 2.0, true}}, "/api/v1/files/a,2,true"},
		{"list items escaped, their commas too", "file", map[string]any{"name": []any{"a,b", "../c"}}, "/api/v1/files/a%2Cb,..%2Fc"},
		{"list of one dot dot", "file", map[string]any{"name": []any{".."}}, ""},
		{"empty list", "file", map[string]any{"name": []any{}}, ""},
		{"list of a list", "file", map[string]any{"name": []any{[]any{"a"}}}, ""},
		{"list with null", "file", map[string]any{"name": []any{"a", nil}}, ""},
		{"list of an empty value", "file", map[string]any{"name": []any{""}}, ""},
		{"list with an empty value", "file", map[string]any{"name": []any{"a", ""}}, ""},
		{"map", "file", map[string]any{"name": map[string]any{"a": "b"}}, ""},
		{"escaped literal", "fixed", nil, "/api/v1/static/a%20b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := runSkill(t, s, message(tt.skill, tt.args, ""))
			if tt.want == "" {
				noRequest(t, ch)
				if out.State != a2a.TaskStateRejected || out.Err == nil {
					t.Errorf("state %v, err %v; want rejected with an error", out.State, out.Err)
				}
				if !strings.Contains(messageText(out), "cannot use this input") {
					t.Errorf("message %q does not say the input is unusable", messageText(out))
				}
				return
			}
			if got := received(t, ch).RequestURI; got != tt.want {
				t.Errorf("upstream saw %s, want %s", got, tt.want)
			}
			if out.State != a2a.TaskStateCompleted {
				t.Errorf("state %v (%v), want completed", out.State, out.Err)
			}
		})
	}
}

func TestQuery(t *testing.T) {
	srv, ch := recorder(t, nil)
	s := load(t, `upstream: {url: "http://ignored"}
config:
  limit: 10
skills:
  - id: q
    description: d
    request:
      path: /search
      query:
        q: "{args.q}"
        tag: "{args.tags}"
        limit: "{args.limit ?? config.limit}"
        missing: "{args.missing}"
        fixed: fixed value
        number: 7
        mixed: "p-{args.q}"
        mixed_null: "p-{args.missing}"
        scopes: "{caller.scopes}"
  - id: const
    description: d
    request:
      path: /c
      query:
        a: "1"
        b: x y
`, srv.URL, mapping.Options{})

	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"values, lists and defaults", map[string]any{"q": "a b&c=d", "tags": []any{"x", nil, 3.0}},
			"q=a+b%26c%3Dd&tag=x&tag=3&limit=10&fixed=fixed+value&number=7&mixed=p-a+b%26c%3Dd&scopes=read&scopes=write"},
		{"nulls are left out", map[string]any{"limit": 2.0},
			"limit=2&fixed=fixed+value&number=7&scopes=read&scopes=write"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := message("q", tt.args, "")
			sk, _ := s.Select(msg)
			out := sk.Run(t.Context(), mapping.Call{Message: msg, Caller: mapping.Caller{Scopes: []string{"read", "write"}}}, nil)
			if out.State != a2a.TaskStateCompleted {
				t.Fatalf("state %v: %v", out.State, out.Err)
			}
			if got := received(t, ch).RequestURI; got != "/search?"+tt.want {
				t.Errorf("upstream saw\n%s\nwant\n/search?%s", got, tt.want)
			}
		})
	}

	t.Run("a map is refused", func(t *testing.T) {
		out := runSkill(t, s, message("q", map[string]any{"q": map[string]any{"a": 1.0}}, ""))
		noRequest(t, ch)
		if out.State != a2a.TaskStateRejected || !strings.Contains(messageText(out), "query parameter q") {
			t.Errorf("state %v, message %q", out.State, messageText(out))
		}
	})
	t.Run("constant query", func(t *testing.T) {
		runSkill(t, s, message("const", nil, ""))
		if got := received(t, ch).RequestURI; got != "/c?a=1&b=x+y" {
			t.Errorf("upstream saw %s", got)
		}
	})
}

const headerSkills = `upstream:
  url: http://ignored
  headers:
    X-Api-Key: "{env.KEY}"
    Authorization: "Bearer {env.TOKEN}"
    X-Optional: "{env.NOPE?}"
    X-Tenant: "{caller.claims.tenant}"
    X-Overridden: upstream
    X-Key-Override: upstream
skills:
  - id: h
    description: d
    request:
      path: /h
      headers:
        X-Request-Id: "{task.id}"
        X-Tags: "{args.tags}"
        X-Note: "{args.note}"
        X-Overridden: skill
        X-Static: static
        X-Key-Override: "{caller.claims.key}"
`

func TestHeaders(t *testing.T) {
	srv, ch := recorder(t, nil)
	s := load(t, headerSkills, srv.URL, mapping.Options{LookupEnv: env(map[string]string{"KEY": "k3y", "TOKEN": "t0k"})})
	sk := s.All()[0]
	acme := mapping.Caller{Subject: "bob", Claims: map[string]any{"tenant": "acme", "key": "ck"}}

	t.Run("applied", func(t *testing.T) {
		msg := message("", map[string]any{"tags": []any{"a", "b"}}, "")
		out := sk.Run(t.Context(), mapping.Call{Message: msg, TaskID: "task-9", Caller: acme}, nil)
		if out.State != a2a.TaskStateCompleted {
			t.Fatalf("state %v: %v", out.State, out.Err)
		}
		h := received(t, ch).Header
		want := map[string][]string{
			"X-Api-Key": {"k3y"}, "Authorization": {"Bearer t0k"}, "X-Tenant": {"acme"}, "X-Request-Id": {"task-9"},
			"X-Tags": {"a", "b"}, "X-Overridden": {"skill"}, "X-Static": {"static"}, "X-Key-Override": {"ck"},
		}
		for k, v := range want {
			if !reflect.DeepEqual(h[k], v) {
				t.Errorf("header %s = %q, want %q", k, h[k], v)
			}
		}
		for _, k := range []string{"X-Optional", "X-Note"} {
			if _, ok := h[k]; ok {
				t.Errorf("header %s was sent; a null value must leave it out", k)
			}
		}
	})
	t.Run("line break from an argument", func(t *testing.T) {
		msg := message("", map[string]any{"note": "a\r\nX-Evil: 1"}, "")
		out := sk.Run(t.Context(), mapping.Call{Message: msg, Caller: acme}, nil)
		noRequest(t, ch)
		if out.State != a2a.TaskStateRejected || !strings.Contains(messageText(out), "X-Note would hold a line break") {
			t.Errorf("state %v, message %q", out.State, messageText(out))
		}
	})
	t.Run("a credential that cannot be applied", func(t *testing.T) {
		msg := message("", nil, "")
		out := sk.Run(t.Context(), mapping.Call{Message: msg, Caller: mapping.Caller{Subject: "eve"}}, nil)
		noRequest(t, ch)
		if out.State != a2a.TaskStateFailed || !strings.Contains(messageText(out), "could not apply its credentials") || !mapping.AgentFault(out.Message) {
			t.Errorf("state %v, message %q, agent fault %v", out.State, messageText(out), mapping.AgentFault(out.Message))
		}
		if out.Err == nil || !strings.Contains(out.Err.Error(), "X-Tenant") {
			t.Errorf("Err = %v; want it to name the header", out.Err)
		}
	})
	t.Run("a skill's replacement for a credential is a credential", func(t *testing.T) {
		msg := message("", nil, "")
		out := sk.Run(t.Context(), mapping.Call{Message: msg, Caller: mapping.Caller{Claims: map[string]any{"tenant": "acme"}}}, nil)
		noRequest(t, ch)
		if out.State != a2a.TaskStateFailed || out.Err == nil || !strings.Contains(out.Err.Error(), "X-Key-Override") {
			t.Errorf("state %v, err %v", out.State, out.Err)
		}
	})
	t.Run("a credential with a line break", func(t *testing.T) {
		msg := message("", nil, "")
		evil := mapping.Caller{Claims: map[string]any{"tenant": "acme\nX-Evil: 1", "key": "ck"}}
		out := sk.Run(t.Context(), mapping.Call{Message: msg, Caller: evil}, nil)
		noRequest(t, ch)
		if out.State != a2a.TaskStateFailed || !strings.Contains(messageText(out), "could not apply its credentials") {
			t.Errorf("state %v, message %q", out.State, messageText(out))
		}
	})
}

func TestBody(t *testing.T) {
	srv, ch := recorder(t, nil)
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - id: json
    description: d
    request:
      method: POST
      path: /orders
      body: |
        {
          "item": args.item,
          "quantity": args.quantity,
          "tags": args.tags ?? [],
          "note": "a \"quoted\" </script>",
          "nested": {"by": caller.subject}
        }
  - id: form
    description: d
    request:
      method: POST
      path: /form
      body_format: form
      body: '{"a": args.a, "b": [1, 2], "c": nil}'
  - id: typed
    description: d
    request:
      method: PUT
      path: /typed
      headers:
        Content-Type: application/vnd.example+json
      body: args
  - id: optional
    description: d
    request:
      method: POST
      path: /optional
      body: args.payload
`, srv.URL, mapping.Options{})

	t.Run("json from typed values", func(t *testing.T) {
		item := `x", "admin": true, "y": "`
		msg := message("json", map[string]any{"item": item, "quantity": 3.0}, "")
		out := s.All()[0].Run(t.Context(), mapping.Call{Message: msg, Caller: mapping.Caller{Subject: "bob"}}, nil)
		if out.State != a2a.TaskStateCompleted {
			t.Fatalf("state %v: %v", out.State, out.Err)
		}
		r := received(t, ch)
		if r.Method != "POST" || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("method %s, Content-Type %q", r.Method, r.Header.Get("Content-Type"))
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(r.Body), &got); err != nil {
			t.Fatalf("body %q: %v", r.Body, err)
		}
		want := map[string]any{"item": item, "quantity": 3.0, "tags": []any{}, "note": `a "quoted" </script>`,
			"nested": map[string]any{"by": "bob"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("body = %v\nwant %v", got, want)
		}
	})
	t.Run("form", func(t *testing.T) {
		runSkill(t, s, message("form", map[string]any{"a": "x y&z"}, ""))
		r := received(t, ch)
		if r.Body != "a=x+y%26z&b=1&b=2" || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			t.Errorf("body %q, Content-Type %q", r.Body, r.Header.Get("Content-Type"))
		}
	})
	t.Run("a configured Content-Type wins", func(t *testing.T) {
		runSkill(t, s, message("typed", map[string]any{"k": "v"}, ""))
		r := received(t, ch)
		if r.Body != `{"k":"v"}` || r.Header.Get("Content-Type") != "application/vnd.example+json" {
			t.Errorf("body %q, Content-Type %q", r.Body, r.Header.Get("Content-Type"))
		}
	})
	t.Run("a null body is no body", func(t *testing.T) {
		runSkill(t, s, message("optional", map[string]any{}, ""))
		r := received(t, ch)
		if r.Body != "" || r.Header.Get("Content-Type") != "" {
			t.Errorf("body %q, Content-Type %q; want neither", r.Body, r.Header.Get("Content-Type"))
		}
	})
}

func TestEnvPlaceholders(t *testing.T) {
	srv, ch := recorder(t, nil)
	host := strings.TrimPrefix(srv.URL, "http://")
	src := `upstream:
  url: "http://{env.UPSTREAM_HOST}/base"
  headers:
    X-Api-Key: "{env.KEY}"
skills:
  - id: a
    description: d
    request:
      path: /a
      query:
        key: "{env.QUERY_KEY}"
        opt: "{env.UNSET?}"
`
	s, err := mapping.Parse("t.yaml", []byte(src), mapping.Options{LookupEnv: env(map[string]string{
		"UPSTREAM_HOST": host, "KEY": "k{args.x}", "QUERY_KEY": "q v",
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := runSkill(t, s, message("", map[string]any{"x": "no"}, ""))
	if out.State != a2a.TaskStateCompleted {
		t.Fatalf("state %v: %v", out.State, out.Err)
	}
	r := received(t, ch)
	if r.RequestURI != "/base/a?key=q+v" {
		t.Errorf("upstream saw %s", r.RequestURI)
	}
	// A variable's value is text, never an expression.
	if got := r.Header.Get("X-Api-Key"); got != "k{args.x}" {
		t.Errorf("X-Api-Key = %q", got)
	}
}
