package cardgen_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
)

func ptr[T any](v T) *T { return &v }

// fullConfig uses every field of Config.
func fullConfig() cardgen.Config {
	return cardgen.Config{
		Name:              "Weather agent",
		Description:       "Answers questions about the weather.",
		Version:           "1.2.0",
		URL:               "https://agent.example.com/a2a",
		Provider:          &a2a.AgentProvider{Organization: "Example Inc.", URL: "https://example.com"},
		DocumentationURL:  "https://docs.example.com/agent",
		IconURL:           "https://agent.example.com/icon.png",
		DefaultInputModes: []string{"application/json"},
		DefaultOutputModes: []string{
			"application/json", "text/plain; charset=utf-8",
		},
		Skills: []a2a.AgentSkill{
			{
				ID: "weather", Name: "Weather", Description: "Current weather in a city.",
				Tags: []string{"weather"}, Examples: []string{"Weather in Paris?"},
				InputModes: []string{"text/plain"}, OutputModes: []string{"application/json"},
			},
			{
				ID: "orders", Name: "Orders", Description: "Places orders.", Tags: []string{"orders"},
				SecurityRequirements: []a2a.SecurityRequirement{{"oauth": {"orders:write"}}},
			},
		},
		SecuritySchemes: map[string]a2a.SecurityScheme{
			"key":    {Type: a2a.SchemeAPIKey, Location: "header", Name: "X-Api-Key"},
			"bearer": {Type: a2a.SchemeHTTPAuth, Scheme: "bearer", BearerFormat: "JWT"},
			"oauth": {Type: a2a.SchemeOAuth2, Flows: a2a.OAuthFlows{ClientCredentials: &a2a.OAuthFlow{
				TokenURL: "https://auth.example.com/token", Scopes: map[string]string{"orders:write": "place orders"},
			}}},
			"oidc": {Type: a2a.SchemeOpenIDConnect, OpenIDConnectURL: "https://auth.example.com/.well-known/openid-configuration"},
			"mtls": {Type: a2a.SchemeMutualTLS},
		},
		Security:     []a2a.SecurityRequirement{{"key": nil}, {"bearer": nil}, {"oauth": {"orders:write"}}},
		ExtendedCard: true,
	}
}

