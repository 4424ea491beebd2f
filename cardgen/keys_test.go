package cardgen_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/keys"
)

func mustEC(t testing.TB, curve string) *ecdsa.PrivateKey {
	t.Helper()
	c := map[string]elliptic.Curve{"P-224": elliptic.P224(), "P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}[curve]
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestNewKeySetErrors(t *testing.T) {
	ec, ec384 := mustEC(t, "P-256"), mustEC(t, "P-384")
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	tests := []struct {
		name string
		keys []cardgen.Key
		want string
	}{
		{"ES384 on P-256", []cardgen.Key{{ID: "k", Algorithm: cardgen.ES384, Private: ec}}, `key "k": algorithm ES384 does not match the key (ECDSA P-256)`},
		{"ES256 on P-384", []cardgen.Key{{ID: "k", Algorithm: cardgen.ES256, Private: ec384}}, `algorithm ES256 does not match the key (ECDSA P-384)`},
		{"RS256 on ECDSA", []cardgen.Key{{ID: "k", Algorithm: cardgen.RS256, Private: ec}}, `algorithm RS256 does not match the key (ECDSA P-256)`},
		{"PS256 on Ed25519", []cardgen.Key{{ID: "k", Algorithm: cardgen.PS256, Private: ed}}, `algorithm PS256 does not match the key (Ed25519)`},
		{"EdDSA on RSA", []cardgen.Key{{ID: "k", Algorithm: cardgen.EdDSA, Private: rsaKey()}}, `algorithm EdDSA does not match the key (RSA 2048 bits)`},
		{"ES256 on RSA", []cardgen.Key{{ID: "k", Algorithm: cardgen.ES256, Private: rsaKey()}}, `algorithm ES256 does not match the key (RSA 2048 bits)`},
		{"HS256", []cardgen.Key{{ID: "k", Algorithm: "HS256", Private: ec}}, `algorithm "HS256" is not supported`},
		{"none", []cardgen.Key{{ID: "k", Algorithm: "none", Private: ec}}, `algorithm "none" is not supported`},
		{"duplicate kid", []cardgen.Key{{ID: "k", Private: ec}, {ID: "j", Private: ed}, {ID: "k", Private: ec384}},
			`key "k" (key 3) has the same kid as key 1; every kid must be unique`},
		{"public and private differ", []cardgen.Key{{ID: "k", Public: &ec384.PublicKey, Private: ec}}, `key "k": the public key is not the private key's`},
		{"no key", []cardgen.Key{{ID: "k"}}, `key "k": no key`},
		{"unnamed key", []cardgen.Key{{Algorithm: cardgen.EdDSA, Private: ec}}, `key 1: algorithm EdDSA does not match`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cardgen.NewKeySet(tt.keys...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	// Every problem is reported, not only the first.
	_, err := cardgen.NewKeySet(tests[0].keys[0], cardgen.Key{ID: "j", Algorithm: "HS256", Private: ec})
	if err == nil || !strings.Contains(err.Error(), `key "k"`) || !strings.Contains(err.Error(), `key "j"`) {
		t.Errorf("error %v, want both keys named", err)
	}
}

// TestThumbprintKeyID: a key without kid is named by its RFC 7638
// thumbprint, computed here from the published JWK.
func TestThumbprintKeyID(t *testing.T) {
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	ks := keySet(t, cardgen.Key{Private: mustEC(t, "P-256")}, cardgen.Key{Private: rsaKey()}, cardgen.Key{Private: ed})
	var set struct{ Keys []map[string]string }
	if err := json.Unmarshal(jwksOf(t, ks), &set); err != nil {
		t.Fatal(err)
	}
	required := map[string][]string{"EC": {"crv", "kty", "x", "y"}, "RSA": {"e", "kty", "n"}, "OKP": {"crv", "kty", "x"}}
	for i, j := range set.Keys {
		members := map[string]string{}
		for _, name := range required[j["kty"]] {
			members[name] = j[name]
		}
		b, _ := json.Marshal(members)
		canonical, err := jcs.Transform(b)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(canonical)
		if want := base64.RawURLEncoding.EncodeToString(sum[:]); j["kid"] != want || ks.Keys()[i].ID != want {
			t.Errorf("%s key: kid %q, want the thumbprint %q", j["kty"], j["kid"], want)
		}
	}
}

func TestGenerateKey(t *testing.T) {
	for _, alg := range []string{"", cardgen.ES256, cardgen.ES384, cardgen.PS256, cardgen.EdDSA} {
		k, pemData, err := cardgen.GenerateKey(alg)
		if err != nil {
			t.Fatalf("%q: %v", alg, err)
		}
		want := alg
		if want == "" {
			want = cardgen.DefaultAlgorithm
		}
		if k.Algorithm != want || k.Private == nil {
			t.Errorf("%q: algorithm %s, private %v", alg, k.Algorithm, k.Private != nil)
		}
		parsed, err := keys.ParsePEM(pemData)
		if err != nil {
			t.Fatalf("%q: reading the PEM back: %v", alg, err)
		}
		if !parsed.Public.(interface{ Equal(crypto.PublicKey) bool }).Equal(k.Public) {
			t.Errorf("%q: the PEM holds another key", alg)
		}
	}
	if _, _, err := cardgen.GenerateKey("HS256"); err == nil || !strings.Contains(err.Error(), `cannot generate a key for "HS256"`) {
		t.Errorf("HS256: %v", err)
	}
}
