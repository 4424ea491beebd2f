package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/caddy-a2a/caddy-a2a/a2a/internal/cardjson"
)

// The union Agent Card: one document that 1.0 and 0.3 clients both accept.
// Its JSON structs are in internal/cardjson, shared with a2atest, which
// reads the card back for tests.
//
// What the official Go SDK does (a2a-go v2.3.1, a2acompat/a2av0,
// agentcard.go): its compat card producer writes the 1.0 fields
// (supportedInterfaces, securityRequirements, capabilities with
// extendedAgentCard, ...) and adds the 0.3 ones: url and preferredTransport
// from the preferred 0.3 interface, additionalInterfaces [{url, transport}],
// protocolVersion, supportsAuthenticatedExtendedCard, "security" as
// [{name: [scopes]}] at the top and on each skill. For securitySchemes, the
// member whose shape differs, it writes the 0.3 shape ({"type": "apiKey",
// "in": .., "name": ..}) and nests a 1.0 copy under the 0.3 type name
// ({"apiKey": {...}}, not for oauth2). Its compat parser reads "type" first
// and, without it, the 1.0 wrapper member ({"apiKeySecurityScheme": {...}}).
//
// We follow it for every member, with one change to the schemes: next to
// the 0.3 shape, each scheme carries the 1.0 ProtoJSON wrapper member
// instead of the SDK's nested copy, which only the SDK's compat parser
// reads (the SDK's default card parser wants the wrapper and rejects the
// SDK's own union card). 0.3 clients ignore the wrapper, ProtoJSON parsers
// and the SDK's default parser ignore the 0.3 members, and the SDK's compat
// parser reads "type". An oauth2 scheme must hold exactly one flow: OAuthFlows is a
// oneof in 1.0, and the SDK's parser rejects any other count.
//
// securityRequirements take the proto's ProtoJSON form, {"schemes": {name:
// {"list": [scopes]}}}. The Go SDK writes bare arrays there, and v2.3.1
// fails to parse a card with the ProtoJSON form (a2a-go issue #430, fix
// pending); a2atest.UnmarshalAgentCard accepts both.

// unionProtocolVersion is the 0.3 protocolVersion the union card declares.
const unionProtocolVersion = "0.3.0"

// schemeTypes are the 0.3 "type" names, indexed by SecuritySchemeType.
var schemeTypes = [...]string{
	SchemeAPIKey:        cardjson.TypeAPIKey,
	SchemeHTTPAuth:      cardjson.TypeHTTPAuth,
	SchemeOAuth2:        cardjson.TypeOAuth2,
	SchemeOpenIDConnect: cardjson.TypeOpenIDConnect,
	SchemeMutualTLS:     cardjson.TypeMutualTLS,
}

// MarshalAgentCard encodes c as the union card (see above). It fails when c
// has no interface (0.3 needs a url) or a scheme it cannot write.
func MarshalAgentCard(c *AgentCard) ([]byte, error) {
	w, err := cardToJSON(c)
	if err != nil {
		return nil, fmt.Errorf("a2a: marshal agent card: %w", err)
	}
	b, err := MarshalNoEscape(w)
	if err != nil {
		return nil, fmt.Errorf("a2a: marshal agent card: %w", err)
	}
	return b, nil
}

// CardShape says how MarshalAgentCardAs writes a card; the zero value is
// the union card.
type CardShape struct {
	// Strict10 writes only the members of the 1.0 AgentCard (AgentCard10)
	// and the signatures, for clients that validate the 1.0 schema
	// strictly. 0.3 clients cannot read such a card.
	Strict10 bool
	// BareScopes writes the scopes of each security requirement as a bare
	// array, {"schemes": {"key": []}}, rather than as the proto's
	// StringList, {"schemes": {"key": {"list": []}}}: the form a2a-go
	// v2.3.1 and v2.4.0 read (a2a-go issue #430). ProtoJSON parsers, the
	// JavaScript and Python SDKs' among them, refuse it.
	BareScopes bool
}

// MarshalAgentCardAs encodes c in the given shape.
func MarshalAgentCardAs(c *AgentCard, shape CardShape) ([]byte, error) {
	union, err := MarshalAgentCard(c)
	if err != nil || shape == (CardShape{}) {
		return union, err
	}
	dec := json.NewDecoder(bytes.NewReader(union))
	dec.UseNumber()
	var card map[string]any
	if err := dec.Decode(&card); err != nil {
		return nil, fmt.Errorf("a2a: marshal agent card: %w", err)
	}
	if shape.Strict10 {
		signatures := card["signatures"]
		if card, err = AgentCard10(card); err != nil {
			return nil, err
		}
		if signatures != nil {
			card["signatures"] = signatures
		}
	}
	if shape.BareScopes {
		bareScopes(card["securityRequirements"])
		if skills, ok := card["skills"].([]any); ok {
			for _, sk := range skills {
				if sk, ok := sk.(map[string]any); ok {
					bareScopes(sk["securityRequirements"])
				}
			}
		}
	}
	b, err := MarshalNoEscape(card)
	if err != nil {
		return nil, fmt.Errorf("a2a: marshal agent card: %w", err)
	}
	return b, nil
}

