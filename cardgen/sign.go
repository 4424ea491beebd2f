package cardgen

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/golang-jwt/jwt/v5"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// b64 encodes the parts of a JWS (RFC 7515 §2).
var b64 = base64.RawURLEncoding

// SignerConfig says how to sign cards.
type SignerConfig struct {
	// Keys holds every configured key. The active one signs; all of them
	// are published (NewJWKS), so that a key can be announced before it
	// signs and kept after it stops.
	Keys *KeySet
	// Active is the kid of the key that signs. It may be empty when exactly
	// one key of the set has a private part.
	Active string
	// JWKSURL, when set, goes into each signature's protected header as
	// jku: the absolute URL where the key set is published.
	JWKSURL string
	// Forms are the payload forms to sign, each distinct one once, in this
	// order; nil means DefaultForms. See Form.
	Forms []Form
}

// Signer signs Agent Cards (spec 1.0 §8.4) with one key. It is read-only
// after NewSigner and safe for concurrent use.
type Signer struct {
	key    Key
	method jwt.SigningMethod
	// protected is the base64url-encoded protected header, the same for
	// every signature.
	protected string
	forms     []Form
}

// NewSigner checks cfg: the active key must be in the set, hold a private
// key and use one of SigningAlgorithms; the forms must be known; the jku
// must be an absolute http or https URL.
func NewSigner(cfg SignerConfig) (*Signer, error) {
	if cfg.Keys == nil || len(cfg.Keys.keys) == 0 {
		return nil, errors.New("cardgen: signing needs at least one key")
	}
	key, err := activeKey(cfg.Keys, cfg.Active)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(SigningAlgorithms, key.Algorithm) {
		return nil, fmt.Errorf("cardgen: key %q: %s is not an algorithm this signer signs with (want one of %s)",
			key.ID, key.Algorithm, strings.Join(SigningAlgorithms, ", "))
	}
	forms := cfg.Forms
	if forms == nil {
		forms = DefaultForms
	}
	if len(forms) == 0 {
		return nil, errors.New("cardgen: no payload form to sign")
	}
	names := make([]string, len(forms))
	for i, f := range forms {
		names[i] = string(f)
	}
	if _, err := ParseForms(names); err != nil {
		return nil, fmt.Errorf("cardgen: %w", err)
	}
	if cfg.JWKSURL != "" {
		if u, err := url.Parse(cfg.JWKSURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			return nil, fmt.Errorf("cardgen: jku %q is not an absolute http or https URL without credentials", cfg.JWKSURL)
		}
	}
	header, err := a2a.MarshalNoEscape(struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
		Kid string `json:"kid"`
		Jku string `json:"jku,omitempty"`
	}{key.Algorithm, "JOSE", key.ID, cfg.JWKSURL})
	if err != nil {
		return nil, fmt.Errorf("cardgen: encoding the protected header: %w", err)
	}
	return &Signer{
		key:       key,
		method:    jwt.GetSigningMethod(key.Algorithm),
		protected: b64.EncodeToString(header),
		forms:     slices.Clone(forms),
	}, nil
}

// activeKey picks the signing key: the named one, or the only key that
// can sign.
func activeKey(ks *KeySet, active string) (Key, error) {
	if active != "" {
		k, ok := ks.Lookup(active)
		switch {
		case !ok:
			return Key{}, fmt.Errorf("cardgen: the active key %q is not configured (keys: %s)", active, ks.ids())
		case k.Private == nil:
			return Key{}, fmt.Errorf("cardgen: the active key %q has no private key; it can be published, not sign", active)
		}
		return k, nil
	}
	var signers []Key
	for _, k := range ks.keys {
		if k.Private != nil {
			signers = append(signers, k)
		}
	}
	switch len(signers) {
	case 0:
		return Key{}, errors.New("cardgen: no configured key has a private key to sign with")
	case 1:
		return signers[0], nil
	}
	ids := make([]string, len(signers))
	for i, k := range signers {
		ids[i] = fmt.Sprintf("%q", k.ID)
	}
	return Key{}, fmt.Errorf("cardgen: %s can all sign: name the one that does (active)", strings.Join(ids, ", "))
}

// Key returns the key that signs.
func (s *Signer) Key() Key { return s.key }

// Forms returns the payload forms the signer signs.
func (s *Signer) Forms() []Form { return slices.Clone(s.forms) }

// sign appends to c.Signatures one signature per distinct payload form of
// c, served in shape, and returns the card's served bytes. It checks that
// those bytes yield the payloads it signed, so what is served is what was
// signed.
func (s *Signer) sign(c *a2a.AgentCard, shape a2a.CardShape) ([]byte, error) {
	unsigned := *c
	unsigned.Signatures = nil
	body, err := a2a.MarshalAgentCardAs(&unsigned, shape)
	if err != nil {
		return nil, err
	}
	type signed struct {
		form    Form
		payload []byte
	}
	var done []signed
	sigs := slices.Clip(c.Signatures)
	forms := s.forms
	if shape.BareScopes {
		forms = []Form{FormServed}
	}
	for _, f := range forms {
		payload, err := Canonicalize(body, f)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(done, func(d signed) bool { return bytes.Equal(d.payload, payload) }) {
			continue
		}
		done = append(done, signed{f, payload})
		sig, err := s.method.Sign(s.protected+"."+b64.EncodeToString(payload), s.key.Private)
		if err != nil {
			return nil, fmt.Errorf("signing with key %q (%s): %w", s.key.ID, s.key.Algorithm, err)
		}
		sigs = append(sigs, a2a.AgentCardSignature{Protected: s.protected, Signature: b64.EncodeToString(sig)})
	}
	c.Signatures = sigs
	served, err := a2a.MarshalAgentCardAs(c, shape)
	if err != nil {
		return nil, err
	}
	for _, d := range done {
		again, err := Canonicalize(served, d.form)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(again, d.payload) {
			return nil, fmt.Errorf("the served card does not yield the signed %s payload", d.form)
		}
	}
	return served, nil
}
