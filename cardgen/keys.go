package cardgen

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// JWS algorithm names (RFC 7518) this package signs with.
const (
	ES256 = "ES256"
	ES384 = "ES384"
	RS256 = "RS256"
	PS256 = "PS256"
	EdDSA = "EdDSA"
)

// DefaultAlgorithm is what GenerateKey makes when asked for no algorithm.
const DefaultAlgorithm = ES256

// SigningAlgorithms are the algorithms a Signer signs with. Verification
// also accepts ES512, RS384, RS512, PS384 and PS512, which other signers use.
var SigningAlgorithms = []string{ES256, ES384, RS256, PS256, EdDSA}

// MinRSABits is the smallest RSA modulus accepted, for signing and for
// verifying (RFC 7518 §3.3).
const MinRSABits = 2048

// algorithm ties a JWS name to its key type and golang-jwt method.
type algorithm struct {
	method jwt.SigningMethod
	// curve is the curve an ECDSA key must use; nil for RSA and EdDSA.
	curve elliptic.Curve
	kty   string // the JWK key type: EC, RSA or OKP
}

var algorithms = map[string]algorithm{
	ES256:   {jwt.SigningMethodES256, elliptic.P256(), "EC"},
	ES384:   {jwt.SigningMethodES384, elliptic.P384(), "EC"},
	"ES512": {jwt.SigningMethodES512, elliptic.P521(), "EC"},
	RS256:   {jwt.SigningMethodRS256, nil, "RSA"},
	"RS384": {jwt.SigningMethodRS384, nil, "RSA"},
	"RS512": {jwt.SigningMethodRS512, nil, "RSA"},
	PS256:   {jwt.SigningMethodPS256, nil, "RSA"},
	"PS384": {jwt.SigningMethodPS384, nil, "RSA"},
	"PS512": {jwt.SigningMethodPS512, nil, "RSA"},
	EdDSA:   {jwt.SigningMethodEdDSA, nil, "OKP"},
}

// Key is one key of a KeySet: its public part verifies signatures and is
// published in the JWKS; its private part, when present, can sign.
type Key struct {
	// ID is the key's kid. NewKeySet fills in the RFC 7638 thumbprint of
	// the public key when it is empty.
	ID string
	// Algorithm is the JWS alg the key is used with. NewKeySet fills in the
	// key type's default when it is empty: ES256 for P-256, ES384 for P-384,
	// RS256 for RSA, EdDSA for Ed25519.
	Algorithm string
	// Public is the public key: *ecdsa.PublicKey, *rsa.PublicKey or
	// ed25519.PublicKey. NewKeySet takes it from Private when nil.
	Public crypto.PublicKey
	// Private is the private key (*ecdsa.PrivateKey, *rsa.PrivateKey or
	// ed25519.PrivateKey), or nil for a key that is only published, such as
	// a retired key whose signatures clients may still hold.
	Private crypto.Signer
}

// ErrUnsupportedKey is returned (wrapped) for a key of a type or size this
// package does not sign or verify with.
var ErrUnsupportedKey = errors.New("unsupported key")

// ParsePEM reads the first key in PEM data: a private key (PKCS #8
// "PRIVATE KEY", SEC 1 "EC PRIVATE KEY" or PKCS #1 "RSA PRIVATE KEY") or a
// public key (PKIX "PUBLIC KEY" or PKCS #1 "RSA PUBLIC KEY"), which is
// published but cannot sign. Blocks that hold no key, such as the
// "EC PARAMETERS" block `openssl ecparam -genkey` writes, are skipped. The
// key's type is checked (ECDSA P-256, P-384 or P-521, RSA of MinRSABits or
// more, Ed25519); ID and Algorithm are left for NewKeySet.
func ParsePEM(data []byte) (Key, error) {
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return Key{}, errors.New("no PEM key found (want a PEM block such as -----BEGIN PRIVATE KEY-----)")
		}
		if _, encrypted := block.Headers["Proc-Type"]; encrypted || block.Type == "ENCRYPTED PRIVATE KEY" {
			return Key{}, errors.New("the key is encrypted; give it unencrypted (for example from a secret store through {env.VAR})")
		}
		var parsed any
		var err error
		switch block.Type {
		case "PRIVATE KEY":
			parsed, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			parsed, err = x509.ParseECPrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			parsed, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		case "PUBLIC KEY":
			parsed, err = x509.ParsePKIXPublicKey(block.Bytes)
		case "RSA PUBLIC KEY":
			parsed, err = x509.ParsePKCS1PublicKey(block.Bytes)
		case "EC PARAMETERS":
			continue
		default:
			return Key{}, fmt.Errorf("PEM block %q holds no key this package reads (want PRIVATE KEY, EC PRIVATE KEY, RSA PRIVATE KEY or PUBLIC KEY)", block.Type)
		}
		if err != nil {
			return Key{}, fmt.Errorf("PEM block %q: %w", block.Type, err)
		}
		return keyFrom(parsed)
	}
}

