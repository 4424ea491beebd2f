package a2a_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// everyURL is a flow with each of its URLs set.
func everyURL() *a2a.OAuthFlow {
	return &a2a.OAuthFlow{AuthorizationURL: "https://idp/authorize", DeviceAuthorizationURL: "https://idp/device",
		TokenURL: "https://idp/token", RefreshURL: "https://idp/refresh", Scopes: map[string]string{"read": "Read"}}
}

// TestOAuthFlowTypes: each flow type's names are those the configuration
// (the proto's field names) and the card (the JSON names) write, and its
// URLs are those the flow has, the required ones marked.
func TestOAuthFlowTypes(t *testing.T) {
	required := map[a2a.OAuthFlowType][]string{
		a2a.FlowAuthorizationCode: {"authorization_url", "token_url"},
		a2a.FlowClientCredentials: {"token_url"},
		a2a.FlowDeviceCode:        {"device_authorization_url", "token_url"},
		a2a.FlowImplicit:          {"authorization_url"},
		a2a.FlowPassword:          {"token_url"},
	}
	if len(a2a.OAuthFlowTypes) != len(required) {
		t.Fatalf("%d flow types, want %d", len(a2a.OAuthFlowTypes), len(required))
	}
	for _, typ := range a2a.OAuthFlowTypes {
		t.Run(typ.ProtoName(), func(t *testing.T) {
			if got, ok := a2a.ParseOAuthFlowType(typ.ProtoName()); !ok || got != typ {
				t.Errorf("ParseOAuthFlowType(%q) = %v, %v", typ.ProtoName(), got, ok)
			}
			var flows a2a.OAuthFlows
			flows.Set(typ, everyURL())

			// The configuration's JSON, through the struct tags.
			var config map[string]map[string]any
			if b, err := json.Marshal(flows); err != nil || json.Unmarshal(b, &config) != nil {
				t.Fatalf("encoding the flows: %v", err)
			}
			// The card, through MarshalAgentCard.
			b, err := a2a.MarshalAgentCard(&a2a.AgentCard{Name: "n",
				SupportedInterfaces: []a2a.AgentInterface{{URL: "https://agent/", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "1.0"}},
				SecuritySchemes:     map[string]a2a.SecurityScheme{"o": {Type: a2a.SchemeOAuth2, Flows: flows}}})
			if err != nil {
				t.Fatal(err)
			}
			var card struct {
				SecuritySchemes map[string]struct{ Flows map[string]map[string]any }
			}
			if err := json.Unmarshal(b, &card); err != nil {
				t.Fatal(err)
			}
			cardFlows := card.SecuritySchemes["o"].Flows
			if !slices.Equal(slices.Collect(maps.Keys(config)), []string{typ.ProtoName()}) || !slices.Equal(slices.Collect(maps.Keys(cardFlows)), []string{typ.String()}) {
				t.Fatalf("configuration %v, card %v; want the members %s and %s", config, cardFlows, typ.ProtoName(), typ)
			}

			var want []string
			for _, u := range typ.URLs(everyURL()) {
				if u.URL == "" {
					t.Errorf("%s: no value", u.ProtoName)
				}
				if _, ok := config[typ.ProtoName()][u.ProtoName]; !ok {
					t.Errorf("%s is not a member of the configuration's flow %v", u.ProtoName, config)
				}
				if _, ok := cardFlows[typ.String()][u.JSONName]; !ok {
					t.Errorf("%s is not a member of the card's flow %v", u.JSONName, cardFlows)
				}
				if u.Required {
					want = append(want, u.ProtoName)
				}
			}
			if !slices.Equal(want, required[typ]) {
				t.Errorf("required URLs %v, want %v", want, required[typ])
			}
		})
	}
	if typ, ok := a2a.ParseOAuthFlowType("authorizationCode"); ok {
		t.Errorf("the JSON name was read as %v; the configuration names flows by their proto names", typ)
	}
}

// TestOAuthFlowsClone: a clone holds the same flows, and none of its flows
// or scopes is the original's.
func TestOAuthFlowsClone(t *testing.T) {
	var flows a2a.OAuthFlows
	if flows.Len() != 0 || flows.Clone() != (a2a.OAuthFlows{}) {
		t.Errorf("an empty OAuthFlows: Len %d, Clone %+v", flows.Len(), flows.Clone())
	}
	flows.Set(a2a.FlowDeviceCode, everyURL())
	flows.Set(a2a.FlowPassword, &a2a.OAuthFlow{TokenURL: "https://idp/token"})
	c := flows.Clone()
	if c.Len() != 2 || c.DeviceCode == flows.DeviceCode || c.Password == flows.Password {
		t.Fatalf("clone %+v shares flows with %+v", c, flows)
	}
	if !maps.Equal(c.DeviceCode.Scopes, flows.DeviceCode.Scopes) || c.Password.TokenURL != flows.Password.TokenURL {
		t.Errorf("clone %+v differs from %+v", c, flows)
	}
	c.DeviceCode.Scopes["write"] = "Write"
	if _, shared := flows.DeviceCode.Scopes["write"]; shared {
		t.Error("the clone shares its scopes")
	}
	var types []a2a.OAuthFlowType
	for typ := range flows.All() {
		types = append(types, typ)
	}
	if !slices.Equal(types, []a2a.OAuthFlowType{a2a.FlowDeviceCode, a2a.FlowPassword}) {
		t.Errorf("All yields %v", types)
	}
	flows.Set(a2a.FlowDeviceCode, nil)
	if flows.Len() != 1 {
		t.Errorf("Set(nil) left %d flows", flows.Len())
	}
}
