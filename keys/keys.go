// Package keys is what signing and verifying JWS and JWTs need to know
// about keys, in one place: reading keys from PEM and JWK, one policy for
// which keys are accepted and which algorithm fits which key, publishing
// JWK Sets and RFC 7638 thumbprints, and key equality. authn (verifying
// tokens) and cardgen (signing and verifying Agent Cards) both use it, so
// that they accept the same keys.
//
// The policy: RSA of MinRSABits or more with an odd public exponent of at
// least 3, ECDSA on P-256, P-384 or P-521, and Ed25519; asymmetric
// algorithms only (Algorithms), each on the key type and curve it is made
// for.
//
// JWKs are read and written by go-jose (github.com/go-jose/go-jose/v4), a
// well-kept library already in Caddy's build: it builds the keys, checks
// that an EC point is on its curve, refuses low-order Ed25519 keys and
// checks an x5c chain against the key. What it leaves out is checked here:
// go-jose's JWK reader accepts private parts, does not read key_ops,
// accepts base64url with non-zero trailing bits and an RSA exponent of any
// length, and knows no minimum size and no use policy. go-jose also refuses
// RSA moduli over 4096 bits in a JWK (its MaxRSAModulusBits, a variable
// shared by everything in the binary, which this package leaves alone).
package keys

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"strings"
)

// MinRSABits is the smallest RSA modulus accepted, for signing and for
// verifying (RFC 7518 §3.3).
const MinRSABits = 2048

// ErrUnsupportedKey is returned (wrapped) for a key of a type, curve, size
// or exponent the policy refuses.
var ErrUnsupportedKey = errors.New("unsupported key")

// Key is a signature key: its public part verifies, its private part, when
// present, signs.
type Key struct {
	// ID is the key's kid; "" when it has none.
	ID string
	// Algorithm is the JWS alg the key is bound to; "" lets it be used with
	// every algorithm that fits its type and curve.
	Algorithm string
	// Public is the public key: *ecdsa.PublicKey, *rsa.PublicKey or
	// ed25519.PublicKey.
	Public crypto.PublicKey
	// Private is the private key (*ecdsa.PrivateKey, *rsa.PrivateKey or
	// ed25519.PrivateKey), or nil for a key that only verifies.
	Private crypto.Signer
}

// Fits reports whether the key may make or verify a signature with alg:
// its Algorithm, when set, is alg, and alg is made for the key's type and
// curve.
func (k Key) Fits(alg string) bool {
	return (k.Algorithm == "" || k.Algorithm == alg) && fits(alg, k.Public)
}

// Equal reports whether a and b are the same public key.
func Equal(a, b crypto.PublicKey) bool {
	eq, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(b)
}

// Check applies the key policy to a public key; the error wraps
// ErrUnsupportedKey.
func Check(pub crypto.PublicKey) error {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if n := k.N.BitLen(); n < MinRSABits {
			return fmt.Errorf("%w: RSA key of %d bits; want %d bits or more (RFC 7518 §3.3: at least %d are required)",
				ErrUnsupportedKey, n, MinRSABits, MinRSABits)
		}
		// Go refuses exponents over 2^31-1 when verifying; an even or tiny
		// exponent is a broken key.
		if k.E < 3 || k.E%2 == 0 || k.E > 1<<31-1 {
			return fmt.Errorf("%w: the RSA exponent must be odd, from 3 to 2^31-1", ErrUnsupportedKey)
		}
		return nil
	case *ecdsa.PublicKey:
		if _, ok := curveAlgorithms[k.Curve]; !ok {
			return fmt.Errorf("%w: ECDSA on %s; want P-256, P-384 or P-521", ErrUnsupportedKey, k.Curve.Params().Name)
		}
		return nil
	case ed25519.PublicKey:
		if len(k) != ed25519.PublicKeySize {
			return fmt.Errorf("%w: an Ed25519 key of %d bytes", ErrUnsupportedKey, len(k))
		}
		return nil
	}
	return fmt.Errorf("%w: %s; want ECDSA (P-256, P-384, P-521), RSA (%d bits or more) or Ed25519",
		ErrUnsupportedKey, describe(pub), MinRSABits)
}

// describe names a key's type for messages: "ECDSA P-256", "RSA 2048 bits".
func describe(k any) string {
	switch k := k.(type) {
	case *ecdsa.PublicKey:
		return "ECDSA " + k.Curve.Params().Name
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA %d bits", k.N.BitLen())
	case ed25519.PublicKey:
		return "Ed25519"
	}
	t := fmt.Sprintf("%T", k)
	switch {
	case strings.HasPrefix(t, "*ecdh."):
		return "ECDH (X25519 or an ECDH curve: an encryption key, not a signing key)"
	case strings.HasPrefix(t, "*dsa."):
		return "DSA"
	}
	return t
}

// curveAlgorithms is the ECDSA algorithm made for each accepted curve.
var curveAlgorithms = map[elliptic.Curve]string{
	elliptic.P256(): "ES256",
	elliptic.P384(): "ES384",
	elliptic.P521(): "ES512",
}
