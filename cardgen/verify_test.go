package cardgen_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// agentServer serves a signed card and its key set as a deployed agent
// does, the jku pointing at its own JWKS.
func agentServer(t *testing.T, cfg cardgen.Config, keys *cardgen.KeySet) *httptest.Server {
	t.Helper()
	var doc *cardgen.Document
	jwks, err := cardgen.NewJWKS(keys, 0)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) { doc.ServeHTTP(w, r) })
	mux.Handle(cardgen.DefaultJWKSPath, jwks)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	doc = signedDocument(t, cfg, signer(t, cardgen.SignerConfig{Keys: keys, JWKSURL: srv.URL + cardgen.DefaultJWKSPath}))
	return srv
}

func runVerify(t *testing.T, cfg cardgen.VerifyCommandConfig) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := cardgen.RunVerify(context.Background(), &out, cfg)
	return out.String(), err
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func fetchBody(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestRunVerify(t *testing.T) {
	ks := keySet(t, testKey(t, cardgen.ES256, "k"))
	cfg := fullConfig()
	cfg.Name = "Café <Agent> ✓"
	srv := agentServer(t, cfg, ks)
	card := fetchBody(t, srv.URL+"/.well-known/agent-card.json")
	jwksFile := writeFile(t, "jwks.json", jwksOf(t, ks))

	t.Run("from the URL, keys from jku", func(t *testing.T) {
		out, err := runVerify(t, cardgen.VerifyCommandConfig{Card: srv.URL})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, want := range []string{
			"card: " + srv.URL + "/.well-known/agent-card.json (\"Café <Agent> ✓\")",
			"keys: from each signature's jku",
			`signature 1/3: verified   kid "k", alg ES256, form spec`,
			`signature 2/3: verified   kid "k", alg ES256, form pruned`,
			`signature 3/3: verified   kid "k", alg ES256, form served`,
			"result: verified (3 of 3 signatures verified, 0 invalid)",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("from a file, trusted key set from a file", func(t *testing.T) {
		out, err := runVerify(t, cardgen.VerifyCommandConfig{Card: writeFile(t, "card.json", card), JWKS: jwksFile, Forms: []cardgen.Form{cardgen.FormSpec}})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if want := `(trusted; "k")`; !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
		if want := "result: verified (1 of 3 signatures verified, 0 invalid)"; !strings.Contains(out, want) || !strings.Contains(out, "covers the served form") {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	})

	var m map[string]any
	if err := json.Unmarshal(card, &m); err != nil {
		t.Fatal(err)
	}
	m["url"] = "https://attacker.example.com/"
	legacyTampered, _ := json.Marshal(m)
	m["description"] = "changed"
	tampered, _ := json.Marshal(m)
	gone := signedDocument(t, cfg, signer(t, cardgen.SignerConfig{Keys: ks, JWKSURL: srv.URL + "/gone.json"})).JSON()
	otherKeys := writeFile(t, "other.json", jwksOf(t, keySet(t, testKey(t, cardgen.ES256, "other"))))

	tests := []struct {
		name    string
		cfg     cardgen.VerifyCommandConfig
		wantErr string
		wantOut string
	}{
		{"tampered", cardgen.VerifyCommandConfig{Card: writeFile(t, "c.json", tampered), JWKS: jwksFile},
			"no signature verified", "signature 1/3: INVALID"},
		{"0.3 member tampered", cardgen.VerifyCommandConfig{Card: writeFile(t, "c.json", legacyTampered), JWKS: jwksFile},
			"a signature made with a known key does not match it", "signature 3/3: INVALID"},
		{"0.3 member tampered, any", cardgen.VerifyCommandConfig{Card: writeFile(t, "c.json", legacyTampered), JWKS: jwksFile, Any: true},
			"", "result: verified (2 of 3 signatures verified, 1 invalid)"},
		{"key not in the trusted set", cardgen.VerifyCommandConfig{Card: srv.URL, JWKS: otherKeys},
			"no signature verified", `kid "k" is not in the key set (it has "other")`},
		{"jku unreachable", cardgen.VerifyCommandConfig{Card: writeFile(t, "c.json", gone)},
			"no signature verified", "404 Not Found"},
		{"no card", cardgen.VerifyCommandConfig{Card: srv.URL + "/missing.json"}, "reading the card: GET " + srv.URL + "/missing.json: 404", ""},
		{"no file", cardgen.VerifyCommandConfig{Card: filepath.Join(t.TempDir(), "none.json")}, "reading the card: open", ""},
		{"other scheme", cardgen.VerifyCommandConfig{Card: "ftp://example.com/card.json"}, "only http and https URLs, or files", ""},
		{"bad key set", cardgen.VerifyCommandConfig{Card: srv.URL, JWKS: writeFile(t, "bad.json", []byte(`{}`))}, `no "keys" array`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runVerify(t, tt.cfg)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error %v, want %q\n%s", err, tt.wantErr, out)
			}
			if !strings.Contains(out, tt.wantOut) {
				t.Errorf("output lacks %q:\n%s", tt.wantOut, out)
			}
		})
	}
}
