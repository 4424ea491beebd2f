package mapping_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/mapping"
)

const rulesSkills = `upstream: {url: "http://ignored"}
skills:
  - id: order
    description: every rule
    arguments:
      code: {type: string, pattern: '^[A-Z]{3}$', min_length: 3, max_length: 3}
      day: {type: string, format: date}
      at: {type: string, format: date-time}
      email: {type: string, format: email}
      site: {type: string, format: uri}
      id: {type: string, format: uuid}
      v4: {type: string, format: ipv4}
      v6: {type: string, format: ipv6}
      phone: {type: string, format: phone}
      name: {type: string, min_length: 2, max_length: 5}
      count: {type: integer, minimum: 1, maximum: 100}
      big: {type: integer, maximum: 9007199254740992}
      ratio: {type: number, exclusive_minimum: 0, exclusive_maximum: 1}
      address:
        type: object
        properties: {city: {type: string, required: true}, zip: {type: string, pattern: '^\d{5}$'}}
      tags: {type: array, items: {type: string, max_length: 4}, min_items: 1, max_items: 2}
      lines:
        type: array
        items: {type: object, properties: {qty: {type: integer, minimum: 1}}}
      metadata: {type: [object, string]}
      level: {type: [integer, string], enum: [1, 2, high]}
    request:
      method: POST
      path: /o
      body: args
`