// bareScopes rewrites, in place, the StringList scopes of security
// requirements as bare arrays.
func bareScopes(requirements any) {
	reqs, _ := requirements.([]any)
	for _, r := range reqs {
		r, _ := r.(map[string]any)
		schemes, _ := r["schemes"].(map[string]any)
		for name, scopes := range schemes {
			list, _ := scopes.(map[string]any)["list"].([]any)
			if list == nil {
				list = []any{}
			}
			schemes[name] = list
		}
	}
}

// MarshalNoEscape encodes v as JSON without escaping <, > and &, so that a
// card's text and a JWS header are written as given, and without a final
// newline.
func MarshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func cardToJSON(c *AgentCard) (*cardjson.Card, error) {
	if c == nil {
		return nil, errors.New("nil card")
	}
	if len(c.SupportedInterfaces) == 0 {
		return nil, errors.New("no supported interface: 0.3 clients need a url")
	}
	w := &cardjson.Card{
		Name:                 c.Name,
		Description:          c.Description,
		SupportedInterfaces:  make([]cardjson.Interface, len(c.SupportedInterfaces)),
		Version:              c.Version,
		DocumentationURL:     c.DocumentationURL,
		SecurityRequirements: requirementsToJSON(c.SecurityRequirements),
		Security:             requirementsTo03(c.SecurityRequirements),
		DefaultInputModes:    nonNil(c.DefaultInputModes),
		DefaultOutputModes:   nonNil(c.DefaultOutputModes),
		Skills:               make([]cardjson.Skill, len(c.Skills)),
		IconURL:              c.IconURL,
		Capabilities: cardjson.Capabilities{
			Streaming:         c.Capabilities.Streaming,
			PushNotifications: c.Capabilities.PushNotifications,
			ExtendedAgentCard: c.Capabilities.ExtendedAgentCard,
		},
		ProtocolVersion:                   unionProtocolVersion,
		SupportsAuthenticatedExtendedCard: c.Capabilities.ExtendedAgentCard,
	}
	primary := 0
	for i, in := range c.SupportedInterfaces {
		w.SupportedInterfaces[i] = cardjson.Interface(in)
		if in.ProtocolBinding == BindingJSONRPC && c.SupportedInterfaces[primary].ProtocolBinding != BindingJSONRPC {
			primary = i
		}
	}
	// This module serves 0.3 and 1.0 on every JSON-RPC URL, so the main
	// 0.3 endpoint is the first JSON-RPC interface whatever its version.
	w.URL = c.SupportedInterfaces[primary].URL
	w.PreferredTransport = c.SupportedInterfaces[primary].ProtocolBinding
	w.AdditionalInterfaces = additionalInterfaces(c.SupportedInterfaces, primary)
	if p := c.Provider; p != nil {
		w.Provider = &cardjson.Provider{URL: p.URL, Organization: p.Organization}
	}
	for _, e := range c.Capabilities.Extensions {
		w.Capabilities.Extensions = append(w.Capabilities.Extensions, cardjson.Extension(e))
	}
	if len(c.SecuritySchemes) > 0 {
		w.SecuritySchemes = make(map[string]cardjson.Scheme, len(c.SecuritySchemes))
		for name, s := range c.SecuritySchemes {
			sj, err := schemeToJSON(&s)
			if err != nil {
				return nil, fmt.Errorf("security scheme %q: %w", name, err)
			}
			w.SecuritySchemes[name] = sj
		}
	}
	for i, s := range c.Skills {
		w.Skills[i] = cardjson.Skill{
			ID:                   s.ID,
			Name:                 s.Name,
			Description:          s.Description,
			Tags:                 nonNil(s.Tags),
			Examples:             s.Examples,
			InputModes:           s.InputModes,
			OutputModes:          s.OutputModes,
			SecurityRequirements: requirementsToJSON(s.SecurityRequirements),
			Security:             requirementsTo03(s.SecurityRequirements),
		}
	}
	for _, s := range c.Signatures {
		w.Signatures = append(w.Signatures, cardjson.Signature(s))
	}
	return w, nil
}

