package cardgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/golang-jwt/jwt/v5"

	"github.com/caddy-a2a/caddy-a2a/keys"
)

// KeySource finds the public key of a signature from its protected
// header's kid and jku. A *KeySet is one (a trusted key set; it ignores
// jku).
type KeySource interface {
	Key(kid, jku string) (Key, error)
}

// ErrKeyNotFound is returned (wrapped) by a KeySource that has no key for
// a kid.
var ErrKeyNotFound = errors.New("key not found")

// Status is the outcome for one signature.
type Status int

const (
	// Verified: the signature checks out with a key from the source.
	Verified Status = iota + 1
	// Invalid: the signature is malformed, or its key was found and the
	// signature does not match the card: evidence that the card changed
	// after it was signed, or of a broken signer.
	Invalid
	// Unverified: no key could be had for it (kid not in the key set, key
	// set unreachable), so it says nothing either way.
	Unverified
)

func (s Status) String() string {
	switch s {
	case Verified:
		return "verified"
	case Invalid:
		return "INVALID"
	case Unverified:
		return "unverified"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// SignatureResult is what became of one signature of a card.
type SignatureResult struct {
	// Index is the signature's position in the card's signatures, from 0.
	Index int
	// KeyID, Algorithm and JKU come from the protected header, when it
	// could be read.
	KeyID, Algorithm, JKU string
	Status                Status
	// Form is the payload form the signature covers, when Verified.
	Form Form
	// Err says why the signature is not Verified.
	Err error
	// Warnings note what an official SDK would refuse or what the
	// specification advises against, in a signature that verified.
	Warnings []string
}

// Report is the outcome of verifying a card's signatures.
type Report struct {
	Signatures []SignatureResult
}

// Count returns how many signatures have status s.
func (r *Report) Count(s Status) int {
	n := 0
	for _, sig := range r.Signatures {
		if sig.Status == s {
			n++
		}
	}
	return n
}

// OK says whether the card is to be trusted: at least one signature
// verified and, unless anyOne is set, none is Invalid. A card whose
// signatures were made with keys the source does not have is not
// rejected for them, but needs one verified signature.
func (r *Report) OK(anyOne bool) bool {
	return r.Count(Verified) > 0 && (anyOne || r.Count(Invalid) == 0)
}

// VerifyOptions tunes Verify.
type VerifyOptions struct {
	// Forms are the payload forms a signature may cover; nil means all.
	Forms []Form
}

// Verify checks every signature of a card, given as JSON, with keys from
// source. For each signature it reads the protected header (alg and kid
// required, no crit), finds the key, checks that the algorithm fits the key,
// and verifies the JWS over the payload forms (spec 1.0 §8.4.3: the card
// without signatures, canonicalized), accepted ones first, until one
// matches. A signature over a form opts does not accept is Unverified, not
// Invalid. The error is for a card that cannot be read or has no
// signatures.
func Verify(card []byte, source KeySource, opts VerifyOptions) (*Report, error) {
	var doc struct {
		Signatures []json.RawMessage `json:"signatures"`
	}
	if err := json.Unmarshal(card, &doc); err != nil {
		return nil, fmt.Errorf("cardgen: the card is not a JSON object: %w", err)
	}
	if len(doc.Signatures) == 0 {
		return nil, errors.New("cardgen: the card has no signatures")
	}
	accepted := opts.Forms
	if accepted == nil {
		accepted = DefaultForms
	}
	// Every form is computed: a signature over a form that is not accepted
	// is told apart from one that matches no form at all.
	type candidate struct {
		form     Form
		accepted bool
		payload  string // base64url
		err      error
	}
	candidates := make([]candidate, 0, len(DefaultForms))
	for _, f := range DefaultForms {
		p, err := Canonicalize(card, f)
		candidates = append(candidates, candidate{f, slices.Contains(accepted, f), b64.EncodeToString(p), err})
	}
	// Accepted forms first.
	slices.SortStableFunc(candidates, func(a, b candidate) int {
		switch {
		case a.accepted == b.accepted:
			return 0
		case a.accepted:
			return -1
		}
		return 1
	})

	report := &Report{Signatures: make([]SignatureResult, len(doc.Signatures))}
	for i, raw := range doc.Signatures {
		res := &report.Signatures[i]
		res.Index = i
		sig, hdr, err := readSignature(raw)
		if hdr != nil {
			res.KeyID, res.Algorithm, res.JKU = hdr.Kid, hdr.Alg, hdr.Jku
		}
		if err != nil {
			res.Status, res.Err = Invalid, err
			continue
		}
		key, err := source.Key(hdr.Kid, hdr.Jku)
		if err != nil {
			res.Status, res.Err = Unverified, err
			continue
		}
		if key.Algorithm != "" && key.Algorithm != hdr.Alg {
			res.Status, res.Err = Invalid, fmt.Errorf("key %q is for %s, the signature says %s", key.ID, key.Algorithm, hdr.Alg)
			continue
		}
		if err := keys.CheckAlgorithm(hdr.Alg, key.Public); err != nil {
			res.Status, res.Err = Invalid, fmt.Errorf("key %q: %w", key.ID, err)
			continue
		}
		method := jwt.GetSigningMethod(hdr.Alg)
		var tried []string
		var formErrs []error
		for _, c := range candidates {
			if c.err != nil {
				formErrs = append(formErrs, c.err)
				continue
			}
			if method.Verify(sig.Protected+"."+c.payload, sig.raw, key.Public) == nil {
				if c.accepted {
					res.Status, res.Form = Verified, c.form
				} else {
					res.Status = Unverified
					res.Err = fmt.Errorf("the signature covers the %s form (%s), which is not accepted here", c.form, c.form.describe())
				}
				break
			}
			tried = append(tried, string(c.form))
		}
		switch res.Status {
		case Verified:
			res.Warnings = hdr.warnings()
			continue
		case Unverified:
			continue
		}
		res.Status = Invalid
		res.Err = fmt.Errorf("the signature does not match the card in any form tried (%s): the card changed after it was signed, or another key signed it under kid %q",
			strings.Join(tried, ", "), hdr.Kid)
		if len(formErrs) > 0 {
			res.Err = errors.Join(append([]error{res.Err}, formErrs...)...)
		}
	}
	return report, nil
}

// signature is an AgentCardSignature as read for verification.
type signature struct {
	Protected string         `json:"protected"`
	Signature string         `json:"signature"`
	Header    map[string]any `json:"header"`
	raw       []byte         // the decoded signature value
}

// protectedHeader holds the members of a protected header verification
// looks at.
type protectedHeader struct {
	Alg  string   `json:"alg"`
	Kid  string   `json:"kid"`
	Typ  *string  `json:"typ"`
	Jku  string   `json:"jku"`
	Crit []string `json:"crit"`
}

// readSignature decodes and checks one signature; hdr is returned as soon
// as it could be read, for the report.
func readSignature(raw json.RawMessage) (*signature, *protectedHeader, error) {
	var sig signature
	if err := json.Unmarshal(raw, &sig); err != nil {
		return nil, nil, fmt.Errorf("not a signature object: %w", err)
	}
	if sig.Protected == "" || sig.Signature == "" {
		return nil, nil, errors.New("protected and signature are both required")
	}
	hb, err := b64.DecodeString(sig.Protected)
	if err != nil {
		return nil, nil, fmt.Errorf("protected is not base64url without padding: %w", err)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(hb, &members); err != nil {
		return nil, nil, fmt.Errorf("the protected header is not a JSON object: %w", err)
	}
	var hdr protectedHeader
	if err := json.Unmarshal(hb, &hdr); err != nil {
		return nil, nil, fmt.Errorf("the protected header: %w", err)
	}
	switch {
	case hdr.Alg == "":
		return nil, &hdr, errors.New("the protected header has no alg")
	case hdr.Kid == "":
		return nil, &hdr, errors.New("the protected header has no kid (spec 1.0 §8.4.2 requires one)")
	case len(hdr.Crit) > 0:
		return nil, &hdr, fmt.Errorf("the protected header marks %q critical; no extension is understood here", hdr.Crit)
	}
	if !slices.Contains(keys.Algorithms, hdr.Alg) {
		return nil, &hdr, fmt.Errorf("alg %q is not accepted (asymmetric JWS algorithms only: %s)", hdr.Alg, strings.Join(keys.Algorithms, ", "))
	}
	for name := range sig.Header {
		if _, dup := members[name]; dup {
			return nil, &hdr, fmt.Errorf("%q is in both the protected and the unprotected header (RFC 7515 §7.2.1)", name)
		}
	}
	if sig.raw, err = b64.DecodeString(sig.Signature); err != nil {
		return nil, &hdr, fmt.Errorf("signature is not base64url without padding: %w", err)
	}
	return &sig, &hdr, nil
}

func (h *protectedHeader) warnings() []string {
	var w []string
	switch {
	case h.Typ == nil:
		w = append(w, `the protected header has no typ; spec 1.0 §8.4.2 says it SHOULD be "JOSE", and @a2a-js/sdk refuses a signature without one`)
	case *h.Typ != "JOSE":
		w = append(w, fmt.Sprintf(`typ is %q; spec 1.0 §8.4.2 says it SHOULD be "JOSE"`, *h.Typ))
	}
	return w
}
