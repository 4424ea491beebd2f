package cardgen_test

import (
	"crypto"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/cardgen"
)

func TestJWKSRoundTrip(t *testing.T) {
	ks := keySet(t,
		testKey(t, cardgen.ES256, "ec"),
		testKey(t, cardgen.ES384, "ec384"),
		testKey(t, cardgen.PS256, "pss"),
		testKey(t, cardgen.EdDSA, "ed"),
	)
	data := jwksOf(t, ks)
	if strings.Contains(string(data), `"d"`) {
		t.Fatalf("the JWKS holds private material: %s", data)
	}
	var raw struct{ Keys []map[string]any }
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range raw.Keys {
		if k["use"] != "sig" || k["alg"] == "" || k["kid"] == "" {
			t.Errorf("key %v lacks use, alg or kid", k)
		}
	}
	parsed, err := cardgen.ParseJWKS(data)
	if err != nil {
		t.Fatal(err)
	}
	want, got := ks.Keys(), parsed.Keys()
	if len(got) != len(want) {
		t.Fatalf("%d keys read back, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].ID != want[i].ID || got[i].Algorithm != want[i].Algorithm || got[i].Private != nil ||
			!got[i].Public.(interface{ Equal(crypto.PublicKey) bool }).Equal(want[i].Public) {
			t.Errorf("key %d read back as %+v, want %s %s", i, got[i], want[i].ID, want[i].Algorithm)
		}
	}
}

func TestParseJWKS(t *testing.T) {
	ec := string(jwksOf(t, keySet(t, testKey(t, cardgen.ES256, "ec"))))
	ecKey := ec[len(`{"keys":[`) : len(ec)-2]
	t.Run("skips what it cannot use", func(t *testing.T) {
		set := `{"keys":[` + strings.Join([]string{
			`{"kty":"oct","kid":"hmac","k":"c2VjcmV0"}`,
			`{"kty":"EC","kid":"enc","use":"enc","crv":"P-256","x":"AA","y":"AA"}`,
			`{"kty":"OKP","kid":"x","crv":"X25519","x":"AA"}`,
			`{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}`,
			ecKey,
		}, ",") + `]}`
		ks, err := cardgen.ParseJWKS([]byte(set))
		if err != nil {
			t.Fatal(err)
		}
		if keys := ks.Keys(); len(keys) != 1 || keys[0].ID != "ec" {
			t.Errorf("keys %+v, want only ec", keys)
		}
	})
	tests := []struct{ name, set, want string }{
		{"not JSON", `{`, "not a JWK Set"},
		{"no keys", `{}`, `no "keys" array`},
		{"private key", `{"keys":[{"kty":"EC","kid":"p","crv":"P-256","x":"AA","y":"AA","d":"AA"}]}`, `key 1 (kid "p") holds a private key`},
		{"duplicate kid", `{"keys":[` + ecKey + `,` + ecKey + `]}`, `two keys with kid "ec"`},
		{"bad coordinates", `{"keys":[{"kty":"EC","kid":"b","crv":"P-256","x":"AA","y":"AA"}]}`, `key "b": bad EC coordinates`},
		{"small RSA", `{"keys":[{"kty":"RSA","kid":"r","n":"` + strings.Repeat("A", 171) + `","e":"AQAB"}]}`, `key "r": unsupported key: RSA key of`},
		{"alg for another key type", `{"keys":[` + strings.Replace(ecKey, `"alg":"ES256"`, `"alg":"RS256"`, 1) + `]}`, `algorithm RS256 does not match the key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cardgen.ParseJWKS([]byte(tt.set))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestJWKSServe(t *testing.T) {
	ks := keySet(t, testKey(t, cardgen.ES256, "k"))
	j, err := cardgen.NewJWKS(ks, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	w := serve(j, http.MethodGet, nil)
	if w.Code != http.StatusOK || w.Body.String() != string(jwksOf(t, ks)) || w.Body.String() != string(j.JSON()) {
		t.Fatalf("GET: %d %s", w.Code, w.Body)
	}
	for k, v := range map[string]string{"Content-Type": "application/jwk-set+json", "Cache-Control": "public, max-age=600", "Etag": j.ETag()} {
		if got := w.Header().Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	if w := serve(j, http.MethodGet, http.Header{"If-None-Match": {j.ETag()}}); w.Code != http.StatusNotModified {
		t.Errorf("If-None-Match: %d, want 304", w.Code)
	}
	if _, err := cardgen.NewJWKS(ks, -time.Second); err == nil {
		t.Error("a negative max-age was accepted")
	}
	if _, err := cardgen.NewJWKS(nil, 0); err == nil {
		t.Error("a nil key set was accepted")
	}
}
