package keys_test

import (
	"crypto"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/keys"
)

// TestAlgorithmFit: every algorithm against every key type and curve.
func TestAlgorithmFit(t *testing.T) {
	edPub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pubs := map[string]crypto.PublicKey{
		"RSA":     &rsaKey().PublicKey,
		"P-256":   &mustEC(t, "P-256").PublicKey,
		"P-384":   &mustEC(t, "P-384").PublicKey,
		"P-521":   &mustEC(t, "P-521").PublicKey,
		"Ed25519": edPub,
	}
	fitting := map[string]string{
		"RS256": "RSA", "RS384": "RSA", "RS512": "RSA", "PS256": "RSA", "PS384": "RSA", "PS512": "RSA",
		"ES256": "P-256", "ES384": "P-384", "ES512": "P-521", "EdDSA": "Ed25519",
	}
	defaults := map[string]string{"RSA": "RS256", "P-256": "ES256", "P-384": "ES384", "P-521": "ES512", "Ed25519": "EdDSA"}
	for name, pub := range pubs {
		for _, alg := range keys.Algorithms {
			want := fitting[alg] == name
			err := keys.CheckAlgorithm(alg, pub)
			if (err == nil) != want {
				t.Errorf("%s on %s: %v, want fit %v", alg, name, err, want)
			}
			if err != nil && !strings.Contains(err.Error(), "algorithm "+alg+" does not match the key") {
				t.Errorf("%s on %s: %v", alg, name, err)
			}
			if got := (keys.Key{Public: pub}).Fits(alg); got != want {
				t.Errorf("Fits(%s) on %s = %v", alg, name, got)
			}
		}
		if got, err := keys.DefaultAlgorithm(pub); err != nil || got != defaults[name] {
			t.Errorf("default algorithm of %s: %s (%v), want %s", name, got, err, defaults[name])
		}
		for _, alg := range []string{"HS256", "none", "RSA-OAEP", ""} {
			if err := keys.CheckAlgorithm(alg, pub); err == nil || !strings.Contains(err.Error(), "is not supported") {
				t.Errorf("%q on %s: %v", alg, name, err)
			}
		}
	}
	// A key bound to an algorithm fits that one only.
	bound := keys.Key{Algorithm: "PS256", Public: pubs["RSA"]}
	if !bound.Fits("PS256") || bound.Fits("RS256") {
		t.Error("a key bound to PS256 fits another algorithm, or not its own")
	}
}

func TestCheck(t *testing.T) {
	x25519, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	withExponent := func(e int) *rsa.PublicKey { return &rsa.PublicKey{N: rsaKey().N, E: e} }
	tests := []struct {
		name string
		pub  crypto.PublicKey
		want string // "" for accepted
	}{
		{"RSA 2048", &rsaKey().PublicKey, ""},
		{"exponent 3", withExponent(3), ""},
		{"exponent 1", withExponent(1), "the RSA exponent must be odd, from 3 to 2^31-1"},
		{"even exponent", withExponent(65536), "the RSA exponent must be odd"},
		{"exponent too large", withExponent(1<<31 + 1), "the RSA exponent must be odd, from 3 to 2^31-1"},
		{"RSA 2047 bits", &rsa.PublicKey{N: new(big.Int).Lsh(big.NewInt(1), 2046), E: 65537}, "RSA key of 2047 bits; want 2048 bits or more"},
		{"P-224", &mustEC(t, "P-224").PublicKey, "ECDSA on P-224; want P-256, P-384 or P-521"},
		{"short Ed25519", ed25519.PublicKey(make([]byte, 31)), "an Ed25519 key of 31 bytes"},
		{"X25519", x25519.PublicKey(), "unsupported key: ECDH"},
		{"a private key", rsaKey(), "unsupported key: *rsa.PrivateKey"},
		{"nothing", nil, "unsupported key"},
	}
	for _, tt := range tests {
		err := keys.Check(tt.pub)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, keys.ErrUnsupportedKey)):
			t.Errorf("%s: error %v, want ErrUnsupportedKey containing %q", tt.name, err, tt.want)
		}
	}
}

func TestEqual(t *testing.T) {
	k := rsaKey()
	same := &rsa.PublicKey{N: new(big.Int).Set(k.N), E: k.E}
	if !keys.Equal(&k.PublicKey, same) {
		t.Error("the same key in another value is not equal")
	}
	if keys.Equal(&k.PublicKey, &mustEC(t, "P-256").PublicKey) || keys.Equal(nil, same) || keys.Equal(&k.PublicKey, nil) {
		t.Error("different keys are equal")
	}
}
