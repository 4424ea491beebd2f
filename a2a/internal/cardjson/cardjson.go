// Package cardjson is the JSON shape of the union Agent Card, the one
// document 1.0 and 0.3 clients both read (see a2a/card_json.go for what it
// holds and why). a2a writes it; a2a/a2atest reads it back for tests, with
// the same structs, so the card's members are spelled once.
package cardjson

import (
	"bytes"
	"encoding/json"
)

// Card is the union card: the 1.0 members, then the 0.3 ones.
type Card struct {
	Name                 string            `json:"name"`
	Description          string            `json:"description"`
	SupportedInterfaces  []Interface       `json:"supportedInterfaces"`
	Provider             *Provider         `json:"provider,omitempty"`
	Version              string            `json:"version"`
	DocumentationURL     string            `json:"documentationUrl,omitempty"`
	Capabilities         Capabilities      `json:"capabilities"`
	SecuritySchemes      map[string]Scheme `json:"securitySchemes,omitempty"`
	SecurityRequirements []Requirement     `json:"securityRequirements,omitempty"`
	DefaultInputModes    []string          `json:"defaultInputModes"`
	DefaultOutputModes   []string          `json:"defaultOutputModes"`
	Skills               []Skill           `json:"skills"`
	Signatures           []Signature       `json:"signatures,omitempty"`
	IconURL              string            `json:"iconUrl,omitempty"`

	// 0.3 members
	ProtocolVersion                   string                `json:"protocolVersion"`
	URL                               string                `json:"url"`
	PreferredTransport                string                `json:"preferredTransport"`
	AdditionalInterfaces              []Transport           `json:"additionalInterfaces,omitempty"`
	Security                          []map[string][]string `json:"security,omitempty"`
	SupportsAuthenticatedExtendedCard *bool                 `json:"supportsAuthenticatedExtendedCard,omitempty"`
}

type Interface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	Tenant          string `json:"tenant,omitempty"`
	ProtocolVersion string `json:"protocolVersion"`
}

type Transport struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`
}

type Provider struct {
	URL          string `json:"url"`
	Organization string `json:"organization"`
}

type Capabilities struct {
	Streaming         *bool       `json:"streaming,omitempty"`
	PushNotifications *bool       `json:"pushNotifications,omitempty"`
	Extensions        []Extension `json:"extensions,omitempty"`
	ExtendedAgentCard *bool       `json:"extendedAgentCard,omitempty"`
}

type Extension struct {
	URI         string         `json:"uri"`
	Description string         `json:"description,omitempty"`
	Required    bool           `json:"required,omitempty"`
	Params      map[string]any `json:"params,omitempty"`
}

type Skill struct {
	ID                   string                `json:"id"`
	Name                 string                `json:"name"`
	Description          string                `json:"description"`
	Tags                 []string              `json:"tags"`
	Examples             []string              `json:"examples,omitempty"`
	InputModes           []string              `json:"inputModes,omitempty"`
	OutputModes          []string              `json:"outputModes,omitempty"`
	SecurityRequirements []Requirement         `json:"securityRequirements,omitempty"`
	Security             []map[string][]string `json:"security,omitempty"` // 0.3
}

type Signature struct {
	Protected string         `json:"protected"`
	Signature string         `json:"signature"`
	Header    map[string]any `json:"header,omitempty"`
}

type Requirement struct {
	Schemes map[string]ScopeList `json:"schemes"`
}

// ScopeList is the proto's StringList: {"list": [...]}, or {} when empty.
type ScopeList []string

func (s ScopeList) MarshalJSON() ([]byte, error) {
	if len(s) == 0 {
		return []byte("{}"), nil
	}
	return json.Marshal(struct {
		List []string `json:"list"`
	}{s})
}

// UnmarshalJSON also accepts a bare array, as the Go SDK writes it.
func (s *ScopeList) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("[")) {
		return json.Unmarshal(b, (*[]string)(s))
	}
	var w struct {
		List []string `json:"list"`
	}
	err := json.Unmarshal(b, &w)
	*s = w.List
	return err
}

// Scheme is a security scheme in both shapes at once: the 0.3 members
// (with "type") and the 1.0 ProtoJSON oneof wrapper.
type Scheme struct {
	Type              string `json:"type,omitempty"`
	Description       string `json:"description,omitempty"`
	In                string `json:"in,omitempty"`
	Name              string `json:"name,omitempty"`
	Scheme            string `json:"scheme,omitempty"`
	BearerFormat      string `json:"bearerFormat,omitempty"`
	Flows             *Flows `json:"flows,omitempty"`
	OAuth2MetadataURL string `json:"oauth2MetadataUrl,omitempty"`
	OpenIDConnectURL  string `json:"openIdConnectUrl,omitempty"`

	APIKey        *APIKey        `json:"apiKeySecurityScheme,omitempty"`
	HTTPAuth      *HTTPAuth      `json:"httpAuthSecurityScheme,omitempty"`
	OAuth2        *OAuth2        `json:"oauth2SecurityScheme,omitempty"`
	OpenIDConnect *OpenIDConnect `json:"openIdConnectSecurityScheme,omitempty"`
	MutualTLS     *MutualTLS     `json:"mtlsSecurityScheme,omitempty"`
}

type APIKey struct {
	Description string `json:"description,omitempty"`
	Location    string `json:"location"`
	Name        string `json:"name"`
}

type HTTPAuth struct {
	Description  string `json:"description,omitempty"`
	Scheme       string `json:"scheme"`
	BearerFormat string `json:"bearerFormat,omitempty"`
}

type OAuth2 struct {
	Description       string `json:"description,omitempty"`
	Flows             Flows  `json:"flows"`
	OAuth2MetadataURL string `json:"oauth2MetadataUrl,omitempty"`
}

type OpenIDConnect struct {
	Description      string `json:"description,omitempty"`
	OpenIDConnectURL string `json:"openIdConnectUrl"`
}

type MutualTLS struct {
	Description string `json:"description,omitempty"`
}

// Flows has the same shape in both versions (0.3 has no deviceCode,
// which its clients ignore as an unknown member).
type Flows struct {
	AuthorizationCode *Flow `json:"authorizationCode,omitempty"`
	ClientCredentials *Flow `json:"clientCredentials,omitempty"`
	DeviceCode        *Flow `json:"deviceCode,omitempty"`
	Implicit          *Flow `json:"implicit,omitempty"`
	Password          *Flow `json:"password,omitempty"`
}

type Flow struct {
	AuthorizationURL       string            `json:"authorizationUrl,omitempty"`
	DeviceAuthorizationURL string            `json:"deviceAuthorizationUrl,omitempty"`
	TokenURL               string            `json:"tokenUrl,omitempty"`
	RefreshURL             string            `json:"refreshUrl,omitempty"`
	Scopes                 map[string]string `json:"scopes"`
	PKCERequired           bool              `json:"pkceRequired,omitempty"`
}

// The 0.3 "type" of each kind of security scheme.
const (
	TypeAPIKey        = "apiKey"
	TypeHTTPAuth      = "http"
	TypeOAuth2        = "oauth2"
	TypeOpenIDConnect = "openIdConnect"
	TypeMutualTLS     = "mutualTLS"
)
