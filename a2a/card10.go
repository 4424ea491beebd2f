package a2a

import (
	"encoding/json"
	"fmt"
	"strings"
)

// AgentCard10 returns the 1.0 AgentCard message that card, an Agent Card
// as a JSON object (numbers as json.Number), holds, written with the field
// presence of spec 1.0 §5.7, as §8.4.1 asks of the payload of a card's
// signature: members the 1.0 proto does not define (the union card's 0.3
// ones, see card_json.go) are left out, and so are signatures, which no
// signature covers; REQUIRED fields are kept even at their default value,
// fields with the `optional` keyword kept when present, any other field
// omitted at its default value. card is not changed; the result shares
// values with it.
//
// It refuses a value of the wrong JSON type, a oneof with more than one
// member set, and a member spelled with its proto field name
// (default_input_modes), because parsers that accept both spellings could
// read a value the signature never covered.
func AgentCard10(card map[string]any) (map[string]any, error) {
	out, err := cardSchema.project(card, "")
	if err != nil {
		return nil, fmt.Errorf("a2a: agent card: %w", err)
	}
	return out, nil
}

// The 1.0 AgentCard message, as far as field presence needs it: each
// field's JSON name, its kind and whether it is REQUIRED
// (google.api.field_behavior). Taken from specification/a2a.proto (1.0.1).

type fieldKind uint8

const (
	kString     fieldKind = iota + 1 // string: omitted when ""
	kBool                            // bool: omitted when false
	kOptString                       // `optional` string: kept when present
	kOptBool                         // `optional` bool: kept when present
	kStrings                         // repeated string: omitted when []
	kMessage                         // message, or a oneof member: kept when present
	kMessages                        // repeated message: omitted when []
	kMessageMap                      // map<string, message>: omitted when {}
	kStringMap                       // map<string, string>: omitted when {}
	kStruct                          // google.protobuf.Struct: free-form, kept as is
)

type protoField struct {
	kind     fieldKind
	required bool
	msg      *protoMessage
}

type protoMessage struct {
	name   string
	fields map[string]protoField
	// oneof says every field is a member of one oneof: one may be set.
	oneof bool
}

func reqField(k fieldKind) protoField                  { return protoField{kind: k, required: true} }
func optField(k fieldKind) protoField                  { return protoField{kind: k} }
func msgField(k fieldKind, m *protoMessage) protoField { return protoField{kind: k, msg: m} }
func reqMsgField(k fieldKind, m *protoMessage) protoField {
	return protoField{kind: k, msg: m, required: true}
}

