package cardgen

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/keys"
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

// Key is one key of a KeySet: its public part verifies signatures and is
// published in the JWKS; its private part, when present, can sign (a
// retired key whose signatures clients may still hold has none). NewKeySet
// fills in an empty ID with the RFC 7638 thumbprint of the public key, an
// empty Algorithm with the key type's default (keys.DefaultAlgorithm: ES256
// for P-256, ES384 for P-384, RS256 for RSA, EdDSA for Ed25519), and an
// empty Public from Private. keys.ParsePEM reads one from a PEM file.
type Key = keys.Key

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
func NewKeySet(ks ...Key) (*KeySet, error) {
	var errs []error
	out := make([]Key, 0, len(ks))
	seen := make(map[string]int, len(ks))
	for i, k := range ks {
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
		if k.Private != nil && !keys.Equal(k.Public, k.Private.Public()) {
			errs = append(errs, fmt.Errorf("%s: the public key is not the private key's", name))
			continue
		}
		if k.Algorithm == "" {
			alg, err := keys.DefaultAlgorithm(k.Public)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				continue
			}
			k.Algorithm = alg
		}
		if err := keys.CheckAlgorithm(k.Algorithm, k.Public); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		if k.ID == "" {
			tp, err := keys.Thumbprint(k.Public)
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