// keyFrom sorts a parsed key into Key's fields and checks its type.
func keyFrom(k any) (Key, error) {
	var key Key
	switch k := k.(type) {
	case *ecdsa.PrivateKey:
		key = Key{Public: &k.PublicKey, Private: k}
	case *rsa.PrivateKey:
		key = Key{Public: &k.PublicKey, Private: k}
	case ed25519.PrivateKey:
		key = Key{Public: k.Public(), Private: k}
	case *ecdsa.PublicKey, *rsa.PublicKey, ed25519.PublicKey:
		key = Key{Public: k}
	default:
		return Key{}, fmt.Errorf("%w: %s; want ECDSA (P-256, P-384), RSA (%d bits or more) or Ed25519", ErrUnsupportedKey, keyTypeName(k), MinRSABits)
	}
	if _, err := defaultAlgorithm(key.Public); err != nil {
		return Key{}, err
	}
	return key, nil
}

// keyTypeName names a key's type for messages: "ECDH X25519", "ECDSA P-224".
func keyTypeName(k any) string {
	switch k := k.(type) {
	case *ecdsa.PrivateKey:
		return "ECDSA " + k.Curve.Params().Name
	case *ecdsa.PublicKey:
		return "ECDSA " + k.Curve.Params().Name
	case *rsa.PrivateKey:
		return fmt.Sprintf("RSA %d bits", k.N.BitLen())
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA %d bits", k.N.BitLen())
	case ed25519.PrivateKey, ed25519.PublicKey:
		return "Ed25519"
	}
	t := fmt.Sprintf("%T", k)
	switch {
	case strings.Contains(t, "ecdh"):
		return "ECDH (X25519 or an ECDH curve: an encryption key, not a signing key)"
	case strings.Contains(t, "dsa"):
		return "DSA"
	}
	return t
}

// defaultAlgorithm is the algorithm a public key is used with unless told
// otherwise; it fails for a key this package cannot use at all.
func defaultAlgorithm(pub crypto.PublicKey) (string, error) {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return ES256, nil
		case elliptic.P384():
			return ES384, nil
		case elliptic.P521():
			return "ES512", nil
		}
		return "", fmt.Errorf("%w: ECDSA on %s; want P-256 (ES256) or P-384 (ES384)", ErrUnsupportedKey, k.Curve.Params().Name)
	case *rsa.PublicKey:
		if n := k.N.BitLen(); n < MinRSABits {
			return "", fmt.Errorf("%w: RSA key of %d bits; want %d bits or more", ErrUnsupportedKey, n, MinRSABits)
		}
		return RS256, nil
	case ed25519.PublicKey:
		return EdDSA, nil
	}
	return "", fmt.Errorf("%w: %s", ErrUnsupportedKey, keyTypeName(pub))
}

// checkAlgorithm says whether alg can be used with pub.
func checkAlgorithm(alg string, pub crypto.PublicKey) error {
	a, ok := algorithms[alg]
	if !ok {
		return fmt.Errorf("algorithm %q is not supported (want one of %s)", alg, strings.Join(SigningAlgorithms, ", "))
	}
	if _, err := defaultAlgorithm(pub); err != nil {
		return err
	}
	mismatch := func() error {
		return fmt.Errorf("algorithm %s does not match the key (%s)", alg, keyTypeName(pub))
	}
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if a.kty != "EC" || a.curve != k.Curve {
			return mismatch()
		}
	case *rsa.PublicKey:
		if a.kty != "RSA" {
			return mismatch()
		}
	case ed25519.PublicKey:
		if a.kty != "OKP" {
			return mismatch()
		}
	}
	return nil
}

