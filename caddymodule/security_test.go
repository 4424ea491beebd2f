package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/a2atest"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/confval"
)

func TestUnmarshalCaddyfileSecurity(t *testing.T) {
	var h Handler
	err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(`a2a {
		security {
			realm agents
			cache_size -1
			cache_ttl 1m
			protect_card
			api_key key cookie a2a_key {
				key {env.KEY} ci tasks:read tasks:write
				key_sha256 5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8 partner
			}
			basic staff {
				user bob $2a$14$hash orders:write
				user eve $2a$14$other
				description "Staff logins"
			}
			bearer jwt {
				issuer https://issuer.example
				audience a b
				algorithms ES256
				leeway 10s
				public_key one.pem two.pem
				public_key three.pem
				hmac_secret {env.SECRET}
				introspection https://issuer.example/introspect {
					client_id me
					client_secret {env.CS}
					audience a
					subject_claim client_id
					cache_ttl 30s
					timeout 2s
				}
				allow_insecure_http
			}
			oauth2 oauth {
				flow authorization_code {
					authorization_url https://idp.example/authorize
					token_url https://idp.example/token
					refresh_url https://idp.example/refresh
					scope read
					scope write "Write things"
					pkce_required
				}
				metadata_url https://idp.example/.well-known/oauth-authorization-server
			}
			openid_connect oidc https://accounts.example/.well-known/openid-configuration
			mutual_tls mtls {
				trusted_ca ca1.pem ca2.pem
				trusted_proxies 10.0.0.0/8
				cert_header X-Client-Cert
				subject_from dns cn
			}
			require key tasks:read
			require {
				mtls
				staff orders:write
			}
			require anonymous
		}
		extended_card {
			description "More"
			documentation_url https://example.org/internal
		}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &SecurityConfig{ProtectCard: true, Config: authn.Config{
		Realm: "agents", CacheSize: -1, CacheTTL: confval.Duration(time.Minute),
		Schemes: map[string]*authn.Scheme{
			"key": {Type: "apiKey", In: "cookie", Name: "a2a_key", Keys: []authn.APIKey{
				{Key: "{env.KEY}", Subject: "ci", Scopes: []string{"tasks:read", "tasks:write"}},
				{SHA256: "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8", Subject: "partner", Scopes: []string{}},
			}},
			"staff": {Type: "http", HTTPScheme: "basic", Description: "Staff logins", Users: []authn.User{
				{Username: "bob", Password: "$2a$14$hash", Scopes: []string{"orders:write"}},
				{Username: "eve", Password: "$2a$14$other", Scopes: []string{}},
			}},
			"jwt": {Type: "http", HTTPScheme: "bearer", AllowInsecureHTTP: true,
				JWT: &authn.JWTConfig{Issuer: "https://issuer.example", Audiences: []string{"a", "b"},
					Algorithms: []string{"ES256"}, Leeway: confval.Duration(10 * time.Second),
					PublicKeys: []string{"one.pem", "two.pem", "three.pem"}, HMACSecret: "{env.SECRET}"},
				Introspection: &authn.IntrospectionConfig{URL: "https://issuer.example/introspect", ClientID: "me",
					ClientSecret: "{env.CS}", Audiences: []string{"a"}, SubjectClaim: "client_id",
					CacheTTL: confval.Duration(30 * time.Second), Timeout: confval.Duration(2 * time.Second)}},
			"oauth": {Type: "oauth2", MetadataURL: "https://idp.example/.well-known/oauth-authorization-server",
				Flows: &authn.Flows{AuthorizationCode: &authn.Flow{AuthorizationURL: "https://idp.example/authorize",
					TokenURL: "https://idp.example/token", RefreshURL: "https://idp.example/refresh",
					Scopes: map[string]string{"read": "", "write": "Write things"}, PKCERequired: true}}},
			"oidc": {Type: "openIdConnect", OpenIDConnectURL: "https://accounts.example/.well-known/openid-configuration",
				JWT: &authn.JWTConfig{}},
			"mtls": {Type: "mutualTLS", MTLS: &authn.MTLSConfig{TrustedCAs: []string{"ca1.pem", "ca2.pem"},
				TrustedProxies: []string{"10.0.0.0/8"}, CertHeader: "X-Client-Cert", SubjectFrom: []string{"dns", "cn"}}},
		},
		Require: []a2a.SecurityRequirement{{"key": {"tasks:read"}}, {"mtls": {}, "staff": {"orders:write"}}, {}},
	}}
	if !reflect.DeepEqual(h.Security, want) {
		got, _ := json.MarshalIndent(h.Security, "", " ")
		exp, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("security:\n%s\nwant\n%s", got, exp)
	}
	if e := h.ExtendedCard; e == nil || *e != (ExtendedCardConfig{Description: "More", DocumentationURL: "https://example.org/internal"}) {
		t.Errorf("extended_card: %+v", e)
	}
}

func TestUnmarshalCaddyfileSecurityErrors(t *testing.T) {
	key := "api_key key header X-API-Key {\n key 0123456789abcdef ci\n }\n"
	tests := []struct{ name, input, want string }{
		{"argument", "security on", "security: unexpected argument 'on'"},
		{"empty", "security {\n}", "security: no scheme"},
		{"unknown", "security {\n" + key + " anonymous\n}", "security: unknown subdirective 'anonymous' (valid: realm, cache_size, cache_ttl, protect_card, require, api_key,"},
		{"repeated realm", "security {\n" + key + " realm a\n realm b\n}", "security: realm is set more than once"},
		{"cache_size", "security {\n" + key + " cache_size lots\n}", "security: cache_size: 'lots' is not an integer"},
		{"cache_ttl", "security {\n" + key + " cache_ttl 0s\n}", "security: cache_ttl: 0s is not positive"},
		{"protect_card argument", "security {\n" + key + " protect_card yes\n}", "security: protect_card takes no argument"},
		{"scheme twice", "security {\n" + key + key + "}", `security: scheme "key" is declared twice`},
		{"api_key arguments", "security {\n api_key key X-API-Key\n}", "security: api_key: want <name> header|query|cookie <parameter>, got 2"},
		{"key without subject", "security {\n api_key key header X {\n key 0123456789abcdef\n }\n}", "security: api_key key: key: want <key> <subject>"},
		{"user without hash", "security {\n basic staff {\n user bob\n }\n}", "security: basic staff: user: want <username> <bcrypt hash>"},
		{"basic with a token option", "security {\n basic staff {\n issuer x\n }\n}", "security: basic staff: unknown subdirective 'issuer'"},
		{"bearer unknown option", "security {\n bearer jwt {\n jwks x\n }\n}", "security: bearer jwt: unknown subdirective 'jwks' (valid: description, bearer_format,"},
		{"bearer repeated option", "security {\n bearer jwt {\n issuer a\n issuer b\n }\n}", "security: bearer jwt: issuer is set more than once"},
		{"leeway", "security {\n bearer jwt {\n leeway soon\n }\n}", "security: bearer jwt: leeway: 'soon' is not a duration"},
		{"openid_connect without url", "security {\n openid_connect oidc\n}", "security: openid_connect: want <name> <discovery url>, got 1"},
		{"flow type", "security {\n oauth2 o {\n flow magic\n }\n}", "security: oauth2 o: flow: 'magic' is not authorization_code"},
		{"flow scope twice", "security {\n oauth2 o {\n flow password {\n scope a\n scope a\n }\n }\n}", `security: oauth2 o: flow: scope: "a" is declared twice`},
		{"introspection option", "security {\n bearer b {\n introspection https://x {\n secret s\n }\n }\n}", "security: bearer b: introspection: unknown subdirective 'secret'"},
		{"mtls option", "security {\n mutual_tls m {\n trusted_cas x\n }\n}", "security: mutual_tls m: unknown subdirective 'trusted_cas'"},
		{"require nothing", "security {\n" + key + " require\n}", "security: require: want <scheme> [<scope>...], a block of them, or anonymous"},
		{"require both", "security {\n" + key + " require key {\n key\n }\n}", "security: require: give the schemes on the line or in a block, not both"},
		{"require scheme twice", "security {\n" + key + " require {\n key\n key a\n }\n}", `security: require: scheme "key" is named twice`},
		{"extended_card argument", "extended_card on", "extended_card: unexpected argument 'on'"},
		{"extended_card unknown", "extended_card {\n skills a\n}", "extended_card: unknown subdirective 'skills'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Handler
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("a2a {\n" + tt.input + "\n}"))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v; want one containing %q", err, tt.want)
			}
		})
	}
}

// keyScheme is an API key scheme for alice (scope tasks) and bob (tasks,
// admin).
func keyScheme() *SecurityConfig {
	return &SecurityConfig{Config: authn.Config{Schemes: map[string]*authn.Scheme{
		"key": {Type: authn.TypeAPIKey, In: "header", Name: "X-API-Key", Keys: []authn.APIKey{
			{Key: aliceKey, Subject: "alice", Scopes: []string{"tasks"}},
			{Key: bobKey, Subject: "bob", Scopes: []string{"tasks", "admin"}},
		}}}}}
}

// securedHandler is a handler for the secured skills with an API key
// scheme, not yet provisioned.
func securedHandler(t *testing.T, skills string) *Handler {
	return &Handler{
		Skills:       writeSkills(t, skills),
		Upstream:     "http://127.0.0.1:9",
		URL:          "https://agent.example.com/",
		Name:         "Secured",
		Description:  "Public description",
		Security:     keyScheme(),
		ExtendedCard: &ExtendedCardConfig{Description: "Extended description"},
	}
}

func TestValidateSecurity(t *testing.T) {
	tests := []struct {
		name string
		tune func(h *Handler)
		want string
	}{
		{"no scheme", func(h *Handler) { h.Security = &SecurityConfig{} }, "security: declare at least one scheme"},
		{"authn's own checks", func(h *Handler) { h.Security.Schemes["key"].In = "body" }, `security: authn: scheme "key": in: "body" is not header, query or cookie`},
		{"undeclared requirement", func(h *Handler) { h.Security.Require = []a2a.SecurityRequirement{{"nope": nil}} }, `scheme "nope" is not declared`},
		{"extended card without security", func(h *Handler) { h.Security = nil }, "extended_card: the extended card is served to authenticated callers only"},
		{"extended documentation url", func(h *Handler) { h.ExtendedCard.DocumentationURL = "docs" }, "extended_card: documentation_url: not an absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := securedHandler(t, securedSkills)
			tt.tune(h)
			if err := h.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate: %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestProvisionSecurityErrors(t *testing.T) {
	tests := []struct {
		name   string
		skills string
		tune   func(h *Handler)
		want   []string
	}{
		{"a skill names an undeclared scheme", strings.Replace(securedSkills, "key: [admin]", "oauth: [admin]", 1), nil,
			[]string{"skills.yaml:13:", `skill "admin_report": security: [0]: scheme "oauth" is not declared`}},
		{"a skill asks a scope no key grants", strings.Replace(securedSkills, "key: [admin]", "key: [root]", 1), nil,
			[]string{"skills.yaml:13:", `skill "admin_report"`, `scope "root" is granted to no API key`}},
		{"skill security without a security block", securedSkills, func(h *Handler) { h.Security, h.ExtendedCard = nil, nil },
			[]string{`skill "admin_report": security: [0]: scheme "key" is not declared`}},
		{"an extended skill without the extended card", securedSkills, func(h *Handler) { h.ExtendedCard = nil },
			[]string{`skill "internal_stats" is extended: true, but no extended card is configured (extended_card)`}},
		{"a key too short", securedSkills, func(h *Handler) { h.Security.Schemes["key"].Keys[0].Key = "short" },
			[]string{`security: authn: scheme "key": keys[0].key: a key is 16 to`}},
		{"an unset environment variable", securedSkills, func(h *Handler) { h.Security.Schemes["key"].Keys[0].Key = "{env.A2A_TEST_UNSET_KEY}" },
			[]string{"environment variable A2A_TEST_UNSET_KEY is not set"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := securedHandler(t, tt.skills)
			if tt.tune != nil {
				tt.tune(h)
			}
			err := h.Provision(newTestContext(t))
			// Caddy cleans up a handler whose Provision failed.
			if cerr := h.Cleanup(); cerr != nil {
				t.Errorf("Cleanup: %v", cerr)
			}
			if err == nil {
				t.Fatalf("Provision succeeded; want an error with %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Provision: %v\nwant it to contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), aliceKey) {
				t.Errorf("the error shows a key: %v", err)
			}
		})
	}
}

// TestProvisionExtendedCardSigned: the extended card lists every skill,
// takes its own description, and is signed like the public card; the
// public card announces it and leaves the extended skills out.
func TestProvisionExtendedCardSigned(t *testing.T) {
	h := securedHandler(t, securedSkills)
	h.Signing = &SigningConfig{Keys: []SigningKey{{Key: keyFile(t, t.TempDir(), "k.pem", cardgen.ES256), ID: "k"}}}
	if err := h.Provision(newTestContext(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Cleanup() })
	keys, err := cardgen.ParseJWKS(serveGet(t, h, "/.well-known/jwks.json").Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}

	public := serveGet(t, h, "/.well-known/agent-card.json").Body.Bytes()
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("X-API-Key", aliceKey)
	w := httptest.NewRecorder()
	if err := h.ServeHTTP(w, req, nil); err != nil {
		t.Fatal(err)
	}
	var answer struct{ Result json.RawMessage }
	if err := json.Unmarshal(w.Body.Bytes(), &answer); err != nil || answer.Result == nil {
		t.Fatalf("GetExtendedAgentCard: %d %s", w.Code, w.Body)
	}
	for name, card := range map[string][]byte{"public": public, "extended": answer.Result} {
		if r, err := cardgen.Verify(card, keys, cardgen.VerifyOptions{}); err != nil || !r.OK(false) {
			t.Errorf("the %s card does not verify: %v %+v", name, err, r)
		}
		parsed, err := a2atest.UnmarshalAgentCard(card)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, sk := range parsed.Skills {
			ids = append(ids, sk.ID)
		}
		extended := name == "extended"
		if has := strings.Contains(strings.Join(ids, ","), "internal_stats"); has != extended {
			t.Errorf("%s card skills %v", name, ids)
		}
		if want := map[bool]string{false: "Public description", true: "Extended description"}[extended]; parsed.Description != want {
			t.Errorf("%s card description %q, want %q", name, parsed.Description, want)
		}
		if ext := parsed.Capabilities.ExtendedAgentCard; ext == nil || !*ext {
			t.Errorf("%s card: capabilities.extendedAgentCard not true", name)
		}
		if len(parsed.SecuritySchemes) != 1 || len(parsed.SecurityRequirements) != 1 {
			t.Errorf("%s card security: %v %v", name, parsed.SecuritySchemes, parsed.SecurityRequirements)
		}
	}
	if !strings.Contains(string(public), `"supportsAuthenticatedExtendedCard":true`) {
		t.Errorf("the public card lacks the 0.3 supportsAuthenticatedExtendedCard")
	}
}

// TestPlaceholders: the identity is published on the request's replacer,
// as Caddy's own authentication handler does.
func TestPlaceholders(t *testing.T) {
	h := securedHandler(t, securedSkills)
	if err := h.Provision(newTestContext(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Cleanup() })
	for _, tt := range []struct {
		key, id, scheme, scopes string
	}{{bobKey, "bob", "key", "tasks admin"}, {"", "", "", ""}, {"wrong-key-0123456789", "", "", ""}} {
		repl := caddy.NewReplacer()
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`))
		req = req.WithContext(context.WithValue(req.Context(), caddy.ReplacerCtxKey, repl))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		if tt.key != "" {
			req.Header.Set("X-API-Key", tt.key)
		}
		if err := h.ServeHTTP(httptest.NewRecorder(), req, nil); err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]string{"http.auth.user.id": tt.id, "http.auth.user.scheme": tt.scheme, "http.auth.user.scopes": tt.scopes} {
			if got, _ := repl.GetString(name); got != want {
				t.Errorf("key %q: {%s} = %q, want %q", tt.key, name, got, want)
			}
		}
	}
}

