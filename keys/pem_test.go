package keys_test

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/keys"
)

// rsaKey is one 2048-bit key for the RSA tests: generating is slow.
var rsaKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

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

func pkixPEM(t testing.TB, pub any) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pemBlock("PUBLIC KEY", der)
}

// certificatePEM is a self-signed certificate for priv's public key.
func certificatePEM(t testing.TB, priv *ecdsa.PrivateKey) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "signer"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	return pemBlock("CERTIFICATE", der)
}

func TestParsePEM(t *testing.T) {
	ec := mustEC(t, "P-256")
	sec1, err := x509.MarshalECPrivateKey(ec)
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
		{"PKCS #8 ECDSA", pkcs8(t, ec), true, "ES256"},
		{"PKCS #8 ECDSA P-384", pkcs8(t, mustEC(t, "P-384")), true, "ES384"},
		{"PKCS #8 RSA", pkcs8(t, rsaKey()), true, "RS256"},
		{"PKCS #8 Ed25519", pkcs8(t, ed), true, "EdDSA"},
		{"SEC 1, after openssl's EC PARAMETERS", append(ecParams, pemBlock("EC PRIVATE KEY", sec1)...), true, "ES256"},
		{"PKCS #1 RSA", pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey())), true, "RS256"},
		{"PKIX public", pkixPEM(t, &ec.PublicKey), false, "ES256"},
		{"PKCS #1 RSA public", pemBlock("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&rsaKey().PublicKey)), false, "RS256"},
		{"text around the block", append(append([]byte("a comment\n"), pkcs8(t, ec)...), "trailer\n"...), true, "ES256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := keys.ParsePEM(tt.pem)
			if err != nil {
				t.Fatal(err)
			}
			if (k.Private != nil) != tt.private {
				t.Errorf("private part present: %v, want %v", k.Private != nil, tt.private)
			}
			if k.Private != nil && !keys.Equal(k.Public, k.Private.Public()) {
				t.Error("the public key is not the private key's")
			}
			if got, err := keys.DefaultAlgorithm(k.Public); err != nil || got != tt.alg {
				t.Errorf("default algorithm %s (%v), want %s", got, err, tt.alg)
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
			_, err := keys.ParsePEM(tt.pem)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if got := errors.Is(err, keys.ErrUnsupportedKey); got != tt.unsupported {
				t.Errorf("errors.Is(err, ErrUnsupportedKey) = %v", got)
			}
		})
	}
}

// TestParsePublicPEM: every public key and certificate, in order; no
// private key, and the same policy as ParsePEM.
func TestParsePublicPEM(t *testing.T) {
	ec, signer := mustEC(t, "P-384"), mustEC(t, "P-256")
	pkcs1 := pemBlock("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&rsaKey().PublicKey))
	data := append(append(pkixPEM(t, &ec.PublicKey), pkcs1...), certificatePEM(t, signer)...)
	ks, err := keys.ParsePublicPEM(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{&ec.PublicKey, &rsaKey().PublicKey, &signer.PublicKey}
	if len(ks) != len(want) {
		t.Fatalf("%d keys, want %d", len(ks), len(want))
	}
	for i, k := range ks {
		if !keys.Equal(k.Public, want[i]) || k.Private != nil || k.ID != "" || k.Algorithm != "" {
			t.Errorf("key %d: %+v", i, k)
		}
	}

	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	evenExponent := rsaKey().PublicKey
	evenExponent.E = 65536
	for name, tt := range map[string]struct {
		pem  []byte
		want string
	}{
		"a private key":       {pkcs8(t, ec), `PEM block "PRIVATE KEY" holds no key of a kind read here (want PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE)`},
		"no key":              {[]byte("just text"), "no PEM key found (want a PEM block such as -----BEGIN PUBLIC KEY-----)"},
		"a broken block":      {pemBlock("PUBLIC KEY", []byte{1, 2, 3}), `PEM block "PUBLIC KEY": `},
		"a small RSA key":     {pkixPEM(t, &weak.PublicKey), "unsupported key: RSA key of 1024 bits"},
		"an even exponent":    {pemBlock("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&evenExponent)), "unsupported key: the RSA exponent must be odd"},
		"a bad key after one": {append(pkixPEM(t, &ec.PublicKey), pkixPEM(t, &weak.PublicKey)...), "RSA key of 1024 bits"},
	} {
		if _, err := keys.ParsePublicPEM(tt.pem); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tt.want)
		} else if strings.Contains(err.Error(), "BEGIN PUBLIC KEY-----\n") {
			t.Errorf("%s: the error quotes the PEM: %v", name, err)
		}
	}
}
