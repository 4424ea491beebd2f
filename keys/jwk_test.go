package keys_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"math/big"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/keys"
)

func b64u(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// jwkOf encodes a public key as a JWK, independently of the package.
func jwkOf(kid, alg string, pub crypto.PublicKey) map[string]any {
	m := map[string]any{"kid": kid, "use": "sig"}
	if alg != "" {
		m["alg"] = alg
	}
	switch k := pub.(type) {
	case *rsa.PublicKey:
		m["kty"], m["n"], m["e"] = "RSA", b64u(k.N.Bytes()), b64u(big.NewInt(int64(k.E)).Bytes())
	case *ecdsa.PublicKey:
		raw, err := k.Bytes() // 0x04 || X || Y
		if err != nil {
			panic(err)
		}
		size := (len(raw) - 1) / 2
		m["kty"], m["crv"], m["x"], m["y"] = "EC", k.Curve.Params().Name, b64u(raw[1:1+size]), b64u(raw[1+size:])
	case ed25519.PublicKey:
		m["kty"], m["crv"], m["x"] = "OKP", "Ed25519", b64u(k)
	}
	return m
}

// with returns a copy of m with members set (a nil value removes one).
func with(m map[string]any, kv ...any) map[string]any {
	c := maps.Clone(m)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(c, kv[i].(string))
		} else {
			c[kv[i].(string)] = kv[i+1]
		}
	}
	return c
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// loose changes the last character of a base64url value so that only
// bits past the end of the data differ: lenient decoders read the same
// bytes, a strict one refuses it.
func loose(s string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, s[len(s)-1])
	return s[:len(s)-1] + string(alphabet[last^1])
}

func TestParseJWK(t *testing.T) {
	ec := &mustEC(t, "P-256").PublicKey
	edPub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		jwk  map[string]any
		pub  crypto.PublicKey
	}{
		{"RSA", jwkOf("r", "RS256", &rsaKey().PublicKey), &rsaKey().PublicKey},
		{"RSA without alg, kid or use", with(jwkOf("", "", &rsaKey().PublicKey), "kid", nil, "use", nil), &rsaKey().PublicKey},
		{"EC P-256", jwkOf("e", "ES256", ec), ec},
		{"EC P-384", jwkOf("e", "ES384", &mustEC(t, "P-384").PublicKey), nil},
		{"EC P-521", jwkOf("e", "ES512", &mustEC(t, "P-521").PublicKey), nil},
		{"OKP Ed25519", jwkOf("ed", "EdDSA", edPub), edPub},
		{"OKP Ed25519 without alg", jwkOf("ed", "", edPub), edPub},
		{"key_ops with verify", with(jwkOf("e", "ES256", ec), "key_ops", []string{"sign", "verify"}), ec},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k, err := keys.ParseJWK(mustJSON(tt.jwk))
			if err != nil {
				t.Fatal(err)
			}
			kid, _ := tt.jwk["kid"].(string)
			alg, _ := tt.jwk["alg"].(string)
			if k.ID != kid || k.Algorithm != alg || k.Private != nil {
				t.Errorf("key %+v; want kid %q, alg %q, no private part", k, kid, alg)
			}
			if tt.pub != nil && !keys.Equal(k.Public, tt.pub) {
				t.Error("another public key was read")
			}
		})
	}
}

