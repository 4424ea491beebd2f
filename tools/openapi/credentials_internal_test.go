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
	tests := []struct {
		spec, want string
		env        []string
	}{
		{spec: "testdata/client-credentials.yaml", env: []string{"OAUTH2_CLIENT_ID", "OAUTH2_CLIENT_SECRET", "PARTNER_KEY"},
			want: `upstream:
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
`},
		{spec: "testdata/swagger-2.0-application.yaml", env: []string{"PARTNER_CLIENT_ID", "PARTNER_CLIENT_SECRET"},
			want: `upstream:
  url: https://feed.example.test
  oauth2:
    grant: client_credentials
    token_url: https://idp.example.test/token
    client_id: '{env.PARTNER_CLIENT_ID}'
    client_secret: '{env.PARTNER_CLIENT_SECRET}'
    scopes: ['feed:read']
skills:
`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			src, err := os.ReadFile(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			g, err := build(tt.spec, src, Options{})
			if err != nil {
				t.Fatal(err)
			}
			out, err := g.emit(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("the file lacks\n%s\nin\n%s", tt.want, out)
			}
			if !slices.Equal(g.envNames(), tt.env) {
				t.Errorf("env %v, want %v", g.envNames(), tt.env)
			}
			if len(g.notes) != 0 {
				t.Errorf("notes %q, want none", g.notes)
			}
		})
	}
}