var (
	stringListSchema  = &protoMessage{name: "StringList", fields: map[string]protoField{"list": optField(kStrings)}}
	requirementSchema = &protoMessage{name: "SecurityRequirement", fields: map[string]protoField{
		"schemes": msgField(kMessageMap, stringListSchema),
	}}
	interfaceSchema = &protoMessage{name: "AgentInterface", fields: map[string]protoField{
		"url":             reqField(kString),
		"protocolBinding": reqField(kString),
		"tenant":          optField(kString),
		"protocolVersion": reqField(kString),
	}}
	providerSchema = &protoMessage{name: "AgentProvider", fields: map[string]protoField{
		"url":          reqField(kString),
		"organization": reqField(kString),
	}}
	extensionSchema = &protoMessage{name: "AgentExtension", fields: map[string]protoField{
		"uri":         optField(kString),
		"description": optField(kString),
		"required":    optField(kBool),
		"params":      optField(kStruct),
	}}
	capabilitiesSchema = &protoMessage{name: "AgentCapabilities", fields: map[string]protoField{
		"streaming":         optField(kOptBool),
		"pushNotifications": optField(kOptBool),
		"extensions":        msgField(kMessages, extensionSchema),
		"extendedAgentCard": optField(kOptBool),
	}}
	skillSchema = &protoMessage{name: "AgentSkill", fields: map[string]protoField{
		"id":                   reqField(kString),
		"name":                 reqField(kString),
		"description":          reqField(kString),
		"tags":                 reqField(kStrings),
		"examples":             optField(kStrings),
		"inputModes":           optField(kStrings),
		"outputModes":          optField(kStrings),
		"securityRequirements": msgField(kMessages, requirementSchema),
	}}
	authorizationCodeSchema = &protoMessage{name: "AuthorizationCodeOAuthFlow", fields: map[string]protoField{
		"authorizationUrl": reqField(kString),
		"tokenUrl":         reqField(kString),
		"refreshUrl":       optField(kString),
		"scopes":           reqField(kStringMap),
		"pkceRequired":     optField(kBool),
	}}
	clientCredentialsSchema = &protoMessage{name: "ClientCredentialsOAuthFlow", fields: map[string]protoField{
		"tokenUrl":   reqField(kString),
		"refreshUrl": optField(kString),
		"scopes":     reqField(kStringMap),
	}}
	deviceCodeSchema = &protoMessage{name: "DeviceCodeOAuthFlow", fields: map[string]protoField{
		"deviceAuthorizationUrl": reqField(kString),
		"tokenUrl":               reqField(kString),
		"refreshUrl":             optField(kString),
		"scopes":                 reqField(kStringMap),
	}}
	implicitSchema = &protoMessage{name: "ImplicitOAuthFlow", fields: map[string]protoField{
		"authorizationUrl": optField(kString),
		"refreshUrl":       optField(kString),
		"scopes":           optField(kStringMap),
	}}
	passwordSchema = &protoMessage{name: "PasswordOAuthFlow", fields: map[string]protoField{
		"tokenUrl":   optField(kString),
		"refreshUrl": optField(kString),
		"scopes":     optField(kStringMap),
	}}
	flowsSchema = &protoMessage{name: "OAuthFlows", oneof: true, fields: map[string]protoField{
		"authorizationCode": msgField(kMessage, authorizationCodeSchema),
		"clientCredentials": msgField(kMessage, clientCredentialsSchema),
		"implicit":          msgField(kMessage, implicitSchema),
		"password":          msgField(kMessage, passwordSchema),
		"deviceCode":        msgField(kMessage, deviceCodeSchema),
	}}
	securitySchemeSchema = &protoMessage{name: "SecurityScheme", oneof: true, fields: map[string]protoField{
		"apiKeySecurityScheme": msgField(kMessage, &protoMessage{name: "APIKeySecurityScheme", fields: map[string]protoField{
			"description": optField(kString),
			"location":    reqField(kString),
			"name":        reqField(kString),
		}}),
		"httpAuthSecurityScheme": msgField(kMessage, &protoMessage{name: "HTTPAuthSecurityScheme", fields: map[string]protoField{
			"description":  optField(kString),
			"scheme":       reqField(kString),
			"bearerFormat": optField(kString),
		}}),
		"oauth2SecurityScheme": msgField(kMessage, &protoMessage{name: "OAuth2SecurityScheme", fields: map[string]protoField{
			"description":       optField(kString),
			"flows":             reqMsgField(kMessage, flowsSchema),
			"oauth2MetadataUrl": optField(kString),
		}}),
		"openIdConnectSecurityScheme": msgField(kMessage, &protoMessage{name: "OpenIdConnectSecurityScheme", fields: map[string]protoField{
			"description":      optField(kString),
			"openIdConnectUrl": reqField(kString),
		}}),
		"mtlsSecurityScheme": msgField(kMessage, &protoMessage{name: "MutualTlsSecurityScheme", fields: map[string]protoField{
			"description": optField(kString),
		}}),
	}}
	cardSchema = &protoMessage{name: "AgentCard", fields: map[string]protoField{
		"name":                 reqField(kString),
		"description":          reqField(kString),
		"supportedInterfaces":  reqMsgField(kMessages, interfaceSchema),
		"provider":             msgField(kMessage, providerSchema),
		"version":              reqField(kString),
		"documentationUrl":     optField(kOptString),
		"capabilities":         reqMsgField(kMessage, capabilitiesSchema),
		"securitySchemes":      msgField(kMessageMap, securitySchemeSchema),
		"securityRequirements": msgField(kMessages, requirementSchema),
		"defaultInputModes":    reqField(kStrings),
		"defaultOutputModes":   reqField(kStrings),
		"skills":               reqMsgField(kMessages, skillSchema),
		"iconUrl":              optField(kOptString),
	}}
)

// project applies §8.4.1 rule 1 to obj, a JSON object of message s, at
// path. Members s does not define are left out; a member spelled with its
// proto field name (default_input_modes) is refused, because parsers that
// accept both spellings could read a value the signature never covered.
func (s *protoMessage) project(obj map[string]any, path string) (map[string]any, error) {
	out := make(map[string]any, len(obj))
	for name, v := range obj {
		f, ok := s.fields[name]
		if !ok {
			if alias := lowerCamel(name); alias != name {
				if _, known := s.fields[alias]; known {
					return nil, fmt.Errorf("%s: %q is the proto name of %s.%s; a card must use the JSON name only", memberPath(path, name), name, s.name, alias)
				}
			}
			continue
		}
		fp := memberPath(path, name)
		if v == nil { // JSON null: the field is not set
			continue
		}
		pv, keep, err := f.project(v, fp)
		if err != nil {
			return nil, err
		}
		if keep || f.required {
			out[name] = pv
		}
	}
	if s.oneof && len(out) > 1 {
		return nil, fmt.Errorf("%s: %s sets %d members of its oneof; one is allowed", path, s.name, len(out))
	}
	return out, nil
}

