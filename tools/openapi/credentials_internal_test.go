package openapi

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// An oauth2 scheme with a clientCredentials flow becomes upstream.oauth2:
// its token URL (a relative one resolved against the API's), the client's
// id and secret from the environment under the scheme's name, and the
// scopes the operations require. Until mapping knows upstream.oauth2 the
// file does not load, so this asserts the text the generator emits;
// TestGenerateClientCredentialsLoads loads it.
func TestEmitClientCredentials(t *testing.T) {
	src, err := os.ReadFile("testdata/client-credentials.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, err := build("client-credentials.yaml", src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := g.emit("client-credentials.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := `upstream:
  url: https://orders.example.test/v1
  oauth2:
    grant: client_credentials
    token_url: https://orders.example.test/oauth/token
    client_id: '{env.OAUTH2_CLIENT_ID}'
    client_secret: '{env.OAUTH2_CLIENT_SECRET}'
    scopes: ['orders:read', 'orders:write']
  headers:
    X-Partner-Key: '{env.PARTNER_KEY}'
skills:
`
	if !strings.Contains(string(out), want) {
		t.Errorf("the file lacks\n%s\nin\n%s", want, out)
	}
	if env := []string{"OAUTH2_CLIENT_ID", "OAUTH2_CLIENT_SECRET", "PARTNER_KEY"}; !slices.Equal(g.envNames(), env) {
		t.Errorf("env %v, want %v", g.envNames(), env)
	}
	if len(g.notes) != 0 {
		t.Errorf("notes %q, want none", g.notes)
	}
}
