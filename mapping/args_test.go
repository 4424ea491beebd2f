package mapping_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/mapping"
)

const argsSkills = `upstream: {url: "http://ignored"}
skills:
  - id: typed
    description: every type
    arguments:
      s: {type: string, description: A string.}
      i: integer
      n: number
      b: boolean
      o: object
      a: array
      unit: {type: string, enum: [metric, imperial], default: metric}
      level: {type: integer, enum: [1, 2, 3]}
      ratio: {type: number, default: 0.5}
    request:
      method: POST
      path: /t
      body: args
  - id: needs
    description: required arguments
    arguments:
      city: {type: string, required: true, description: The city to report on.}
      days: {type: integer, required: true, enum: [1, 3, 7]}
      note: string
    request:
      path: /n/{args.city}
      query: {days: "{args.days}"}
  - id: text
    description: arguments from text
    arguments:
      city: {type: string, required: true}
      days: {type: integer, default: 1}
      metric: {type: boolean, default: true}
    from_text:
      - '(?i)weather in (?P<city>[\pL ]+?)(?: for (?P<days>\S+) days?)?(?: metric=(?P<metric>\w+))?$'
      - '^(?P<city>[\pL]+)$'
    request:
      method: POST
      path: /x
      body: args
  - id: text_types
    description: every type from text
    arguments:
      n: number
      b: boolean
      o: object
      a: array
    from_text: 'n=(?P<n>\S+) b=(?P<b>\S+) o=(?P<o>\{.*?\}) a=(?P<a>\[.*?\])'
    request:
      method: POST
      path: /tt
      body: args
  - id: loose
    description: text patterns without a schema
    from_text: 'order (?P<quantity>\d+) (?P<item>\w+)'
    request:
      method: POST
      path: /l
      body: args
`

// bodyOf runs a skill and returns the JSON body the upstream got.
func bodyOf(t *testing.T, s *mapping.Skills, msg *a2a.Message, ch chan seen) (mapping.Outcome, map[string]any) {
	t.Helper()
	out := runSkill(t, s, msg)
	if out.State != a2a.TaskStateCompleted {
		return out, nil
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(received(t, ch).Body), &body); err != nil {
		t.Fatal(err)
	}
	return out, body
}

