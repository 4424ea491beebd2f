package cardgen

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"time"
)

// DefaultJWKSPath is where the public keys are published unless configured
// otherwise.
const DefaultJWKSPath = "/.well-known/jwks.json"

// JWKSContentType is the media type of a JWK Set (RFC 7517 §8.5.1).
const JWKSContentType = "application/jwk-set+json"

// jwk is a public JSON Web Key (RFC 7517, 7518 §6, 8037).
type jwk struct {
	Kty string `json:"kty"`
	Use string `json:"use,omitempty"`
	Alg string `json:"alg,omitempty"`
	Kid string `json:"kid,omitempty"`
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
	// D is read only to refuse a key set that carries private keys.
	D string `json:"d,omitempty"`
}

var b64 = base64.RawURLEncoding

func publicJWK(pub crypto.PublicKey) (jwk, error) {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		size := (k.Curve.Params().BitSize + 7) / 8
		x, y := make([]byte, size), make([]byte, size)
		// Coordinates are big-endian, left-padded to the curve size
		// (RFC 7518 §6.2.1.2). The ecdh form is 0x04 || X || Y.
		ec, err := k.Bytes()
		if err != nil {
			return jwk{}, fmt.Errorf("%w: %v", ErrUnsupportedKey, err)
		}
		copy(x, ec[1:1+size])
		copy(y, ec[1+size:])
		return jwk{Kty: "EC", Crv: k.Curve.Params().Name, X: b64.EncodeToString(x), Y: b64.EncodeToString(y)}, nil
	case *rsa.PublicKey:
		return jwk{Kty: "RSA", N: b64.EncodeToString(k.N.Bytes()), E: b64.EncodeToString(big.NewInt(int64(k.E)).Bytes())}, nil
	case ed25519.PublicKey:
		return jwk{Kty: "OKP", Crv: "Ed25519", X: b64.EncodeToString(k)}, nil
	}
	return jwk{}, fmt.Errorf("%w: %s", ErrUnsupportedKey, keyTypeName(pub))
}

// JWKS encodes the public keys as a JWK Set, each with its kid, alg and
// "use": "sig". Private parts are never written.
func (s *KeySet) JWKS() ([]byte, error) {
	set := struct {
		Keys []jwk `json:"keys"`
	}{Keys: make([]jwk, 0, len(s.keys))}
	for _, k := range s.keys {
		j, err := publicJWK(k.Public)
		if err != nil {
			return nil, fmt.Errorf("cardgen: key %q: %w", k.ID, err)
		}
		j.Use, j.Alg, j.Kid = "sig", k.Algorithm, k.ID
		set.Keys = append(set.Keys, j)
	}
	return json.Marshal(set)
}

// ParseJWKS reads a JWK Set of public keys, for verification. Keys it
// cannot use are skipped, as RFC 7517 §5 asks: other key types
// (symmetric "oct" keys among them: a card signature is never verified
// with a shared secret), keys for another use than "sig", and keys without
// a kid. A key whose alg is missing matches any algorithm fit for its type.
// A set that holds private key material or two keys with one kid is an
// error.
func ParseJWKS(data []byte) (*KeySet, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("cardgen: not a JWK Set: %w", err)
	}
	if set.Keys == nil {
		return nil, errors.New(`cardgen: not a JWK Set: no "keys" array`)
	}
	ks := &KeySet{}
	for i, raw := range set.Keys {
		var j jwk
		if err := json.Unmarshal(raw, &j); err != nil {
			return nil, fmt.Errorf("cardgen: JWK Set key %d: %w", i+1, err)
		}
		if j.D != "" {
			return nil, fmt.Errorf("cardgen: JWK Set key %d (kid %q) holds a private key; publish public keys only", i+1, j.Kid)
		}
		if j.Kid == "" || (j.Use != "" && j.Use != "sig") {
			continue
		}
		pub, err := j.publicKey()
		if errors.Is(err, errSkipKey) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cardgen: JWK Set key %q: %w", j.Kid, err)
		}
		if j.Alg != "" {
			if err := checkAlgorithm(j.Alg, pub); err != nil {
				return nil, fmt.Errorf("cardgen: JWK Set key %q: %w", j.Kid, err)
			}
		}
		if _, dup := ks.Lookup(j.Kid); dup {
			return nil, fmt.Errorf("cardgen: JWK Set has two keys with kid %q", j.Kid)
		}
		ks.keys = append(ks.keys, Key{ID: j.Kid, Algorithm: j.Alg, Public: pub})
	}
	return ks, nil
}

// errSkipKey marks a JWK of a type a verifier ignores.
var errSkipKey = errors.New("key type not used")

func (j *jwk) publicKey() (crypto.PublicKey, error) {
	switch j.Kty {
	case "EC":
		var curve elliptic.Curve
		switch j.Crv {
		case "P-256":
			curve = elliptic.P256()
		case "P-384":
			curve = elliptic.P384()
		case "P-521":
			curve = elliptic.P521()
		default:
			return nil, errSkipKey
		}
		x, err1 := b64.DecodeString(j.X)
		y, err2 := b64.DecodeString(j.Y)
		size := (curve.Params().BitSize + 7) / 8
		if err := errors.Join(err1, err2); err != nil || len(x) != size || len(y) != size {
			return nil, fmt.Errorf("bad EC coordinates for %s", j.Crv)
		}
		k, err := ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, x...), y...))
		if err != nil {
			return nil, fmt.Errorf("bad EC key: %w", err)
		}
		return k, nil
	case "RSA":
		n, err1 := b64.DecodeString(j.N)
		e, err2 := b64.DecodeString(j.E)
		if err := errors.Join(err1, err2); err != nil || len(n) == 0 || len(e) == 0 || len(e) > 4 {
			return nil, errors.New("bad RSA modulus or exponent")
		}
		k := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if bits := k.N.BitLen(); bits < MinRSABits {
			return nil, fmt.Errorf("%w: RSA key of %d bits; want %d bits or more", ErrUnsupportedKey, bits, MinRSABits)
		}
		return k, nil
	case "OKP":
		if j.Crv != "Ed25519" {
			return nil, errSkipKey
		}
		x, err := b64.DecodeString(j.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, errors.New("bad Ed25519 key")
		}
		return ed25519.PublicKey(x), nil
	}
	return nil, errSkipKey
}

// JWKS is a key set ready to serve: its bytes and ETag are computed once.
// It is safe for concurrent use.
type JWKS struct {
	res resource
}

// NewJWKS encodes the public keys of keys (a Signer's key set: every key
// is published, the active one and the others) for serving with the given
// Cache-Control max-age.
func NewJWKS(keys *KeySet, maxAge time.Duration) (*JWKS, error) {
	if keys == nil {
		return nil, errors.New("cardgen: NewJWKS: nil key set")
	}
	if maxAge < 0 {
		return nil, fmt.Errorf("cardgen: max-age %s is negative", maxAge)
	}
	body, err := keys.JWKS()
	if err != nil {
		return nil, err
	}
	return &JWKS{res: newResource(body, JWKSContentType, maxAge)}, nil
}

// JSON returns the served bytes. Shared: read-only.
func (j *JWKS) JSON() json.RawMessage { return j.res.body }

// ETag returns the strong entity-tag of the served bytes, quoted.
func (j *JWKS) ETag() string { return j.res.headers[hETag] }

// ServeHTTP answers GET and HEAD with the JWK Set, with the same caching
// behaviour as the card (ETag, 304, Cache-Control).
func (j *JWKS) ServeHTTP(w http.ResponseWriter, r *http.Request) { j.res.serveHTTP(w, r) }
