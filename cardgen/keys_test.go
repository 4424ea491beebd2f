package cardgen_test

import (
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/caddy-a2a/caddy-a2a/cardgen"
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

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func pkcs8(t testing.TB, k any) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pemBlock("PRIVATE KEY", der)
}

func TestParsePEM(t *testing.T) {
	ec := mustEC(t, "P-256")
	sec1, err := x509.MarshalECPrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	pkix, err := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecParams := pemBlock("EC PARAMETERS", []byte{0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07})

	tests := []struct {
		name    string
		pem     []byte
		private bool
		alg     string
	}{
		{"PKCS #8 ECDSA", pkcs8(t, ec), true, cardgen.ES256},
		{"PKCS #8 ECDSA P-384", pkcs8(t, mustEC(t, "P-384")), true, cardgen.ES384},
		{"PKCS #8 RSA", pkcs8(t, rsaKey()), true, cardgen.RS256},
		{"PKCS #8 Ed25519", pkcs8(t, ed), true, cardgen.EdDSA},
		{"SEC 1, after openssl's EC PARAMETERS", append(ecParams, pemBlock("EC PRIVATE KEY", sec1)...), true, cardgen.ES256},
		{"PKCS #1 RSA", pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey())), true, cardgen.RS256},
		{"PKIX public", pemBlock("PUBLIC KEY", pkix), false, cardgen.ES256},
		{"PKCS #1 RSA public", pemBlock("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&rsaKey().PublicKey)), false, cardgen.RS256},
		{"text around the block", append(append([]byte("a comment\n"), pkcs8(t, ec)...), "trailer\n"...), true, cardgen.ES256},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := cardgen.ParsePEM(tt.pem)
			if err != nil {
				t.Fatal(err)
			}
			if (k.Private != nil) != tt.private {
				t.Errorf("private part present: %v, want %v", k.Private != nil, tt.private)
			}
			ks, err := cardgen.NewKeySet(k)
			if err != nil {
				t.Fatal(err)
			}
			if got := ks.Keys()[0].Algorithm; got != tt.alg {
				t.Errorf("default algorithm %s, want %s", got, tt.alg)
			}
		})
	}
}

func TestParsePEMErrors(t *testing.T) {
	x25519, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p224, err := x509.MarshalECPrivateKey(mustEC(t, "P-224"))
	if err != nil {
		t.Fatal(err)
	}
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	encrypted := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Headers: map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-128-CBC,00"}, Bytes: []byte{1}})
	tests := []struct {
		name        string
		pem         []byte
		want        string
		unsupported bool
	}{
		{"empty", nil, "no PEM key found", false},
		{"not PEM", []byte("-----BEGIN NOTHING"), "no PEM key found", false},
		{"certificate", pemBlock("CERTIFICATE", []byte{1}), `PEM block "CERTIFICATE" holds no key`, false},
		{"encrypted", encrypted, "the key is encrypted", false},
		{"encrypted PKCS #8", pemBlock("ENCRYPTED PRIVATE KEY", []byte{1}), "the key is encrypted", false},
		{"garbage", pemBlock("PRIVATE KEY", []byte{1, 2, 3}), `PEM block "PRIVATE KEY"`, false},
		{"X25519", pkcs8(t, x25519), "unsupported key: ECDH", true},
		{"P-224", pemBlock("EC PRIVATE KEY", p224), "unsupported key: ECDSA on P-224", true},
		{"RSA 1024", pkcs8(t, small), "unsupported key: RSA key of 1024 bits; want 2048 bits or more", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cardgen.ParsePEM(tt.pem)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if got := errors.Is(err, cardgen.ErrUnsupportedKey); got != tt.unsupported {
				t.Errorf("errors.Is(err, ErrUnsupportedKey) = %v", got)
			}
		})
	}
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

// TestThumbprintRFC7638 checks the example of RFC 7638 §3.1.
func TestThumbprintRFC7638(t *testing.T) {
	n, err := base64.RawURLEncoding.DecodeString("0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw")
	if err != nil {
		t.Fatal(err)
	}
	got, err := cardgen.Thumbprint(&rsa.PublicKey{N: new(big.Int).SetBytes(n), E: 65537})
	if err != nil {
		t.Fatal(err)
	}
	if want := "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"; got != want {
		t.Errorf("thumbprint %s, want %s", got, want)
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
		parsed, err := cardgen.ParsePEM(pemData)
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
