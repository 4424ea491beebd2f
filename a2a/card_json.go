package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// The union Agent Card: one document that 1.0 and 0.3 clients both accept.
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
// pending); UnmarshalAgentCard accepts both.

// unionProtocolVersion is the 0.3 protocolVersion the union card declares.
const unionProtocolVersion = "0.3.0"

type cardJSON struct {
	Name                 string                `json:"name"`
	Description          string                `json:"description"`
	SupportedInterfaces  []interfaceJSON       `json:"supportedInterfaces"`
	Provider             *providerJSON         `json:"provider,omitempty"`
	Version              string                `json:"version"`
	DocumentationURL     string                `json:"documentationUrl,omitempty"`
	Capabilities         capabilitiesJSON      `json:"capabilities"`
	SecuritySchemes      map[string]schemeJSON `json:"securitySchemes,omitempty"`
	SecurityRequirements []requirementJSON     `json:"securityRequirements,omitempty"`
	DefaultInputModes    []string              `json:"defaultInputModes"`
	DefaultOutputModes   []string              `json:"defaultOutputModes"`
	Skills               []skillJSON           `json:"skills"`
	Signatures           []signatureJSON       `json:"signatures,omitempty"`
	IconURL              string                `json:"iconUrl,omitempty"`

	// 0.3 members
	ProtocolVersion                   string                `json:"protocolVersion"`
	URL                               string                `json:"url"`
	PreferredTransport                string                `json:"preferredTransport"`
	AdditionalInterfaces              []transportJSON       `json:"additionalInterfaces,omitempty"`
	Security                          []map[string][]string `json:"security,omitempty"`
	SupportsAuthenticatedExtendedCard *bool                 `json:"supportsAuthenticatedExtendedCard,omitempty"`
}

type interfaceJSON struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	Tenant          string `json:"tenant,omitempty"`
	ProtocolVersion string `json:"protocolVersion"`
}

