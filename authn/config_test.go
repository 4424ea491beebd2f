package authn_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
)

func TestValidate(t *testing.T) {
	key := func() *authn.Scheme {
		return &authn.Scheme{Type: "apiKey", In: "header", Name: "X-API-Key",
			Keys: []authn.APIKey{{Key: "0123456789abcdef", Subject: "ci"}}}
	}
	bearerJWKS := func() *authn.Scheme {
		return &authn.Scheme{Type: "http", HTTPScheme: "bearer",
			JWT: &authn.JWTConfig{JWKSURL: "https://idp.example/jwks", Audiences: []string{"a2a"}}}
	}
	tests := []struct {
		name   string
		schema map[string]*authn.Scheme
		req    []a2a.SecurityRequirement
		want   string // substring of the error; "" means valid
	}{
		{"valid apiKey", map[string]*authn.Scheme{"k": key()}, nil, ""},
		{"unknown type", map[string]*authn.Scheme{"k": {Type: "magic"}}, nil, `scheme "k": type: "magic"`},
		{"bad name", map[string]*authn.Scheme{"a b": key()}, nil, "a name is 1 to 64"},
		{"reserved name", map[string]*authn.Scheme{"anonymous": key()}, nil, "the name is reserved"},
		{"apiKey location", map[string]*authn.Scheme{"k": func() *authn.Scheme { s := key(); s.In = "body"; return s }()}, nil, `in: "body"`},
		{"apiKey without keys", map[string]*authn.Scheme{"k": func() *authn.Scheme { s := key(); s.Keys = nil; return s }()}, nil, "at least one key"},
		{"apiKey bad digest", map[string]*authn.Scheme{"k": func() *authn.Scheme {
			s := key()
			s.Keys = []authn.APIKey{{SHA256: "abc", Subject: "x"}}
			return s
		}()}, nil, "not 64 hex digits"},
		{"apiKey without subject", map[string]*authn.Scheme{"k": func() *authn.Scheme { s := key(); s.Keys[0].Subject = ""; return s }()}, nil, "subject: required"},
		{"http scheme", map[string]*authn.Scheme{"h": {Type: "http", HTTPScheme: "digest"}}, nil, `"digest" is not basic or bearer`},
		{"basic without users", map[string]*authn.Scheme{"h": {Type: "http", HTTPScheme: "basic"}}, nil, "at least one user"},
		{"basic duplicate user", map[string]*authn.Scheme{"h": {Type: "http", HTTPScheme: "basic",
			Users: []authn.User{{Username: "bob", Password: "x"}, {Username: "bob", Password: "y"}}}}, nil, "appears twice"},
		{"bearer without validation", map[string]*authn.Scheme{"b": {Type: "http", HTTPScheme: "bearer"}}, nil, "needs jwt or introspection"},
		{"valid bearer jwks", map[string]*authn.Scheme{"b": bearerJWKS()}, nil, ""},
		{"jwks without audience", map[string]*authn.Scheme{"b": func() *authn.Scheme { s := bearerJWKS(); s.JWT.Audiences = nil; return s }()}, nil, "audiences: required"},
		{"jwks over http", map[string]*authn.Scheme{"b": func() *authn.Scheme { s := bearerJWKS(); s.JWT.JWKSURL = "http://idp.example/jwks"; return s }()}, nil, "https is required"},
		{"jwks over http allowed", map[string]*authn.Scheme{"b": func() *authn.Scheme {
			s := bearerJWKS()
			s.JWT.JWKSURL, s.AllowInsecureHTTP = "http://idp.example/jwks", true
			return s
		}()}, nil, ""},
		{"jwks over http on loopback", map[string]*authn.Scheme{"b": func() *authn.Scheme { s := bearerJWKS(); s.JWT.JWKSURL = "http://127.0.0.1:9/jwks"; return s }()}, nil, ""},
		{"alg none", map[string]*authn.Scheme{"b": func() *authn.Scheme { s := bearerJWKS(); s.JWT.Algorithms = []string{"none"}; return s }()}, nil, `"none" is not one of`},
		{"HS256 without secret", map[string]*authn.Scheme{"b": func() *authn.Scheme { s := bearerJWKS(); s.JWT.Algorithms = []string{"HS256"}; return s }()}, nil, "HS* algorithms need hmac_secret"},
		{"jwt without key source", map[string]*authn.Scheme{"b": {Type: "http", HTTPScheme: "bearer", JWT: &authn.JWTConfig{}}}, nil, "keys: set jwks_url"},
		{"oauth2 without flow", map[string]*authn.Scheme{"o": {Type: "oauth2", JWT: &authn.JWTConfig{HMACSecret: "x"}}}, nil, "exactly one flow"},
		{"oauth2 two flows", map[string]*authn.Scheme{"o": {Type: "oauth2", JWT: &authn.JWTConfig{HMACSecret: "x"},
			Flows: &authn.Flows{ClientCredentials: &authn.Flow{TokenURL: "https://t"}, Password: &authn.Flow{TokenURL: "https://t"}}}}, nil, "got 2"},
		{"oauth2 flow without token url", map[string]*authn.Scheme{"o": {Type: "oauth2", JWT: &authn.JWTConfig{HMACSecret: "x"},
			Flows: &authn.Flows{ClientCredentials: &authn.Flow{}}}}, nil, "client_credentials.token_url: required"},
		{"oidc without audience", map[string]*authn.Scheme{"o": {Type: "openIdConnect", OpenIDConnectURL: "https://a/.well-known/openid-configuration"}}, nil, "jwt.audiences: required"},
		{"oidc relative url", map[string]*authn.Scheme{"o": {Type: "openIdConnect", OpenIDConnectURL: "/x", JWT: &authn.JWTConfig{Audiences: []string{"a"}}}}, nil, "not an absolute URL"},
		{"mtls proxies without header", map[string]*authn.Scheme{"m": {Type: "mutualTLS", MTLS: &authn.MTLSConfig{TrustedProxies: []string{"10.0.0.0/8"}}}}, nil, "go together"},
		{"mtls bad cidr", map[string]*authn.Scheme{"m": {Type: "mutualTLS", MTLS: &authn.MTLSConfig{TrustedProxies: []string{"10.0.0.0/33"}, CertHeader: "X"}}}, nil, "trusted_proxies[0]"},
		{"mtls subject source", map[string]*authn.Scheme{"m": {Type: "mutualTLS", MTLS: &authn.MTLSConfig{SubjectFrom: []string{"serial"}}}}, nil, `"serial" is not one of`},
		{"jwt on apiKey", map[string]*authn.Scheme{"k": func() *authn.Scheme { s := key(); s.JWT = &authn.JWTConfig{}; return s }()}, nil, "apply only to bearer"},
		{"require unknown scheme", map[string]*authn.Scheme{"k": key()}, []a2a.SecurityRequirement{{"nope": nil}}, `scheme "nope" is not declared`},
		{"require without schemes", nil, []a2a.SecurityRequirement{{}}, "no schemes are declared"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := authn.Config{Schemes: tt.schema, Require: tt.req}
			err := cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v; want one containing %q", err, tt.want)
			}
		})
	}
}

