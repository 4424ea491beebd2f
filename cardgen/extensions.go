package cardgen

// The skill-arguments extension: each skill's arguments, as JSON Schema, on
// the card. The A2A AgentSkill has no place for an input schema, so the card
// declares an extension (spec 1.0 §4.4.4 AgentExtension, 0.3 §5.5.2.1)
// whose params map each skill's id to its schema. It is not required:
// clients that do not know it ignore it, and the official SDKs read the
// params as an opaque JSON object. For clients (and LLMs) that read only
// the skill's description, the description also gets a short sentence
// naming the arguments.

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// SkillArgumentsURI identifies the skill-arguments extension.
const SkillArgumentsURI = "https://github.com/caddy-a2a/caddy-a2a/extensions/skill-arguments/v1"

const skillArgumentsDescription = "The JSON Schema of each skill's arguments, by skill id. " +
	"Send the arguments as a data part holding an object, with the skill's id in the message metadata (\"skill\")."

// AddSkill adds a skill to the card, with the JSON Schema of its arguments
// (as mapping's Skill.ArgumentSchema gives it; nil when it declares none).
func (c *Config) AddSkill(skill a2a.AgentSkill, arguments map[string]any) {
	c.Skills = append(c.Skills, skill)
	if arguments == nil {
		return
	}
	if c.SkillArguments == nil {
		c.SkillArguments = map[string]map[string]any{}
	}
	c.SkillArguments[skill.ID] = arguments
}

// checkSkillArguments wants every schema to belong to a skill on the card
// and to be JSON, as the card is.
func checkSkillArguments(p *problems, cfg *Config) {
	for _, id := range slices.Sorted(maps.Keys(cfg.SkillArguments)) {
		schema := cfg.SkillArguments[id]
		if schema == nil {
			continue
		}
		field := fmt.Sprintf("skillArguments[%q]", id)
		if !slices.ContainsFunc(cfg.Skills, func(sk a2a.AgentSkill) bool { return sk.ID == id }) {
			p.add(field, "there is no skill %q", id)
		}
		if _, err := json.Marshal(schema); err != nil {
			p.add(field, "not JSON: %w", err)
		}
	}
}

// withSkillArguments declares the extension on card, with the schemas of
// args, and adds the arguments' sentence to the skills' descriptions. The
// card's skills must be its own copies.
func withSkillArguments(card *a2a.AgentCard, args map[string]map[string]any) *a2a.AgentCard {
	params := make(map[string]any, len(args))
	for i := range card.Skills {
		sk := &card.Skills[i]
		schema := args[sk.ID]
		if schema == nil {
			continue
		}
		params[sk.ID] = schema
		if sentence := argumentsSentence(schema); sentence != "" {
			sk.Description = appendSentence(sk.Description, sentence)
		}
	}
	if len(params) == 0 {
		return card
	}
	card.Capabilities.Extensions = append(slices.Clone(card.Capabilities.Extensions), a2a.AgentExtension{
		URI: SkillArgumentsURI, Description: skillArgumentsDescription, Required: false, Params: params,
	})
	return card
}

func appendSentence(text, sentence string) string {
	switch {
	case text == "":
		return sentence
	case strings.HasSuffix(text, ".") || strings.HasSuffix(text, "!") || strings.HasSuffix(text, "?"):
		return text + " " + sentence
	}
	return text + ". " + sentence
}

// argumentsSentence names the arguments of an object schema: the required
// ones first, in their order, then the others by name.
//
//	Arguments: city (string, required): The city; units (string, one of metric, imperial, default metric).
func argumentsSentence(schema map[string]any) string {
	props, _ := schema["properties"].(map[string]any)
	if len(props) == 0 {
		return ""
	}
	required := map[string]bool{}
	var names []string
	for _, r := range stringsOf(schema["required"]) {
		if _, ok := props[r]; ok && !required[r] {
			required[r] = true
			names = append(names, r)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		if !required[name] {
			names = append(names, name)
		}
	}
	descs := make([]string, len(names))
	for i, name := range names {
		prop, _ := props[name].(map[string]any)
		descs[i] = describeArgument(name, prop, required[name])
	}
	return "Arguments: " + strings.Join(descs, "; ") + "."
}

// describeArgument is "name (type, required, one of a, b, rules, default
// x): description", the rules said briefly (3–3 characters, pattern
// ^[A-Z]{3}$, format date, 1–100, 1–10 items).
func describeArgument(name string, prop map[string]any, required bool) string {
	typ := strings.Join(stringsOf(prop["type"]), " or ")
	if typ == "" {
		typ, _ = prop["type"].(string)
	}
	if prop["format"] == "file" {
		typ = "file"
	}
	if typ == "" {
		typ = "any"
	}
	if items, _ := prop["items"].(map[string]any); items != nil {
		if itemType, _ := items["type"].(string); itemType != "" {
			typ += " of " + itemType
		}
	}
	facts := []string{typ}
	if required {
		facts = append(facts, "required")
	}
	if enum, ok := prop["enum"].([]any); ok && len(enum) > 0 {
		values := make([]string, len(enum))
		for i, v := range enum {
			values[i] = scalarText(v)
		}
		facts = append(facts, "one of "+strings.Join(values, ", "))
	}
	if mediaTypes := stringsOf(prop["mediaTypes"]); len(mediaTypes) > 0 {
		facts = append(facts, strings.Join(mediaTypes, ", "))
	}
	facts = appendRange(facts, prop, "minLength", "maxLength", " character")
	if pattern, ok := prop["pattern"].(string); ok {
		facts = append(facts, "pattern "+pattern)
	}
	if format, ok := prop["format"].(string); ok && format != "file" {
		facts = append(facts, "format "+format)
	}
	facts = appendRange(facts, prop, "minimum", "maximum", "")
	if v, ok := prop["exclusiveMinimum"]; ok {
		facts = append(facts, "> "+scalarText(v))
	}
	if v, ok := prop["exclusiveMaximum"]; ok {
		facts = append(facts, "< "+scalarText(v))
	}
	facts = appendRange(facts, prop, "minItems", "maxItems", " item")
	if def, ok := prop["default"]; ok {
		facts = append(facts, "default "+scalarText(def))
	}
	s := name + " (" + strings.Join(facts, ", ") + ")"
	if desc, _ := prop["description"].(string); desc != "" {
		s += ": " + strings.TrimRight(strings.TrimSpace(desc), ".")
	}
	return s
}

// appendRange says the bounds prop gives under low and high: "1–10", "at
// least 1", "at most 10", followed by unit (singular, "" for none).
func appendRange(facts []string, prop map[string]any, low, high, unit string) []string {
	lo, hasLow := prop[low]
	hi, hasHigh := prop[high]
	units := func(n string) string {
		if unit == "" || n == "1" {
			return n + unit
		}
		return n + unit + "s"
	}
	switch {
	case hasLow && hasHigh:
		return append(facts, scalarText(lo)+"–"+units(scalarText(hi)))
	case hasLow:
		return append(facts, "at least "+units(scalarText(lo)))
	case hasHigh:
		return append(facts, "at most "+units(scalarText(hi)))
	}
	return facts
}

// scalarText writes a string as it is and anything else as JSON.
func scalarText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// stringsOf reads a list of strings, typed or decoded from JSON.
func stringsOf(v any) []string {
	switch v := v.(type) {
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
