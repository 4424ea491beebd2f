package a2atest_test

import (
	"reflect"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/a2atest"
)

func TestUnmarshalAgentCard(t *testing.T) {
	tests := []struct {
		name string
		card string
		want *a2a.AgentCard
	}{
		{
			name: "0.3 card",
			card: `{"protocolVersion":"0.3.0","name":"n","description":"d","url":"https://a/rpc","version":"1",
				"additionalInterfaces":[{"url":"https://a/rpc","transport":"JSONRPC"},{"url":"https://a/grpc","transport":"GRPC"}],
				"capabilities":{"streaming":true,"stateTransitionHistory":true},"supportsAuthenticatedExtendedCard":false,
				"securitySchemes":{"k":{"type":"apiKey","in":"query","name":"key"},"o":{"type":"oauth2","flows":{"clientCredentials":{"tokenUrl":"https://t","scopes":{}}}}},
				"security":[{"k":[]},{"o":["s"]}],
				"defaultInputModes":[],"defaultOutputModes":[],"skills":[{"id":"s","name":"S","description":"D","tags":[],"security":[{"k":[]}]}]}`,
			want: &a2a.AgentCard{
				Name: "n", Description: "d", Version: "1",
				SupportedInterfaces: []a2a.AgentInterface{
					{URL: "https://a/rpc", ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3.0"},
					{URL: "https://a/grpc", ProtocolBinding: "GRPC", ProtocolVersion: "0.3.0"},
				},
				Capabilities: a2a.AgentCapabilities{Streaming: new(true), ExtendedAgentCard: new(false)},
				SecuritySchemes: map[string]a2a.SecurityScheme{
					"k": {Type: a2a.SchemeAPIKey, Location: "query", Name: "key"},
					"o": {Type: a2a.SchemeOAuth2, Flows: a2a.OAuthFlows{ClientCredentials: &a2a.OAuthFlow{TokenURL: "https://t", Scopes: map[string]string{}}}},
				},
				SecurityRequirements: []a2a.SecurityRequirement{{"k": nil}, {"o": {"s"}}},
				DefaultInputModes:    []string{}, DefaultOutputModes: []string{},
				Skills: []a2a.AgentSkill{{ID: "s", Name: "S", Description: "D", Tags: []string{}, SecurityRequirements: []a2a.SecurityRequirement{{"k": nil}}}},
			},
		},
		{
			name: "1.0 card, scopes as the Go SDK writes them",
			card: `{"name":"n","description":"d","version":"1","supportedInterfaces":[{"url":"https://a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
				"capabilities":{},"securitySchemes":{"b":{"httpAuthSecurityScheme":{"scheme":"Bearer"}}},
				"securityRequirements":[{"schemes":{"b":["x"]}},{"schemes":{"b":{}}}],"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[]}`,
			want: &a2a.AgentCard{
				Name: "n", Description: "d", Version: "1",
				SupportedInterfaces:  []a2a.AgentInterface{{URL: "https://a", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"}},
				SecuritySchemes:      map[string]a2a.SecurityScheme{"b": {Type: a2a.SchemeHTTPAuth, Scheme: "Bearer"}},
				SecurityRequirements: []a2a.SecurityRequirement{{"b": {"x"}}, {"b": nil}},
				DefaultInputModes:    []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := a2atest.UnmarshalAgentCard([]byte(tt.card))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestUnmarshalAgentCardErrors(t *testing.T) {
	for name, card := range map[string]string{
		"not JSON":         `{`,
		"two scheme types": `{"securitySchemes":{"x":{"apiKeySecurityScheme":{"location":"header","name":"k"},"mtlsSecurityScheme":{}}}}`,
		"unknown type":     `{"securitySchemes":{"x":{"type":"magic"}}}`,
		"no type":          `{"securitySchemes":{"x":{"description":"?"}}}`,
		"bad scopes":       `{"securityRequirements":[{"schemes":{"x":"read"}}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if c, err := a2atest.UnmarshalAgentCard([]byte(card)); err == nil {
				t.Errorf("no error; got %+v", c)
			}
		})
	}
}