// TestParseJWKPolicy: each JWK is refused, for the reason given, and the
// error names the key without quoting its values.
func TestParseJWKPolicy(t *testing.T) {
	rsaJWK := jwkOf("r", "", &rsaKey().PublicKey)
	ecJWK := jwkOf("e", "", &mustEC(t, "P-256").PublicKey)
	ec384JWK := jwkOf("e", "", &mustEC(t, "P-384").PublicKey)
	edPub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	edJWK := jwkOf("ed", "", edPub)
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	huge := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 4200), big.NewInt(1))
	identity := make([]byte, ed25519.PublicKeySize) // the neutral point, of order one
	identity[0] = 1

	tests := []struct {
		name string
		jwk  map[string]any
		is   error // the sentinel wrapped; nil for a malformed key
		want string
	}{
		{"exponent 1", with(rsaJWK, "e", b64u([]byte{1})), keys.ErrUnsupportedKey, "the RSA exponent must be odd"},
		{"even exponent", with(rsaJWK, "e", b64u([]byte{1, 0, 0})), keys.ErrUnsupportedKey, "the RSA exponent must be odd"},
		{"exponent over four bytes", with(rsaJWK, "e", b64u([]byte{1, 0, 0, 0, 1})), nil, "bad RSA modulus or exponent"},
		{"short RSA", jwkOf("r", "", &small.PublicKey), keys.ErrUnsupportedKey, "RSA key of 1024 bits; want 2048 bits or more"},
		{"RSA over go-jose's 4096 bits", with(rsaJWK, "n", b64u(huge.Bytes())), nil, "modulus too large"},
		{"no modulus", with(rsaJWK, "n", nil), nil, "bad RSA modulus or exponent"},
		{"base64url with stray trailing bits (n)", with(rsaJWK, "n", loose(rsaJWK["n"].(string))), nil, "bad RSA modulus or exponent"},
		{"base64url with stray trailing bits (x)", with(ecJWK, "x", loose(ecJWK["x"].(string))), nil, "bad EC coordinates for P-256"},
		{"padded base64url", with(ecJWK, "x", ecJWK["x"].(string)+"="), nil, "bad EC coordinates for P-256"},
		{"standard base64", with(edJWK, "x", base64.RawStdEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32))), nil, "bad Ed25519 key"},
		{"key_ops without verify", with(ecJWK, "key_ops", []string{"encrypt"}), keys.ErrNotSignatureKey, "key_ops without verify"},
		{"empty key_ops", with(ecJWK, "key_ops", []string{}), keys.ErrNotSignatureKey, "key_ops without verify"},
		{"use enc", with(ecJWK, "use", "enc"), keys.ErrNotSignatureKey, `use "enc"`},
		{"RS256 on an EC key", with(ecJWK, "alg", "RS256"), nil, "algorithm RS256 does not match the key (ECDSA P-256)"},
		{"EdDSA on an RSA key", with(rsaJWK, "alg", "EdDSA"), nil, "algorithm EdDSA does not match the key (RSA 2048 bits)"},
		{"HS256 on an RSA key", with(rsaJWK, "alg", "HS256"), nil, `algorithm "HS256" is not supported`},
		{"ES384 on a P-256 key", with(ecJWK, "alg", "ES384"), nil, "algorithm ES384 does not match the key (ECDSA P-256)"},
		{"P-256 coordinates named P-384", with(ecJWK, "crv", "P-384"), nil, "bad EC coordinates for P-384"},
		{"P-384 coordinates named P-256", with(ec384JWK, "crv", "P-256"), nil, "bad EC coordinates for P-256"},
		{"a point off the curve", with(ecJWK, "y", b64u(make([]byte, 32))), nil, "bad EC key"},
		{"curve P-192", with(ecJWK, "crv", "P-192"), keys.ErrNotSignatureKey, `EC curve "P-192"`},
		{"OKP X25519", with(edJWK, "crv", "X25519"), keys.ErrNotSignatureKey, `OKP curve "X25519"`},
		{"short Ed25519", with(edJWK, "x", b64u(make([]byte, 31))), nil, "bad Ed25519 key"},
		{"low-order Ed25519", with(edJWK, "x", b64u(identity)), nil, "low-order point"},
		{"symmetric key", map[string]any{"kty": "oct", "kid": "hmac", "k": b64u([]byte("a shared secret of 32 bytes....."))}, keys.ErrNotSignatureKey, `key type "oct"`},
		{"no kty", map[string]any{"kid": "none"}, keys.ErrNotSignatureKey, `key type ""`},
		{"private EC key", with(ecJWK, "d", b64u(make([]byte, 32))), keys.ErrPrivateKey, "holds a private key"},
		{"private RSA parts", with(rsaJWK, "p", b64u([]byte{3}), "q", b64u([]byte{5})), keys.ErrPrivateKey, "holds a private key"},
		{"member names are case-sensitive", with(ecJWK, "x", nil, "X", ecJWK["x"]), nil, "bad EC coordinates for P-256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := keys.ParseJWK(mustJSON(tt.jwk))
			var bad *keys.JWKError
			if !errors.As(err, &bad) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want a JWKError containing %q", err, tt.want)
			}
			if kid, _ := tt.jwk["kid"].(string); bad.KeyID != kid || !strings.Contains(err.Error(), `JWK "`+kid+`"`) {
				t.Errorf("error %v does not name kid %q", err, kid)
			}
			for _, sentinel := range []error{keys.ErrUnsupportedKey, keys.ErrNotSignatureKey, keys.ErrPrivateKey} {
				if got := errors.Is(err, sentinel); got != (sentinel == tt.is) {
					t.Errorf("errors.Is(err, %v) = %v", sentinel, got)
				}
			}
			for _, member := range []string{"n", "x", "y", "d", "k"} {
				if v, _ := tt.jwk[member].(string); len(v) >= 8 && strings.Contains(err.Error(), v) {
					t.Errorf("the error quotes %q: %v", member, err)
				}
			}
		})
	}

	// JSON that is not a JWK: a plain error, not about any key.
	for _, data := range []string{`[]`, `{"kty":"EC","kty":"EC"}`, `{"kid":5}`} {
		_, err := keys.ParseJWK([]byte(data))
		var bad *keys.JWKError
		if err == nil || errors.As(err, &bad) || !strings.Contains(err.Error(), "not a JWK") {
			t.Errorf("%s: error %v", data, err)
		}
	}
}

