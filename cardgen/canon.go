package cardgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/gowebpki/jcs"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// Form names one way of turning a served card into the payload a signature
// covers. The card this package serves carries the 0.3 members beside the
// 1.0 ones, and verifiers in use today rebuild the payload in three ways;
// a signature covers exactly one, so the signer signs each distinct one
// (spec 1.0 §8.4.3 allows several signatures) and any of these verifiers
// finds one it can check.
//
// FormSpec is the specification's rule (§8.4.1): the card as a 1.0
// AgentCard message with the proto's field presence (a2a.AgentCard10), so
// the 0.3 members are left out; `signatures` excluded; RFC 8785. It is the
// one rule this project stands by, and the first signature.
//
// FormPruned is FormSpec with every empty string, array and object (and
// null) removed, recursively and REQUIRED or not: what @a2a-js/sdk 1.x
// (canonicalizeAgentCard) and a2a-sdk 1.x for Python (MessageToDict, then
// empty values removed) verify. It differs from FormSpec only for a card
// with an empty value, such as a security requirement without scopes.
//
// FormServed is the card exactly as served, `signatures` excluded, RFC 8785:
// what a2a-go's a2acrypto verifier (on its main branch, in no release yet)
// checks. It is the only form that covers the 0.3 members.
type Form string

// The forms; see Form.
const (
	FormSpec   Form = "spec"
	FormPruned Form = "pruned"
	FormServed Form = "served"
)

// DefaultForms are the forms a Signer signs unless told otherwise, in the
// order of the signatures it writes.
var DefaultForms = []Form{FormSpec, FormPruned, FormServed}

func (f Form) valid() bool { return slices.Contains(DefaultForms, f) }

// describe says in a few words what a form covers, for reports.
func (f Form) describe() string {
	switch f {
	case FormSpec:
		return "the 1.0 fields, spec §8.4.1"
	case FormPruned:
		return "the 1.0 fields, empty values pruned as the JS and Python SDKs do"
	case FormServed:
		return "the card as served, 0.3 fields included"
	}
	return string(f)
}

// ParseForms reads form names ("spec", "pruned", "served"), rejecting
// unknown and repeated ones.
func ParseForms(names []string) ([]Form, error) {
	out := make([]Form, 0, len(names))
	for _, n := range names {
		f := Form(n)
		switch {
		case !f.valid():
			return nil, fmt.Errorf("unknown form %q: want spec, pruned or served", n)
		case slices.Contains(out, f):
			return nil, fmt.Errorf("form %q is listed twice", n)
		}
		out = append(out, f)
	}
	return out, nil
}

// Canonicalize returns the payload a signature of form f covers, for a
// card as JSON (a served card; its signatures are ignored). The result is
// RFC 8785 canonical JSON.
func Canonicalize(card []byte, f Form) ([]byte, error) {
	root, err := decodeObject(card)
	if err != nil {
		return nil, err
	}
	delete(root, "signatures")
	var v any = root
	switch f {
	case FormServed:
	case FormSpec, FormPruned:
		out, err := a2a.AgentCard10(root)
		if err != nil {
			return nil, err
		}
		v = out
		if f == FormPruned {
			if v = prune(out); v == nil {
				v = map[string]any{}
			}
		}
	default:
		return nil, fmt.Errorf("cardgen: unknown canonical form %q", f)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cardgen: canonicalizing the card (%s): %w", f, err)
	}
	out, err := jcs.Transform(b)
	if err != nil {
		return nil, fmt.Errorf("cardgen: canonicalizing the card (%s): %w", f, err)
	}
	return out, nil
}

// decodeObject reads a JSON object keeping numbers as written.
func decodeObject(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("cardgen: the card is not a JSON object: %w", err)
	}
	if dec.More() {
		return nil, errors.New("cardgen: the card has data after its JSON object")
	}
	if root == nil {
		return nil, errors.New("cardgen: the card is null, not a JSON object")
	}
	return root, nil
}

// prune removes empty strings, arrays, objects and nulls, recursively, and
// returns nil for a value that ends up empty. false and 0 stay.
func prune(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		if x == "" {
			return nil
		}
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			if e = prune(e); e != nil {
				out = append(out, e)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if e = prune(e); e != nil {
				out[k] = e
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return v
}
