package authn_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
)

const (
	ciKey      = "ci-key-0123456789abcdef"
	partnerKey = "partner-key-fedcba9876543210"
)

func apiKeyAuth(t *testing.T, in, name string) *authn.Authenticator {
	t.Helper()
	digest := sha256.Sum256([]byte(partnerKey))
	return newAuth(t, authn.Config{Schemes: map[string]*authn.Scheme{
		"key": {Type: "apiKey", In: in, Name: name, Keys: []authn.APIKey{
			{Key: "{env.CI_KEY}", Subject: "ci-bot", Scopes: []string{"tasks:read"}},
			{SHA256: hex.EncodeToString(digest[:]), Subject: "partner"},
		}},
	}}, authn.Options{LookupEnv: func(name string) (string, bool) {
		if name == "CI_KEY" {
			return ciKey, true
		}
		return "", false
	}})
}

func TestAPIKey(t *testing.T) {
	withQuery := func(q string) *http.Request {
		r := request()
		r.URL.RawQuery = q
		return r
	}
	withCookie := func(name, value string) *http.Request {
		r := request()
		r.AddCookie(&http.Cookie{Name: name, Value: value})
		return r
	}
	tests := []struct {
		name, in, param string
		req             *http.Request
		subject         string // "" expects a 401
	}{
		{"header", "header", "X-API-Key", request("X-API-Key", ciKey), "ci-bot"},
		{"header name is case-insensitive", "header", "x-api-key", request("X-Api-Key", ciKey), "ci-bot"},
		{"hashed key", "header", "X-API-Key", request("X-API-Key", partnerKey), "partner"},
		{"query", "query", "api_key", withQuery("api_key=" + ciKey), "ci-bot"},
		{"cookie", "cookie", "a2a_key", withCookie("a2a_key", ciKey), "ci-bot"},

		{"no credentials", "header", "X-API-Key", request(), ""},
		{"wrong key", "header", "X-API-Key", request("X-API-Key", "ci-key-0123456789abcdeF"), ""},
		{"key prefix", "header", "X-API-Key", request("X-API-Key", ciKey[:10]), ""},
		{"empty key", "header", "X-API-Key", request("X-API-Key", ""), ""},
		{"key in the query, not the header", "header", "X-API-Key", withQuery("X-API-Key=" + ciKey), ""},
		{"key in a header, not the query", "query", "api_key", request("api_key", ciKey), ""},
		{"key in the header, not the cookie", "cookie", "a2a_key", request("a2a_key", ciKey), ""},
		{"key in Authorization", "header", "X-API-Key", bearer(ciKey), ""},
		{"two keys", "header", "X-API-Key", request("X-API-Key", ciKey, "X-API-Key", partnerKey), ""},
		{"two query keys", "query", "api_key", withQuery("api_key=" + ciKey + "&api_key=" + ciKey), ""},
		{"oversized key", "header", "X-API-Key", request("X-API-Key", ciKey+strings.Repeat("x", 100<<10)), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := apiKeyAuth(t, tt.in, tt.param)
			id, f := a.Authenticate(tt.req)
			if tt.subject == "" {
				if f == nil || f.Status != http.StatusUnauthorized {
					t.Fatalf("Authenticate = %+v, %+v; want a 401", id, f)
				}
				if id != nil {
					t.Error("an identity came with the failure")
				}
				want := `APIKey realm="a2a", in="` + tt.in + `", name="` + tt.param + `"`
				if !reflect.DeepEqual(f.Challenges, []string{want}) {
					t.Errorf("challenges %q; want %q", f.Challenges, want)
				}
				for _, k := range []string{ciKey, partnerKey} {
					assertNoSecret(t, failureText(f), k)
				}
				return
			}
			if f != nil {
				t.Fatalf("refused: %v", f)
			}
			if id.Subject != tt.subject || id.Scheme != "key" || id.Type != a2a.SchemeAPIKey || id.Owner() != "key:"+tt.subject {
				t.Errorf("identity %+v", id)
			}
		})
	}
}

func TestAPIKeyIdentity(t *testing.T) {
	a := apiKeyAuth(t, "header", "X-API-Key")
	id, f := a.Authenticate(request("X-API-Key", ciKey))
	if f != nil {
		t.Fatal(f)
	}
	want := authn.Credential{Scheme: "key", Type: a2a.SchemeAPIKey, Subject: "ci-bot", Scopes: []string{"tasks:read"},
		Claims: map[string]any{"subject": "ci-bot"}}
	if !reflect.DeepEqual(id.Credential, want) || len(id.Credentials) != 1 || !reflect.DeepEqual(*id.Credentials[0], want) {
		t.Errorf("identity %+v; want %+v", id, want)
	}
	if id.For("key") == nil || id.For("other") != nil {
		t.Error("For does not find the credentials by scheme")
	}
}