// readmeSecurityJSON is the security block of the README's JSON example.
const readmeSecurityJSON = `{
  "schemes": {
    "key": {"type": "apiKey", "in": "header", "name": "X-API-Key",
      "keys": [
        {"key": "{env.CI_API_KEY}", "subject": "ci-bot", "scopes": ["tasks:read"]},
        {"sha256": "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8", "subject": "partner"}
      ]},
    "staff": {"type": "http", "scheme": "basic",
      "users": [{"username": "bob", "password": "$2a$14$Zkx19XLiW6VYouLHR5NmfOFU0z2GTNmpkT/5qqR7hx4IjWJPDhjvG", "scopes": ["orders:write"]}]},
    "jwt": {"type": "http", "scheme": "bearer",
      "jwt": {"issuer": "https://issuer.example", "audiences": ["a2a-agent"], "public_keys": ["/etc/a2a/jwt-signer.pem"], "leeway": "30s"}},
    "oauth": {"type": "oauth2",
      "flows": {"client_credentials": {"token_url": "https://idp.example/oauth/token",
        "scopes": {"orders:read": "Read orders", "orders:write": "Place orders"}}},
      "metadata_url": "https://idp.example/.well-known/oauth-authorization-server",
      "jwt": {"audiences": ["a2a-agent"]},
      "introspection": {"url": "https://idp.example/oauth/introspect", "client_id": "a2a-agent", "client_secret": "{env.INTROSPECT_SECRET}"}},
    "oidc": {"type": "openIdConnect", "openid_connect_url": "https://accounts.example/.well-known/openid-configuration",
      "jwt": {"audiences": ["a2a-agent"]}},
    "mtls": {"type": "mutualTLS",
      "mtls": {"trusted_cas": ["/etc/a2a/clients-ca.pem"], "trusted_proxies": ["10.0.0.0/8"], "cert_header": "X-Forwarded-Client-Cert"}}
  },
  "require": [{"key": []}, {"oauth": ["orders:read"]}, {"oidc": []}, {"mtls": [], "staff": []}],
  "realm": "orders-agent",
  "cache_ttl": "5m",
  "protect_card": false
}`

