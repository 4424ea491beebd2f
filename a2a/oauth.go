package a2a

import (
	"iter"
	"maps"
)

// OAuthFlows holds the OAuth 2.0 flows a scheme supports; set ones only. In
// 1.0 it is a oneof: a card's scheme holds exactly one.
//
// The JSON tags are the proto's field names (authorization_code, token_url),
// which the agent's configuration uses; the card is written with the JSON
// names (authorizationCode, tokenUrl) by MarshalAgentCard, never with these
// tags.
type OAuthFlows struct {
	AuthorizationCode *OAuthFlow `json:"authorization_code,omitempty"`
	ClientCredentials *OAuthFlow `json:"client_credentials,omitempty"`
	DeviceCode        *OAuthFlow `json:"device_code,omitempty"`
	Implicit          *OAuthFlow `json:"implicit,omitempty"`
	Password          *OAuthFlow `json:"password,omitempty"`
}

// OAuthFlow is one OAuth 2.0 flow; which URLs apply depends on the flow
// (OAuthFlowType.URLs).
type OAuthFlow struct {
	// AuthorizationURL is where the authorization code and implicit flows
	// send the user; they require it.
	AuthorizationURL string `json:"authorization_url,omitempty"`
	// DeviceAuthorizationURL is where the device code flow starts; it
	// requires it.
	DeviceAuthorizationURL string `json:"device_authorization_url,omitempty"`
	// TokenURL is where tokens are obtained; every flow but implicit
	// requires it.
	TokenURL string `json:"token_url,omitempty"`
	// RefreshURL is where tokens are refreshed.
	RefreshURL string `json:"refresh_url,omitempty"`
	// Scopes the flow grants, with their descriptions.
	Scopes map[string]string `json:"scopes,omitempty"`
	// PKCERequired tells clients that PKCE (RFC 7636) is required.
	PKCERequired bool `json:"pkce_required,omitempty"`
}

// OAuthFlowType names one member of OAuthFlows.
type OAuthFlowType uint8

const (
	FlowAuthorizationCode OAuthFlowType = iota + 1
	FlowClientCredentials
	FlowDeviceCode
	FlowImplicit
	FlowPassword
)

// OAuthFlowTypes lists every flow type, in the order of OAuthFlows' fields.
var OAuthFlowTypes = []OAuthFlowType{FlowAuthorizationCode, FlowClientCredentials, FlowDeviceCode, FlowImplicit, FlowPassword}

// flowNames are the proto field name and the JSON name of each flow type.
var flowNames = [...]struct{ proto, json string }{
	FlowAuthorizationCode: {"authorization_code", "authorizationCode"},
	FlowClientCredentials: {"client_credentials", "clientCredentials"},
	FlowDeviceCode:        {"device_code", "deviceCode"},
	FlowImplicit:          {"implicit", "implicit"},
	FlowPassword:          {"password", "password"},
}

// String is the flow's JSON name, as the card writes it: authorizationCode.
func (t OAuthFlowType) String() string { return flowNames[t].json }

// ProtoName is the flow's proto field name, as the configuration writes
// it: authorization_code.
func (t OAuthFlowType) ProtoName() string { return flowNames[t].proto }

// ParseOAuthFlowType reads a flow's proto field name.
func ParseOAuthFlowType(protoName string) (OAuthFlowType, bool) {
	for _, t := range OAuthFlowTypes {
		if flowNames[t].proto == protoName {
			return t, true
		}
	}
	return 0, false
}

// OAuthFlowURL is one URL of a flow.
type OAuthFlowURL struct {
	// ProtoName and JSONName name the field: token_url, tokenUrl.
	ProtoName, JSONName string
	// URL is the field's value, "" when unset.
	URL string
	// Required says that flows of this type must have it.
	Required bool
}

// URLs lists the URLs of f, a flow of type t, set or not: an authorization
// URL, required by the authorization code and implicit flows; a device
// authorization URL, required by the device code flow; a token URL,
// required by every flow but implicit; a refresh URL, never required.
func (t OAuthFlowType) URLs(f *OAuthFlow) [4]OAuthFlowURL {
	return [4]OAuthFlowURL{
		{"authorization_url", "authorizationUrl", f.AuthorizationURL, t == FlowAuthorizationCode || t == FlowImplicit},
		{"device_authorization_url", "deviceAuthorizationUrl", f.DeviceAuthorizationURL, t == FlowDeviceCode},
		{"token_url", "tokenUrl", f.TokenURL, t != FlowImplicit},
		{"refresh_url", "refreshUrl", f.RefreshURL, false},
	}
}

// member is the field of f that holds flows of type t.
func (f *OAuthFlows) member(t OAuthFlowType) **OAuthFlow {
	switch t {
	case FlowAuthorizationCode:
		return &f.AuthorizationCode
	case FlowClientCredentials:
		return &f.ClientCredentials
	case FlowDeviceCode:
		return &f.DeviceCode
	case FlowImplicit:
		return &f.Implicit
	case FlowPassword:
		return &f.Password
	}
	panic("a2a: unknown OAuth flow type")
}

// Set makes flow the flow of type t in f; nil removes it.
func (f *OAuthFlows) Set(t OAuthFlowType, flow *OAuthFlow) { *f.member(t) = flow }

// All yields the flows f holds with their types, in the order of
// OAuthFlowTypes.
func (f *OAuthFlows) All() iter.Seq2[OAuthFlowType, *OAuthFlow] {
	return func(yield func(OAuthFlowType, *OAuthFlow) bool) {
		for _, t := range OAuthFlowTypes {
			if flow := *f.member(t); flow != nil && !yield(t, flow) {
				return
			}
		}
	}
}

// Len is how many flows f holds.
func (f *OAuthFlows) Len() int {
	n := 0
	for range f.All() {
		n++
	}
	return n
}

// Clone returns a deep copy of f: its flows and their scopes are its own.
func (f *OAuthFlows) Clone() OAuthFlows {
	var c OAuthFlows
	for t, flow := range f.All() {
		copied := *flow
		copied.Scopes = maps.Clone(flow.Scopes)
		c.Set(t, &copied)
	}
	return c
}