// GenerateKey makes a new private key for alg (DefaultAlgorithm when ""):
// P-256 for ES256, P-384 for ES384, RSA 3072 bits for RS256 and PS256,
// Ed25519 for EdDSA. It returns the key, with Algorithm set and ID empty,
// and its PKCS #8 PEM encoding.
func GenerateKey(alg string) (Key, []byte, error) {
	if alg == "" {
		alg = DefaultAlgorithm
	}
	var priv crypto.Signer
	var err error
	switch alg {
	case ES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case ES384:
		priv, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case RS256, PS256:
		priv, err = rsa.GenerateKey(rand.Reader, 3072)
	case EdDSA:
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	default:
		return Key{}, nil, fmt.Errorf("cannot generate a key for %q (want one of %s)", alg, strings.Join(SigningAlgorithms, ", "))
	}
	if err != nil {
		return Key{}, nil, fmt.Errorf("generating a %s key: %w", alg, err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return Key{}, nil, fmt.Errorf("encoding the %s key: %w", alg, err)
	}
	return Key{Algorithm: alg, Public: priv.Public(), Private: priv},
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// KeySet is a checked set of keys: every key has an ID and an algorithm
// that matches it, and no two keys share an ID. It is read-only.
type KeySet struct {
	keys []Key
}

// NewKeySet fills in each key's ID and Algorithm defaults (see Key) and
// checks the set. The error lists every problem, each naming its key by ID
// or, without one, by position.
func NewKeySet(keys ...Key) (*KeySet, error) {
	var errs []error
	out := make([]Key, 0, len(keys))
	seen := make(map[string]int, len(keys))
	for i, k := range keys {
		name := fmt.Sprintf("key %d", i+1)
		if k.ID != "" {
			name = fmt.Sprintf("key %q", k.ID)
		}
		if k.Public == nil && k.Private != nil {
			k.Public = k.Private.Public()
		}
		if k.Public == nil {
			errs = append(errs, fmt.Errorf("%s: no key", name))
			continue
		}
		if k.Private != nil && !publicEqual(k.Public, k.Private.Public()) {
			errs = append(errs, fmt.Errorf("%s: the public key is not the private key's", name))
			continue
		}
		if k.Algorithm == "" {
			alg, err := defaultAlgorithm(k.Public)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				continue
			}
			k.Algorithm = alg
		}
		if err := checkAlgorithm(k.Algorithm, k.Public); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		if k.ID == "" {
			tp, err := Thumbprint(k.Public)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				continue
			}
			k.ID = tp
		}
		if first, dup := seen[k.ID]; dup {
			errs = append(errs, fmt.Errorf("key %q (key %d) has the same kid as key %d; every kid must be unique", k.ID, i+1, first+1))
			continue
		}
		seen[k.ID] = i
		out = append(out, k)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &KeySet{keys: out}, nil
}

func publicEqual(a, b crypto.PublicKey) bool {
	eq, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(b)
}

// Keys returns the keys, in order. The slice is a copy; the keys are shared.
func (s *KeySet) Keys() []Key { return slices.Clone(s.keys) }

// Lookup returns the key whose ID is kid.
func (s *KeySet) Lookup(kid string) (Key, bool) {
	for _, k := range s.keys {
		if k.ID == kid {
			return k, true
		}
	}
	return Key{}, false
}

// Key implements KeySource: the set is the trust root, so jku is ignored.
func (s *KeySet) Key(kid, _ string) (Key, error) {
	if k, ok := s.Lookup(kid); ok {
		return k, nil
	}
	return Key{}, fmt.Errorf("%w: kid %q is not in the key set (it has %s)", ErrKeyNotFound, kid, s.ids())
}

// ids lists the set's kids for messages.
func (s *KeySet) ids() string {
	if len(s.keys) == 0 {
		return "no keys"
	}
	q := make([]string, len(s.keys))
	for i, k := range s.keys {
		q[i] = fmt.Sprintf("%q", k.ID)
	}
	return strings.Join(q, ", ")
}

// Thumbprint is the RFC 7638 JWK thumbprint (SHA-256, base64url) of a
// public key: a kid that names the key and nothing else.
func Thumbprint(pub crypto.PublicKey) (string, error) {
	j, err := publicJWK(pub)
	if err != nil {
		return "", err
	}
	// The required members only, in lexicographic order, no whitespace.
	var s string
	switch j.Kty {
	case "EC":
		s = fmt.Sprintf(`{"crv":%q,"kty":"EC","x":%q,"y":%q}`, j.Crv, j.X, j.Y)
	case "RSA":
		s = fmt.Sprintf(`{"e":%q,"kty":"RSA","n":%q}`, j.E, j.N)
	case "OKP":
		s = fmt.Sprintf(`{"crv":%q,"kty":"OKP","x":%q}`, j.Crv, j.X)
	}
	sum := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}