func TestSecurityReadmeJSON(t *testing.T) {
	var s SecurityConfig
	if err := caddy.StrictUnmarshalJSON([]byte(readmeSecurityJSON), &s); err != nil {
		t.Fatalf("decoding the README's JSON: %v", err)
	}
	if err := s.validate(); err != nil {
		t.Fatalf("the README's JSON does not validate: %v", err)
	}
	cfg := s.Config
	if time.Duration(cfg.CacheTTL) != 5*time.Minute || time.Duration(cfg.Schemes["jwt"].JWT.Leeway) != 30*time.Second {
		t.Errorf("durations: cache_ttl %v, leeway %v", cfg.CacheTTL, cfg.Schemes["jwt"].JWT.Leeway)
	}
	if got := cfg.Require[3]; !reflect.DeepEqual(got, a2a.SecurityRequirement{"mtls": {}, "staff": {}}) {
		t.Errorf("require[3] = %v", got)
	}
}

// TestSecurityJSONDurations: in JSON as in the Caddyfile, the security
// block's durations take Caddy's forms ("1d", "1m30s") and nanoseconds.
func TestSecurityJSONDurations(t *testing.T) {
	config := fmt.Sprintf(`{"skills": %q, "upstream": "http://127.0.0.1:9", "url": "https://agent.example.com/",
		"name": "Secured", "description": "Configured in JSON", "extended_card": {},
		"security": {"cache_ttl": "1d", "schemes": {
			"key": {"type": "apiKey", "in": "header", "name": "X-API-Key", "keys": [{"key": %q, "subject": "alice", "scopes": ["admin"]}]},
			"jwt": {"type": "http", "scheme": "bearer", "jwt": {"hmac_secret": "0123456789abcdef0123456789abcdef",
				"leeway": "1m30s", "fetch_timeout": 2000000000}}}}}`, writeSkills(t, securedSkills), aliceKey)
	mod, err := newTestContext(t).LoadModuleByID("http.handlers.a2a", json.RawMessage(config))
	if err != nil {
		t.Fatalf("loading the JSON config: %v", err)
	}
	cfg := mod.(*Handler).Security.Config
	jwt := cfg.Schemes["jwt"].JWT
	if time.Duration(cfg.CacheTTL) != 24*time.Hour || time.Duration(jwt.Leeway) != 90*time.Second || time.Duration(jwt.FetchTimeout) != 2*time.Second {
		t.Errorf("cache_ttl %v, leeway %v, fetch_timeout %v; want 24h, 1m30s, 2s", cfg.CacheTTL, jwt.Leeway, jwt.FetchTimeout)
	}

	var s SecurityConfig
	if err := json.Unmarshal([]byte(`{"cache_ttl": "soon"}`), &s); err == nil {
		t.Error(`"soon" was accepted as a duration`)
	}
}

