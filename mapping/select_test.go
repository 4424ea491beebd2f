package mapping_test

import (
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/mapping"
)

const selectSkills = `upstream: {url: "http://ignored"}
config:
  order_words: [buy, order]
skills:
  - id: metadata
    description: chosen by metadata.intent
    match: message.metadata.intent == "weather"
    request: {path: /m}
  - id: weather
    description: chosen by the text
    match: message.text matches "(?i)\\bweather\\b"
    request: {path: /w}
  - id: forecast
    description: also claims weather, but comes later
    match: message.text contains "weather" || message.text contains "forecast"
    request: {path: /f}
  - id: order
    description: chosen by a data key or a configured word
    match: '"item" in message.data || any(config.order_words, {message.text startsWith #})'
    request: {path: /o}
  - id: image
    description: chosen by a file part
    match: any(message.parts, {.kind in ["url", "raw"] && .media_type startsWith "image/"})
    request: {path: /i}
  - id: broken
    description: a predicate that fails at run time is no match
    match: message.text == "boom" || 1 % len(message.text) == 5
    request: {path: /b}
  - id: plain
    description: no predicate
    request: {path: /p}
`

func TestSelectByPredicate(t *testing.T) {
	s := load(t, selectSkills, "http://127.0.0.1:1", mapping.Options{})
	tests := []struct {
		name string
		msg  *a2a.Message
		want string // "" for a SelectionError
	}{
		{"metadata.skill wins over every predicate", message("plain", nil, "weather"), "plain"},
		{"metadata", &a2a.Message{Metadata: map[string]any{"intent": "weather"}}, "metadata"},
		{"text", message("", nil, "What is the Weather in Paris?"), "weather"},
		{"two predicates hold: the first declared wins", message("", nil, "weather forecast"), "weather"},
		{"only the later one holds", message("", nil, "forecast for Paris"), "forecast"},
		{"a data key", message("", map[string]any{"item": "widget"}, ""), "order"},
		{"config", message("", nil, "buy 3 widgets"), "order"},
		{"a file by URL", &a2a.Message{Parts: []a2a.Part{{Kind: a2a.PartURL, URL: "https://x/a.png", MediaType: "image/png"}}}, "image"},
		{"a file by bytes", &a2a.Message{Parts: []a2a.Part{{Kind: a2a.PartRaw, Raw: []byte{1}, MediaType: "image/jpeg"}}}, "image"},
		{"not an image", &a2a.Message{Parts: []a2a.Part{{Kind: a2a.PartRaw, Raw: []byte{1}, MediaType: "application/pdf"}}}, ""},
		{"a failing predicate is no match", message("", nil, ""), ""},
		{"the predicate after a failing one", message("", nil, "boom"), "broken"},
		{"nothing matches", message("", nil, "hello"), ""},
		{"nil message", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sk, serr := s.Select(tt.msg)
			if tt.want == "" {
				if serr == nil {
					t.Fatalf("selected %s; want a SelectionError", sk.ID)
				}
				if serr.Named || !strings.Contains(serr.Error(), "metadata, weather, forecast, order, image, broken, plain") {
					t.Errorf("error %q", serr)
				}
				return
			}
			if serr != nil || sk.ID != tt.want {
				t.Fatalf("got %v, %v; want %s", sk, serr, tt.want)
			}
		})
	}
}

