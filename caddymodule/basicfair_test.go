package caddymodule

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// TestIntegrationBasicUnknownUser checks, through Caddy, that a login for
// an unknown user (which is answered without a hash comparison once one
// has been timed) gets the very answer a wrong password for a known user
// gets: status, headers and body.
func TestIntegrationBasicUnknownUser(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("carol's password"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	a := &securedAgent{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	a.tester = loadSecured(t, fmt.Sprintf(":%d", port), "", fmt.Sprintf(`
		skills "%s"
		url http://127.0.0.1:%d/
		name "Staff Agent"
		description "Staff log in with a password"
		security {
			basic staff {
				user carol %s
			}
		}`, writeSkills(t, `upstream:
  url: http://127.0.0.1:1
skills:
  - id: whoami
    description: Tells the upstream who is calling
    request: {path: /whoami}
`), port, hash))
	a.client = a.tester.Client

	login := func(user, password string) (*http.Response, string) {
		t.Helper()
		resp, _, raw := a.rpc("GetTask", `{"id":"t-1"}`,
			"Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+password)))
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s: %s %s, want 401", user, resp.Status, raw)
		}
		resp.Header.Del("Date")
		return resp, raw
	}
	login("carol", "guess-1") // times a comparison, which unknown users then stand in for
	wrong, wrongBody := login("carol", "guess-2")
	unknown, unknownBody := login("mallory", "guess-3")
	if unknownBody != wrongBody {
		t.Errorf("body for an unknown user:\n%s\nfor a wrong password:\n%s", unknownBody, wrongBody)
	}
	if !maps.EqualFunc(unknown.Header, wrong.Header, slices.Equal[[]string]) {
		t.Errorf("headers for an unknown user:\n%v\nfor a wrong password:\n%v", unknown.Header, wrong.Header)
	}
}