// listedSubdirectives is the list of valid subdirectives that the
// unknown-subdirective error of the block between open and close gives.
func listedSubdirectives(t *testing.T, open, close string) []string {
	t.Helper()
	var h Handler
	err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(open + "not_a_subdirective\n" + close))
	_, list, ok := strings.Cut(fmt.Sprint(err), "unknown subdirective 'not_a_subdirective' (valid: ")
	list, _, closed := strings.Cut(list, ")")
	if !ok || !closed {
		t.Fatalf("%s: error %v lists no valid subdirectives", open, err)
	}
	return strings.Split(list, ", ")
}

// FuzzDurationLikeCaddy: a duration of the core packages' configuration
// (confval) reads as Caddy's own durations read, in JSON strings and
// numbers.
func FuzzDurationLikeCaddy(f *testing.F) {
	for _, s := range []string{"1d", "1.5d", "1d12h", "-1d", "d", "1h1d", "0.5d1d", "1dd", "1m30s", "", "soon", "+2d", "1e3d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		inputs := []string{s} // a number, or any JSON
		if b, _ := json.Marshal(s); string(b) == `"`+s+`"` {
			inputs = append(inputs, string(b)) // Caddy reads a string without unescaping it
		}
		for _, raw := range inputs {
			var want caddy.Duration
			wantErr := json.Unmarshal([]byte(raw), &want)
			var got confval.Duration
			gotErr := json.Unmarshal([]byte(raw), &got)
			if (gotErr == nil) != (wantErr == nil) || (gotErr == nil && int64(got) != int64(want)) {
				t.Errorf("%s: confval reads %v (%v), Caddy %v (%v)", raw, time.Duration(got), gotErr, time.Duration(want), wantErr)
			}
		}
	})
}
