package keys

import (
	"crypto"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	jose "github.com/go-jose/go-jose/v4"
	josejson "github.com/go-jose/go-jose/v4/json"
)

// ErrNotSignatureKey marks a JWK that is not for verifying signatures
// here: another "use", "key_ops" without "verify", or a key type or curve
// this package does not verify with (a symmetric "oct" key among them: a
// shared secret in a key set is no public key). RFC 7517 §5 asks a JWK Set
// reader to ignore such keys.
var ErrNotSignatureKey = errors.New("not a signature verification key")

// ErrPrivateKey marks a JWK that holds private key material, which a key
// set must never publish.
var ErrPrivateKey = errors.New("holds a private key")

// JWKError says which JWK ParseJWK could not use, and why.
type JWKError struct {
	KeyID string // the JWK's kid; "" when it has none
	Err   error
}

func (e *JWKError) Error() string {
	if e.KeyID == "" {
		return "JWK without kid: " + e.Err.Error()
	}
	return fmt.Sprintf("JWK %q: %v", e.KeyID, e.Err)
}

func (e *JWKError) Unwrap() error { return e.Err }

// jwkMembers are the members of a JWK checked here. They are read with
// go-jose's JSON reader (case-sensitive, no duplicate members), so that
// the checks see the very members go-jose builds the key from.
type jwkMembers struct {
	Kty    string   `json:"kty"`
	Kid    string   `json:"kid"`
	Alg    string   `json:"alg"`
	Use    string   `json:"use"`
	KeyOps []string `json:"key_ops"`
	Crv    string   `json:"crv"`
	N      string   `json:"n"`
	E      string   `json:"e"`
	X      string   `json:"x"`
	Y      string   `json:"y"`
	// Private parts: only whether one is there matters.
	D  any `json:"d"`
	P  any `json:"p"`
	Q  any `json:"q"`
	DP any `json:"dp"`
	DQ any `json:"dq"`
	QI any `json:"qi"`
}

// coordinateBytes is the size of an EC coordinate on each accepted curve
// (RFC 7518 §6.2.1.2).
var coordinateBytes = map[string]int{"P-256": 32, "P-384": 48, "P-521": 66}

// ParseJWK reads one JWK (RFC 7517, RFC 7518 §6, RFC 8037) as a signature
// verification key: EC on P-256, P-384 or P-521, RSA, or OKP Ed25519. The
// key passes Check and, when the JWK names an alg, CheckAlgorithm; the Key
// carries the JWK's kid and alg and no private part.
//
// An error other than unreadable JSON is a *JWKError, which names the key
// by kid; it wraps ErrNotSignatureKey for a key that is not for signatures,
// ErrPrivateKey for one with private parts, and ErrUnsupportedKey for one
// the policy refuses. Errors never quote key material.
func ParseJWK(data []byte) (Key, error) {
	var m jwkMembers
	if err := josejson.Unmarshal(data, &m); err != nil {
		return Key{}, fmt.Errorf("not a JWK: %w", err)
	}
	pub, err := m.publicKey(data)
	if err != nil {
		return Key{}, &JWKError{KeyID: m.Kid, Err: err}
	}
	return Key{ID: m.Kid, Algorithm: m.Alg, Public: pub}, nil
}

func (m *jwkMembers) publicKey(data []byte) (crypto.PublicKey, error) {
	// go-jose's reader accepts private keys: refuse them first.
	if m.D != nil || m.P != nil || m.Q != nil || m.DP != nil || m.DQ != nil || m.QI != nil {
		return nil, ErrPrivateKey
	}
	if err := m.forSignatures(); err != nil {
		return nil, err
	}
	if err := m.checkEncoding(); err != nil {
		return nil, err
	}
	var jk jose.JSONWebKey
	if err := jk.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("bad %s key: %w", m.Kty, err)
	}
	if err := Check(jk.Key); err != nil {
		return nil, err
	}
	if m.Alg != "" {
		if err := CheckAlgorithm(m.Alg, jk.Key); err != nil {
			return nil, err
		}
	}
	return jk.Key, nil
}

// forSignatures refuses a key that is not for verifying signatures.
func (m *jwkMembers) forSignatures() error {
	switch {
	case m.Use != "" && m.Use != "sig":
		return fmt.Errorf("%w: use %q", ErrNotSignatureKey, m.Use)
	case m.KeyOps != nil && !slices.Contains(m.KeyOps, "verify"):
		return fmt.Errorf("%w: key_ops without verify", ErrNotSignatureKey)
	}
	switch m.Kty {
	case "RSA":
		return nil
	case "EC":
		if _, ok := coordinateBytes[m.Crv]; ok {
			return nil
		}
	case "OKP":
		if m.Crv == "Ed25519" {
			return nil
		}
	default:
		return fmt.Errorf("%w: key type %q", ErrNotSignatureKey, m.Kty)
	}
	return fmt.Errorf("%w: %s curve %q", ErrNotSignatureKey, m.Kty, m.Crv)
}

// checkEncoding decodes the key's values strictly (base64url without
// padding or non-zero trailing bits, RFC 7515 §2, which go-jose does not
// ask) and checks their lengths: EC coordinates of the curve's size, an
// RSA exponent of at most four bytes (go-jose would silently truncate a
// longer one), an Ed25519 key of 32 bytes.
func (m *jwkMembers) checkEncoding() error {
	strict := base64.RawURLEncoding.Strict()
	switch m.Kty {
	case "RSA":
		n, err1 := strict.DecodeString(m.N)
		e, err2 := strict.DecodeString(m.E)
		if errors.Join(err1, err2) != nil || len(n) == 0 || len(e) == 0 || len(e) > 4 {
			return errors.New("bad RSA modulus or exponent")
		}
	case "EC":
		x, err1 := strict.DecodeString(m.X)
		y, err2 := strict.DecodeString(m.Y)
		if size := coordinateBytes[m.Crv]; errors.Join(err1, err2) != nil || len(x) != size || len(y) != size {
			return fmt.Errorf("bad EC coordinates for %s", m.Crv)
		}
	case "OKP":
		if x, err := strict.DecodeString(m.X); err != nil || len(x) != ed25519.PublicKeySize {
			return errors.New("bad Ed25519 key")
		}
	}
	return nil
}

// MarshalJWKS encodes the public parts of ks as a JWK Set (RFC 7517 §5),
// each key with its kid, its alg when set, and "use": "sig". Private parts
// are never written.
func MarshalJWKS(ks []Key) ([]byte, error) {
	set := jose.JSONWebKeySet{Keys: make([]jose.JSONWebKey, 0, len(ks))}
	for _, k := range ks {
		// Check also keeps a private key given as Public out of the set.
		if err := Check(k.Public); err != nil {
			return nil, fmt.Errorf("key %q: %w", k.ID, err)
		}
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.Public, KeyID: k.ID, Algorithm: k.Algorithm, Use: "sig"})
	}
	return json.Marshal(set)
}

// Thumbprint is the RFC 7638 JWK thumbprint (SHA-256, base64url) of a
// public key: a kid that names the key and nothing else.
func Thumbprint(pub crypto.PublicKey) (string, error) {
	if err := Check(pub); err != nil {
		return "", err
	}
	sum, err := (&jose.JSONWebKey{Key: pub}).Thumbprint(crypto.SHA256)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(sum), nil
}
