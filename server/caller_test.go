package server

import (
	"net/http/httptest"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/mapping"
)

// A call carries the caller's bearer token only to a skill whose upstream
// exchanges it; others never hold it.
func TestCallerTokenOnlyForAnExchange(t *testing.T) {
	const skill = `
skills:
  - id: s
    description: gets
    request: {path: /}
`
	env := mapping.Options{LookupEnv: func(string) (string, bool) { return "x", true }}
	plain, err := mapping.Parse("plain.yaml", []byte("upstream: {url: http://127.0.0.1:1}"+skill), env)
	if err != nil {
		t.Fatal(err)
	}
	exchanging, err := mapping.Parse("exchange.yaml", []byte(`upstream:
  url: http://127.0.0.1:1
  oauth2: {grant: token_exchange, token_url: 'https://idp.example.com/token', client_id: a, client_secret: '{env.SECRET}'}`+skill), env)
	if err != nil {
		t.Fatal(err)
	}
	id := &authn.Identity{Credential: authn.Credential{Subject: "alice", Bearer: true}}
	id.Credentials = []*authn.Credential{&id.Credential}
	r := httptest.NewRequest("POST", "/", nil)
	r.Header.Set("Authorization", "Bearer alice-jwt")
	for _, tc := range []struct {
		name string
		sk   *mapping.Skill
		want string
	}{
		{"no skill", nil, ""},
		{"an upstream without oauth2", plain.ByID("s"), ""},
		{"a token exchange", exchanging.ByID("s"), "alice-jwt"},
	} {
		if c := callerOf(id, r, tc.sk); c.Subject != "alice" || c.Token != tc.want {
			t.Errorf("%s: subject %q, token %q; want alice, %q", tc.name, c.Subject, c.Token, tc.want)
		}
	}
}
