package cardgen_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/a2atest"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
)

// weatherSchema is shaped as mapping's Skill.ArgumentSchema writes it.
func weatherSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"city":  map[string]any{"type": "string", "description": "The city, e.g. Paris."},
			"units": map[string]any{"type": "string", "enum": []any{"metric", "imperial"}, "default": "metric"},
			"days":  map[string]any{"type": "integer", "enum": []any{int64(1), int64(3)}},
			"photo": map[string]any{"type": "object", "format": "file", "mediaTypes": []string{"image/*"}},
		},
		"required": []string{"city"},
	}
}

func TestSkillArguments(t *testing.T) {
	cfg := fullConfig()
	cfg.SkillArguments = map[string]map[string]any{"weather": weatherSchema(), "orders": nil}
	card, err := cardgen.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const wantDesc = "Current weather in a city. Arguments: city (string, required): The city, e.g. Paris; " +
		"days (integer, one of 1, 3); photo (file, image/*); units (string, one of metric, imperial, default metric)."
	if got := card.Skills[0].Description; got != wantDesc {
		t.Errorf("description\n got %q\nwant %q", got, wantDesc)
	}
	if got := card.Skills[1].Description; got != "Places orders." {
		t.Errorf("a skill without a schema got the description %q", got)
	}
	if cfg.Skills[0].Description != "Current weather in a city." {
		t.Errorf("Build changed the configuration's skill: %q", cfg.Skills[0].Description)
	}
	exts := card.Capabilities.Extensions
	if len(exts) != 1 || exts[0].URI != cardgen.SkillArgumentsURI || exts[0].Required {
		t.Fatalf("extensions = %+v, want the skill-arguments one, not required", exts)
	}
	if !reflect.DeepEqual(exts[0].Params, map[string]any{"weather": weatherSchema()}) {
		t.Errorf("params = %v", exts[0].Params)
	}

	// The served card carries it in capabilities.extensions, and reads back.
	doc, err := cardgen.NewDocument(card)
	if err != nil {
		t.Fatal(err)
	}
	var served struct {
		Capabilities struct {
			Extensions []struct {
				URI      string                    `json:"uri"`
				Required bool                      `json:"required"`
				Params   map[string]map[string]any `json:"params"`
			} `json:"extensions"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(doc.JSON(), &served); err != nil {
		t.Fatal(err)
	}
	got := served.Capabilities.Extensions
	if len(got) != 1 || got[0].URI != cardgen.SkillArgumentsURI || got[0].Params["weather"]["required"].([]any)[0] != "city" {
		t.Errorf("served extensions = %+v", got)
	}
	back, err := a2atest.UnmarshalAgentCard(doc.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Capabilities.Extensions) != 1 || back.Skills[0].Description != wantDesc {
		t.Errorf("the card read back has extensions %+v", back.Capabilities.Extensions)
	}
}

// A signed card with the extension verifies: its params canonicalize.
func TestSkillArgumentsSigned(t *testing.T) {
	ks := keySet(t, testKey(t, cardgen.ES256, "k1"))
	cfg := minimalConfig()
	cfg.SkillArguments = map[string]map[string]any{"echo": {
		"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}},
	}}
	d := signedDocument(t, cfg, signer(t, cardgen.SignerConfig{Keys: ks}))
	r := verify(t, d.JSON(), ks)
	if !r.OK(false) {
		t.Errorf("the signed card does not verify: %+v", r)
	}
}

func TestSkillArgumentsNone(t *testing.T) {
	for _, args := range []map[string]map[string]any{nil, {"echo": nil}} {
		cfg := minimalConfig()
		cfg.SkillArguments = args
		card, err := cardgen.Build(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if card.Capabilities.Extensions != nil || card.Skills[0].Description != "Echoes." {
			t.Errorf("with %v: extensions %+v, description %q", args, card.Capabilities.Extensions, card.Skills[0].Description)
		}
	}
	// An empty schema is published (the skill takes no arguments) without a sentence.
	cfg := minimalConfig()
	cfg.SkillArguments = map[string]map[string]any{"echo": {"type": "object", "properties": map[string]any{}}}
	card, err := cardgen.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(card.Capabilities.Extensions) != 1 || card.Skills[0].Description != "Echoes." {
		t.Errorf("extensions %+v, description %q", card.Capabilities.Extensions, card.Skills[0].Description)
	}
}

func TestSkillArgumentsDescriptionPunctuation(t *testing.T) {
	tests := []struct{ desc, want string }{
		{"Echoes", "Echoes. Arguments: text (string)."},
		{"Echoes?", "Echoes? Arguments: text (string)."},
	}
	for _, tt := range tests {
		cfg := minimalConfig()
		cfg.Skills[0].Description = tt.desc
		cfg.SkillArguments = map[string]map[string]any{"echo": {"properties": map[string]any{"text": map[string]any{"type": "string"}}}}
		card, err := cardgen.Build(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := card.Skills[0].Description; got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

func TestSkillArgumentsValidation(t *testing.T) {
	cfg := minimalConfig()
	cfg.SkillArguments = map[string]map[string]any{
		"nope": {"type": "object"},
		"echo": {"type": "object", "default": func() {}},
	}
	_, err := cardgen.Build(cfg)
	if err == nil {
		t.Fatal("Build accepted schemas for an unknown skill and one that is not JSON")
	}
	for _, want := range []string{`skillArguments["nope"]: there is no skill "nope"`, `skillArguments["echo"]: not JSON`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
}

func TestAddSkill(t *testing.T) {
	cfg := minimalConfig()
	cfg.Skills = nil
	cfg.AddSkill(a2a.AgentSkill{ID: "plain", Name: "Plain", Description: "No arguments."}, nil)
	cfg.AddSkill(a2a.AgentSkill{ID: "echo", Name: "Echo", Description: "Echoes."},
		map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}})
	if len(cfg.Skills) != 2 || len(cfg.SkillArguments) != 1 || cfg.SkillArguments["echo"] == nil {
		t.Fatalf("skills %+v, arguments %v", cfg.Skills, cfg.SkillArguments)
	}
	card, err := cardgen.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if card.Skills[0].Description != "No arguments." || card.Skills[1].Description != "Echoes. Arguments: text (string)." {
		t.Errorf("descriptions %q, %q", card.Skills[0].Description, card.Skills[1].Description)
	}
}

// The sentence says an argument's rules briefly, and a union's types.
func TestSkillArgumentsSentenceRules(t *testing.T) {
	cfg := minimalConfig()
	cfg.SkillArguments = map[string]map[string]any{"echo": {"type": "object", "required": []string{"code"},
		"properties": map[string]any{
			"code":     map[string]any{"type": "string", "minLength": 3, "maxLength": 3, "pattern": "^[A-Z]{3}$"},
			"day":      map[string]any{"type": "string", "format": "date"},
			"count":    map[string]any{"type": "integer", "minimum": 1.0, "maximum": 100.0},
			"ratio":    map[string]any{"type": "number", "exclusiveMinimum": 0.0},
			"name":     map[string]any{"type": "string", "maxLength": 20},
			"tags":     map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "minItems": 1},
			"metadata": map[string]any{"type": []string{"object", "string"}},
		}}}
	card, err := cardgen.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const want = "Echoes. Arguments: code (string, required, 3–3 characters, pattern ^[A-Z]{3}$); count (integer, 1–100); " +
		"day (string, format date); metadata (object or string); name (string, at most 20 characters); ratio (number, > 0); " +
		"tags (array of string, at least 1 item)."
	if got := card.Skills[0].Description; got != want {
		t.Errorf("description\n got %q\nwant %q", got, want)
	}
}