// project returns a field's value under rule 1 and whether a non-REQUIRED
// field stays.
func (f protoField) project(v any, path string) (any, bool, error) {
	switch f.kind {
	case kString:
		s, ok := v.(string)
		if !ok {
			return nil, false, wrongType(path, "a string", v)
		}
		return s, s != "", nil
	case kBool:
		b, ok := v.(bool)
		if !ok {
			return nil, false, wrongType(path, "a boolean", v)
		}
		return b, b, nil
	case kOptString:
		if _, ok := v.(string); !ok {
			return nil, false, wrongType(path, "a string", v)
		}
		return v, true, nil
	case kOptBool:
		if _, ok := v.(bool); !ok {
			return nil, false, wrongType(path, "a boolean", v)
		}
		return v, true, nil
	case kStrings:
		a, ok := v.([]any)
		if !ok {
			return nil, false, wrongType(path, "an array", v)
		}
		for i, e := range a {
			if _, ok := e.(string); !ok {
				return nil, false, wrongType(fmt.Sprintf("%s[%d]", path, i), "a string", e)
			}
		}
		return a, len(a) > 0, nil
	case kMessage:
		o, ok := v.(map[string]any)
		if !ok {
			return nil, false, wrongType(path, "an object", v)
		}
		out, err := f.msg.project(o, path)
		return out, true, err
	case kMessages:
		a, ok := v.([]any)
		if !ok {
			return nil, false, wrongType(path, "an array", v)
		}
		out := make([]any, len(a))
		for i, e := range a {
			o, ok := e.(map[string]any)
			ep := fmt.Sprintf("%s[%d]", path, i)
			if !ok {
				return nil, false, wrongType(ep, "an object", e)
			}
			m, err := f.msg.project(o, ep)
			if err != nil {
				return nil, false, err
			}
			out[i] = m
		}
		return out, len(out) > 0, nil
	case kMessageMap:
		o, ok := v.(map[string]any)
		if !ok {
			return nil, false, wrongType(path, "an object", v)
		}
		out := make(map[string]any, len(o))
		for k, e := range o {
			ep := fmt.Sprintf("%s[%q]", path, k)
			m, ok := e.(map[string]any)
			if !ok {
				return nil, false, wrongType(ep, "an object", e)
			}
			pm, err := f.msg.project(m, ep)
			if err != nil {
				return nil, false, err
			}
			out[k] = pm
		}
		return out, len(out) > 0, nil
	case kStringMap:
		o, ok := v.(map[string]any)
		if !ok {
			return nil, false, wrongType(path, "an object", v)
		}
		for k, e := range o {
			if _, ok := e.(string); !ok {
				return nil, false, wrongType(fmt.Sprintf("%s[%q]", path, k), "a string", e)
			}
		}
		return o, len(o) > 0, nil
	case kStruct:
		if _, ok := v.(map[string]any); !ok {
			return nil, false, wrongType(path, "an object", v)
		}
		return v, true, nil
	}
	return nil, false, fmt.Errorf("%s: unknown field kind %d", path, f.kind)
}

func wrongType(path, want string, got any) error {
	var what string
	switch got.(type) {
	case string:
		what = "a string"
	case bool:
		what = "a boolean"
	case json.Number:
		what = "a number"
	case []any:
		what = "an array"
	case map[string]any:
		what = "an object"
	default:
		what = fmt.Sprintf("%T", got)
	}
	return fmt.Errorf("%s: want %s, got %s", path, want, what)
}

func memberPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// lowerCamel turns a proto field name (default_input_modes) into its JSON
// name (defaultInputModes).
func lowerCamel(s string) string {
	if !strings.Contains(s, "_") {
		return s
	}
	var b strings.Builder
	up := false
	for _, r := range s {
		switch {
		case r == '_':
			up = true
		case up && 'a' <= r && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
			up = false
		default:
			b.WriteRune(r)
			up = false
		}
	}
	return b.String()
}
