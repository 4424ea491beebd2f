package cardgen_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/caddy-a2a/caddy-a2a/cardgen"
)

// withSignatures returns card with its signatures replaced by sigs.
func withSignatures(t testing.TB, card []byte, sigs ...any) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(card, &m); err != nil {
		t.Fatal(err)
	}
	m["signatures"] = sigs
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sign makes a signature with any protected header over card's payload in
// form f, the way a foreign signer might.
func sign(t testing.TB, card []byte, key cardgen.Key, alg, header string, f cardgen.Form) map[string]any {
	t.Helper()
	payload, err := cardgen.Canonicalize(card, f)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding
	protected := enc.EncodeToString([]byte(header))
	sig, err := jwt.GetSigningMethod(alg).Sign(protected+"."+enc.EncodeToString(payload), key.Private)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{"protected": protected, "signature": enc.EncodeToString(sig)}
}

func TestVerifyStatuses(t *testing.T) {
	k, other := testKey(t, cardgen.ES256, "k"), testKey(t, cardgen.ES256, "other")
	ks := keySet(t, k)
	card := signedDocument(t, minimalConfig(), signer(t, cardgen.SignerConfig{Keys: ks})).JSON()
	good := sign(t, card, k, "ES256", `{"alg":"ES256","typ":"JOSE","kid":"k"}`, cardgen.FormSpec)
	unknown := sign(t, card, other, "ES256", `{"alg":"ES256","typ":"JOSE","kid":"other"}`, cardgen.FormSpec)
	forged := sign(t, card, other, "ES256", `{"alg":"ES256","typ":"JOSE","kid":"k"}`, cardgen.FormSpec)

	tests := []struct {
		name      string
		sigs      []any
		statuses  []cardgen.Status
		ok, okAny bool
		want      string // in the first non-verified signature's error
	}{
		{"verified", []any{good}, []cardgen.Status{cardgen.Verified}, true, true, ""},
		{"unknown key only", []any{unknown}, []cardgen.Status{cardgen.Unverified}, false, false, `kid "other" is not in the key set (it has "k")`},
		{"verified and unknown key", []any{unknown, good}, []cardgen.Status{cardgen.Unverified, cardgen.Verified}, true, true, `kid "other"`},
		{"verified and forged", []any{good, forged}, []cardgen.Status{cardgen.Verified, cardgen.Invalid}, false, true, "does not match the card in any form tried (spec, pruned, served)"},
		{"no alg", []any{sign(t, card, k, "ES256", `{"typ":"JOSE","kid":"k"}`, cardgen.FormSpec)}, []cardgen.Status{cardgen.Invalid}, false, false, "no alg"},
		{"no kid", []any{sign(t, card, k, "ES256", `{"alg":"ES256","typ":"JOSE"}`, cardgen.FormSpec)}, []cardgen.Status{cardgen.Invalid}, false, false, "no kid"},
		{"crit", []any{sign(t, card, k, "ES256", `{"alg":"ES256","kid":"k","crit":["exp"],"exp":1}`, cardgen.FormSpec)}, []cardgen.Status{cardgen.Invalid}, false, false, "critical"},
		{"alg none", []any{map[string]any{"protected": base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"k"}`)), "signature": "AA"}},
			[]cardgen.Status{cardgen.Invalid}, false, false, `alg "none" is not accepted`},
		{"HS256", []any{map[string]any{"protected": base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","kid":"k"}`)), "signature": "AA"}},
			[]cardgen.Status{cardgen.Invalid}, false, false, `alg "HS256" is not accepted`},
		{"algorithm of another key type", []any{sign(t, card, k, "ES256", `{"alg":"ES384","typ":"JOSE","kid":"k"}`, cardgen.FormSpec)},
			[]cardgen.Status{cardgen.Invalid}, false, false, `key "k" is for ES256, the signature says ES384`},
		{"padded base64", []any{map[string]any{"protected": good["protected"].(string) + "=", "signature": good["signature"]}},
			[]cardgen.Status{cardgen.Invalid}, false, false, "not base64url without padding"},
		{"header member in both headers", []any{map[string]any{"protected": good["protected"], "signature": good["signature"], "header": map[string]any{"kid": "k"}}},
			[]cardgen.Status{cardgen.Invalid}, false, false, `"kid" is in both the protected and the unprotected header`},
		{"no protected", []any{map[string]any{"signature": "AA"}}, []cardgen.Status{cardgen.Invalid}, false, false, "protected and signature are both required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := verify(t, withSignatures(t, card, tt.sigs...), ks)
			for i, s := range r.Signatures {
				if s.Status != tt.statuses[i] {
					t.Errorf("signature %d: %s (%v), want %s", i, s.Status, s.Err, tt.statuses[i])
				}
			}
			if r.OK(false) != tt.ok || r.OK(true) != tt.okAny {
				t.Errorf("OK(false), OK(true) = %v, %v; want %v, %v", r.OK(false), r.OK(true), tt.ok, tt.okAny)
			}
			for _, s := range r.Signatures {
				if s.Status != cardgen.Verified {
					if s.Err == nil || !strings.Contains(s.Err.Error(), tt.want) {
						t.Errorf("error %v, want one containing %q", s.Err, tt.want)
					}
					break
				}
			}
		})
	}

	r := verify(t, withSignatures(t, card, sign(t, card, k, "ES256", `{"alg":"ES256","kid":"k"}`, cardgen.FormServed)), ks)
	if s := r.Signatures[0]; s.Status != cardgen.Verified || s.Form != cardgen.FormServed || len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "no typ") {
		t.Errorf("a signature without typ: %+v", s)
	}
	if _, err := cardgen.Verify(withSignatures(t, card), ks, cardgen.VerifyOptions{}); err == nil || !strings.Contains(err.Error(), "no signatures") {
		t.Errorf("a card without signatures: %v", err)
	}
	if _, err := cardgen.Verify([]byte(`[]`), ks, cardgen.VerifyOptions{}); err == nil {
		t.Error("a JSON array verified")
	}
}
