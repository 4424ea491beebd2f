package a2a_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/a2atest"
)

func fullCard() *a2a.AgentCard {
	yes, no := true, false
	return &a2a.AgentCard{
		Name:        "Weather Agent",
		Description: "Weather forecasts & alerts",
		SupportedInterfaces: []a2a.AgentInterface{
			{URL: "https://agent.example.com/a2a", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "1.0"},
			{URL: "https://agent.example.com/a2a", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "0.3"},
			{URL: "https://agent.example.com/rest", ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: "1.0", Tenant: "t1"},
		},
		Provider:         &a2a.AgentProvider{URL: "https://example.com", Organization: "Example"},
		Version:          "1.2.0",
		DocumentationURL: "https://example.com/docs?a=1&b=2",
		Capabilities: a2a.AgentCapabilities{
			Streaming:         &yes,
			PushNotifications: &no,
			ExtendedAgentCard: &yes,
			Extensions:        []a2a.AgentExtension{{URI: "https://ext/v1", Description: "an extension", Required: true, Params: map[string]any{"level": 2.0}}},
		},
		SecuritySchemes: map[string]a2a.SecurityScheme{
			"key":    {Type: a2a.SchemeAPIKey, Description: "API key", Location: "header", Name: "X-API-Key"},
			"bearer": {Type: a2a.SchemeHTTPAuth, Scheme: "bearer", BearerFormat: "JWT"},
			"oauth": {Type: a2a.SchemeOAuth2, OAuth2MetadataURL: "https://auth/.well-known/oauth-authorization-server", Flows: a2a.OAuthFlows{
				AuthorizationCode: &a2a.OAuthFlow{AuthorizationURL: "https://auth/authorize", TokenURL: "https://auth/token", Scopes: map[string]string{"read": "Read"}, PKCERequired: true},
			}},
			"device": {Type: a2a.SchemeOAuth2, Flows: a2a.OAuthFlows{
				DeviceCode: &a2a.OAuthFlow{DeviceAuthorizationURL: "https://auth/device", TokenURL: "https://auth/token", Scopes: map[string]string{}},
			}},
			"oidc": {Type: a2a.SchemeOpenIDConnect, OpenIDConnectURL: "https://accounts.example.com/.well-known/openid-configuration"},
			"mtls": {Type: a2a.SchemeMutualTLS, Description: "client certificates"},
		},
		SecurityRequirements: []a2a.SecurityRequirement{{"oauth": {"read"}}, {"key": nil, "mtls": nil}},
		DefaultInputModes:    []string{"text/plain", "application/json"},
		DefaultOutputModes:   []string{"application/json"},
		Skills: []a2a.AgentSkill{
			{ID: "forecast", Name: "Forecast", Description: "Forecast for a city", Tags: []string{"weather"},
				Examples: []string{"weather in Paris"}, InputModes: []string{"text/plain"}, OutputModes: []string{"application/json"},
				SecurityRequirements: []a2a.SecurityRequirement{{"oauth": {"read"}}}},
			{ID: "alerts", Name: "Alerts", Description: "Severe weather alerts", Tags: []string{}}, // REQUIRED, so [] rather than nil
		},
		Signatures: []a2a.AgentCardSignature{{Protected: "eyJhbGciOiJFUzI1NiJ9", Signature: "c2ln", Header: map[string]any{"kid": "key-1"}}},
		IconURL:    "https://example.com/icon.png",
	}
}

func TestMarshalAgentCardUnion(t *testing.T) {
	got, err := a2a.MarshalAgentCard(fullCard())
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/union-card.json")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(jsonValue(t, want), jsonValue(t, got)) {
		t.Errorf("union card differs from testdata/union-card.json:\n%s", got)
	}
	if strings.Contains(string(got), `\u0026`) {
		t.Errorf("HTML-escaped output: %s", got)
	}

	back, err := a2atest.UnmarshalAgentCard(got)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, fullCard()) {
		t.Errorf("decodes to another card:\n%+v", back)
	}
}