func TestBuild(t *testing.T) {
	cfg := fullConfig()
	got, err := cardgen.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := &a2a.AgentCard{
		Name:        cfg.Name,
		Description: cfg.Description,
		SupportedInterfaces: []a2a.AgentInterface{
			{URL: "https://agent.example.com/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
			{URL: "https://agent.example.com/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"},
		},
		Provider:         &a2a.AgentProvider{Organization: "Example Inc.", URL: "https://example.com"},
		Version:          "1.2.0",
		DocumentationURL: cfg.DocumentationURL,
		Capabilities: a2a.AgentCapabilities{
			Streaming: ptr(true), PushNotifications: ptr(false), ExtendedAgentCard: ptr(true),
		},
		SecuritySchemes:      cfg.SecuritySchemes,
		SecurityRequirements: cfg.Security,
		DefaultInputModes:    cfg.DefaultInputModes,
		DefaultOutputModes:   cfg.DefaultOutputModes,
		Skills:               cfg.Skills,
		IconURL:              cfg.IconURL,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Build:\n got %+v\nwant %+v", got, want)
	}
}

func TestBuildDefaults(t *testing.T) {
	got, err := cardgen.Build(cardgen.Config{
		Name: "a", Description: "b", Version: "1", URL: "http://127.0.0.1:8080/",
	})
	if err != nil {
		t.Fatal(err)
	}
	modes := []string{"text/plain", "application/json"}
	if !reflect.DeepEqual(got.DefaultInputModes, modes) || !reflect.DeepEqual(got.DefaultOutputModes, modes) {
		t.Errorf("modes %v / %v, want %v", got.DefaultInputModes, got.DefaultOutputModes, modes)
	}
	wantCaps := a2a.AgentCapabilities{Streaming: ptr(true), PushNotifications: ptr(false), ExtendedAgentCard: ptr(false)}
	if !reflect.DeepEqual(got.Capabilities, wantCaps) {
		t.Errorf("capabilities %+v, want %+v", got.Capabilities, wantCaps)
	}
	if got.Provider != nil || got.SecuritySchemes != nil || got.SecurityRequirements != nil || got.Skills != nil {
		t.Errorf("unset fields were filled in: %+v", got)
	}
	// The defaults are copies: editing one card must not change the next.
	got.DefaultInputModes[0] = "image/png"
	again, _ := cardgen.Build(cardgen.Config{Name: "a", Description: "b", Version: "1", URL: "http://h/"})
	if again.DefaultInputModes[0] != "text/plain" || again.DefaultOutputModes[0] != "text/plain" {
		t.Errorf("defaults are shared between cards: %v", again.DefaultInputModes)
	}
}

func TestBuildDoesNotAliasConfig(t *testing.T) {
	cfg := fullConfig()
	card, err := cardgen.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Skills[0].ID = "changed"
	cfg.Security[0] = a2a.SecurityRequirement{"x": nil}
	cfg.DefaultInputModes[0] = "image/png"
	cfg.SecuritySchemes["new"] = a2a.SecurityScheme{}
	cfg.Provider.Organization = "changed"
	_, keyKept := card.SecurityRequirements[0]["key"]
	if card.Skills[0].ID != "weather" || !keyKept ||
		card.DefaultInputModes[0] != "application/json" || len(card.SecuritySchemes) != 5 ||
		card.Provider.Organization != "Example Inc." {
		t.Errorf("the card follows later edits of its Config: %+v", card)
	}
}

func TestBuildValidation(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*cardgen.Config)
		want   []string // each must appear in the error; none means valid
	}{
		{"full config is valid", func(*cardgen.Config) {}, nil},
		{"name", func(c *cardgen.Config) { c.Name = "" }, []string{"cardgen: name: required"}},
		{"blank description", func(c *cardgen.Config) { c.Description = " \t" }, []string{"cardgen: description: required"}},
		{"version", func(c *cardgen.Config) { c.Version = "" }, []string{"cardgen: version: required"}},
		{"all three at once", func(c *cardgen.Config) { c.Name, c.Description, c.Version = "", "", "" },
			[]string{"name: required", "description: required", "version: required"}},

		{"url missing", func(c *cardgen.Config) { c.URL = "" }, []string{"cardgen: url: required"}},
		{"url relative", func(c *cardgen.Config) { c.URL = "/a2a" }, []string{`url: "/a2a" is not an absolute http or https URL`}},
		{"url no host", func(c *cardgen.Config) { c.URL = "https:///a2a" }, []string{"url: ", "not an absolute http or https URL"}},
		{"url other scheme", func(c *cardgen.Config) { c.URL = "ftp://example.com/a2a" }, []string{"url: ", "not an absolute http or https URL"}},
		{"url unparsable", func(c *cardgen.Config) { c.URL = "http://exa mple.com/" }, []string{"url: not a URL"}},
		{"url fragment", func(c *cardgen.Config) { c.URL = "https://example.com/a2a#x" }, []string{"url: ", "must not have a fragment"}},
		{"url with credentials", func(c *cardgen.Config) { c.URL = "https://user:pw@example.com/a2a" },
			[]string{"url: must not carry credentials"}},
		{"http url is fine", func(c *cardgen.Config) { c.URL = "http://localhost:8080/" }, nil},

		{"provider organization", func(c *cardgen.Config) { c.Provider.Organization = "" }, []string{"provider.organization: required"}},
		{"provider url", func(c *cardgen.Config) { c.Provider.URL = "" }, []string{"provider.url: required"}},
		{"provider url relative", func(c *cardgen.Config) { c.Provider.URL = "example.com" }, []string{"provider.url: ", "not an absolute"}},
		{"documentation url", func(c *cardgen.Config) { c.DocumentationURL = "docs" }, []string{"documentationUrl: ", "not an absolute"}},
		{"icon url", func(c *cardgen.Config) { c.IconURL = "icon.png" }, []string{"iconUrl: ", "not an absolute"}},
		{"optional urls may be empty", func(c *cardgen.Config) { c.DocumentationURL, c.IconURL, c.Provider = "", "", nil }, nil},

		{"input mode", func(c *cardgen.Config) { c.DefaultInputModes = []string{"text/plain", "text"} },
			[]string{`defaultInputModes[1]: "text" is not a media type`}},
		{"output mode", func(c *cardgen.Config) { c.DefaultOutputModes = []string{""} }, []string{"defaultOutputModes[0]: "}},

		{"skill id missing", func(c *cardgen.Config) { c.Skills[1].ID = "" }, []string{"cardgen: skills[1].id: required"}},
		{"skill id duplicate", func(c *cardgen.Config) { c.Skills[1].ID = "weather" },
			[]string{`skills[1] ("weather").id: duplicate of skills[0]`}},
		{"skill name", func(c *cardgen.Config) { c.Skills[0].Name = "" }, []string{`skills[0] ("weather").name: required`}},
		{"skill description", func(c *cardgen.Config) { c.Skills[0].Description = "" }, []string{`skills[0] ("weather").description: required`}},
		{"skill input mode", func(c *cardgen.Config) { c.Skills[0].InputModes = []string{"json"} },
			[]string{`skills[0] ("weather").inputModes[0]: "json" is not a media type`}},
		{"skill output mode", func(c *cardgen.Config) { c.Skills[0].OutputModes = []string{"a/b", "/"} },
			[]string{`skills[0] ("weather").outputModes[1]: `}},
		{"skill requirement undeclared", func(c *cardgen.Config) {
			c.Skills[1].SecurityRequirements = []a2a.SecurityRequirement{{"oauth": nil}, {"nope": {"x"}}}
		}, []string{`skills[1] ("orders").securityRequirements[1]: scheme "nope" is not declared in securitySchemes`}},
		{"no skills is not cardgen's business", func(c *cardgen.Config) { c.Skills = nil }, nil},

		{"requirement undeclared", func(c *cardgen.Config) {
			c.Security = append(c.Security, a2a.SecurityRequirement{"key": nil, "basic": nil})
		},
			[]string{`cardgen: security[3]: scheme "basic" is not declared in securitySchemes`}},
		{"requirement without schemes", func(c *cardgen.Config) {
			c.SecuritySchemes = nil
			c.Skills[1].SecurityRequirements = nil
		}, []string{`security[0]: scheme "key" is not declared`, `security[1]: scheme "bearer"`, `security[2]: scheme "oauth"`}},
		{"empty requirement allows anonymous callers", func(c *cardgen.Config) { c.Security = append(c.Security, a2a.SecurityRequirement{}) }, nil},

		{"scheme without name", func(c *cardgen.Config) { c.SecuritySchemes[""] = a2a.SecurityScheme{Type: a2a.SchemeMutualTLS} },
			[]string{`securitySchemes[""]: a scheme needs a name`}},
		{"scheme type unset", func(c *cardgen.Config) { c.SecuritySchemes["x"] = a2a.SecurityScheme{} },
			[]string{`securitySchemes["x"]: unknown scheme type 0`}},
		{"apiKey location", func(c *cardgen.Config) {
			c.SecuritySchemes["key"] = a2a.SecurityScheme{Type: a2a.SchemeAPIKey, Location: "body", Name: "k"}
		},
			[]string{`securitySchemes["key"].location: "body" is not one of header, query, cookie`}},
		{"apiKey name", func(c *cardgen.Config) {
			c.SecuritySchemes["key"] = a2a.SecurityScheme{Type: a2a.SchemeAPIKey, Location: "query"}
		},
			[]string{`securitySchemes["key"].name: required`}},
		{"http scheme", func(c *cardgen.Config) { c.SecuritySchemes["bearer"] = a2a.SecurityScheme{Type: a2a.SchemeHTTPAuth} },
			[]string{`securitySchemes["bearer"].scheme: required`}},
		{"oidc url", func(c *cardgen.Config) { c.SecuritySchemes["oidc"] = a2a.SecurityScheme{Type: a2a.SchemeOpenIDConnect} },
			[]string{`securitySchemes["oidc"].openIdConnectUrl: required`}},
		{"oidc url relative", func(c *cardgen.Config) {
			c.SecuritySchemes["oidc"] = a2a.SecurityScheme{Type: a2a.SchemeOpenIDConnect, OpenIDConnectURL: "/.well-known/openid-configuration"}
		}, []string{`securitySchemes["oidc"].openIdConnectUrl: `, "not an absolute"}},
		{"oauth2 without flows", func(c *cardgen.Config) { c.SecuritySchemes["oauth"] = a2a.SecurityScheme{Type: a2a.SchemeOAuth2} },
			[]string{`securitySchemes["oauth"].flows: exactly one flow is needed, got 0`}},
		{"oauth2 with two flows", func(c *cardgen.Config) {
			s := c.SecuritySchemes["oauth"]
			s.Flows.Password = &a2a.OAuthFlow{TokenURL: "https://auth.example.com/token"}
			c.SecuritySchemes["oauth"] = s
		}, []string{`securitySchemes["oauth"].flows: exactly one flow is needed, got 2`}},
		{"oauth2 authorization code", func(c *cardgen.Config) {
			c.SecuritySchemes["oauth"] = a2a.SecurityScheme{Type: a2a.SchemeOAuth2,
				Flows: a2a.OAuthFlows{AuthorizationCode: &a2a.OAuthFlow{RefreshURL: "refresh"}}}
		}, []string{
			`securitySchemes["oauth"].flows.authorizationCode.authorizationUrl: required`,
			`securitySchemes["oauth"].flows.authorizationCode.tokenUrl: required`,
			`securitySchemes["oauth"].flows.authorizationCode.refreshUrl: "refresh" is not an absolute`,
		}},
		{"oauth2 device code", func(c *cardgen.Config) {
			c.SecuritySchemes["oauth"] = a2a.SecurityScheme{Type: a2a.SchemeOAuth2,
				Flows: a2a.OAuthFlows{DeviceCode: &a2a.OAuthFlow{TokenURL: "https://a/t"}}}
		}, []string{`securitySchemes["oauth"].flows.deviceCode.deviceAuthorizationUrl: required`}},
		{"oauth2 implicit", func(c *cardgen.Config) {
			c.SecuritySchemes["oauth"] = a2a.SecurityScheme{Type: a2a.SchemeOAuth2,
				Flows: a2a.OAuthFlows{Implicit: &a2a.OAuthFlow{}}}
		}, []string{`securitySchemes["oauth"].flows.implicit.authorizationUrl: required`}},
		{"oauth2 password", func(c *cardgen.Config) {
			c.SecuritySchemes["oauth"] = a2a.SecurityScheme{Type: a2a.SchemeOAuth2,
				Flows: a2a.OAuthFlows{Password: &a2a.OAuthFlow{}}}
		}, []string{`securitySchemes["oauth"].flows.password.tokenUrl: required`}},
		{"oauth2 client credentials", func(c *cardgen.Config) {
			c.SecuritySchemes["oauth"] = a2a.SecurityScheme{Type: a2a.SchemeOAuth2, OAuth2MetadataURL: "meta",
				Flows: a2a.OAuthFlows{ClientCredentials: &a2a.OAuthFlow{}}}
		}, []string{
			`securitySchemes["oauth"].flows.clientCredentials.tokenUrl: required`,
			`securitySchemes["oauth"].oauth2MetadataUrl: "meta" is not an absolute`,
		}},
		{"oauth2 device code complete", func(c *cardgen.Config) {
			c.SecuritySchemes["oauth"] = a2a.SecurityScheme{Type: a2a.SchemeOAuth2,
				Flows: a2a.OAuthFlows{DeviceCode: &a2a.OAuthFlow{
					DeviceAuthorizationURL: "https://a/device", TokenURL: "https://a/token"}}}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fullConfig()
			tt.mutate(&cfg)
			card, err := cardgen.Build(cfg)
			if len(tt.want) == 0 {
				if err != nil || card == nil {
					t.Fatalf("Build: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Build accepted the configuration; want an error naming %q", tt.want)
			}
			if card != nil {
				t.Errorf("Build returned a card with its error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
			// One line per problem, each saying where it comes from.
			for _, l := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(l, "cardgen: ") {
					t.Errorf("problem %q does not say where it comes from", l)
				}
			}
		})
	}
}

func TestBuildErrorDoesNotLeakCredentials(t *testing.T) {
	cfg := fullConfig()
	cfg.URL = "https://user:s3cret@example.com/a2a"
	_, err := cardgen.Build(cfg)
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %v", err)
	}
}

