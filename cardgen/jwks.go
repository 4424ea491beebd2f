package cardgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/caddy-a2a/caddy-a2a/keys"
)

// DefaultJWKSPath is where the public keys are published unless configured
// otherwise.
const DefaultJWKSPath = "/.well-known/jwks.json"

// JWKSContentType is the media type of a JWK Set (RFC 7517 §8.5.1).
const JWKSContentType = "application/jwk-set+json"

// JWKS encodes the public keys as a JWK Set, each with its kid, alg and
// "use": "sig". Private parts are never written.
func (s *KeySet) JWKS() ([]byte, error) {
	b, err := keys.MarshalJWKS(s.keys)
	if err != nil {
		return nil, fmt.Errorf("cardgen: %w", err)
	}
	return b, nil
}

// ParseJWKS reads a JWK Set of public keys, for verification. Keys it
// cannot use are skipped, as RFC 7517 §5 asks: keys that are not for
// signatures (keys.ErrNotSignatureKey: other key types, symmetric "oct"
// keys among them, as a card signature is never verified with a shared
// secret; another use; key_ops without verify) and keys without a kid. A
// key whose alg is missing matches any algorithm fit for its type. A set
// that holds private key material, a key the policy refuses (see
// keys.ParseJWK) or two keys with one kid is an error.
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
		k, err := keys.ParseJWK(raw)
		if err != nil {
			var bad *keys.JWKError
			switch {
			case !errors.As(err, &bad):
				return nil, fmt.Errorf("cardgen: JWK Set key %d: %w", i+1, err)
			case errors.Is(err, keys.ErrPrivateKey):
				return nil, fmt.Errorf("cardgen: JWK Set key %d (kid %q) holds a private key; publish public keys only", i+1, bad.KeyID)
			case bad.KeyID == "" || errors.Is(err, keys.ErrNotSignatureKey):
				continue
			}
			return nil, fmt.Errorf("cardgen: JWK Set key %q: %w", bad.KeyID, bad.Err)
		}
		if k.ID == "" {
			continue
		}
		if _, dup := ks.Lookup(k.ID); dup {
			return nil, fmt.Errorf("cardgen: JWK Set has two keys with kid %q", k.ID)
		}
		ks.keys = append(ks.keys, k)
	}
	return ks, nil
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
	return &JWKS{res: newResource(body, JWKSContentType, maxAge, time.Now())}, nil
}

// JSON returns the served bytes. Shared: read-only.
func (j *JWKS) JSON() json.RawMessage { return j.res.body }

// ETag returns the strong entity-tag of the served bytes, quoted.
func (j *JWKS) ETag() string { return j.res.headers[hETag] }

// ServeHTTP answers GET and HEAD with the JWK Set, with the same caching
// behaviour as the card (ETag, 304, Cache-Control).
func (j *JWKS) ServeHTTP(w http.ResponseWriter, r *http.Request) { j.res.serveHTTP(w, r) }
