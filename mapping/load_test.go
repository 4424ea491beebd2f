package mapping_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/mapping"
)

// env is a LookupEnv over a fixed map.
func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

const minimal = `upstream:
  url: http://127.0.0.1:1
skills:
  - id: a
    description: d
    request:
      path: /a
`

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		opts mapping.Options
		want []string // each must appear in the error, in this order
	}{
		{"yaml syntax", "upstream:\n  url: [\n", mapping.Options{}, []string{"t.yaml:2: did not find expected node content"}},
		{"empty file", "", mapping.Options{}, []string{"t.yaml: the file is empty"}},
		{"unknown top-level key", "upstrem: {}\n" + minimal, mapping.Options{},
			[]string{"t.yaml:1: upstrem: unknown key (known keys: upstream, config, skills)"}},
		{"unknown request key", `upstream: {url: "http://h"}
skills:
  - id: a
    description: d
    request:
      methd: GET
      path: /a
`, mapping.Options{}, []string{`t.yaml:6: skill "a": request.methd: unknown key (known keys: method, path, query, headers, body, body_format, retry, poll, idempotency_key, idempotent)`}},
		{"unknown rule key", minimal + `    response:
      - when: response.status == 200
        state: completed
        artefacts: []
`, mapping.Options{}, []string{`t.yaml:11: skill "a": response[0].artefacts: unknown key`}},
		{"wrong type", minimal + "    tags: weather\n", mapping.Options{}, []string{`t.yaml:8: skill "a": tags: must be a list, not a string`}},
		{"list where a value goes", minimal + "    name: [a, b]\n", mapping.Options{}, []string{`t.yaml:8: skill "a": name: must be a single value, not a list`}},
		{"repeated key", minimal + "    description: again\n", mapping.Options{}, []string{`t.yaml:8: skill "a": description: repeated key (first at line 5)`}},
		{"duplicate skill id", minimal + `  - id: a
    description: d
    request: {path: /b}
`, mapping.Options{}, []string{`t.yaml:8: skill "a": id: repeated skill id (first at line 4)`}},
		{"invalid skill id", strings.Replace(minimal, "id: a", "id: a b", 1), mapping.Options{},
			[]string{`t.yaml:4: skills[0].id: "a b" is not a valid skill id`}},
		{"missing id", strings.Replace(minimal, "- id: a\n    description", "- description", 1), mapping.Options{},
			[]string{`t.yaml:4: skills[0].id: is required`}},
		{"missing description", strings.Replace(minimal, "description: d\n    ", "", 1), mapping.Options{},
			[]string{`t.yaml:4: skill "a": description: is required`}},
		{"empty description", strings.Replace(minimal, "description: d", "description:", 1), mapping.Options{},
			[]string{`t.yaml:5: skill "a": description: is empty`}},
		{"missing request", strings.Replace(minimal, "    request:\n      path: /a\n", "", 1), mapping.Options{},
			[]string{`t.yaml:4: skill "a": request: is required`}},
		{"missing path", strings.Replace(minimal, "path: /a", "method: GET", 1), mapping.Options{},
			[]string{`t.yaml:7: skill "a": request.path: is required`}},
		{"missing skills", "upstream: {url: \"http://h\"}\n", mapping.Options{}, []string{`t.yaml:1: skills: is required`}},
		{"bad duration", minimal + "    timeout: 5 seconds\n", mapping.Options{},
			[]string{`t.yaml:8: skill "a": timeout: must be a positive duration such as 30s or 1m30s, not "5 seconds"`}},
		{"negative duration", strings.Replace(minimal, "url: http://127.0.0.1:1", "url: http://127.0.0.1:1\n  timeout: -1s", 1),
			mapping.Options{}, []string{`t.yaml:3: upstream.timeout: must be a positive duration`}},
		{"bad size", minimal + "    max_response_bytes: 10 parsecs\n", mapping.Options{},
			[]string{`t.yaml:8: skill "a": max_response_bytes: must be a positive size such as 1048576, 512KiB or 10MiB`}},
		{"bad returns", minimal + "    returns: maybe\n", mapping.Options{}, []string{`t.yaml:8: skill "a": returns: must be task or message, not "maybe"`}},
		{"bad method", strings.Replace(minimal, "path: /a", "path: /a\n      method: FETCH", 1), mapping.Options{},
			[]string{`t.yaml:8: skill "a": request.method: must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, not "FETCH"`}},
		{"body does not compile", strings.Replace(minimal, "path: /a", "path: /a\n      body: '{\"a\": args.b +}'", 1), mapping.Options{},
			[]string{`t.yaml:8: skill "a": request.body: unexpected token Bracket("}") (1:15)`}},
		{"body error on its third line", strings.Replace(minimal, "path: /a", "path: /a\n      body: |\n        {\n          \"a\": nosuch\n        }", 1),
			mapping.Options{}, []string{`t.yaml:10: skill "a": request.body: unknown name nosuch (2:8)`}},
		{"when is not a boolean", minimal + "    response:\n      - when: response.status + 1\n        state: completed\n", mapping.Options{},
			[]string{`t.yaml:9: skill "a": response[0].when: expected bool, but got int`}},
		{"unknown name in a path hole", strings.Replace(minimal, "path: /a", "path: /a/{argz.id}", 1), mapping.Options{},
			[]string{`t.yaml:7: skill "a": request.path: unknown name argz`}},
		{"response in the request", strings.Replace(minimal, "path: /a", "path: /a\n      query: {s: \"{response.status}\"}", 1), mapping.Options{},
			[]string{`t.yaml:8: skill "a": request.query.s: response is only known in the response section`}},
		{"env as a variable", strings.Replace(minimal, "path: /a", "path: /a\n      query: {s: \"{env.X + 'y'}\"}", 1), mapping.Options{},
			[]string{`request.query.s: env is not a variable`}},
		{"type error in a message hole", minimal + "    response:\n      - state: completed\n        message: \"n={response.status + 'x'}\"\n", mapping.Options{},
			[]string{`t.yaml:10: skill "a": response[0].message: invalid operation: + (mismatched types int and string)`}},
		{"too many nodes", strings.Replace(minimal, "path: /a", "path: /a\n      body: '[1,2,3,4,5,6,7,8,9,10]'", 1), mapping.Options{MaxExpressionNodes: 5},
			[]string{`t.yaml:8: skill "a": request.body: `, "nodes"}},
		{"unquoted template", strings.Replace(minimal, "path: /a", "path: /a\n      query:\n        q: {args.q}", 1), mapping.Options{},
			[]string{`t.yaml:9: skill "a": request.query.q: is a YAML mapping: quote a value that starts with "{"`}},
		{"unclosed hole", strings.Replace(minimal, "path: /a", "path: /a/{args.id", 1), mapping.Options{},
			[]string{`t.yaml:7: skill "a": request.path: unclosed "{"`}},
		{"path without slash", strings.Replace(minimal, "path: /a", "path: a", 1), mapping.Options{},
			[]string{`t.yaml:7: skill "a": request.path: must start with /`}},
		{"query in the path", strings.Replace(minimal, "path: /a", "path: /a?x=1", 1), mapping.Options{},
			[]string{`request.path: may not hold '?': put query parameters under request.query`}},
		{"dot-dot in the path", strings.Replace(minimal, "path: /a", "path: /a/../b", 1), mapping.Options{},
			[]string{`t.yaml:7: skill "a": request.path: may not have a ".." segment`}},
		{"escaped dot-dot in the path", strings.Replace(minimal, "path: /a", "path: /a/%2e%2E/{args.x}", 1), mapping.Options{},
			[]string{`request.path: may not have a ".." segment`}},
		{"empty segment", strings.Replace(minimal, "path: /a", "path: /a//b", 1), mapping.Options{},
			[]string{`request.path: may not have an empty segment (//)`}},
		{"space in the path", strings.Replace(minimal, "path: /a", "path: /a b", 1), mapping.Options{},
			[]string{`request.path: holds ' ', which must be escaped in a path (as %20)`}},
		{"env in the path", strings.Replace(minimal, "path: /a", "path: /a/{env.X}", 1), mapping.Options{},
			[]string{`request.path: {env.X}: environment placeholders are allowed only in upstream.url and in header and query values`}},
		{"env unset", strings.Replace(minimal, "url: http://127.0.0.1:1", "url: http://127.0.0.1:1\n  headers:\n    X-Api-Key: \"{env.API_KEY}\"", 1),
			mapping.Options{LookupEnv: env(nil)},
			[]string{`t.yaml:4: upstream.headers.X-Api-Key: environment variable API_KEY is not set (write {env.API_KEY?} if the value may be left out)`}},
		{"env empty", strings.Replace(minimal, "url: http://127.0.0.1:1", "url: http://127.0.0.1:1\n  headers:\n    X-Api-Key: \"{env.API_KEY}\"", 1),
			mapping.Options{LookupEnv: env(map[string]string{"API_KEY": ""})},
			[]string{`environment variable API_KEY is not set`}},
		{"env with a line break", strings.Replace(minimal, "url: http://127.0.0.1:1", "url: http://127.0.0.1:1\n  headers:\n    X-Api-Key: \"{env.API_KEY}\"", 1),
			mapping.Options{LookupEnv: env(map[string]string{"API_KEY": "s3cret\r\nX-Evil: 1"})},
			[]string{`t.yaml:4: upstream.headers.X-Api-Key: environment variable API_KEY holds a line break or a control character`}},
		{"env in the url unset", strings.Replace(minimal, "url: http://127.0.0.1:1", `url: "http://{env.HOST}"`, 1),
			mapping.Options{LookupEnv: env(nil)}, []string{`t.yaml:2: upstream.url: environment variable HOST is not set`}},
		{"expression in the url", strings.Replace(minimal, "url: http://127.0.0.1:1", `url: "http://{config.host}"`, 1),
			mapping.Options{}, []string{`t.yaml:2: upstream.url: may hold {env.NAME} placeholders but no expressions`}},
		{"missing url", strings.Replace(minimal, "url: http://127.0.0.1:1", "timeout: 1s", 1), mapping.Options{},
			[]string{`t.yaml:2: upstream.url: is required (or set the module's upstream URL)`}},
		{"ftp url", strings.Replace(minimal, "http://127.0.0.1:1", "ftp://127.0.0.1", 1), mapping.Options{},
			[]string{`t.yaml:2: upstream.url: must be an absolute http:// or https:// URL`}},
		{"relative url", strings.Replace(minimal, "http://127.0.0.1:1", "/api", 1), mapping.Options{},
			[]string{`upstream.url: must be an absolute http:// or https:// URL`}},
		{"url with a password", strings.Replace(minimal, "http://127.0.0.1:1", "http://bob:pw@127.0.0.1", 1), mapping.Options{},
			[]string{`upstream.url: may not hold a user or password: send credentials in upstream.headers`}},
		{"url with a query", strings.Replace(minimal, "http://127.0.0.1:1", "http://127.0.0.1/?k=1", 1), mapping.Options{},
			[]string{`upstream.url: may not have a query or a fragment`}},
		{"bad override url", minimal, mapping.Options{UpstreamURL: "localhost/api"},
			[]string{`t.yaml: the upstream URL given to the module must be an absolute http:// or https:// URL`}},
		{"invalid header name", strings.Replace(minimal, "path: /a", "path: /a\n      headers: {\"X Bad\": v}", 1), mapping.Options{},
			[]string{`t.yaml:8: skill "a": request.headers.X Bad: is not a valid header name`}},
		{"host header", strings.Replace(minimal, "path: /a", "path: /a\n      headers: {host: v}", 1), mapping.Options{},
			[]string{`request.headers.host: is set by the HTTP client and cannot be configured`}},
		{"line break in a header literal", strings.Replace(minimal, "path: /a", "path: /a\n      headers: {X-A: \"v\\r\\nX-B: w\"}", 1), mapping.Options{},
			[]string{`t.yaml:8: skill "a": request.headers.X-A: holds a line break or a control character`}},
		{"header repeated in another case", strings.Replace(minimal, "path: /a", "path: /a\n      headers: {x-a: v, X-A: w}", 1), mapping.Options{},
			[]string{`request.headers.X-A: repeated header (header names ignore case)`}},
		{"bad state", minimal + "    response:\n      - state: done\n", mapping.Options{},
			[]string{`t.yaml:9: skill "a": response[0].state: must be completed, failed, rejected, input-required or auth-required, not "done"`}},
		{"missing state", minimal + "    response:\n      - when: \"true\"\n", mapping.Options{},
			[]string{`t.yaml:9: skill "a": response[0].state: is required`}},
		{"rule after a catch-all", minimal + "    response:\n      - state: completed\n      - when: response.status == 404\n        state: failed\n", mapping.Options{},
			[]string{`t.yaml:10: skill "a": response[1]: never applies: rule 1 before it has no when`}},
		{"artifact with data and text", minimal + "    response:\n      - state: completed\n        artifacts:\n          - {data: response.body, text: x}\n", mapping.Options{},
			[]string{`t.yaml:11: skill "a": response[0].artifacts[0]: needs exactly one of data (an expression), text (a template) and file (a mapping)`}},
		{"body as a YAML mapping", strings.Replace(minimal, "path: /a", "path: /a\n      body:\n        item: args.item", 1), mapping.Options{},
			[]string{`t.yaml:9: skill "a": request.body: must be a single value, not a mapping`}},
		{"several mistakes at once", minimal + "    returns: maybe\n    timeout: soon\n", mapping.Options{},
			[]string{`t.yaml:8: skill "a": returns:`, `t.yaml:9: skill "a": timeout:`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := mapping.Parse("t.yaml", []byte(tt.yaml), tt.opts)
			if err == nil {
				s.Close()
				t.Fatalf("Parse succeeded; want an error with %q", tt.want)
			}
			msg := err.Error()
			rest := msg
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("error\n%s\ndoes not contain (in order)\n%s", msg, w)
				}
				rest = rest[i+len(w):]
			}
			var ce *mapping.ConfigError
			if !errors.As(err, &ce) {
				t.Errorf("error %T is not a *ConfigError", err)
			}
			if strings.Contains(msg, "s3cret") {
				t.Errorf("the error shows an environment variable's value: %s", msg)
			}
		})
	}
}