type transportJSON struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`
}

type providerJSON struct {
	URL          string `json:"url"`
	Organization string `json:"organization"`
}

type capabilitiesJSON struct {
	Streaming         *bool           `json:"streaming,omitempty"`
	PushNotifications *bool           `json:"pushNotifications,omitempty"`
	Extensions        []extensionJSON `json:"extensions,omitempty"`
	ExtendedAgentCard *bool           `json:"extendedAgentCard,omitempty"`
}

type extensionJSON struct {
	URI         string         `json:"uri"`
	Description string         `json:"description,omitempty"`
	Required    bool           `json:"required,omitempty"`
	Params      map[string]any `json:"params,omitempty"`
}

type skillJSON struct {
	ID                   string                `json:"id"`
	Name                 string                `json:"name"`
	Description          string                `json:"description"`
	Tags                 []string              `json:"tags"`
	Examples             []string              `json:"examples,omitempty"`
	InputModes           []string              `json:"inputModes,omitempty"`
	OutputModes          []string              `json:"outputModes,omitempty"`
	SecurityRequirements []requirementJSON     `json:"securityRequirements,omitempty"`
	Security             []map[string][]string `json:"security,omitempty"` // 0.3
}

type signatureJSON struct {
	Protected string         `json:"protected"`
	Signature string         `json:"signature"`
	Header    map[string]any `json:"header,omitempty"`
}

type requirementJSON struct {
	Schemes map[string]scopeList `json:"schemes"`
}

// scopeList is the proto's StringList: {"list": [...]}, or {} when empty.
type scopeList []string

func (s scopeList) MarshalJSON() ([]byte, error) {
	if len(s) == 0 {
		return []byte("{}"), nil
	}
	return json.Marshal(struct {
		List []string `json:"list"`
	}{s})
}

// UnmarshalJSON also accepts a bare array, as the Go SDK writes it.
func (s *scopeList) UnmarshalJSON(b []byte) error {
	if firstByte(b) == '[' {
		return json.Unmarshal(b, (*[]string)(s))
	}
	var w struct {
		List []string `json:"list"`
	}
	err := json.Unmarshal(b, &w)
	*s = w.List
	return err
}

// schemeJSON is a security scheme in both shapes at once: the 0.3 members
// (with "type") and the 1.0 ProtoJSON oneof wrapper.
type schemeJSON struct {
	Type              string     `json:"type,omitempty"`
	Description       string     `json:"description,omitempty"`
	In                string     `json:"in,omitempty"`
	Name              string     `json:"name,omitempty"`
	Scheme            string     `json:"scheme,omitempty"`
	BearerFormat      string     `json:"bearerFormat,omitempty"`
	Flows             *flowsJSON `json:"flows,omitempty"`
	OAuth2MetadataURL string     `json:"oauth2MetadataUrl,omitempty"`
	OpenIDConnectURL  string     `json:"openIdConnectUrl,omitempty"`

	APIKey        *apiKeyJSON        `json:"apiKeySecurityScheme,omitempty"`
	HTTPAuth      *httpAuthJSON      `json:"httpAuthSecurityScheme,omitempty"`
	OAuth2        *oauth2JSON        `json:"oauth2SecurityScheme,omitempty"`
	OpenIDConnect *openIDConnectJSON `json:"openIdConnectSecurityScheme,omitempty"`
	MutualTLS     *mutualTLSJSON     `json:"mtlsSecurityScheme,omitempty"`
}

type apiKeyJSON struct {
	Description string `json:"description,omitempty"`
	Location    string `json:"location"`
	Name        string `json:"name"`
}

type httpAuthJSON struct {
	Description  string `json:"description,omitempty"`
	Scheme       string `json:"scheme"`
	BearerFormat string `json:"bearerFormat,omitempty"`
}

type oauth2JSON struct {
	Description       string    `json:"description,omitempty"`
	Flows             flowsJSON `json:"flows"`
	OAuth2MetadataURL string    `json:"oauth2MetadataUrl,omitempty"`
}

type openIDConnectJSON struct {
	Description      string `json:"description,omitempty"`
	OpenIDConnectURL string `json:"openIdConnectUrl"`
}

type mutualTLSJSON struct {
	Description string `json:"description,omitempty"`
}

// flowsJSON has the same shape in both versions (0.3 has no deviceCode,
// which its clients ignore as an unknown member).
type flowsJSON struct {
	AuthorizationCode *flowJSON `json:"authorizationCode,omitempty"`
	ClientCredentials *flowJSON `json:"clientCredentials,omitempty"`
	DeviceCode        *flowJSON `json:"deviceCode,omitempty"`
	Implicit          *flowJSON `json:"implicit,omitempty"`
	Password          *flowJSON `json:"password,omitempty"`
}

type flowJSON struct {
	AuthorizationURL       string            `json:"authorizationUrl,omitempty"`
	DeviceAuthorizationURL string            `json:"deviceAuthorizationUrl,omitempty"`
	TokenURL               string            `json:"tokenUrl,omitempty"`
	RefreshURL             string            `json:"refreshUrl,omitempty"`
	Scopes                 map[string]string `json:"scopes"`
	PKCERequired           bool              `json:"pkceRequired,omitempty"`
}

// schemeTypes are the 0.3 "type" names, indexed by SecuritySchemeType.
var schemeTypes = [...]string{
	SchemeAPIKey:        "apiKey",
	SchemeHTTPAuth:      "http",
	SchemeOAuth2:        "oauth2",
	SchemeOpenIDConnect: "openIdConnect",
	SchemeMutualTLS:     "mutualTLS",
}

// MarshalAgentCard encodes c as the union card (see above). It fails when c
// has no interface (0.3 needs a url) or a scheme it cannot write.
func MarshalAgentCard(c *AgentCard) ([]byte, error) {
	w, err := cardToJSON(c)
	if err != nil {
		return nil, fmt.Errorf("a2a: marshal agent card: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return nil, fmt.Errorf("a2a: marshal agent card: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func cardToJSON(c *AgentCard) (*cardJSON, error) {
	if c == nil {
		return nil, errors.New("nil card")
	}
	if len(c.SupportedInterfaces) == 0 {
		return nil, errors.New("no supported interface: 0.3 clients need a url")
	}
	w := &cardJSON{
		Name:                 c.Name,
		Description:          c.Description,
		SupportedInterfaces:  make([]interfaceJSON, len(c.SupportedInterfaces)),
		Version:              c.Version,
		DocumentationURL:     c.DocumentationURL,
		SecurityRequirements: requirementsToJSON(c.SecurityRequirements),
		Security:             requirementsTo03(c.SecurityRequirements),
		DefaultInputModes:    nonNil(c.DefaultInputModes),
		DefaultOutputModes:   nonNil(c.DefaultOutputModes),
		Skills:               make([]skillJSON, len(c.Skills)),
		IconURL:              c.IconURL,
		Capabilities: capabilitiesJSON{
			Streaming:         c.Capabilities.Streaming,
			PushNotifications: c.Capabilities.PushNotifications,
			ExtendedAgentCard: c.Capabilities.ExtendedAgentCard,
		},
		ProtocolVersion:                   unionProtocolVersion,
		SupportsAuthenticatedExtendedCard: c.Capabilities.ExtendedAgentCard,
	}
	primary := 0
	for i, in := range c.SupportedInterfaces {
		w.SupportedInterfaces[i] = interfaceJSON(in)
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
		w.Provider = &providerJSON{URL: p.URL, Organization: p.Organization}
	}
	for _, e := range c.Capabilities.Extensions {
		w.Capabilities.Extensions = append(w.Capabilities.Extensions, extensionJSON(e))
	}
	if len(c.SecuritySchemes) > 0 {
		w.SecuritySchemes = make(map[string]schemeJSON, len(c.SecuritySchemes))
		for name, s := range c.SecuritySchemes {
			sj, err := schemeToJSON(&s)
			if err != nil {
				return nil, fmt.Errorf("security scheme %q: %w", name, err)
			}
			w.SecuritySchemes[name] = sj
		}
	}
	for i, s := range c.Skills {
		w.Skills[i] = skillJSON{
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
		w.Signatures = append(w.Signatures, signatureJSON(s))
	}
	return w, nil
}

// additionalInterfaces lists, for 0.3, every distinct (url, transport) with
// the main one first (0.3 spec §5.6.2); nothing when the main is the only one.
func additionalInterfaces(ins []AgentInterface, primary int) []transportJSON {
	out := []transportJSON{{URL: ins[primary].URL, Transport: ins[primary].ProtocolBinding}}
	for _, in := range ins {
		t := transportJSON{URL: in.URL, Transport: in.ProtocolBinding}
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

func schemeToJSON(s *SecurityScheme) (schemeJSON, error) {
	if s.Type == 0 || int(s.Type) >= len(schemeTypes) {
		return schemeJSON{}, fmt.Errorf("unknown type %d", s.Type)
	}
	w := schemeJSON{Type: schemeTypes[s.Type], Description: s.Description}
	switch s.Type {
	case SchemeAPIKey:
		w.In, w.Name = s.Location, s.Name
		w.APIKey = &apiKeyJSON{Description: s.Description, Location: s.Location, Name: s.Name}
	case SchemeHTTPAuth:
		w.Scheme, w.BearerFormat = s.Scheme, s.BearerFormat
		w.HTTPAuth = &httpAuthJSON{Description: s.Description, Scheme: s.Scheme, BearerFormat: s.BearerFormat}
	case SchemeOAuth2:
		flows, n := flowsToJSON(&s.Flows)
		if n != 1 {
			return schemeJSON{}, fmt.Errorf("oauth2 needs exactly one flow, has %d", n)
		}
		w.Flows, w.OAuth2MetadataURL = &flows, s.OAuth2MetadataURL
		w.OAuth2 = &oauth2JSON{Description: s.Description, Flows: flows, OAuth2MetadataURL: s.OAuth2MetadataURL}
	case SchemeOpenIDConnect:
		w.OpenIDConnectURL = s.OpenIDConnectURL
		w.OpenIDConnect = &openIDConnectJSON{Description: s.Description, OpenIDConnectURL: s.OpenIDConnectURL}
	case SchemeMutualTLS:
		w.MutualTLS = &mutualTLSJSON{Description: s.Description}
	}
	return w, nil
}

func flowsToJSON(f *OAuthFlows) (flowsJSON, int) {
	n := 0
	conv := func(f *OAuthFlow) *flowJSON {
		if f == nil {
			return nil
		}
		n++
		scopes := f.Scopes
		if scopes == nil {
			scopes = map[string]string{} // REQUIRED
		}
		return &flowJSON{
			AuthorizationURL:       f.AuthorizationURL,
			DeviceAuthorizationURL: f.DeviceAuthorizationURL,
			TokenURL:               f.TokenURL,
			RefreshURL:             f.RefreshURL,
			Scopes:                 scopes,
			PKCERequired:           f.PKCERequired,
		}
	}
	w := flowsJSON{
		AuthorizationCode: conv(f.AuthorizationCode),
		ClientCredentials: conv(f.ClientCredentials),
		DeviceCode:        conv(f.DeviceCode),
		Implicit:          conv(f.Implicit),
		Password:          conv(f.Password),
	}
	return w, n
}

func requirementsToJSON(rs []SecurityRequirement) []requirementJSON {
	if len(rs) == 0 {
		return nil
	}
	out := make([]requirementJSON, len(rs))
	for i, r := range rs {
		out[i].Schemes = make(map[string]scopeList, len(r))
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

// UnmarshalAgentCard decodes an Agent Card written for 1.0, for 0.3, or as
// the union of both. Where both versions' members are present, the 1.0 ones
// win; a 0.3-only card gets its interfaces from url, preferredTransport and
// additionalInterfaces.
func UnmarshalAgentCard(b []byte) (*AgentCard, error) {
	var w cardJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("a2a: unmarshal agent card: %w", err)
	}
	c, err := cardFromJSON(&w)
	if err != nil {
		return nil, fmt.Errorf("a2a: unmarshal agent card: %w", err)
	}
	return c, nil
}

func cardFromJSON(w *cardJSON) (*AgentCard, error) {
	c := &AgentCard{
		Name:                 w.Name,
		Description:          w.Description,
		Version:              w.Version,
		DocumentationURL:     w.DocumentationURL,
		DefaultInputModes:    w.DefaultInputModes,
		DefaultOutputModes:   w.DefaultOutputModes,
		IconURL:              w.IconURL,
		SecurityRequirements: requirementsFromJSON(w.SecurityRequirements, w.Security),
		Capabilities: AgentCapabilities{
			Streaming:         w.Capabilities.Streaming,
			PushNotifications: w.Capabilities.PushNotifications,
			ExtendedAgentCard: w.Capabilities.ExtendedAgentCard,
		},
	}
	if c.Capabilities.ExtendedAgentCard == nil {
		c.Capabilities.ExtendedAgentCard = w.SupportsAuthenticatedExtendedCard
	}
	if p := w.Provider; p != nil {
		c.Provider = &AgentProvider{URL: p.URL, Organization: p.Organization}
	}
	for _, in := range w.SupportedInterfaces {
		c.SupportedInterfaces = append(c.SupportedInterfaces, AgentInterface(in))
	}
	if len(c.SupportedInterfaces) == 0 && w.URL != "" {
		c.SupportedInterfaces = interfacesFrom03(w)
	}
	for _, e := range w.Capabilities.Extensions {
		c.Capabilities.Extensions = append(c.Capabilities.Extensions, AgentExtension(e))
	}
	if len(w.SecuritySchemes) > 0 {
		c.SecuritySchemes = make(map[string]SecurityScheme, len(w.SecuritySchemes))
		for name, sj := range w.SecuritySchemes {
			s, err := schemeFromJSON(&sj)
			if err != nil {
				return nil, fmt.Errorf("security scheme %q: %w", name, err)
			}
			c.SecuritySchemes[name] = s
		}
	}
	for _, s := range w.Skills {
		c.Skills = append(c.Skills, AgentSkill{
			ID:                   s.ID,
			Name:                 s.Name,
			Description:          s.Description,
			Tags:                 s.Tags,
			Examples:             s.Examples,
			InputModes:           s.InputModes,
			OutputModes:          s.OutputModes,
			SecurityRequirements: requirementsFromJSON(s.SecurityRequirements, s.Security),
		})
	}
	for _, s := range w.Signatures {
		c.Signatures = append(c.Signatures, AgentCardSignature(s))
	}
	return c, nil
}

// interfacesFrom03 derives the interfaces of a 0.3 card.
func interfacesFrom03(w *cardJSON) []AgentInterface {
	version := w.ProtocolVersion
	if version == "" {
		version = "0.3"
	}
	transport := w.PreferredTransport
	if transport == "" {
		transport = BindingJSONRPC // the 0.3 default
	}
	out := []AgentInterface{{URL: w.URL, ProtocolBinding: transport, ProtocolVersion: version}}
	for _, t := range w.AdditionalInterfaces {
		if t.URL == w.URL && t.Transport == transport {
			continue
		}
		out = append(out, AgentInterface{URL: t.URL, ProtocolBinding: t.Transport, ProtocolVersion: version})
	}
	return out
}

func requirementsFromJSON(rs []requirementJSON, rs03 []map[string][]string) []SecurityRequirement {
	var out []SecurityRequirement
	for _, r := range rs {
		req := make(SecurityRequirement, len(r.Schemes))
		for name, scopes := range r.Schemes {
			req[name] = scopes
		}
		out = append(out, req)
	}
	if len(rs) > 0 {
		return out
	}
	for _, r := range rs03 {
		req := make(SecurityRequirement, len(r))
		for name, scopes := range r {
			if len(scopes) > 0 {
				req[name] = scopes
			} else {
				req[name] = nil
			}
		}
		out = append(out, req)
	}
	return out
}

func schemeFromJSON(w *schemeJSON) (SecurityScheme, error) {
	wrappers := 0
	for _, set := range []bool{w.APIKey != nil, w.HTTPAuth != nil, w.OAuth2 != nil, w.OpenIDConnect != nil, w.MutualTLS != nil} {
		if set {
			wrappers++
		}
	}
	if wrappers > 1 {
		return SecurityScheme{}, errors.New("more than one scheme type")
	}
	switch {
	case w.APIKey != nil:
		return SecurityScheme{Type: SchemeAPIKey, Description: w.APIKey.Description, Location: w.APIKey.Location, Name: w.APIKey.Name}, nil
	case w.HTTPAuth != nil:
		h := w.HTTPAuth
		return SecurityScheme{Type: SchemeHTTPAuth, Description: h.Description, Scheme: h.Scheme, BearerFormat: h.BearerFormat}, nil
	case w.OAuth2 != nil:
		o := w.OAuth2
		return SecurityScheme{Type: SchemeOAuth2, Description: o.Description, Flows: flowsFromJSON(&o.Flows), OAuth2MetadataURL: o.OAuth2MetadataURL}, nil
	case w.OpenIDConnect != nil:
		return SecurityScheme{Type: SchemeOpenIDConnect, Description: w.OpenIDConnect.Description, OpenIDConnectURL: w.OpenIDConnect.OpenIDConnectURL}, nil
	case w.MutualTLS != nil:
		return SecurityScheme{Type: SchemeMutualTLS, Description: w.MutualTLS.Description}, nil
	}
	s := SecurityScheme{Description: w.Description}
	switch w.Type {
	case "apiKey":
		s.Type, s.Location, s.Name = SchemeAPIKey, w.In, w.Name
	case "http":
		s.Type, s.Scheme, s.BearerFormat = SchemeHTTPAuth, w.Scheme, w.BearerFormat
	case "oauth2":
		s.Type, s.OAuth2MetadataURL = SchemeOAuth2, w.OAuth2MetadataURL
		if w.Flows != nil {
			s.Flows = flowsFromJSON(w.Flows)
		}
	case "openIdConnect":
		s.Type, s.OpenIDConnectURL = SchemeOpenIDConnect, w.OpenIDConnectURL
	case "mutualTLS":
		s.Type = SchemeMutualTLS
	default:
		return SecurityScheme{}, fmt.Errorf("unknown scheme type %q", w.Type)
	}
	return s, nil
}

func flowsFromJSON(w *flowsJSON) OAuthFlows {
	conv := func(f *flowJSON) *OAuthFlow {
		if f == nil {
			return nil
		}
		return &OAuthFlow{
			AuthorizationURL:       f.AuthorizationURL,
			DeviceAuthorizationURL: f.DeviceAuthorizationURL,
			TokenURL:               f.TokenURL,
			RefreshURL:             f.RefreshURL,
			Scopes:                 f.Scopes,
			PKCERequired:           f.PKCERequired,
		}
	}
	return OAuthFlows{
		AuthorizationCode: conv(w.AuthorizationCode),
		ClientCredentials: conv(w.ClientCredentials),
		DeviceCode:        conv(w.DeviceCode),
		Implicit:          conv(w.Implicit),
		Password:          conv(w.Password),
	}
}
