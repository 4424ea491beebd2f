package cardgen_test

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
)

const testJKU = "https://agent.example.com/.well-known/jwks.json"

// rsaKey is one 2048-bit key for the RSA tests: generating is slow.
var rsaKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// testKey returns a new private key for alg, with kid id.
func testKey(t testing.TB, alg, id string) cardgen.Key {
	t.Helper()
	if alg == cardgen.RS256 || alg == cardgen.PS256 {
		return cardgen.Key{ID: id, Algorithm: alg, Private: rsaKey()}
	}
	k, _, err := cardgen.GenerateKey(alg)
	if err != nil {
		t.Fatal(err)
	}
	k.ID = id
	return k
}

func keySet(t testing.TB, keys ...cardgen.Key) *cardgen.KeySet {
	t.Helper()
	ks, err := cardgen.NewKeySet(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func signer(t testing.TB, cfg cardgen.SignerConfig) *cardgen.Signer {
	t.Helper()
	s, err := cardgen.NewSigner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func signedDocument(t testing.TB, cfg cardgen.Config, s *cardgen.Signer) *cardgen.Document {
	t.Helper()
	card, err := cardgen.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := cardgen.NewDocument(card, cardgen.WithSigner(s))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func jwksOf(t testing.TB, ks *cardgen.KeySet) []byte {
	t.Helper()
	b, err := ks.JWKS()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func verify(t testing.TB, card []byte, ks cardgen.KeySource, forms ...cardgen.Form) *cardgen.Report {
	t.Helper()
	r, err := cardgen.Verify(card, ks, cardgen.VerifyOptions{Forms: forms})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func formsOf(r *cardgen.Report) []cardgen.Form {
	out := make([]cardgen.Form, len(r.Signatures))
	for i, s := range r.Signatures {
		out[i] = s.Form
	}
	return out
}

// minimalConfig is a card with no empty value anywhere, so its spec and
// pruned payloads are the same.
func minimalConfig() cardgen.Config {
	return cardgen.Config{
		Name: "Minimal", Description: "No empty values.", Version: "1.0.0", URL: "https://agent.example.com/",
		Skills: []a2a.AgentSkill{{ID: "echo", Name: "Echo", Description: "Echoes.", Tags: []string{"echo"}}},
	}
}

// TestSignRoundTrip signs with every algorithm and verifies with the
// independent verifier and with Verify. fullConfig has empty values (a
// requirement without scopes, an mTLS scheme without description), so the
// spec and pruned payloads differ and the card gets three signatures.
func TestSignRoundTrip(t *testing.T) {
	for _, alg := range cardgen.SigningAlgorithms {
		t.Run(alg, func(t *testing.T) {
			kid := "key-" + strings.ToLower(alg)
			ks := keySet(t, testKey(t, alg, kid))
			cfg := fullConfig()
			cfg.Name = "Café <Agent> ✓"
			d := signedDocument(t, cfg, signer(t, cardgen.SignerConfig{Keys: ks, JWKSURL: testJKU}))

			sigs := d.Card().Signatures
			if len(sigs) != 3 {
				t.Fatalf("%d signatures, want 3 (spec, pruned, served)", len(sigs))
			}
			wantHeader := fmt.Sprintf(`{"alg":%q,"typ":"JOSE","kid":%q,"jku":%q}`, alg, kid, testJKU)
			for i, s := range sigs {
				h, err := base64.RawURLEncoding.DecodeString(s.Protected)
				if err != nil || string(h) != wantHeader {
					t.Errorf("signature %d: protected header %s (%v), want %s", i, h, err, wantHeader)
				}
				if s.Header != nil {
					t.Errorf("signature %d: unprotected header %v, want none", i, s.Header)
				}
			}

			jwks := jwksOf(t, ks)
			if got, want := independentVerify(t, d.JSON(), jwks), []string{"spec", "", "served"}; !slices.Equal(got, want) {
				t.Errorf("independent verification: signatures verify over %q, want %q", got, want)
			}
			r := verify(t, d.JSON(), ks)
			if !r.OK(false) {
				t.Fatalf("Verify: %+v", r.Signatures)
			}
			if got, want := formsOf(r), []cardgen.Form{cardgen.FormSpec, cardgen.FormPruned, cardgen.FormServed}; !slices.Equal(got, want) {
				t.Errorf("Verify: forms %q, want %q", got, want)
			}
			public, err := cardgen.ParseJWKS(jwks)
			if err != nil {
				t.Fatal(err)
			}
			if r := verify(t, d.JSON(), public); !r.OK(false) || r.Count(cardgen.Verified) != 3 {
				t.Errorf("Verify with the published JWKS: %+v", r.Signatures)
			}
		})
	}
}

// TestCanonicalFormsAgree checks Canonicalize against the independent
// implementation, and that non-ASCII text is written as UTF-8, unescaped
// (RFC 8785 §3.2.2.2), in the payload and in the served card.
func TestCanonicalFormsAgree(t *testing.T) {
	const name = "Café <Agent> ✓"
	ks := keySet(t, testKey(t, cardgen.ES256, "k"))
	s := signer(t, cardgen.SignerConfig{Keys: ks})
	cfg := fullConfig()
	cfg.Name = name
	cfg.Description = "Ünïcödé & \"quotes\"\n\u2028 and 𝄞"
	for _, c := range []cardgen.Config{fullConfig(), minimalConfig(), cfg} {
		served := signedDocument(t, c, s).JSON()
		spec, err := cardgen.Canonicalize(served, cardgen.FormSpec)
		if err != nil {
			t.Fatal(err)
		}
		if want := specPayload(t, served); !bytes.Equal(spec, want) {
			t.Errorf("spec payload\n got %s\nwant %s", spec, want)
		}
		full, err := cardgen.Canonicalize(served, cardgen.FormServed)
		if err != nil {
			t.Fatal(err)
		}
		if want := servedPayload(t, served); !bytes.Equal(full, want) {
			t.Errorf("served payload\n got %s\nwant %s", full, want)
		}
	}
	served := signedDocument(t, cfg, s).JSON()
	spec, _ := cardgen.Canonicalize(served, cardgen.FormSpec)
	for _, want := range []string{`"name":"Café <Agent> ✓"`, "\"description\":\"Ünïcödé & \\\"quotes\\\"\\n\u2028 and 𝄞\""} {
		if !bytes.Contains(spec, []byte(want)) {
			t.Errorf("spec payload lacks %s:\n%s", want, spec)
		}
	}
	if !bytes.Contains(served, []byte(`"name":"Café <Agent> ✓"`)) {
		t.Errorf("the served card escapes the name:\n%s", served)
	}
}

// TestTamperingBreaksVerification changes, removes or adds every member of
// a signed card. Every change makes the card fail verification. A change to
// a 1.0 field breaks every signature; a change to a 0.3 member breaks only
// the served-form signature, the one that covers the 0.3 members, and the
// spec and pruned signatures still verify: a verifier that stops at one
// good signature, as the official SDKs do, does not see it.
func TestTamperingBreaksVerification(t *testing.T) {
	ks := keySet(t, testKey(t, cardgen.ES256, "k"))
	jwks := jwksOf(t, ks)
	cfg := fullConfig()
	cfg.Name = "Café <Agent> ✓"
	served := signedDocument(t, cfg, signer(t, cardgen.SignerConfig{Keys: ks, JWKSURL: testJKU})).JSON()

	var card map[string]any
	dec := json.NewDecoder(bytes.NewReader(served))
	dec.UseNumber()
	if err := dec.Decode(&card); err != nil {
		t.Fatal(err)
	}
	var changes int
	check := func(what string, path []string, tampered map[string]any) {
		t.Helper()
		changes++
		b, err := json.Marshal(tampered)
		if err != nil {
			t.Fatal(err)
		}
		r := verify(t, b, ks)
		if r.OK(false) {
			t.Errorf("%s %s: the card still verifies", what, strings.Join(path, "."))
			return
		}
		legacy := isLegacyMember(path)
		specOK := r.Signatures[0].Status == cardgen.Verified
		if specOK != legacy {
			t.Errorf("%s %s (0.3 member: %v): the spec-form signature verifies: %v", what, strings.Join(path, "."), legacy, specOK)
		}
		if got := independentVerify(t, b, jwks); (got[0] == "spec") != legacy || got[2] != "" {
			t.Errorf("%s %s: the independent verifier says %q", what, strings.Join(path, "."), got)
		}
	}
	for _, path := range members(card, nil) {
		if path[0] == "signatures" {
			continue
		}
		if tampered, ok := edit(clone(card), path, false); ok {
			check("changing", path, tampered)
		}
		tampered, _ := edit(clone(card), path, true)
		check("removing", path, tampered)
	}
	added := clone(card)
	added["x-added"] = "after signing"
	check("adding", []string{"x-added"}, added)
	if changes < 100 {
		t.Errorf("only %d changes tried", changes)
	}
}

// isLegacyMember says whether a path is in a 0.3 member of the union card,
// one the 1.0 AgentCard does not define.
func isLegacyMember(path []string) bool {
	switch {
	case len(path) == 1 && path[0] == "x-added":
		return true
	case slices.Contains([]string{"url", "preferredTransport", "additionalInterfaces", "protocolVersion", "security", "supportsAuthenticatedExtendedCard"}, path[0]):
		return true
	case path[0] == "securitySchemes" && len(path) > 2:
		return !strings.HasSuffix(path[2], "SecurityScheme")
	case path[0] == "skills" && len(path) > 2:
		return path[2] == "security"
	}
	return false
}

// members lists the path of every object member and array element.
func members(v any, path []string) [][]string {
	var out [][]string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := append(slices.Clip(path), k)
			out = append(out, p)
			out = append(out, members(e, p)...)
		}
	case []any:
		for i, e := range x {
			p := append(slices.Clip(path), strconv.Itoa(i))
			out = append(out, p)
			out = append(out, members(e, p)...)
		}
	}
	return out
}

func clone(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out map[string]any
	_ = dec.Decode(&out)
	return out
}

// edit removes the member at path, or changes it when it is a scalar; ok
// is false for a container that is not to be removed.
func edit(root map[string]any, path []string, remove bool) (map[string]any, bool) {
	var parent any = root
	for _, p := range path[:len(path)-1] {
		switch x := parent.(type) {
		case map[string]any:
			parent = x[p]
		case []any:
			i, _ := strconv.Atoi(p)
			parent = x[i]
		}
	}
	last := path[len(path)-1]
	get := func() any {
		if m, ok := parent.(map[string]any); ok {
			return m[last]
		}
		i, _ := strconv.Atoi(last)
		return parent.([]any)[i]
	}
	set := func(v any) {
		if m, ok := parent.(map[string]any); ok {
			m[last] = v
			return
		}
		i, _ := strconv.Atoi(last)
		parent.([]any)[i] = v
	}
	if remove {
		if m, ok := parent.(map[string]any); ok {
			delete(m, last)
			return root, true
		}
		// An array element: put the last one in its place and shorten the
		// array, through its own parent.
		return edit(root, path[:len(path)-1], false)
	}
	switch x := get().(type) {
	case string:
		set(x + "x")
	case bool:
		set(!x)
	case json.Number:
		set(json.Number(string(x) + "1"))
	case []any:
		if len(x) == 0 {
			return nil, false
		}
		set(x[:len(x)-1])
	default:
		return nil, false
	}
	return root, true
}

// TestSignFormsDeduplicated: a card without empty values has one spec and
// pruned payload, so it gets two signatures, not three.
func TestSignFormsDeduplicated(t *testing.T) {
	ks := keySet(t, testKey(t, cardgen.EdDSA, "k"))
	d := signedDocument(t, minimalConfig(), signer(t, cardgen.SignerConfig{Keys: ks}))
	r := verify(t, d.JSON(), ks)
	if got, want := formsOf(r), []cardgen.Form{cardgen.FormSpec, cardgen.FormServed}; !slices.Equal(got, want) {
		t.Errorf("forms %q, want %q", got, want)
	}
	if got := independentVerify(t, d.JSON(), jwksOf(t, ks)); !slices.Equal(got, []string{"spec", "served"}) {
		t.Errorf("independent verification: %q", got)
	}
}

// TestSignChosenForms: the signer signs only the forms it is given, and a
// verifier that accepts only some forms ignores signatures over the others.
func TestSignChosenForms(t *testing.T) {
	ks := keySet(t, testKey(t, cardgen.ES256, "k"))
	d := signedDocument(t, fullConfig(), signer(t, cardgen.SignerConfig{Keys: ks, Forms: []cardgen.Form{cardgen.FormSpec}}))
	if n := len(d.Card().Signatures); n != 1 {
		t.Fatalf("%d signatures, want 1", n)
	}
	if r := verify(t, d.JSON(), ks, cardgen.FormSpec); !r.OK(false) {
		t.Errorf("spec form: %+v", r.Signatures)
	}
	if r := verify(t, d.JSON(), ks, cardgen.FormServed); r.OK(true) {
		t.Errorf("a spec-form signature verified as served: %+v", r.Signatures)
	}
}

// TestSignExtendedCard: the extended card is signed the same way, by the
// same signer, and verifies with the same key set.
func TestSignExtendedCard(t *testing.T) {
	ks := keySet(t, testKey(t, cardgen.ES384, "k"))
	s := signer(t, cardgen.SignerConfig{Keys: ks, JWKSURL: testJKU})
	public := fullConfig()
	public.Skills = public.Skills[:1]
	extended := fullConfig()
	extended.Description = "Everything, for authenticated callers."
	pub, ext := signedDocument(t, public, s), signedDocument(t, extended, s)
	if bytes.Equal(pub.JSON(), ext.JSON()) {
		t.Fatal("the two cards are the same")
	}
	for name, d := range map[string]*cardgen.Document{"public": pub, "extended": ext} {
		if r := verify(t, d.JSON(), ks); !r.OK(false) || r.Count(cardgen.Verified) != 3 {
			t.Errorf("%s card: %+v", name, r.Signatures)
		}
	}
}

// TestRotation walks a key rotation the way clients see it: a verifier
// holding the key set published before the rotation verifies every card
// served during and after it.
func TestRotation(t *testing.T) {
	oldKey, newKey := testKey(t, cardgen.ES256, "2025-old"), testKey(t, cardgen.EdDSA, "2026-new")
	both := keySet(t, oldKey, newKey)
	cached, err := cardgen.ParseJWKS(jwksOf(t, both)) // fetched once, before the switch
	if err != nil {
		t.Fatal(err)
	}
	publicOnly := newKey
	publicOnly.Private = nil
	steps := []struct {
		name   string
		keys   *cardgen.KeySet
		active string
	}{
		{"new key announced", both, "2025-old"},
		{"new key active", both, "2026-new"},
		{"old key retired", keySet(t, newKey), ""},
	}
	for _, st := range steps {
		d := signedDocument(t, fullConfig(), signer(t, cardgen.SignerConfig{Keys: st.keys, Active: st.active}))
		r := verify(t, d.JSON(), cached)
		if !r.OK(false) {
			t.Errorf("%s: the cached key set does not verify the card: %+v", st.name, r.Signatures)
		}
		if want := st.active; want != "" && r.Signatures[0].KeyID != want {
			t.Errorf("%s: signed by %q, want %q", st.name, r.Signatures[0].KeyID, want)
		}
	}
	// A key set whose new key is published without its private part can
	// only be verified with, not signed with.
	if _, err := cardgen.NewSigner(cardgen.SignerConfig{Keys: keySet(t, oldKey, publicOnly), Active: "2026-new"}); err == nil || !strings.Contains(err.Error(), "no private key") {
		t.Errorf("signing with a public-only key: %v", err)
	}
}

func TestNewSignerErrors(t *testing.T) {
	a, b := testKey(t, cardgen.ES256, "a"), testKey(t, cardgen.ES256, "b")
	pubOnly := b
	pubOnly.Private = nil
	p521, err := cardgen.NewKeySet(cardgen.Key{ID: "p521", Private: mustEC(t, "P-521")})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  cardgen.SignerConfig
		want string
	}{
		{"no keys", cardgen.SignerConfig{}, "at least one key"},
		{"unknown active", cardgen.SignerConfig{Keys: keySet(t, a), Active: "c"}, `the active key "c" is not configured (keys: "a")`},
		{"public active", cardgen.SignerConfig{Keys: keySet(t, a, pubOnly), Active: "b"}, `the active key "b" has no private key`},
		{"no private key", cardgen.SignerConfig{Keys: keySet(t, pubOnly)}, "no configured key has a private key"},
		{"two signers, no active", cardgen.SignerConfig{Keys: keySet(t, a, b)}, `"a", "b" can all sign: name the one that does (active)`},
		{"ES512", cardgen.SignerConfig{Keys: p521}, "ES512 is not an algorithm this signer signs with"},
		{"no forms", cardgen.SignerConfig{Keys: keySet(t, a), Forms: []cardgen.Form{}}, "no payload form"},
		{"unknown form", cardgen.SignerConfig{Keys: keySet(t, a), Forms: []cardgen.Form{"raw"}}, `unknown form "raw"`},
		{"repeated form", cardgen.SignerConfig{Keys: keySet(t, a), Forms: []cardgen.Form{"spec", "spec"}}, `form "spec" is listed twice`},
		{"relative jku", cardgen.SignerConfig{Keys: keySet(t, a), JWKSURL: "/.well-known/jwks.json"}, "is not an absolute http or https URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cardgen.NewSigner(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