// TestNewRefuses covers what only New can check: secrets, files, keys and
// whether requirements can ever be met.
func TestNewRefuses(t *testing.T) {
	dir := t.TempDir()
	weak := must(rsaKeyBits(1024))
	weakFile := filepath.Join(dir, "weak.pem")
	if err := os.WriteFile(weakFile, []byte(publicPEM(&weak.PublicKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	hash := string(must(bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)))
	env := func(name string) (string, bool) {
		if name == "SHORT" {
			return "short", true
		}
		return "", false
	}
	key := func(k string) *authn.Scheme {
		return &authn.Scheme{Type: "apiKey", In: "header", Name: "X-API-Key", Keys: []authn.APIKey{{Key: k, Subject: "ci", Scopes: []string{"read"}}}}
	}
	tests := []struct {
		name string
		cfg  authn.Config
		want string
	}{
		{"unset env", authn.Config{Schemes: map[string]*authn.Scheme{"k": key("{env.MISSING}")}}, "environment variable MISSING is not set"},
		{"short key", authn.Config{Schemes: map[string]*authn.Scheme{"k": key("{env.SHORT}")}}, "16 to 1024 characters"},
		{"duplicate key", authn.Config{Schemes: map[string]*authn.Scheme{"k": {Type: "apiKey", In: "header", Name: "K",
			Keys: []authn.APIKey{{Key: "0123456789abcdef", Subject: "a"}, {Key: "0123456789abcdef", Subject: "b"}}}}}, "the same key as keys[0]"},
		{"scope no key grants", authn.Config{Schemes: map[string]*authn.Scheme{"k": key("0123456789abcdef")},
			Require: []a2a.SecurityRequirement{{"k": {"write"}}}}, `scope "write" is granted to no API key`},
		{"not bcrypt", authn.Config{Schemes: map[string]*authn.Scheme{"b": {Type: "http", HTTPScheme: "basic",
			Users: []authn.User{{Username: "bob", Password: "$1$md5$crypt"}}}}}, "not a bcrypt hash"},
		{"public key file missing", authn.Config{Schemes: map[string]*authn.Scheme{"j": {Type: "http", HTTPScheme: "bearer",
			JWT: &authn.JWTConfig{PublicKeys: []string{filepath.Join(dir, "none.pem")}}}}}, "no such file"},
		{"weak RSA key", authn.Config{Schemes: map[string]*authn.Scheme{"j": {Type: "http", HTTPScheme: "bearer",
			JWT: &authn.JWTConfig{PublicKeys: []string{weakFile}}}}}, "at least 2048 are required"},
		{"short hmac secret", authn.Config{Schemes: map[string]*authn.Scheme{"j": {Type: "http", HTTPScheme: "bearer",
			JWT: &authn.JWTConfig{HMACSecret: "too short"}}}}, "at least 32 bytes"},
		{"scope on mutualTLS", authn.Config{Schemes: map[string]*authn.Scheme{"m": {Type: "mutualTLS"}},
			Require: []a2a.SecurityRequirement{{"m": {"admin"}}}}, "mutualTLS grants no scopes"},
		{"scope outside the flow", authn.Config{Schemes: map[string]*authn.Scheme{"o": {Type: "oauth2",
			Flows: &authn.Flows{ClientCredentials: &authn.Flow{TokenURL: "https://idp/token", Scopes: map[string]string{"read": ""}}},
			JWT:   &authn.JWTConfig{HMACSecret: strings.Repeat("s", 32)}}},
			Require: []a2a.SecurityRequirement{{"o": {"write"}}}}, `scope "write" is not declared in the flow's scopes`},
		{"basic ok but scope unknown", authn.Config{Schemes: map[string]*authn.Scheme{"b": {Type: "http", HTTPScheme: "basic",
			Users: []authn.User{{Username: "bob", Password: hash}}}}, Require: []a2a.SecurityRequirement{{"b": {"x"}}}}, `scope "x" is granted to no user`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := authn.New(tt.cfg, authn.Options{LookupEnv: env})
			if err == nil {
				a.Close()
				t.Fatalf("New accepted the configuration; want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v; want one containing %q", err, tt.want)
			}
		})
	}
}

func TestCheckRequirements(t *testing.T) {
	a := newAuth(t, authn.Config{Schemes: map[string]*authn.Scheme{
		"k": {Type: "apiKey", In: "header", Name: "K", Keys: []authn.APIKey{{Key: "0123456789abcdef", Subject: "ci", Scopes: []string{"read"}}}},
	}}, authn.Options{})
	if err := a.CheckRequirements([]a2a.SecurityRequirement{{"k": {"read"}}}); err != nil {
		t.Errorf("a grantable requirement was refused: %v", err)
	}
	if err := a.CheckRequirements([]a2a.SecurityRequirement{{"k": {"write"}}}); err == nil {
		t.Error("a scope no key grants was accepted")
	}
	if err := a.CheckRequirements([]a2a.SecurityRequirement{{"other": nil}}); err == nil {
		t.Error("an undeclared scheme was accepted")
	}
}

func TestCard(t *testing.T) {
	p := newIDP(t, jwk("k1", "RS256", &rsaKey().PublicKey))
	hash := string(must(bcrypt.GenerateFromPassword([]byte("correct horse"), bcrypt.MinCost)))
	const apiKey = "ci-key-0123456789abcdef"
	cfg := authn.Config{
		Schemes: map[string]*authn.Scheme{
			"key":   {Type: "apiKey", In: "header", Name: "X-API-Key", Description: "CI key", Keys: []authn.APIKey{{Key: apiKey, Subject: "ci"}}},
			"basic": {Type: "http", HTTPScheme: "Basic", Users: []authn.User{{Username: "bob", Password: hash}}},
			"jwt":   {Type: "http", HTTPScheme: "bearer", JWT: &authn.JWTConfig{PublicKeys: []string{publicPEM(&rsaKey().PublicKey)}}},
			"oauth": {Type: "oauth2", MetadataURL: p.URL + "/.well-known/oauth-authorization-server",
				Flows: &authn.Flows{ClientCredentials: &authn.Flow{TokenURL: "https://idp.example/token", Scopes: map[string]string{"orders:read": "Read orders"}}},
				JWT:   &authn.JWTConfig{Audiences: []string{"a2a-agent"}}},
			"oidc": {Type: "openIdConnect", OpenIDConnectURL: p.URL + "/.well-known/openid-configuration", JWT: &authn.JWTConfig{Audiences: []string{"a2a-agent"}}},
			"mtls": {Type: "mutualTLS", Description: "client certificates from the internal CA"},
		},
	}
	a := newAuth(t, cfg, authn.Options{})
	want := map[string]a2a.SecurityScheme{
		"key":   {Type: a2a.SchemeAPIKey, Description: "CI key", Location: "header", Name: "X-API-Key"},
		"basic": {Type: a2a.SchemeHTTPAuth, Scheme: "basic"},
		"jwt":   {Type: a2a.SchemeHTTPAuth, Scheme: "bearer", BearerFormat: "JWT"},
		"oauth": {Type: a2a.SchemeOAuth2, OAuth2MetadataURL: p.URL + "/.well-known/oauth-authorization-server",
			Flows: a2a.OAuthFlows{ClientCredentials: &a2a.OAuthFlow{TokenURL: "https://idp.example/token", Scopes: map[string]string{"orders:read": "Read orders"}}}},
		"oidc": {Type: a2a.SchemeOpenIDConnect, OpenIDConnectURL: p.URL + "/.well-known/openid-configuration"},
		"mtls": {Type: a2a.SchemeMutualTLS, Description: "client certificates from the internal CA"},
	}
	if got := a.CardSchemes(); !reflect.DeepEqual(got, want) {
		t.Errorf("CardSchemes:\n got %+v\nwant %+v", got, want)
	}
	wantReqs := []a2a.SecurityRequirement{{"basic": nil}, {"jwt": nil}, {"key": nil}, {"mtls": nil}, {"oauth": nil}, {"oidc": nil}}
	if got := a.CardRequirements(); !reflect.DeepEqual(got, wantReqs) {
		t.Errorf("CardRequirements = %v; want %v (each scheme alone)", got, wantReqs)
	}

	// The card says how to call, never with what: no key, hash or PEM.
	body, err := a2a.MarshalAgentCard(&a2a.AgentCard{Name: "n", Description: "d", Version: "1",
		SupportedInterfaces: []a2a.AgentInterface{{URL: "https://agent.example/", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "1.0"}},
		SecuritySchemes:     a.CardSchemes(), SecurityRequirements: a.CardRequirements()})
	if err != nil {
		t.Fatalf("MarshalAgentCard: %v", err)
	}
	for _, secret := range []string{apiKey, hash, "BEGIN PUBLIC KEY", "correct horse"} {
		if strings.Contains(string(body), secret) {
			t.Errorf("the card holds %q", secret)
		}
	}

	// Explicit requirements are shown as given; the card is a copy.
	cfg.Require = []a2a.SecurityRequirement{{"oauth": {"orders:read"}}, {"key": {}, "mtls": {}}}
	b := newAuth(t, cfg, authn.Options{})
	got := b.CardRequirements()
	if !reflect.DeepEqual(got, cfg.Require) {
		t.Errorf("CardRequirements = %v; want %v", got, cfg.Require)
	}
	got[0]["oauth"][0] = "changed"
	if b.CardRequirements()[0]["oauth"][0] != "orders:read" {
		t.Error("CardRequirements returned the authenticator's own slice")
	}
}

func TestNoSchemesIsAnonymous(t *testing.T) {
	a := newAuth(t, authn.Config{}, authn.Options{})
	if a.Enabled() {
		t.Error("Enabled with no schemes")
	}
	id, f := a.Authenticate(bearer("anything"))
	if id != nil || f != nil {
		t.Errorf("Authenticate = %v, %v; want anonymous", id, f)
	}
	if id.Owner() != "" {
		t.Errorf("anonymous owner %q", id.Owner())
	}
	if a.CardSchemes() != nil || a.CardRequirements() != nil {
		t.Error("the card declares security without schemes")
	}
}

// TestValidateNamesTheKinds: a scheme of no known kind, or with options of
// another kind, is refused with the kinds that would take it.
func TestValidateNamesTheKinds(t *testing.T) {
	key := authn.Scheme{Type: "apiKey", In: "header", Name: "X-API-Key", Keys: []authn.APIKey{{Key: "0123456789abcdef", Subject: "ci"}}}
	withIntrospection, withMTLS := key, key
	withIntrospection.Introspection = &authn.IntrospectionConfig{URL: "https://idp.example/introspect"}
	withMTLS.MTLS = &authn.MTLSConfig{}
	for _, tt := range []struct {
		scheme authn.Scheme
		want   string
	}{
		{authn.Scheme{Type: "magic"}, `authn: scheme "s": type: "magic" is not apiKey, http, oauth2, openIdConnect or mutualTLS`},
		{authn.Scheme{Type: "http", HTTPScheme: "digest"}, `authn: scheme "s": scheme: "digest" is not basic or bearer`},
		{withIntrospection, `authn: scheme "s": jwt and introspection apply only to bearer, oauth2 and openIdConnect schemes`},
		{withMTLS, `authn: scheme "s": mtls applies only to mutualTLS schemes`},
	} {
		cfg := authn.Config{Schemes: map[string]*authn.Scheme{"s": &tt.scheme}}
		if err := cfg.Validate(); err == nil || err.Error() != tt.want {
			t.Errorf("Validate: %v\nwant %s", err, tt.want)
		}
	}
}
