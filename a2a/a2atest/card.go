// Package a2atest helps tests of packages that use a2a: it reads back what
// a2a writes and the server never reads.
package a2atest

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/internal/cardjson"
)

// UnmarshalAgentCard decodes an Agent Card written for 1.0, for 0.3, or as
// the union of both. Where both versions' members are present, the 1.0 ones
// win; a 0.3-only card gets its interfaces from url, preferredTransport and
// additionalInterfaces.
func UnmarshalAgentCard(b []byte) (*a2a.AgentCard, error) {
	var w cardjson.Card
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("a2atest: unmarshal agent card: %w", err)
	}
	c, err := cardFromJSON(&w)
	if err != nil {
		return nil, fmt.Errorf("a2atest: unmarshal agent card: %w", err)
	}
	return c, nil
}

func cardFromJSON(w *cardjson.Card) (*a2a.AgentCard, error) {
	c := &a2a.AgentCard{
		Name:                 w.Name,
		Description:          w.Description,
		Version:              w.Version,
		DocumentationURL:     w.DocumentationURL,
		DefaultInputModes:    w.DefaultInputModes,
		DefaultOutputModes:   w.DefaultOutputModes,
		IconURL:              w.IconURL,
		SecurityRequirements: requirementsFromJSON(w.SecurityRequirements, w.Security),
		Capabilities: a2a.AgentCapabilities{
			Streaming:         w.Capabilities.Streaming,
			PushNotifications: w.Capabilities.PushNotifications,
			ExtendedAgentCard: w.Capabilities.ExtendedAgentCard,
		},
	}
	if c.Capabilities.ExtendedAgentCard == nil {
		c.Capabilities.ExtendedAgentCard = w.SupportsAuthenticatedExtendedCard
	}
	if p := w.Provider; p != nil {
		c.Provider = &a2a.AgentProvider{URL: p.URL, Organization: p.Organization}
	}
	for _, in := range w.SupportedInterfaces {
		c.SupportedInterfaces = append(c.SupportedInterfaces, a2a.AgentInterface(in))
	}
	if len(c.SupportedInterfaces) == 0 && w.URL != "" {
		c.SupportedInterfaces = interfacesFrom03(w)
	}
	for _, e := range w.Capabilities.Extensions {
		c.Capabilities.Extensions = append(c.Capabilities.Extensions, a2a.AgentExtension(e))
	}
	if len(w.SecuritySchemes) > 0 {
		c.SecuritySchemes = make(map[string]a2a.SecurityScheme, len(w.SecuritySchemes))
		for name, sj := range w.SecuritySchemes {
			s, err := schemeFromJSON(&sj)
			if err != nil {
				return nil, fmt.Errorf("security scheme %q: %w", name, err)
			}
			c.SecuritySchemes[name] = s
		}
	}
	for _, s := range w.Skills {
		c.Skills = append(c.Skills, a2a.AgentSkill{
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
		c.Signatures = append(c.Signatures, a2a.AgentCardSignature(s))
	}
	return c, nil
}

// interfacesFrom03 derives the interfaces of a 0.3 card.
func interfacesFrom03(w *cardjson.Card) []a2a.AgentInterface {
	version := w.ProtocolVersion
	if version == "" {
		version = a2a.V03.String()
	}
	transport := w.PreferredTransport
	if transport == "" {
		transport = a2a.BindingJSONRPC // the 0.3 default
	}
	out := []a2a.AgentInterface{{URL: w.URL, ProtocolBinding: transport, ProtocolVersion: version}}
	for _, t := range w.AdditionalInterfaces {
		if t.URL == w.URL && t.Transport == transport {
			continue
		}
		out = append(out, a2a.AgentInterface{URL: t.URL, ProtocolBinding: t.Transport, ProtocolVersion: version})
	}
	return out
}

func requirementsFromJSON(rs []cardjson.Requirement, rs03 []map[string][]string) []a2a.SecurityRequirement {
	var out []a2a.SecurityRequirement
	for _, r := range rs {
		req := make(a2a.SecurityRequirement, len(r.Schemes))
		for name, scopes := range r.Schemes {
			req[name] = scopes
		}
		out = append(out, req)
	}
	if len(rs) > 0 {
		return out
	}
	for _, r := range rs03 {
		req := make(a2a.SecurityRequirement, len(r))
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

func schemeFromJSON(w *cardjson.Scheme) (a2a.SecurityScheme, error) {
	wrappers := 0
	for _, set := range []bool{w.APIKey != nil, w.HTTPAuth != nil, w.OAuth2 != nil, w.OpenIDConnect != nil, w.MutualTLS != nil} {
		if set {
			wrappers++
		}
	}
	if wrappers > 1 {
		return a2a.SecurityScheme{}, errors.New("more than one scheme type")
	}
	switch {
	case w.APIKey != nil:
		return a2a.SecurityScheme{Type: a2a.SchemeAPIKey, Description: w.APIKey.Description, Location: w.APIKey.Location, Name: w.APIKey.Name}, nil
	case w.HTTPAuth != nil:
		h := w.HTTPAuth
		return a2a.SecurityScheme{Type: a2a.SchemeHTTPAuth, Description: h.Description, Scheme: h.Scheme, BearerFormat: h.BearerFormat}, nil
	case w.OAuth2 != nil:
		o := w.OAuth2
		return a2a.SecurityScheme{Type: a2a.SchemeOAuth2, Description: o.Description, Flows: flowsFromJSON(&o.Flows), OAuth2MetadataURL: o.OAuth2MetadataURL}, nil
	case w.OpenIDConnect != nil:
		return a2a.SecurityScheme{Type: a2a.SchemeOpenIDConnect, Description: w.OpenIDConnect.Description, OpenIDConnectURL: w.OpenIDConnect.OpenIDConnectURL}, nil
	case w.MutualTLS != nil:
		return a2a.SecurityScheme{Type: a2a.SchemeMutualTLS, Description: w.MutualTLS.Description}, nil
	}
	s := a2a.SecurityScheme{Description: w.Description}
	switch w.Type {
	case cardjson.TypeAPIKey:
		s.Type, s.Location, s.Name = a2a.SchemeAPIKey, w.In, w.Name
	case cardjson.TypeHTTPAuth:
		s.Type, s.Scheme, s.BearerFormat = a2a.SchemeHTTPAuth, w.Scheme, w.BearerFormat
	case cardjson.TypeOAuth2:
		s.Type, s.OAuth2MetadataURL = a2a.SchemeOAuth2, w.OAuth2MetadataURL
		if w.Flows != nil {
			s.Flows = flowsFromJSON(w.Flows)
		}
	case cardjson.TypeOpenIDConnect:
		s.Type, s.OpenIDConnectURL = a2a.SchemeOpenIDConnect, w.OpenIDConnectURL
	case cardjson.TypeMutualTLS:
		s.Type = a2a.SchemeMutualTLS
	default:
		return a2a.SecurityScheme{}, fmt.Errorf("unknown scheme type %q", w.Type)
	}
	return s, nil
}

func flowsFromJSON(w *cardjson.Flows) a2a.OAuthFlows {
	conv := func(f *cardjson.Flow) *a2a.OAuthFlow {
		if f == nil {
			return nil
		}
		return &a2a.OAuthFlow{
			AuthorizationURL:       f.AuthorizationURL,
			DeviceAuthorizationURL: f.DeviceAuthorizationURL,
			TokenURL:               f.TokenURL,
			RefreshURL:             f.RefreshURL,
			Scopes:                 f.Scopes,
			PKCERequired:           f.PKCERequired,
		}
	}
	return a2a.OAuthFlows{
		AuthorizationCode: conv(w.AuthorizationCode),
		ClientCredentials: conv(w.ClientCredentials),
		DeviceCode:        conv(w.DeviceCode),
		Implicit:          conv(w.Implicit),
		Password:          conv(w.Password),
	}
}