func TestParse(t *testing.T) {
	src := `upstream:
  url: http://127.0.0.1:1/api/
  timeout: 3s
  max_response_bytes: 2KiB
config:
  greeting: hello
  limit: 5
skills:
  - id: weather
    name: Weather
    description: The weather.
    tags: [weather, demo]
    examples: ['{"city": "Paris"}']
    input_modes: [application/json]
    output_modes: [application/json, text/plain]
    request:
      path: /weather/{args.city}
  - id: echo.v2
    description: Echo.
    timeout: 1m30s
    max_response_bytes: 100
    returns: message
    config:
      limit: 10
    request:
      method: post
      path: /echo
      idempotent: true
`
	s, err := mapping.Parse("t.yaml", []byte(src), mapping.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	all := s.All()
	if len(all) != 2 {
		t.Fatalf("got %d skills, want 2", len(all))
	}
	w, e := all[0], all[1]
	card := w.AgentSkill()
	if card.ID != "weather" || card.Name != "Weather" || card.Description != "The weather." ||
		strings.Join(card.Tags, ",") != "weather,demo" || card.Examples[0] != `{"city": "Paris"}` ||
		strings.Join(card.InputModes, ",") != "application/json" || strings.Join(card.OutputModes, ",") != "application/json,text/plain" {
		t.Errorf("weather card = %+v", card)
	}
	if w.Timeout != 3*time.Second || w.MaxResponseBytes != 2048 || w.ReturnsMessage {
		t.Errorf("weather: timeout %v, max %d, returns message %v; want the upstream defaults 3s, 2048, false", w.Timeout, w.MaxResponseBytes, w.ReturnsMessage)
	}
	if e.Name != "echo.v2" || e.Timeout != 90*time.Second || e.MaxResponseBytes != 100 || !e.ReturnsMessage {
		t.Errorf("echo: name %q, timeout %v, max %d, returns message %v", e.Name, e.Timeout, e.MaxResponseBytes, e.ReturnsMessage)
	}
}

func TestParseDefaults(t *testing.T) {
	s, err := mapping.Parse("t.yaml", []byte(minimal), mapping.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sk := s.All()[0]
	if sk.Timeout != mapping.DefaultTimeout || sk.MaxResponseBytes != mapping.DefaultMaxResponseBytes || sk.Name != "a" {
		t.Errorf("defaults: timeout %v, max %d, name %q", sk.Timeout, sk.MaxResponseBytes, sk.Name)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := mapping.Load("testdata/nonexistent.yaml", mapping.Options{})
	if err == nil || !strings.Contains(err.Error(), "nonexistent.yaml") {
		t.Fatalf("Load of a missing file: %v", err)
	}
}
