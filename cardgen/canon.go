package cardgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gowebpki/jcs"
)

// Form names one way of turning a served card into the payload a signature
// covers. The card this package serves carries the 0.3 members beside the
// 1.0 ones, and verifiers in use today rebuild the payload in three ways;
// a signature covers exactly one, so the signer signs each distinct one
// (spec 1.0 §8.4.3 allows several signatures) and any of these verifiers
// finds one it can check.
//
// FormSpec is the specification's rule (§8.4.1): the card as a 1.0
// AgentCard message, so members the 1.0 proto does not define (the 0.3
// ones) are left out; REQUIRED fields kept even at their default value,
// fields with the `optional` keyword kept when present, any other field
// omitted at its default value; `signatures` excluded; RFC 8785. It is the
// one rule this project stands by, and the first signature.
//
// FormPruned is FormSpec with every empty string, array and object (and
// null) removed, recursively and REQUIRED or not: what @a2a-js/sdk 1.x
// (canonicalizeAgentCard) and a2a-sdk 1.x for Python (MessageToDict, then
// empty values removed) verify. It differs from FormSpec only for a card
// with an empty value, such as a security requirement without scopes.
//
// FormServed is the card exactly as served, `signatures` excluded, RFC 8785:
// what a2a-go's a2acrypto verifier (on its main branch, in no release yet)
// checks. It is the only form that covers the 0.3 members.
type Form string

// The forms; see Form.
const (
	FormSpec   Form = "spec"
	FormPruned Form = "pruned"
	FormServed Form = "served"
)

// DefaultForms are the forms a Signer signs unless told otherwise, in the
// order of the signatures it writes.
var DefaultForms = []Form{FormSpec, FormPruned, FormServed}

func (f Form) valid() bool { return slices.Contains(DefaultForms, f) }

// describe says in a few words what a form covers, for reports.
func (f Form) describe() string {
	switch f {
	case FormSpec:
		return "the 1.0 fields, spec §8.4.1"
	case FormPruned:
		return "the 1.0 fields, empty values pruned as the JS and Python SDKs do"
	case FormServed:
		return "the card as served, 0.3 fields included"
	}
	return string(f)
}

// ParseForms reads form names ("spec", "pruned", "served"), rejecting
// unknown and repeated ones.
func ParseForms(names []string) ([]Form, error) {
	out := make([]Form, 0, len(names))
	for _, n := range names {
		f := Form(n)
		switch {
		case !f.valid():
			return nil, fmt.Errorf("unknown form %q: want spec, pruned or served", n)
		case slices.Contains(out, f):
			return nil, fmt.Errorf("form %q is listed twice", n)
		}
		out = append(out, f)
	}
	return out, nil
}

// Canonicalize returns the payload a signature of form f covers, for a
// card as JSON (a served card; its signatures are ignored). The result is
// RFC 8785 canonical JSON.
func Canonicalize(card []byte, f Form) ([]byte, error) {
	root, err := decodeObject(card)
	if err != nil {
		return nil, err
	}
	delete(root, "signatures")
	var v any = root
	switch f {
	case FormServed:
	case FormSpec, FormPruned:
		out, err := cardSchema.project(root, "")
		if err != nil {
			return nil, err
		}
		v = out
		if f == FormPruned {
			if v = prune(out); v == nil {
				v = map[string]any{}
			}
		}
	default:
		return nil, fmt.Errorf("cardgen: unknown canonical form %q", f)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cardgen: canonicalizing the card (%s): %w", f, err)
	}
	out, err := jcs.Transform(b)
	if err != nil {
		return nil, fmt.Errorf("cardgen: canonicalizing the card (%s): %w", f, err)
	}
	return out, nil
}

// decodeObject reads a JSON object keeping numbers as written.
func decodeObject(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("cardgen: the card is not a JSON object: %w", err)
	}
	if dec.More() {
		return nil, errors.New("cardgen: the card has data after its JSON object")
	}
	if root == nil {
		return nil, errors.New("cardgen: the card is null, not a JSON object")
	}
	return root, nil
}