func TestSelectOnlySkillIgnoresItsPredicate(t *testing.T) {
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - id: only
    description: d
    match: message.text == "never"
    request: {path: /o}
`, "http://127.0.0.1:1", mapping.Options{})
	if sk, serr := s.Select(message("", nil, "hello")); serr != nil || sk.ID != "only" {
		t.Fatalf("got %v, %v", sk, serr)
	}
}

func TestSelectPredicateErrors(t *testing.T) {
	base := "upstream: {url: \"http://ignored\"}\nskills:\n  - id: a\n    description: d\n    request: {path: /a}\n    match: "
	tests := []struct{ match, want string }{
		{"args.city != nil", `t.yaml:6: skill "a": match: match may read only message and config`},
		{"caller.subject == 'x'", `match: match may read only message and config`},
		{"task.id == 'x'", `match: match may read only message and config`},
		{"response.status == 200", `match: match may read only message and config`},
		{"len(message.text)", `t.yaml:6: skill "a": match: expected bool, but got int`},
		{"message.txt == 'x'", `match: type mapping.messageVars has no field txt`},
	}
	for _, tt := range tests {
		t.Run(tt.match, func(t *testing.T) {
			_, err := mapping.Parse("t.yaml", []byte(base+"'"+strings.ReplaceAll(tt.match, "'", "''")+"'\n"), mapping.Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v; want %q", err, tt.want)
			}
		})
	}
}

// reasonSkills are two skills with match predicates and one without, and
// a file of one skill whose predicate never holds here.
const (
	reasonSkills = `upstream: {url: "http://api.test"}
skills:
  - id: weather
    description: Weather.
    match: message.text matches "(?i)\\bweather\\b"
    request: {path: /w}
  - id: order
    description: Orders.
    match: '"item" in message.data'
    request: {path: /o}
  - id: echo
    description: Echoes.
    request: {path: /e}
`
	searchOnly = `upstream: {url: "http://api.test"}
skills:
  - id: search
    description: Searches.
    match: message.text startsWith "search "
    request: {path: /s}
`
)

// SelectWithReason says which rule chose the skill, and agrees with Select.
func TestSelectWithReason(t *testing.T) {
	skills := load(t, reasonSkills, "", mapping.Options{})
	one := load(t, searchOnly, "", mapping.Options{})
	tests := []struct {
		name   string
		skills *mapping.Skills
		msg    a2a.Message
		id     string
		reason mapping.SelectReason
	}{
		{"named", skills, a2a.Message{Metadata: map[string]any{"skill": "echo"}, Parts: []a2a.Part{a2a.TextPart("weather")}},
			"echo", mapping.SelectedByName},
		{"matched", skills, a2a.Message{Parts: []a2a.Part{a2a.TextPart("the weather in Oslo")}}, "weather", mapping.SelectedByMatch},
		{"only", one, a2a.Message{Parts: []a2a.Part{a2a.TextPart("no match")}}, "search", mapping.SelectedAsOnlySkill},
		{"none", skills, a2a.Message{Parts: []a2a.Part{a2a.TextPart("hello")}}, "", mapping.NotSelected},
		{"unknown name", skills, a2a.Message{Metadata: map[string]any{"skill": "nope"}}, "", mapping.NotSelected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sk, reason, selErr := tt.skills.SelectWithReason(&tt.msg)
			plain, plainErr := tt.skills.Select(&tt.msg)
			id := ""
			if sk != nil {
				id = sk.ID
			}
			if id != tt.id || reason != tt.reason || sk != plain || (selErr == nil) != (plainErr == nil) {
				t.Errorf("got %q by %q (err %v), want %q by %q", id, reason, selErr, tt.id, tt.reason)
			}
		})
	}
}

// TryPredicates tries every predicate, in file order, where Select stops
// at the first that holds.
func TestTryPredicates(t *testing.T) {
	skills := load(t, reasonSkills, "", mapping.Options{})
	msg := &a2a.Message{Parts: []a2a.Part{a2a.TextPart("weather"), a2a.DataPart(map[string]any{"item": "tea"})}}
	got := skills.TryPredicates(msg)
	if len(got) != 2 || got[0].Skill != "weather" || !got[0].Holds || got[1].Skill != "order" || !got[1].Holds ||
		got[1].Source != `"item" in message.data` {
		t.Errorf("predicates %+v", got)
	}
	if sk, _ := skills.Select(msg); sk.ID != "weather" {
		t.Errorf("Select chose %s, not the first predicate that holds", sk.ID)
	}
}