// A served HTTP+JSON binding is listed as JSON-RPC is, at its URL;
// a URL that is not absolute is refused.
func TestBuildRESTInterface(t *testing.T) {
	cfg := fullConfig()
	cfg.RESTURL = "https://agent.example.com/a2a/rest"
	card, err := cardgen.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []a2a.AgentInterface{
		{URL: "https://agent.example.com/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
		{URL: "https://agent.example.com/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"},
		{URL: "https://agent.example.com/a2a/rest", ProtocolBinding: "HTTP+JSON", ProtocolVersion: "1.0"},
		{URL: "https://agent.example.com/a2a/rest", ProtocolBinding: "HTTP+JSON", ProtocolVersion: "0.3"},
	}
	if !reflect.DeepEqual(card.SupportedInterfaces, want) {
		t.Errorf("supportedInterfaces %+v", card.SupportedInterfaces)
	}
	cfg.RESTURL = "/rest"
	if _, err := cardgen.Build(cfg); err == nil || !strings.Contains(err.Error(), "rest url") {
		t.Errorf("a relative REST URL: %v", err)
	}
}

func TestBuildListsTheGRPCBinding(t *testing.T) {
	cfg := fullConfig()
	cfg.GRPCURL = "agent.example.com:443"
	got, err := cardgen.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []a2a.AgentInterface{
		{URL: "https://agent.example.com/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
		{URL: "https://agent.example.com/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"},
		{URL: "agent.example.com:443", ProtocolBinding: "GRPC", ProtocolVersion: "1.0"},
	}
	if !reflect.DeepEqual(got.SupportedInterfaces, want) {
		t.Errorf("interfaces %+v, want %+v", got.SupportedInterfaces, want)
	}
	cfg.GRPCURL = "agent.example.com :443"
	if _, err := cardgen.Build(cfg); err == nil || !strings.Contains(err.Error(), "GRPC") {
		t.Errorf("a gRPC address with a space: %v", err)
	}
}

// With all three bindings served, JSON-RPC comes first, then HTTP+JSON,
// then gRPC; 0.3's additionalInterfaces list only the 0.3-speaking ones.
func TestBuildListsAllBindings(t *testing.T) {
	cfg := fullConfig()
	cfg.RESTURL = "https://agent.example.com/a2a/rest"
	cfg.GRPCURL = "agent.example.com:443"
	card, err := cardgen.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var bindings []string
	for _, in := range card.SupportedInterfaces {
		bindings = append(bindings, in.ProtocolBinding+" "+in.ProtocolVersion)
	}
	if want := []string{"JSONRPC 1.0", "JSONRPC 0.3", "HTTP+JSON 1.0", "HTTP+JSON 0.3", "GRPC 1.0"}; !reflect.DeepEqual(bindings, want) {
		t.Errorf("interfaces %v, want %v", bindings, want)
	}
}
