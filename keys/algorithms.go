package keys

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"fmt"
	"slices"
	"strings"
)

// Algorithms are the JWS algorithms (RFC 7518, RFC 8037) keys are used
// with. Asymmetric only: a public key must never serve as an HMAC secret.
var Algorithms = []string{
	"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
}

// CheckAlgorithm says why alg cannot be used with pub, or nil when it can:
// alg is one of Algorithms, pub passes Check, and alg is made for pub's
// type and curve.
func CheckAlgorithm(alg string, pub crypto.PublicKey) error {
	if !slices.Contains(Algorithms, alg) {
		return fmt.Errorf("algorithm %q is not supported (want one of %s)", alg, strings.Join(Algorithms, ", "))
	}
	if err := Check(pub); err != nil {
		return err
	}
	if !fits(alg, pub) {
		return fmt.Errorf("algorithm %s does not match the key (%s)", alg, describe(pub))
	}
	return nil
}

// DefaultAlgorithm is the algorithm a key is used with unless told
// otherwise: ES256, ES384 or ES512 by curve, RS256 for RSA, EdDSA for
// Ed25519. It fails for a key the policy refuses.
func DefaultAlgorithm(pub crypto.PublicKey) (string, error) {
	if err := Check(pub); err != nil {
		return "", err
	}
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		return curveAlgorithms[k.Curve], nil
	case *rsa.PublicKey:
		return "RS256", nil
	}
	return "EdDSA", nil // Check accepts no other type
}

// fits reports whether alg is made for pub's type and curve.
func fits(alg string, pub crypto.PublicKey) bool {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return (strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")) && slices.Contains(Algorithms, alg)
	case *ecdsa.PublicKey:
		made, ok := curveAlgorithms[k.Curve]
		return ok && made == alg
	case ed25519.PublicKey:
		return alg == "EdDSA"
	}
	return false
}