// additionalInterfaces lists, for 0.3, every distinct (url, transport) that
// speaks 0.3 (a 1.0-only binding would mislead a 0.3 client; a2a-go's own
// compatibility card lists only 0.3 interfaces too), with the main one
// first (0.3 spec §5.6.2); nothing when the main is the only one.
func additionalInterfaces(ins []AgentInterface, primary int) []cardjson.Transport {
	out := []cardjson.Transport{{URL: ins[primary].URL, Transport: ins[primary].ProtocolBinding}}
	for _, in := range ins {
		if v, err := ParseVersion(in.ProtocolVersion); err != nil || v != V03 {
			continue
		}
		t := cardjson.Transport{URL: in.URL, Transport: in.ProtocolBinding}
		dup := false
		for _, o := range out {
			dup = dup || o == t
		}
		if !dup {
			out = append(out, t)
		}
	}
	if len(out) == 1 {
		return nil
	}
	return out
}

func schemeToJSON(s *SecurityScheme) (cardjson.Scheme, error) {
	if s.Type == 0 || int(s.Type) >= len(schemeTypes) {
		return cardjson.Scheme{}, fmt.Errorf("unknown type %d", s.Type)
	}
	w := cardjson.Scheme{Type: schemeTypes[s.Type], Description: s.Description}
	switch s.Type {
	case SchemeAPIKey:
		w.In, w.Name = s.Location, s.Name
		w.APIKey = &cardjson.APIKey{Description: s.Description, Location: s.Location, Name: s.Name}
	case SchemeHTTPAuth:
		w.Scheme, w.BearerFormat = s.Scheme, s.BearerFormat
		w.HTTPAuth = &cardjson.HTTPAuth{Description: s.Description, Scheme: s.Scheme, BearerFormat: s.BearerFormat}
	case SchemeOAuth2:
		flows, n := flowsToJSON(&s.Flows)
		if n != 1 {
			return cardjson.Scheme{}, fmt.Errorf("oauth2 needs exactly one flow, has %d", n)
		}
		w.Flows, w.OAuth2MetadataURL = &flows, s.OAuth2MetadataURL
		w.OAuth2 = &cardjson.OAuth2{Description: s.Description, Flows: flows, OAuth2MetadataURL: s.OAuth2MetadataURL}
	case SchemeOpenIDConnect:
		w.OpenIDConnectURL = s.OpenIDConnectURL
		w.OpenIDConnect = &cardjson.OpenIDConnect{Description: s.Description, OpenIDConnectURL: s.OpenIDConnectURL}
	case SchemeMutualTLS:
		w.MutualTLS = &cardjson.MutualTLS{Description: s.Description}
	}
	return w, nil
}

func flowsToJSON(f *OAuthFlows) (cardjson.Flows, int) {
	n := 0
	conv := func(f *OAuthFlow) *cardjson.Flow {
		if f == nil {
			return nil
		}
		n++
		scopes := f.Scopes
		if scopes == nil {
			scopes = map[string]string{} // REQUIRED
		}
		return &cardjson.Flow{
			AuthorizationURL:       f.AuthorizationURL,
			DeviceAuthorizationURL: f.DeviceAuthorizationURL,
			TokenURL:               f.TokenURL,
			RefreshURL:             f.RefreshURL,
			Scopes:                 scopes,
			PKCERequired:           f.PKCERequired,
		}
	}
	w := cardjson.Flows{
		AuthorizationCode: conv(f.AuthorizationCode),
		ClientCredentials: conv(f.ClientCredentials),
		DeviceCode:        conv(f.DeviceCode),
		Implicit:          conv(f.Implicit),
		Password:          conv(f.Password),
	}
	return w, n
}

func requirementsToJSON(rs []SecurityRequirement) []cardjson.Requirement {
	if len(rs) == 0 {
		return nil
	}
	out := make([]cardjson.Requirement, len(rs))
	for i, r := range rs {
		out[i].Schemes = make(map[string]cardjson.ScopeList, len(r))
		for name, scopes := range r {
			out[i].Schemes[name] = scopes
		}
	}
	return out
}

func requirementsTo03(rs []SecurityRequirement) []map[string][]string {
	if len(rs) == 0 {
		return nil
	}
	out := make([]map[string][]string, len(rs))
	for i, r := range rs {
		out[i] = make(map[string][]string, len(r))
		for name, scopes := range r {
			out[i][name] = nonNil(scopes)
		}
	}
	return out
}

// nonNil keeps a REQUIRED array present (as []) when empty.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