// prune removes empty strings, arrays, objects and nulls, recursively, and
// returns nil for a value that ends up empty. false and 0 stay.
func prune(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		if x == "" {
			return nil
		}
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			if e = prune(e); e != nil {
				out = append(out, e)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if e = prune(e); e != nil {
				out[k] = e
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return v
}

// The 1.0 AgentCard message, as far as canonicalization needs it: each
// field's JSON name, its kind and whether it is REQUIRED
// (google.api.field_behavior). Taken from specification/a2a.proto (1.0.1).

type kind uint8

const (
	kString     kind = iota + 1 // string: omitted when ""
	kBool                       // bool: omitted when false
	kOptString                  // `optional` string: kept when present
	kOptBool                    // `optional` bool: kept when present
	kStrings                    // repeated string: omitted when []
	kMessage                    // message, or a oneof member: kept when present
	kMessages                   // repeated message: omitted when []
	kMessageMap                 // map<string, message>: omitted when {}
	kStringMap                  // map<string, string>: omitted when {}
	kStruct                     // google.protobuf.Struct: free-form, kept as is
)

type field struct {
	kind     kind
	required bool
	msg      *schema
}

type schema struct {
	name   string
	fields map[string]field
	// oneof says every field is a member of one oneof: one may be set.
	oneof bool
}

func req(k kind) field               { return field{kind: k, required: true} }
func opt(k kind) field               { return field{kind: k} }
func msg(k kind, m *schema) field    { return field{kind: k, msg: m} }
func reqMsg(k kind, m *schema) field { return field{kind: k, msg: m, required: true} }

var (
	stringListSchema  = &schema{name: "StringList", fields: map[string]field{"list": opt(kStrings)}}
	requirementSchema = &schema{name: "SecurityRequirement", fields: map[string]field{
		"schemes": msg(kMessageMap, stringListSchema),
	}}
	interfaceSchema = &schema{name: "AgentInterface", fields: map[string]field{
		"url":             req(kString),
		"protocolBinding": req(kString),
		"tenant":          opt(kString),
		"protocolVersion": req(kString),
	}}
	providerSchema = &schema{name: "AgentProvider", fields: map[string]field{
		"url":          req(kString),
		"organization": req(kString),
	}}
	extensionSchema = &schema{name: "AgentExtension", fields: map[string]field{
		"uri":         opt(kString),
		"description": opt(kString),
		"required":    opt(kBool),
		"params":      opt(kStruct),
	}}
	capabilitiesSchema = &schema{name: "AgentCapabilities", fields: map[string]field{
		"streaming":         opt(kOptBool),
		"pushNotifications": opt(kOptBool),
		"extensions":        msg(kMessages, extensionSchema),
		"extendedAgentCard": opt(kOptBool),
	}}
	skillSchema = &schema{name: "AgentSkill", fields: map[string]field{
		"id":                   req(kString),
		"name":                 req(kString),
		"description":          req(kString),
		"tags":                 req(kStrings),
		"examples":             opt(kStrings),
		"inputModes":           opt(kStrings),
		"outputModes":          opt(kStrings),
		"securityRequirements": msg(kMessages, requirementSchema),
	}}
	authorizationCodeSchema = &schema{name: "AuthorizationCodeOAuthFlow", fields: map[string]field{
		"authorizationUrl": req(kString),
		"tokenUrl":         req(kString),
		"refreshUrl":       opt(kString),
		"scopes":           req(kStringMap),
		"pkceRequired":     opt(kBool),
	}}
	clientCredentialsSchema = &schema{name: "ClientCredentialsOAuthFlow", fields: map[string]field{
		"tokenUrl":   req(kString),
		"refreshUrl": opt(kString),
		"scopes":     req(kStringMap),
	}}
	deviceCodeSchema = &schema{name: "DeviceCodeOAuthFlow", fields: map[string]field{
		"deviceAuthorizationUrl": req(kString),
		"tokenUrl":               req(kString),
		"refreshUrl":             opt(kString),
		"scopes":                 req(kStringMap),
	}}
	implicitSchema = &schema{name: "ImplicitOAuthFlow", fields: map[string]field{
		"authorizationUrl": opt(kString),
		"refreshUrl":       opt(kString),
		"scopes":           opt(kStringMap),
	}}
	passwordSchema = &schema{name: "PasswordOAuthFlow", fields: map[string]field{
		"tokenUrl":   opt(kString),
		"refreshUrl": opt(kString),
		"scopes":     opt(kStringMap),
	}}
	flowsSchema = &schema{name: "OAuthFlows", oneof: true, fields: map[string]field{
		"authorizationCode": msg(kMessage, authorizationCodeSchema),
		"clientCredentials": msg(kMessage, clientCredentialsSchema),
		"implicit":          msg(kMessage, implicitSchema),
		"password":          msg(kMessage, passwordSchema),
		"deviceCode":        msg(kMessage, deviceCodeSchema),
	}}
	securitySchemeSchema = &schema{name: "SecurityScheme", oneof: true, fields: map[string]field{
		"apiKeySecurityScheme": msg(kMessage, &schema{name: "APIKeySecurityScheme", fields: map[string]field{
			"description": opt(kString),
			"location":    req(kString),
			"name":        req(kString),
		}}),
		"httpAuthSecurityScheme": msg(kMessage, &schema{name: "HTTPAuthSecurityScheme", fields: map[string]field{
			"description":  opt(kString),
			"scheme":       req(kString),
			"bearerFormat": opt(kString),
		}}),
		"oauth2SecurityScheme": msg(kMessage, &schema{name: "OAuth2SecurityScheme", fields: map[string]field{
			"description":       opt(kString),
			"flows":             reqMsg(kMessage, flowsSchema),
			"oauth2MetadataUrl": opt(kString),
		}}),
		"openIdConnectSecurityScheme": msg(kMessage, &schema{name: "OpenIdConnectSecurityScheme", fields: map[string]field{
			"description":      opt(kString),
			"openIdConnectUrl": req(kString),
		}}),
		"mtlsSecurityScheme": msg(kMessage, &schema{name: "MutualTlsSecurityScheme", fields: map[string]field{
			"description": opt(kString),
		}}),
	}}
	cardSchema = &schema{name: "AgentCard", fields: map[string]field{
		"name":                 req(kString),
		"description":          req(kString),
		"supportedInterfaces":  reqMsg(kMessages, interfaceSchema),
		"provider":             msg(kMessage, providerSchema),
		"version":              req(kString),
		"documentationUrl":     opt(kOptString),
		"capabilities":         reqMsg(kMessage, capabilitiesSchema),
		"securitySchemes":      msg(kMessageMap, securitySchemeSchema),
		"securityRequirements": msg(kMessages, requirementSchema),
		"defaultInputModes":    req(kStrings),
		"defaultOutputModes":   req(kStrings),
		"skills":               reqMsg(kMessages, skillSchema),
		"iconUrl":              opt(kOptString),
	}}
)

// project applies §8.4.1 rule 1 to obj, a JSON object of message s, at
// path. Members s does not define are left out; a member spelled with its
// proto field name (default_input_modes) is refused, because parsers that
// accept both spellings could read a value the signature never covered.
func (s *schema) project(obj map[string]any, path string) (map[string]any, error) {
	out := make(map[string]any, len(obj))
	for name, v := range obj {
		f, ok := s.fields[name]
		if !ok {
			if alias := lowerCamel(name); alias != name {
				if _, known := s.fields[alias]; known {
					return nil, fmt.Errorf("cardgen: %s: %q is the proto name of %s.%s; a card must use the JSON name only", join(path, name), name, s.name, alias)
				}
			}
			continue
		}
		fp := join(path, name)
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
		return nil, fmt.Errorf("cardgen: %s: %s sets %d members of its oneof; one is allowed", path, s.name, len(out))
	}
	return out, nil
}

// project returns a field's value under rule 1 and whether a non-REQUIRED
// field stays.
func (f field) project(v any, path string) (any, bool, error) {
	switch f.kind {
	case kString:
		s, ok := v.(string)
		if !ok {
			return nil, false, typeError(path, "a string", v)
		}
		return s, s != "", nil
	case kBool:
		b, ok := v.(bool)
		if !ok {
			return nil, false, typeError(path, "a boolean", v)
		}
		return b, b, nil
	case kOptString:
		if _, ok := v.(string); !ok {
			return nil, false, typeError(path, "a string", v)
		}
		return v, true, nil
	case kOptBool:
		if _, ok := v.(bool); !ok {
			return nil, false, typeError(path, "a boolean", v)
		}
		return v, true, nil
	case kStrings:
		a, ok := v.([]any)
		if !ok {
			return nil, false, typeError(path, "an array", v)
		}
		for i, e := range a {
			if _, ok := e.(string); !ok {
				return nil, false, typeError(fmt.Sprintf("%s[%d]", path, i), "a string", e)
			}
		}
		return a, len(a) > 0, nil
	case kMessage:
		o, ok := v.(map[string]any)
		if !ok {
			return nil, false, typeError(path, "an object", v)
		}
		out, err := f.msg.project(o, path)
		return out, true, err
	case kMessages:
		a, ok := v.([]any)
		if !ok {
			return nil, false, typeError(path, "an array", v)
		}
		out := make([]any, len(a))
		for i, e := range a {
			o, ok := e.(map[string]any)
			ep := fmt.Sprintf("%s[%d]", path, i)
			if !ok {
				return nil, false, typeError(ep, "an object", e)
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
			return nil, false, typeError(path, "an object", v)
		}
		out := make(map[string]any, len(o))
		for k, e := range o {
			ep := fmt.Sprintf("%s[%q]", path, k)
			m, ok := e.(map[string]any)
			if !ok {
				return nil, false, typeError(ep, "an object", e)
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
			return nil, false, typeError(path, "an object", v)
		}
		for k, e := range o {
			if _, ok := e.(string); !ok {
				return nil, false, typeError(fmt.Sprintf("%s[%q]", path, k), "a string", e)
			}
		}
		return o, len(o) > 0, nil
	case kStruct:
		if _, ok := v.(map[string]any); !ok {
			return nil, false, typeError(path, "an object", v)
		}
		return v, true, nil
	}
	return nil, false, fmt.Errorf("cardgen: %s: unknown field kind %d", path, f.kind)
}

func typeError(path, want string, got any) error {
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
	return fmt.Errorf("cardgen: %s: want %s, got %s", path, want, what)
}

func join(path, name string) string {
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