// TestJWKSRoundTrip: what MarshalJWKS writes, ParseJWK reads back as the
// same keys, without private parts.
func TestJWKSRoundTrip(t *testing.T) {
	ec := mustEC(t, "P-256")
	edPub, edPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	in := []keys.Key{
		{ID: "rsa", Algorithm: "PS256", Public: &rsaKey().PublicKey, Private: rsaKey()},
		{ID: "p256", Algorithm: "ES256", Public: &ec.PublicKey, Private: ec},
		{ID: "p384", Algorithm: "ES384", Public: &mustEC(t, "P-384").PublicKey},
		{ID: "p521", Public: &mustEC(t, "P-521").PublicKey},
		{ID: "ed", Algorithm: "EdDSA", Public: edPub, Private: edPriv},
	}
	data, err := keys.MarshalJWKS(in)
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != len(in) {
		t.Fatalf("%d keys written, want %d: %s", len(set.Keys), len(in), data)
	}
	for i, raw := range set.Keys {
		var members map[string]any
		if err := json.Unmarshal(raw, &members); err != nil {
			t.Fatal(err)
		}
		for _, private := range []string{"d", "p", "q", "dp", "dq", "qi", "k"} {
			if _, ok := members[private]; ok {
				t.Errorf("key %q: private member %q written", in[i].ID, private)
			}
		}
		if members["use"] != "sig" || members["kid"] != in[i].ID {
			t.Errorf("key %q: members %v", in[i].ID, members)
		}
		k, err := keys.ParseJWK(raw)
		if err != nil {
			t.Fatalf("key %q: %v", in[i].ID, err)
		}
		if k.ID != in[i].ID || k.Algorithm != in[i].Algorithm || k.Private != nil || !keys.Equal(k.Public, in[i].Public) {
			t.Errorf("key %q read back as %+v", in[i].ID, k)
		}
	}

	if _, err := keys.MarshalJWKS([]keys.Key{{ID: "oops", Public: ec}}); err == nil || !strings.Contains(err.Error(), `key "oops": unsupported key`) {
		t.Errorf("a private key given as the public one: %v", err)
	}
	if b, err := keys.MarshalJWKS(nil); err != nil || string(b) != `{"keys":[]}` {
		t.Errorf("no keys: %s, %v", b, err)
	}
}

// TestThumbprintRFC7638 checks the example of RFC 7638 §3.1.
func TestThumbprintRFC7638(t *testing.T) {
	n, err := base64.RawURLEncoding.DecodeString("0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw")
	if err != nil {
		t.Fatal(err)
	}
	got, err := keys.Thumbprint(&rsa.PublicKey{N: new(big.Int).SetBytes(n), E: 65537})
	if err != nil {
		t.Fatal(err)
	}
	if want := "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"; got != want {
		t.Errorf("thumbprint %s, want %s", got, want)
	}
}