func TestArgumentsFromData(t *testing.T) {
	srv, ch := recorder(t, nil)
	s := load(t, argsSkills, srv.URL, mapping.Options{})
	tests := []struct {
		name string
		data map[string]any
		want map[string]any // the body sent; nil when the call must stop
		ask  string         // the input-required message, when it stops
	}{
		{"every type, converted", map[string]any{"s": "x", "i": 3.0, "n": 2.5, "b": true, "o": map[string]any{"k": "v"},
			"a": []any{1.0, "two"}, "level": 2.0, "ratio": 1.0, "undeclared": "dropped"},
			map[string]any{"s": "x", "i": 3.0, "n": 2.5, "b": true, "o": map[string]any{"k": "v"}, "a": []any{1.0, "two"},
				"unit": "metric", "level": 2.0, "ratio": 1.0}, ""},
		{"defaults only", map[string]any{}, map[string]any{"unit": "metric", "ratio": 0.5}, ""},
		{"null is absent", map[string]any{"s": nil, "unit": nil}, map[string]any{"unit": "metric", "ratio": 0.5}, ""},
		{"an integer given as 3.0", map[string]any{"i": 3.0}, map[string]any{"i": 3.0, "unit": "metric", "ratio": 0.5}, ""},
		{"a string for an integer", map[string]any{"i": "3"}, nil,
			`Skill "typed" cannot use the argument i: it must be an integer, not a string. Reply on this task with data such as {"i": …}, or with the value as text.`},
		{"a fraction for an integer", map[string]any{"i": 2.5}, nil, `cannot use the argument i: it must be an integer, not a fractional number.`},
		{"a number for a string", map[string]any{"s": 1.0}, nil, `cannot use the argument s: it must be a string, not a number.`},
		{"a string for a boolean", map[string]any{"b": "yes"}, nil, `the argument b: it must be a boolean, not a string.`},
		{"a list for an object", map[string]any{"o": []any{}}, nil, `the argument o: it must be an object, not a list.`},
		{"an object for an array", map[string]any{"a": map[string]any{}}, nil, `the argument a: it must be an array, not an object.`},
		{"not in the enum", map[string]any{"unit": "kelvin"}, nil, `the argument unit: it must be one of metric, imperial, not "kelvin".`},
		{"an integer not in the enum", map[string]any{"level": 4.0}, nil, `the argument level: it must be one of 1, 2, 3, not "4".`},
		{"two wrong values", map[string]any{"i": "x", "b": 1.0}, nil,
			`cannot use the argument i: it must be an integer, not a string; b: it must be a boolean, not a number. Reply on this task with data such as {"i": …, "b": …}, or with the value of i as text.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, body := bodyOf(t, s, message("typed", tt.data, ""), ch)
			if tt.want == nil {
				noRequest(t, ch)
				if out.State != a2a.TaskStateInputRequired || !strings.Contains(messageText(out), tt.ask) {
					t.Fatalf("state %v, message %q (%v); want input-required with %q", out.State, messageText(out), out.Err, tt.ask)
				}
				return
			}
			if !reflect.DeepEqual(body, tt.want) {
				t.Errorf("body %v\nwant %v (%v)", body, tt.want, out.Err)
			}
		})
	}
}

func TestMissingArguments(t *testing.T) {
	srv, ch := recorder(t, nil)
	s := load(t, argsSkills, srv.URL, mapping.Options{})

	out := runSkill(t, s, message("needs", map[string]any{"note": "n"}, ""))
	noRequest(t, ch)
	if out.State != a2a.TaskStateInputRequired || out.Err != nil {
		t.Fatalf("state %v, err %v", out.State, out.Err)
	}
	want := `Skill "needs" needs the arguments city (string): The city to report on; days (integer, one of 1, 3, 7). ` +
		`Reply on this task with data such as {"city": …, "days": …}, or with the value of city as text.`
	if got := messageText(out); got != want {
		t.Errorf("message\n%s\nwant\n%s", got, want)
	}
	m := out.Message
	if m.Role != a2a.RoleAgent || m.TaskID != "task-1" || m.ContextID != "ctx-1" || len(m.Parts) != 2 {
		t.Fatalf("message %+v", m)
	}
	schema := m.Parts[1]
	if schema.Kind != a2a.PartData || schema.Metadata["input_schema"] != true {
		t.Fatalf("second part %+v; want the input schema", schema)
	}
	got, _ := json.Marshal(schema.Data)
	wantSchema := `{"properties":{"city":{"description":"The city to report on.","type":"string"},` +
		`"days":{"enum":[1,3,7],"type":"integer"}},"required":["city","days"],"type":"object"}`
	if string(got) != wantSchema {
		t.Errorf("schema\n%s\nwant\n%s", got, wantSchema)
	}

	out = runSkill(t, s, message("needs", map[string]any{"city": "Paris"}, ""))
	if got := messageText(out); got != `Skill "needs" needs the argument days (integer, one of 1, 3, 7). Reply on this task with data such as {"days": …}, or with the value as text.` {
		t.Errorf("one missing: %q", got)
	}
	out = runSkill(t, s, message("needs", map[string]any{"city": "Paris", "days": 2.0}, ""))
	if got := messageText(out); got != `Skill "needs" cannot use the argument days: it must be one of 1, 3, 7, not "2". Reply on this task with data such as {"days": …}, or with the value as text.` {
		t.Errorf("invalid: %q", got)
	}
	out = runSkill(t, s, message("needs", map[string]any{"days": "x"}, ""))
	if got := messageText(out); !strings.HasPrefix(got, `Skill "needs" needs the argument city (string): The city to report on. It cannot use the argument days: it must be an integer, not a string.`) {
		t.Errorf("missing and invalid: %q", got)
	}
	out = runSkill(t, s, message("needs", map[string]any{"city": "Paris", "days": 3.0}, ""))
	if out.State != a2a.TaskStateCompleted || received(t, ch).RequestURI != "/n/Paris?days=3" {
		t.Errorf("complete: state %v (%v)", out.State, out.Err)
	}
}

// AskedInput gives a binding that says how to answer in its own terms what
// an input-required message asks, without A2A's "Reply on this task": the
// text, and the arguments in the order it names them, also once the
// message has been stored and read back as JSON.
func TestAskedInput(t *testing.T) {
	srv, _ := recorder(t, nil)
	s := load(t, argsSkills, srv.URL, mapping.Options{})
	out := runSkill(t, s, message("needs", map[string]any{"days": "x"}, ""))
	var stored a2a.Message
	raw, _ := json.Marshal(out.Message.Parts[1].Data)
	stored.Parts = []a2a.Part{out.Message.Parts[0], {Kind: a2a.PartData, Data: json.RawMessage(raw), Metadata: out.Message.Parts[1].Metadata}}
	const what = `Skill "needs" needs the argument city (string): The city to report on. It cannot use the argument days: it must be an integer, not a string.`
	for _, msg := range []*a2a.Message{out.Message, &stored} {
		if got, names := mapping.AskedInput(msg); got != what || !reflect.DeepEqual(names, []string{"city", "days"}) {
			t.Errorf("AskedInput = %q, %q; want %q, [city days]", got, names, what)
		}
	}
	words := &a2a.Message{Parts: []a2a.Part{a2a.TextPart("Which size?")}}
	if got, names := mapping.AskedInput(words); got != "Which size?" || names != nil {
		t.Errorf("a question in words: %q, %q", got, names)
	}
}

func TestArgumentsFromText(t *testing.T) {
	srv, ch := recorder(t, nil)
	s := load(t, argsSkills, srv.URL, mapping.Options{})
	tests := []struct {
		name  string
		skill string
		data  map[string]any
		text  string
		want  map[string]any
		ask   string
	}{
		{"first pattern, converted", "text", nil, "Weather in São Paulo for 3 days metric=no",
			map[string]any{"city": "São Paulo", "days": 3.0, "metric": false}, ""},
		{"optional groups left out take defaults", "text", nil, "weather in Paris",
			map[string]any{"city": "Paris", "days": 1.0, "metric": true}, ""},
		{"second pattern", "text", nil, "Tokyo", map[string]any{"city": "Tokyo", "days": 1.0, "metric": true}, ""},
		{"data wins over text", "text", map[string]any{"city": "Lima"}, "weather in Paris for 2 days",
			map[string]any{"city": "Lima", "days": 2.0, "metric": true}, ""},
		{"a capture that does not convert", "text", nil, "weather in Paris for two days", nil,
			`cannot use the argument days: it must be an integer, not "two".`},
		{"no pattern matches", "text", nil, "what is the weather like?", nil, `needs the argument city (string).`},
		{"every type", "text_types", nil, `n=2.5 b=Yes o={"k":[1]} a=[1,"x"]`,
			map[string]any{"n": 2.5, "b": true, "o": map[string]any{"k": []any{1.0}}, "a": []any{1.0, "x"}}, ""},
		{"a number that is not", "text_types", nil, `n=lots b=no o={} a=[]`, nil, `the argument n: it must be a number, not "lots"`},
		{"a boolean that is not", "text_types", nil, `n=1 b=maybe o={} a=[]`, nil, `the argument b: it must be a boolean, not "maybe"`},
		{"an object that is a list", "text_types", nil, `n=1 b=0 o={"a"} a=[]`, nil, `the argument o: it must be an object, not "{\"a\"}"`},
		{"without a schema, captures are strings", "loose", map[string]any{"note": 1.0}, "please order 3 widgets",
			map[string]any{"quantity": "3", "item": "widgets", "note": 1.0}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, body := bodyOf(t, s, message(tt.skill, tt.data, tt.text), ch)
			if tt.want == nil {
				noRequest(t, ch)
				if out.State != a2a.TaskStateInputRequired || !strings.Contains(messageText(out), tt.ask) {
					t.Fatalf("state %v, message %q; want input-required with %q", out.State, messageText(out), tt.ask)
				}
				return
			}
			if !reflect.DeepEqual(body, tt.want) {
				t.Errorf("body %v\nwant %v (%v, %q)", body, tt.want, out.Err, messageText(out))
			}
		})
	}
}

func TestArgumentsFromFiles(t *testing.T) {
	srv, ch := recorder(t, nil)
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - id: files
    description: d
    arguments:
      image: {type: file, required: true, media_types: [image/*]}
      doc: {type: file, media_types: [application/pdf, text/*]}
    request:
      method: POST
      path: /f
      body: |
        {"image": {"name": args.image.name, "type": args.image.media_type, "size": len(args.image.bytes ?? ""),
                   "url": args.image.url},
         "doc": args.doc}
`, srv.URL, mapping.Options{})
	png := a2a.Part{Kind: a2a.PartRaw, Raw: []byte("\x89PNG"), MediaType: "image/png", Filename: "a.png"}
	pdfURL := a2a.Part{Kind: a2a.PartURL, URL: "https://files/x.pdf", MediaType: "application/pdf", Filename: "x.pdf"}
	jpegURL := a2a.Part{Kind: a2a.PartURL, URL: "https://files/b.jpg", MediaType: "image/jpeg"}
	tests := []struct {
		name  string
		parts []a2a.Part
		want  string // the body; "" when the call must stop
	}{
		{"bytes and a URL, by media type", []a2a.Part{pdfURL, png},
			`{"doc":{"media_type":"application/pdf","name":"x.pdf","url":"https://files/x.pdf"},"image":{"name":"a.png","size":4,"type":"image/png","url":null}}`},
		{"an image by URL", []a2a.Part{jpegURL},
			`{"doc":null,"image":{"name":"","size":0,"type":"image/jpeg","url":"https://files/b.jpg"}}`},
		{"a file in a data part", []a2a.Part{a2a.DataPart(map[string]any{"image": map[string]any{"bytes": "aGk=", "media_type": "image/gif", "name": "g.gif"}})},
			`{"doc":null,"image":{"name":"g.gif","size":2,"type":"image/gif","url":null}}`},
		{"no file the argument accepts", []a2a.Part{pdfURL}, ""},
		{"not a file in a data part", []a2a.Part{a2a.DataPart(map[string]any{"image": "x.png"})}, ""},
		{"bad base64", []a2a.Part{a2a.DataPart(map[string]any{"image": map[string]any{"bytes": "!!"}})}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := runSkill(t, s, &a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: tt.parts})
			if tt.want == "" {
				noRequest(t, ch)
				if out.State != a2a.TaskStateInputRequired || !strings.Contains(messageText(out), "image") {
					t.Fatalf("state %v, message %q", out.State, messageText(out))
				}
				return
			}
			if out.State != a2a.TaskStateCompleted {
				t.Fatalf("state %v, message %q, %v", out.State, messageText(out), out.Err)
			}
			if got := received(t, ch).Body; got != tt.want {
				t.Errorf("body\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestArgumentSchema(t *testing.T) {
	s := load(t, argsSkills, "http://127.0.0.1:1", mapping.Options{})
	got, _ := json.Marshal(s.ByID("needs").ArgumentSchema())
	want := `{"properties":{"city":{"description":"The city to report on.","type":"string"},"days":{"enum":[1,3,7],"type":"integer"},` +
		`"note":{"type":"string"}},"required":["city","days"],"type":"object"}`
	if string(got) != want {
		t.Errorf("schema\n%s\nwant\n%s", got, want)
	}
	if s.ByID("loose").ArgumentSchema() != nil {
		t.Error("a skill without declared arguments has a schema")
	}
}

// A titled enum (SEP-1330) is oneOf, each value a const with its title
// (the value itself for one without); its values are checked as an
// enum's.
func TestTitledEnum(t *testing.T) {
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - id: a
    description: d
    arguments:
      size: {enum: [{value: s, title: Small}, {value: l, title: Large}, xl], default: l}
    request: {path: /a}
`, "http://127.0.0.1:1", mapping.Options{})
	got, _ := json.Marshal(s.ByID("a").ArgumentSchema())
	want := `{"properties":{"size":{"default":"l","oneOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"},` +
		`{"const":"xl","title":"xl"}],"type":"string"}},"type":"object"}`
	if string(got) != want {
		t.Errorf("schema\n%s\nwant\n%s", got, want)
	}
	if _, problems := s.ByID("a").GatherArguments(mapping.Call{Message: message("a", map[string]any{"size": "m"}, "")}); len(problems) != 1 {
		t.Errorf("a value out of the titled enum: problems %+v", problems)
	}
}

func TestArgumentErrors(t *testing.T) {
	head := "upstream: {url: \"http://ignored\"}\nskills:\n  - id: a\n    description: d\n"
	req := "    request: {path: /a}\n"
	tests := []struct{ name, yaml, want string }{
		{"unknown type", "    arguments: {x: text}\n" + req, `t.yaml:5: skill "a": arguments.x: unknown type "text"`},
		{"unknown type, long form", "    arguments:\n      x: {type: int}\n" + req, `t.yaml:6: skill "a": arguments.x.type: unknown type "int"`},
		{"bad name", "    arguments: {1x: string}\n" + req, `arguments.1x: "1x" is not a valid argument name`},
		{"unknown key", "    arguments:\n      x: {type: string, requird: true}\n" + req, `t.yaml:6: skill "a": arguments.x.requird: unknown key`},
		{"required not a boolean", "    arguments:\n      x: {required: yes please}\n" + req, `arguments.x.required: must be true or false, not "yes please"`},
		{"enum on a boolean", "    arguments:\n      x: {type: boolean, enum: [true]}\n" + req, `arguments.x.enum: is only for arguments of type string, integer or number`},
		{"enum of the wrong type", "    arguments:\n      x: {type: integer, enum: [1, two]}\n" + req, `arguments.x.enum[1]: must be an integer, not a string`},
		{"titled enum value of the wrong type", "    arguments:\n      x: {type: integer, enum: [{value: one, title: One}]}\n" + req, `arguments.x.enum[0]: must be an integer, not a string`},
		{"titled enum without a value", "    arguments:\n      x: {enum: [{title: One}]}\n" + req, `arguments.x.enum[0].value: is required`},
		{"titled enum, unknown key", "    arguments:\n      x: {enum: [{value: a, label: A}]}\n" + req, `arguments.x.enum[0].label: unknown key`},
		{"default and required", "    arguments:\n      x: {required: true, default: a}\n" + req, `arguments.x.default: a required argument has no default`},
		{"default of the wrong type", "    arguments:\n      x: {type: number, default: lots}\n" + req, `arguments.x.default: must be a number, not a string`},
		{"default not in the enum", "    arguments:\n      x: {enum: [a, b], default: c}\n" + req, `arguments.x.default: must be one of a, b, not "c"`},
		{"media types on a string", "    arguments:\n      x: {media_types: [image/png]}\n" + req, `arguments.x.media_types: is only for arguments of type file`},
		{"bad regular expression", "    arguments: {x: string}\n    from_text: '(?P<x>['\n" + req, `t.yaml:6: skill "a": from_text: is not a valid regular expression`},
		{"no named group", "    from_text: ['(\\d+)']\n" + req, `t.yaml:5: skill "a": from_text[0]: has no named group`},
		{"undeclared group", "    arguments: {x: string}\n    from_text: '(?P<y>.+)'\n" + req, `from_text: the group (?P<y>…) is not a declared argument`},
		{"group for a file", "    arguments: {x: file}\n    from_text: '(?P<x>.+)'\n" + req, `from_text: the group (?P<x>…) names a file argument`},
		{"undeclared argument in the path", "    arguments: {city: string}\n    request: {path: '/w/{args.citty}'}\n",
			`t.yaml:6: skill "a": request.path: args.citty is not a declared argument (declared: city) (1:6)`},
		{"undeclared argument in a rule", "    arguments: {city: string}\n" + req + "    response:\n      - when: args['x'] == 1\n        state: completed\n",
			`t.yaml:8: skill "a": response[0].when: args.x is not a declared argument (declared: city)`},
		{"undeclared argument in the working message", "    arguments: {}\n    working_message: '{args.x}'\n" + req,
			`working_message: args.x is not a declared argument (declared: none)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mapping.Parse("t.yaml", []byte(head+tt.yaml), mapping.Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v\nwant %q", err, tt.want)
			}
		})
	}
	// Without declared arguments, any name may be read.
	if _, err := mapping.Parse("t.yaml", []byte(head+"    request: {path: '/w/{args.anything}'}\n"), mapping.Options{}); err != nil {
		t.Error(err)
	}
}
