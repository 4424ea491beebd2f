package mapping

// What clients read about a skill: its Agent Card entry, the JSON Schema
// of its arguments, and whether it answers in a media type they accept.

import "github.com/caddy-a2a/caddy-a2a/a2a"

// AgentSkill is the skill as the Agent Card lists it.
func (sk *Skill) AgentSkill() a2a.AgentSkill { return sk.cardEntry }

// ArgumentSchema is the JSON Schema of the skill's declared arguments, or
// nil when it declares none.
func (sk *Skill) ArgumentSchema() map[string]any {
	if sk.schema == nil || !sk.schema.declared {
		return nil
	}
	args := make([]*argument, len(sk.schema.args))
	var required []string
	for i := range sk.schema.args {
		args[i] = &sk.schema.args[i]
		if args[i].required {
			required = append(required, args[i].name)
		}
	}
	return objectSchema(args, required)
}

// jsonSchema describes the argument as JSON Schema.
func (a *argument) jsonSchema() map[string]any {
	if a.typ == 0 { // not declared: any value
		return map[string]any{}
	}
	m := map[string]any{"type": a.typ.String()}
	if a.types != nil {
		m["type"] = a.typeNames()
	}
	if a.typ == argFile {
		m["type"] = "object"
		m["format"] = "file"
		m["properties"] = map[string]any{
			"url": map[string]any{"type": "string"}, "bytes": map[string]any{"type": "string", "contentEncoding": "base64"},
			"name": map[string]any{"type": "string"}, "media_type": map[string]any{"type": "string"},
		}
		if len(a.mediaTypes) > 0 {
			m["mediaTypes"] = a.mediaTypes
		}
	}
	if a.description != "" {
		m["description"] = a.description
	}
	switch {
	case a.enumTitles != nil: // titled (SEP-1330): oneOf, each value a const with its title
		values := make([]any, len(a.enum))
		for i, v := range a.enum {
			title := a.enumTitles[i]
			if title == "" {
				title, _ = scalarString(v)
			}
			values[i] = map[string]any{"const": v, "title": title}
		}
		m["oneOf"] = values
	case len(a.enum) > 0:
		m["enum"] = a.enum
	}
	if a.def != nil {
		m["default"] = a.def
	}
	if a.rules != nil {
		a.rules.schema(m)
	}
	return m
}

// objectSchema is the JSON Schema of an object holding args; required
// lists the names given.
func objectSchema(args []*argument, required []string) map[string]any {
	props := make(map[string]any, len(args))
	for _, a := range args {
		props[a.name] = a.jsonSchema()
	}
	m := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		m["required"] = required
	}
	return m
}

// CanProduce reports whether the skill can answer in one of the accepted
// media types (a client's acceptedOutputModes). Wildcards match on either
// side (image/* accepts image/png, */* everything) and parameters are
// ignored. No accepted types, or a skill without output_modes, accept
// everything.
func (sk *Skill) CanProduce(accepted []string) bool {
	if len(accepted) == 0 || len(sk.OutputModes) == 0 {
		return true
	}
	for _, a := range accepted {
		for _, o := range sk.OutputModes {
			if mediaMatch(a, o) {
				return true
			}
		}
	}
	return false
}
