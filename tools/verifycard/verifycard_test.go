package verifycard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/tools/verifycard"
)

// testConfig is an agent whose card has an empty value (a requirement
// without scopes), so that the pruned form differs from the spec form and
// the signer signs all three.
func testConfig() cardgen.Config {
	return cardgen.Config{
		Name: "Weather agent", Description: "Answers questions about the weather.", Version: "1.2.0",
		URL: "https://agent.example.com/a2a",
		Skills: []a2a.AgentSkill{{ID: "weather", Name: "Weather", Description: "Current weather in a city.",
			SecurityRequirements: []a2a.SecurityRequirement{{"key": nil}}}},
		SecuritySchemes: map[string]a2a.SecurityScheme{"key": {Type: a2a.SchemeAPIKey, Location: "header", Name: "X-Api-Key"}},
	}
}

func testKey(t *testing.T, id string) cardgen.Key {
	t.Helper()
	k, _, err := cardgen.GenerateKey(cardgen.ES256)
	if err != nil {
		t.Fatal(err)
	}
	k.ID = id
	return k
}

func keySet(t *testing.T, keys ...cardgen.Key) *cardgen.KeySet {
	t.Helper()
	ks, err := cardgen.NewKeySet(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func jwksOf(t *testing.T, ks *cardgen.KeySet) []byte {
	t.Helper()
	b, err := ks.JWKS()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// signedDocument is the card of cfg signed with keys, naming jku as the
// key set's URL.
func signedDocument(t *testing.T, cfg cardgen.Config, keys *cardgen.KeySet, jku string) *cardgen.Document {
	t.Helper()
	s, err := cardgen.NewSigner(cardgen.SignerConfig{Keys: keys, JWKSURL: jku})
	if err != nil {
		t.Fatal(err)
	}
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
	doc = signedDocument(t, cfg, keys, srv.URL+cardgen.DefaultJWKSPath)
	return srv
}

func runVerify(t *testing.T, cfg verifycard.Config) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := verifycard.Run(context.Background(), &out, cfg)
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

func TestRun(t *testing.T) {
	ks := keySet(t, testKey(t, "k"))
	cfg := testConfig()
	cfg.Name = "Café <Agent> ✓"
	srv := agentServer(t, cfg, ks)
	card := fetchBody(t, srv.URL+"/.well-known/agent-card.json")
	jwksFile := writeFile(t, "jwks.json", jwksOf(t, ks))

	t.Run("from the URL, keys from jku", func(t *testing.T) {
		out, err := runVerify(t, verifycard.Config{Card: srv.URL})
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
		out, err := runVerify(t, verifycard.Config{Card: writeFile(t, "card.json", card), JWKS: jwksFile, Forms: []cardgen.Form{cardgen.FormSpec}})
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
	gone := signedDocument(t, cfg, ks, srv.URL+"/gone.json").JSON()
	otherKeys := writeFile(t, "other.json", jwksOf(t, keySet(t, testKey(t, "other"))))

	tests := []struct {
		name    string
		cfg     verifycard.Config
		wantErr string
		wantOut string
	}{
		{"tampered", verifycard.Config{Card: writeFile(t, "c.json", tampered), JWKS: jwksFile},
			"no signature verified", "signature 1/3: INVALID"},
		{"0.3 member tampered", verifycard.Config{Card: writeFile(t, "c.json", legacyTampered), JWKS: jwksFile},
			"a signature made with a known key does not match it", "signature 3/3: INVALID"},
		{"0.3 member tampered, any", verifycard.Config{Card: writeFile(t, "c.json", legacyTampered), JWKS: jwksFile, Any: true},
			"", "result: verified (2 of 3 signatures verified, 1 invalid)"},
		{"key not in the trusted set", verifycard.Config{Card: srv.URL, JWKS: otherKeys},
			"no signature verified", `kid "k" is not in the key set (it has "other")`},
		{"jku unreachable", verifycard.Config{Card: writeFile(t, "c.json", gone)},
			"no signature verified", "404 Not Found"},
		{"no card", verifycard.Config{Card: srv.URL + "/missing.json"}, "reading the card: GET " + srv.URL + "/missing.json: 404", ""},
		{"no file", verifycard.Config{Card: filepath.Join(t.TempDir(), "none.json")}, "reading the card: open", ""},
		{"other scheme", verifycard.Config{Card: "ftp://example.com/card.json"}, "only http and https URLs, or files", ""},
		{"bad key set", verifycard.Config{Card: srv.URL, JWKS: writeFile(t, "bad.json", []byte(`{}`))}, `no "keys" array`, ""},
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