// Each value that breaks a rule stops the call before any upstream
// request, asking again for the argument and saying the rule; a value that
// keeps them all is sent.
func TestArgumentRules(t *testing.T) {
	srv, ch := recorder(t, nil)
	s := load(t, rulesSkills, srv.URL, mapping.Options{})
	tests := []struct {
		name string
		data map[string]any
		why  string // "": the call goes on
	}{
		{"every rule kept", map[string]any{"code": "ABC", "day": "2026-01-31", "at": "2026-01-31T09:30:00+01:00",
			"email": "a@example.com", "site": "https://example.com/x", "id": "0f8fad5b-d9cb-469f-a165-70867728950e",
			"v4": "192.0.2.1", "v6": "2001:db8::1", "phone": "not checked", "name": "Ann", "count": 100.0, "ratio": 0.5,
			"address": map[string]any{"city": "Paris", "zip": "75001", "extra": true}, "tags": []any{"a", "bcd"},
			"lines": []any{map[string]any{"qty": 2.0}}, "metadata": "note", "level": "high"}, ""},
		{"pattern", map[string]any{"code": "AbC"}, `code: it must match the pattern ^[A-Z]{3}$, not "AbC"`},
		{"too short", map[string]any{"name": "A"}, `name: it must have at least 2 characters, not 1`},
		{"too long, in characters", map[string]any{"name": "Zoë Ann"}, `name: it must have at most 5 characters, not 7`},
		{"characters, not bytes", map[string]any{"name": "Zoëé"}, ""},
		{"date", map[string]any{"day": "2026-02-30"}, `day: it must be a date such as 2026-01-31 (format date), not "2026-02-30"`},
		{"date-time", map[string]any{"at": "2026-01-31 09:30"}, `at: it must be a date and time such as 2026-01-31T09:30:00Z (format date-time)`},
		{"email", map[string]any{"email": "Ann <a@example.com>"}, `email: it must be an email address (format email)`},
		{"uri", map[string]any{"site": "example.com"}, `site: it must be a URI with a scheme (format uri)`},
		{"uuid", map[string]any{"id": "0f8fad5b"}, `id: it must be a UUID (format uuid)`},
		{"ipv4", map[string]any{"v4": "2001:db8::1"}, `v4: it must be an IPv4 address (format ipv4)`},
		{"ipv6", map[string]any{"v6": "192.0.2.1"}, `v6: it must be an IPv6 address (format ipv6)`},
		{"minimum", map[string]any{"count": 0.0}, `count: it must be at least 1, not 0`},
		{"maximum", map[string]any{"count": 101.0}, `count: it must be at most 100, not 101`},
		{"an integer beyond 2^53 against an integer bound", map[string]any{"big": json.Number("9007199254740993")},
			`big: it must be at most 9007199254740992, not 9007199254740993`},
		{"an integer bound kept", map[string]any{"big": json.Number("9007199254740992")}, ""},
		{"a long value, quoted cut", map[string]any{"email": strings.Repeat("x", 100_000)},
			`email: it must be an email address (format email), not "` + strings.Repeat("x", 300) + `…"`},
		{"a long enum value, quoted cut", map[string]any{"level": strings.Repeat("x", 100_000)},
			`level: it must be one of 1, 2, high, not "` + strings.Repeat("x", 300) + `…"`},
		{"exclusive minimum", map[string]any{"ratio": 0.0}, `ratio: it must be greater than 0, not 0`},
		{"exclusive maximum", map[string]any{"ratio": 1.0}, `ratio: it must be less than 1, not 1`},
		{"type still first", map[string]any{"count": "many"}, `count: it must be an integer, not a string`},
		{"nested required", map[string]any{"address": map[string]any{"zip": "75001"}}, `address: it lacks address.city, which is required`},
		{"nested type", map[string]any{"address": map[string]any{"city": 7.0}}, `address: it holds address.city, which must be a string, not a number`},
		{"nested pattern", map[string]any{"address": map[string]any{"city": "Paris", "zip": "7500"}},
			`address: it holds address.zip, which must match the pattern ^\d{5}$, not "7500"`},
		{"too few items", map[string]any{"tags": []any{}}, `tags: it must have at least 1 item, not 0`},
		{"too many items", map[string]any{"tags": []any{"a", "b", "c"}}, `tags: it must have at most 2 items, not 3`},
		{"an item's rule", map[string]any{"tags": []any{"a", "toolong"}}, `tags: it holds tags[1], which must have at most 4 characters, not 7`},
		{"an item's property", map[string]any{"lines": []any{map[string]any{"qty": 0.0}}}, `lines: it holds lines[0].qty, which must be at least 1, not 0`},
		{"union: an object", map[string]any{"metadata": map[string]any{"k": "v"}}, ""},
		{"union: neither", map[string]any{"metadata": 3.0}, `metadata: it must be an object or a string, not a number`},
		{"union enum", map[string]any{"level": 3.0}, `level: it must be one of 1, 2, high, not "3"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := runSkill(t, s, message("order", tt.data, ""))
			if tt.why == "" {
				if out.State != a2a.TaskStateCompleted {
					t.Fatalf("state %v: %s", out.State, messageText(out))
				}
				received(t, ch)
				return
			}
			noRequest(t, ch)
			if out.State != a2a.TaskStateInputRequired || !strings.Contains(messageText(out), "cannot use the argument "+tt.why) {
				t.Errorf("state %v, message %.500q\nwant it to say %.500q", out.State, messageText(out), tt.why)
			}
		})
	}
}

// A union keeps its value's type: from data, the first listed type the
// value is; from text, the first listed type that reads the text.
func TestUnionArguments(t *testing.T) {
	srv, ch := recorder(t, nil)
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - id: u
    description: unions
    arguments:
      metadata: {type: [object, string]}
      size: {type: [integer, string]}
    from_text: '^(?P<metadata>\S+)(?: (?P<size>\S+))?$'
    request: {method: POST, path: /u, body: args}
  - id: needs
    description: a union asked for
    arguments:
      metadata: {type: [object, string], required: true}
    request: {method: POST, path: /n, body: args}
`, srv.URL, mapping.Options{})
	if out := runSkill(t, s, message("needs", nil, "")); !strings.Contains(messageText(out), "needs the argument metadata (object or string).") {
		t.Errorf("asking for a union: %q", messageText(out))
	}
	noRequest(t, ch)
	tests := []struct {
		name string
		data map[string]any
		text string
		want string // the body sent
	}{
		{"an object from data", map[string]any{"metadata": map[string]any{"k": "v"}}, "", `{"metadata":{"k":"v"}}`},
		{"a string from data", map[string]any{"metadata": "plain"}, "", `{"metadata":"plain"}`},
		{"an object from text", nil, `{"k":"v"} 42`, `{"metadata":{"k":"v"},"size":42}`},
		{"a string from text", nil, `plain big`, `{"metadata":"plain","size":"big"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := runSkill(t, s, message("u", tt.data, tt.text))
			if out.State != a2a.TaskStateCompleted {
				t.Fatalf("state %v: %s", out.State, messageText(out))
			}
			if got := received(t, ch).Body; got != tt.want {
				t.Errorf("body %s, want %s", got, tt.want)
			}
		})
	}
}

// The rules are published in the argument's JSON Schema under JSON
// Schema's names.
func TestArgumentRulesSchema(t *testing.T) {
	s := load(t, rulesSkills, "http://ignored", mapping.Options{})
	got, err := json.Marshal(s.ByID("order").ArgumentSchema()["properties"])
	if err != nil {
		t.Fatal(err)
	}
	var props map[string]json.RawMessage
	if err := json.Unmarshal(got, &props); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"code":     `{"maxLength":3,"minLength":3,"pattern":"^[A-Z]{3}$","type":"string"}`,
		"day":      `{"format":"date","type":"string"}`,
		"phone":    `{"format":"phone","type":"string"}`,
		"count":    `{"maximum":100,"minimum":1,"type":"integer"}`,
		"ratio":    `{"exclusiveMaximum":1,"exclusiveMinimum":0,"type":"number"}`,
		"address":  `{"properties":{"city":{"type":"string"},"zip":{"pattern":"^\\d{5}$","type":"string"}},"required":["city"],"type":"object"}`,
		"tags":     `{"items":{"maxLength":4,"type":"string"},"maxItems":2,"minItems":1,"type":"array"}`,
		"metadata": `{"type":["object","string"]}`,
		"level":    `{"enum":[1,2,"high"],"type":["integer","string"]}`,
	}
	for name, w := range want {
		if string(props[name]) != w {
			t.Errorf("%s: schema\n%s\nwant\n%s", name, props[name], w)
		}
	}
}

func TestArgumentRulesErrors(t *testing.T) {
	head := "upstream: {url: \"http://ignored\"}\nskills:\n  - id: a\n    description: d\n    arguments:\n"
	req := "    request: {path: /a}\n"
	deep := "{type: object, properties: {x: %s}}"
	nested := "string"
	for range 8 {
		nested = fmt.Sprintf(deep, nested)
	}
	tests := []struct{ name, yaml, want string }{
		{"lookahead", "      x: {pattern: '^(?!a)'}\n", `t.yaml:6: skill "a": arguments.x.pattern: is not a Go (RE2) regular expression`},
		{"pattern on an integer", "      x: {type: integer, pattern: '^1'}\n", `arguments.x.pattern: is only for arguments of type string`},
		{"min length above max", "      x: {min_length: 4, max_length: 3}\n", `arguments.x.max_length: is 3, less than min_length (4)`},
		{"negative length", "      x: {min_length: -1}\n", `arguments.x.min_length: must be an integer from 0, not "-1"`},
		{"minimum above maximum", "      x: {type: integer, minimum: 5, maximum: 1}\n", `arguments.x: leaves no number between its minimum and its maximum`},
		{"both minimums", "      x: {type: number, minimum: 1, exclusive_minimum: 1}\n", `arguments.x.exclusive_minimum: give minimum or exclusive_minimum, not both`},
		{"minimum not a number", "      x: {type: number, minimum: one}\n", `arguments.x.minimum: must be a number, not "one"`},
		{"min items above max", "      x: {type: array, min_items: 3, max_items: 2}\n", `arguments.x.max_items: is 2, less than min_items (3)`},
		{"items on an object", "      x: {type: object, items: string}\n", `arguments.x.items: is only for arguments of type array`},
		{"properties on a string", "      x: {properties: {y: string}}\n", `arguments.x.properties: is only for arguments of type object`},
		{"a nested unknown type", "      x: {type: object, properties: {y: text}}\n", `arguments.x.properties.y: unknown type "text"`},
		{"a nested default", "      x: {type: object, properties: {y: {default: a}}}\n", `arguments.x.properties.y.default: is only for a skill's own arguments`},
		{"required items", "      x: {type: array, items: {required: true}}\n", `arguments.x.items.required: is for an object's properties`},
		{"default breaks the pattern", "      x: {pattern: '^[a-z]+$', default: A1}\n", `arguments.x.default: must match the pattern ^[a-z]+$, not "A1"`},
		{"enum value breaks a rule", "      x: {type: integer, maximum: 5, enum: [1, 9]}\n", `arguments.x.enum[1]: must be at most 5, not 9`},
		{"default breaks a format", "      x: {format: date, default: tomorrow}\n", `arguments.x.default: must be a date`},
		{"a file in a union", "      x: {type: [file, string]}\n", `arguments.x.type: a file cannot be one of several types`},
		{"a union of one", "      x: {type: [string]}\n", `arguments.x.type: a list of types needs at least two`},
		{"a type twice", "      x: {type: [string, string]}\n", `arguments.x.type: lists string twice`},
		{"an enum on a union with an object", "      x: {type: [object, string], enum: [a]}\n", `arguments.x.enum: is only for arguments of type string, integer or number`},
		{"too deep", "      x: " + nested + "\n", `: nests more than 8 levels deep, the limit of a published argument schema`},
		{"too big", "      x: {description: '" + strings.Repeat("word ", 14000) + "'}\n",
			`t.yaml:6: skill "a": arguments: its JSON Schema is 70`},
		{"style on a string", "      x: {style: form}\n", `arguments.x.style: is only for arguments of type object or array`},
		{"unknown style", "      x: {type: object, style: matrix}\n", `arguments.x.style: must be form, spaceDelimited, pipeDelimited or deepObject, not "matrix"`},
		{"deepObject for an array", "      x: {type: array, style: deepObject}\n", `arguments.x.style: deepObject is only for arguments of type object`},
		{"explode not a boolean", "      x: {type: array, explode: sometimes}\n", `arguments.x.explode: must be true or false`},
		{"an exploded form object without properties", "      x: {type: [object, string], style: form}\n",
			`arguments.x.style: an exploded form object sends only its declared properties, and this one declares none`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mapping.Parse("t.yaml", []byte(head+tt.yaml+req), mapping.Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v\nwant %q", err, tt.want)
			}
		})
	}
}

// Objects and lists in a query or a form body are sent as their
// argument's style and explode say, OpenAPI's defaults otherwise; a form
// field with no style sends an object as deepObject. What the caller's
// data could make of them is bounded: an exploded object sends only its
// declared keys, deepObject nests 8 levels at most and refuses what is
// not a scalar, a map or a list, and the encoder stops at its budget.
func TestParamStyles(t *testing.T) {
	srv, ch := recorder(t, nil)
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - id: form
    description: a form body
    arguments:
      address: object
      exploded: {type: object, style: form, properties: {city: string, zip: string, tags: string}}
      flat: {type: object, style: form, explode: false}
      photo: file
      tags: {type: array}
      spaced: {type: array, style: spaceDelimited}
      piped: {type: array, style: pipeDelimited}
      commas: {type: array, explode: false}
    request: {method: POST, path: /f, body_format: form, body: args}
  - id: form_time
    description: a time in a form body
    request: {method: POST, path: /f, body_format: form, body: '{"at": {"when": now()}}'}
  - id: query
    description: a query
    arguments:
      filter: {type: object, style: deepObject}
      exploded: {type: object, properties: {city: string, zip: string, filter: string, inner: object, ids: array}}
      bare: object
      flat: {type: object, explode: false}
      tags: array
      piped: {type: array, style: pipeDelimited}
      other: object
    request:
      path: /q
      query:
        filter: "{args.filter}"
        exploded: "{args.exploded}"
        bare: "{args.bare}"
        flat: "{args.flat}"
        tags: "{args.tags}"
        piped: "{args.piped}"
        other: "{args.other ?? nil}"
`, srv.URL, mapping.Options{})
	paris := map[string]any{"city": "Paris", "zip": "75001"}
	tests := []struct {
		name, skill string
		data        map[string]any
		want        string // the form body or the query sent, with spaces for %20 and +
		refused     string // the rejection's text, when refused
	}{
		{"form: an object as deepObject", "form", map[string]any{"address": map[string]any{"city": "Paris",
			"geo": map[string]any{"lat": 48.85}, "lines": []any{"1 rue", "bis"}}},
			"address[city]=Paris&address[geo][lat]=48.85&address[lines][0]=1 rue&address[lines][1]=bis", ""},
		{"form: form, exploded", "form", map[string]any{"exploded": paris}, "city=Paris&zip=75001", ""},
		{"form: form, not exploded", "form", map[string]any{"flat": paris}, "flat=city,Paris,zip,75001", ""},
		{"form: a list repeats its key", "form", map[string]any{"tags": []any{"a", "b"}}, "tags=a&tags=b", ""},
		{"form: spaceDelimited", "form", map[string]any{"spaced": []any{"a", "b"}}, "spaced=a b", ""},
		{"form: pipeDelimited", "form", map[string]any{"piped": []any{"a", "b"}}, "piped=a|b", ""},
		{"form: commas", "form", map[string]any{"commas": []any{"a,1", "b"}}, "commas=a%2C1,b", ""},
		{"form: an exploded key that is another field", "form", map[string]any{"exploded": map[string]any{"tags": "x"}, "tags": []any{"a"}},
			"", "the form field exploded holds the key tags, which is another form field"},
		{"form: an exploded key not declared", "form", map[string]any{"exploded": map[string]any{"city": "Paris", "admin": true}},
			"", "the form field exploded holds the key admin, which its argument does not declare"},
		{"form: a file's bytes", "form", map[string]any{"photo": map[string]any{"bytes": "aGk=", "name": "a.txt"}},
			"", "the form field photo[bytes] holds a list, not a value"},
		{"form: a time", "form_time", nil, "", "the form field at[when] holds a map, not a value"},
		{"form: nested too deep", "form", map[string]any{"address": nest(9)}, "", "the form field address nests more than 8 levels deep"},
		{"form: nested 8 levels deep", "form", map[string]any{"address": nest(8)}, "address[k][k][k][k][k][k][k][k]=v", ""},
		{"form: past its 16 MiB, as it is written", "form", map[string]any{"address": wide(3)}, "", "the form fields would take more than 16 MiB"},
		{"query: deepObject", "query", map[string]any{"filter": paris}, "filter[city]=Paris&filter[zip]=75001", ""},
		{"query: form, exploded by default", "query", map[string]any{"exploded": paris}, "city=Paris&zip=75001", ""},
		{"query: form, not exploded", "query", map[string]any{"flat": paris}, "flat=city,Paris,zip,75001", ""},
		{"query: a list", "query", map[string]any{"tags": []any{"a", "b"}, "piped": []any{"c", "d"}}, "tags=a&tags=b&piped=c|d", ""},
		{"query: an exploded key that is another parameter", "query", map[string]any{"exploded": map[string]any{"filter": "x"}},
			"", "the query parameter exploded holds the key filter, which is another query parameter"},
		{"query: a map in an exploded object", "query", map[string]any{"exploded": map[string]any{"inner": map[string]any{"k": "v"}}},
			"", "the query parameter inner holds a map"},
		{"query: a list in an exploded object", "query", map[string]any{"exploded": map[string]any{"ids": []any{1.0, 2.0}}}, "ids=1&ids=2", ""},
		{"query: an exploded key not declared", "query", map[string]any{"exploded": map[string]any{"city": "Paris", "admin": true}},
			"", "the query parameter exploded holds the key admin, which its argument does not declare"},
		{"query: an object without properties", "query", map[string]any{"bare": map[string]any{"admin": true}},
			"", "the query parameter bare holds the key admin, which its argument does not declare"},
		{"query: past its 1 MiB, as it is written", "query", map[string]any{"filter": wide(2)}, "", "the query parameters would take more than 1 MiB"},
		{"query: a map no argument declares", "query", map[string]any{"other": map[string]any{"k": "v"}},
			"", "the query parameter other holds a map"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := runSkill(t, s, message(tt.skill, tt.data, ""))
			if tt.refused != "" {
				noRequest(t, ch)
				if out.State != a2a.TaskStateRejected || !strings.Contains(messageText(out), tt.refused) {
					t.Errorf("state %v, message %.300q\nwant %q", out.State, messageText(out), tt.refused)
				}
				return
			}
			if out.State != a2a.TaskStateCompleted {
				t.Fatalf("state %v: %s", out.State, messageText(out))
			}
			r := received(t, ch)
			got := r.Body
			if tt.skill == "query" {
				got = strings.TrimPrefix(r.RequestURI, "/q?")
			}
			if strings.NewReplacer("+", " ", "%20", " ").Replace(got) != tt.want {
				t.Errorf("sent %s, want %s", got, tt.want)
			}
		})
	}
}

// nest is {"k": {"k": … "v"}}, levels objects deep.
func nest(levels int) any {
	var v any = "v"
	for range levels {
		v = map[string]any{"k": v}
	}
	return v
}

// wide is an object 8 levels deep of keys 1 KB long, keys a level: its
// deepObject encoding repeats each leaf's 8 KB path, 2 MiB with two keys
// a level (256 leaves), 52 MiB with three (6,561).
func wide(keys int) any {
	var v any = "v"
	for range 8 {
		level := map[string]any{}
		for i := range keys {
			level[fmt.Sprintf("%d%s", i, strings.Repeat("k", 1023))] = v
		}
		v = level
	}
	return v
}