// What each version's reader finds in the union card.
func TestUnionCardViews(t *testing.T) {
	got, err := a2a.MarshalAgentCard(fullCard())
	if err != nil {
		t.Fatal(err)
	}
	var card struct {
		// 0.3
		URL                  string                     `json:"url"`
		PreferredTransport   string                     `json:"preferredTransport"`
		ProtocolVersion      string                     `json:"protocolVersion"`
		AdditionalInterfaces []map[string]string        `json:"additionalInterfaces"`
		Security             []map[string][]string      `json:"security"`
		SupportsExtended     bool                       `json:"supportsAuthenticatedExtendedCard"`
		Schemes              map[string]json.RawMessage `json:"securitySchemes"`
		// 1.0
		SecurityRequirements []map[string]map[string]map[string][]string `json:"securityRequirements"`
		Skills               []struct {
			Tags []string `json:"tags"`
		} `json:"skills"`
	}
	if err := json.Unmarshal(got, &card); err != nil {
		t.Fatal(err)
	}
	if card.URL != "https://agent.example.com/a2a" || card.PreferredTransport != "JSONRPC" || card.ProtocolVersion != "0.3.0" || !card.SupportsExtended {
		t.Errorf("0.3 members: %+v", card)
	}
	// An interface listed for 1.0 only (here HTTP+JSON) is not offered to 0.3 clients.
	if card.AdditionalInterfaces != nil {
		t.Errorf("additionalInterfaces %v", card.AdditionalInterfaces)
	}
	if !reflect.DeepEqual(card.Security, []map[string][]string{{"oauth": {"read"}}, {"key": {}, "mtls": {}}}) {
		t.Errorf("security %v", card.Security)
	}
	if got := card.SecurityRequirements[0]["schemes"]["oauth"]["list"]; !reflect.DeepEqual(got, []string{"read"}) {
		t.Errorf("securityRequirements %v", card.SecurityRequirements)
	}
	nilTags := fullCard()
	nilTags.Skills[1].Tags = nil
	if b, _ := a2a.MarshalAgentCard(nilTags); !strings.Contains(string(b), `"tags":[]`) {
		t.Errorf("REQUIRED tags dropped when nil: %s", b)
	}
	// Each scheme: a 0.3 "type" for 0.3 readers, one 1.0 wrapper for 1.0 readers.
	wrappers := map[string]string{"key": "apiKeySecurityScheme", "bearer": "httpAuthSecurityScheme", "oauth": "oauth2SecurityScheme",
		"device": "oauth2SecurityScheme", "oidc": "openIdConnectSecurityScheme", "mtls": "mtlsSecurityScheme"}
	for name, raw := range card.Schemes {
		var s map[string]any
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		if _, ok := s["type"].(string); !ok {
			t.Errorf("scheme %s has no 0.3 type: %s", name, raw)
		}
		if _, ok := s[wrappers[name]].(map[string]any); !ok {
			t.Errorf("scheme %s has no %s: %s", name, wrappers[name], raw)
		}
	}
}

func TestMarshalAgentCardErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(*a2a.AgentCard)
		want string
	}{
		{"nil", nil, "nil card"},
		{"no interface", func(c *a2a.AgentCard) { c.SupportedInterfaces = nil }, "no supported interface"},
		{"two flows", func(c *a2a.AgentCard) {
			s := c.SecuritySchemes["oauth"]
			s.Flows.ClientCredentials = &a2a.OAuthFlow{TokenURL: "https://auth/token"}
			c.SecuritySchemes["oauth"] = s
		}, `"oauth": oauth2 needs exactly one flow, has 2`},
		{"no flow", func(c *a2a.AgentCard) {
			c.SecuritySchemes["oauth"] = a2a.SecurityScheme{Type: a2a.SchemeOAuth2}
		}, "has 0"},
		{"no type", func(c *a2a.AgentCard) { c.SecuritySchemes["x"] = a2a.SecurityScheme{} }, `"x": unknown type 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c *a2a.AgentCard
			if tt.edit != nil {
				c = fullCard()
				tt.edit(c)
			}
			_, err := a2a.MarshalAgentCard(c)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestRoundTripCards checks, for each example card of the specifications
// (testdata/README.md), that the union card keeps everything the example
// says, and decodes back to the same model.
func TestRoundTripCards(t *testing.T) {
	files, _ := filepath.Glob("testdata/v*/card-*.json")
	if len(files) == 0 {
		t.Fatal("no test data")
	}
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			doc, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			card, err := a2atest.UnmarshalAgentCard(doc)
			if err != nil {
				t.Fatal(err)
			}
			got, err := a2a.MarshalAgentCard(card)
			if err != nil {
				t.Fatal(err)
			}
			have, want := a2a.NormalizeJSON("", jsonValue(t, got)), a2a.NormalizeJSON("", jsonValue(t, doc))
			if path, ok := contains(have, want, ""); !ok {
				t.Errorf("union card lost or changed %s\nexample: %s\nunion:   %s", path, doc, got)
			}
			back, err := a2atest.UnmarshalAgentCard(got)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(card, back) {
				t.Errorf("union card decodes to another card:\nwant %+v\ngot  %+v", card, back)
			}
		})
	}
}

// jsonValue decodes b, any JSON value.
func jsonValue(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	return v
}

// contains reports whether have holds every member of want, and if not the
// path of the first that differs.
func contains(have, want any, path string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return path, false
		}
		for k, e := range w {
			if p, ok := contains(h[k], e, path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return path, false
		}
		for i := range w {
			if p, ok := contains(h[i], w[i], path+"["+string(rune('0'+i))+"]"); !ok {
				return p, false
			}
		}
		return "", true
	}
	return path, reflect.DeepEqual(have, want)
}
