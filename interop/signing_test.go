package interop_test

// The signed Agent Card (spec 1.0 §8.4) as a client that trusts nothing but
// the specification sees it: a real Caddy signs the card with each supported
// algorithm, and the card is verified here by a verifier written from the
// spec text alone (RFC 8785 JCS with gowebpki/jcs, the JWS signing input
// BASE64URL(protected) || '.' || BASE64URL(payload), golang-jwt/jwt/v5's
// algorithms, keys from the JWK Set at the protected header's jku), by
// @a2a-js/sdk's verifyAgentCardSignature (js/signing.test.js), and by the
// `caddy a2a-verify-card` command. Key rotation runs across `caddy reload`s
// under a client that keeps the key set it fetched before the switch.
//
// Nothing here imports the product: its behaviour is observed over HTTP and
// through the caddy binary the suite builds.

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/gowebpki/jcs"
)

// signedAgentName has an accented letter, characters JSON encoders like to
// escape (< and >) and a character outside Latin-1: RFC 8785 writes all of
// them as themselves.
const signedAgentName = "Café <Agent> ✓"

// signedAgentDescription adds characters RFC 8785 escapes (the quotes).
const signedAgentDescription = `Signed card: ü, ß, 日本語, <tags> & "quotes"`

// ---------------------------------------------------------------------------
// Keys.

// testKey is a key written as PEM files for Caddy's signing block.
type testKey struct {
	Kid, Alg string
	// Private is the PKCS #8 private key file, Public the PKIX public key.
	Private, Public string
	// Line is the Caddyfile `key` line that configures it; alg is given only
	// where the key type's default is not the one wanted.
	Line string
}

// newTestKey generates a key for alg and writes it into dir.
func newTestKey(t *testing.T, dir, kid, alg string) testKey {
	t.Helper()
	var priv crypto.Signer
	var err error
	switch alg {
	case "ES256":
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ES384":
		priv, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "RS256", "PS256":
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case "EdDSA":
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	default:
		t.Fatalf("no key type for algorithm %q", alg)
	}
	if err != nil {
		t.Fatalf("generating the %s key: %v", alg, err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatalf("marshaling the %s key: %v", alg, err)
	}
	pub, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		t.Fatalf("marshaling the %s public key: %v", alg, err)
	}
	k := testKey{
		Kid:     kid,
		Alg:     alg,
		Private: filepath.Join(dir, kid+".pem"),
		Public:  filepath.Join(dir, kid+".pub.pem"),
	}
	writePEM(t, k.Private, "PRIVATE KEY", der)
	writePEM(t, k.Public, "PUBLIC KEY", pub)
	k.Line = fmt.Sprintf("key %q %s", k.Private, kid)
	if alg == "PS256" { // an RSA key signs RS256 unless told otherwise
		k.Line += " PS256"
	}
	return k
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// ---------------------------------------------------------------------------
// A Caddy of our own, with a signing block.

// signedCaddy is a Caddy started from the binary the suite built, serving an
// a2a handler whose signing block the test chooses and changes with
// `caddy reload`.
type signedCaddy struct {
	bin, dir, cfgPath string
	env               []string
	admin             string
	// Base is the site root; CardURL and JWKSURL the two documents.
	Base, CardURL, JWKSURL string
	proc                   *process
	// more goes into the a2a block after signing, in every config.
	more string
}

// caddyBinary is the caddy the suite built; tests that need their own
// Caddy skip when the suite runs against an agent someone else started.
func caddyBinary(t *testing.T) string {
	t.Helper()
	if agent.Dir == "" {
		t.Skip("INTEROP_AGENT_URL is set: no caddy binary was built to start a signing agent")
	}
	return filepath.Join(agent.Dir, "caddy")
}

// startSignedCaddy starts Caddy with signing as the body of the a2a
// handler's signing block and waits until it serves the card. It is
// stopped when the test ends; its log is printed if the test failed.
func startSignedCaddy(t *testing.T, signing string) *signedCaddy {
	t.Helper()
	return startSignedCaddyWith(t, signing, "")
}

// startSignedCaddyWith is startSignedCaddy with more in the a2a block.
func startSignedCaddyWith(t *testing.T, signing, more string) *signedCaddy {
	t.Helper()
	bin := caddyBinary(t)
	dir := t.TempDir()
	sitePort, adminPort := caddyPorts(t)
	c := &signedCaddy{
		bin:     bin,
		dir:     dir,
		cfgPath: filepath.Join(dir, "Caddyfile"),
		env: append(os.Environ(),
			"DEMO_API_KEY="+demoAPIKey,
			"HOME="+dir,
			"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
			"XDG_DATA_HOME="+filepath.Join(dir, "data"),
		),
		admin: "127.0.0.1:" + strconv.Itoa(adminPort),
		Base:  "http://127.0.0.1:" + strconv.Itoa(sitePort),
		more:  more,
	}
	c.CardURL = c.Base + "/.well-known/agent-card.json"
	c.JWKSURL = c.Base + "/.well-known/jwks.json"
	c.writeConfig(t, signing)
	proc, err := startProcess(dir, "caddy", c.env, bin, "run", "--config", c.cfgPath, "--adapter", "caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	c.proc = proc
	t.Cleanup(func() {
		proc.stop()
		if t.Failed() {
			t.Logf("signing Caddy's log (%s):\n%s", c.cfgPath, proc.tail())
		}
	})
	if err := waitReady(proc, c.CardURL, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *signedCaddy) writeConfig(t *testing.T, signing string) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{
	admin %s
	auto_https off
	persist_config off
}

%s {
	bind 127.0.0.1
	a2a {
		skills %q
		upstream %s
		url %s/
		name %q
		description %q
		signing {
			%s
		}
		%s
	}
}
`, c.admin, c.Base, filepath.Join(root, "examples", "skills.yaml"), agent.DemoURL, c.Base, signedAgentName, signedAgentDescription,
		strings.ReplaceAll(strings.TrimSpace(signing), "\n", "\n\t\t\t"), c.more)
	if err := os.WriteFile(c.cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

// reload rewrites the Caddyfile with a new signing block and runs `caddy
// reload`, which returns once the new config serves.
func (c *signedCaddy) reload(t *testing.T, signing string) {
	t.Helper()
	c.writeConfig(t, signing)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, "reload", "--config", c.cfgPath, "--adapter", "caddyfile", "--address", c.admin)
	cmd.Dir = c.dir
	cmd.Env = c.env
	if out, err := cmd.CombinedOutput(); err != nil {
		cfg, _ := os.ReadFile(c.cfgPath)
		t.Fatalf("caddy reload: %v\n%s\nCaddyfile:\n%s", err, out, cfg)
	}
}

// verifyCommand runs `caddy a2a-verify-card args...` and returns its exit
// status and combined output.
func (c *signedCaddy) verifyCommand(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, append([]string{"a2a-verify-card"}, args...)...)
	cmd.Dir = c.dir
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &exit):
		return exit.ExitCode(), string(out)
	default:
		t.Fatalf("running caddy a2a-verify-card %s: %v\n%s", strings.Join(args, " "), err, out)
		return 0, ""
	}
}

// get fetches url and fails the test unless it answers 200.
func get(t *testing.T, client *http.Client, url string) ([]byte, http.Header) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, body)
	}
	return body, resp.Header
}

// ---------------------------------------------------------------------------
// An independent verifier, from spec 1.0 §8.4 and the proto it points to.

// The AgentCard of a2a-1.0.proto in its ProtoJSON form, with the field
// presence of spec §5.7 that §8.4.1 asks for: REQUIRED fields always
// present, `optional` fields present when set (pointers), other fields
// omitted at their default value (omitempty). Members the 1.0 card does not
// define (the 0.3 ones the served union card carries) are dropped by
// decoding into these types.
type specAgentCard struct {
	Name                string               `json:"name"`
	Description         string               `json:"description"`
	SupportedInterfaces []specAgentInterface `json:"supportedInterfaces"`
	Provider            *specAgentProvider   `json:"provider,omitempty"`
	Version             string               `json:"version"`
	DocumentationURL    *string              `json:"documentationUrl,omitempty"`
	Capabilities        specCapabilities     `json:"capabilities"`
	DefaultInputModes   []string             `json:"defaultInputModes"`
	DefaultOutputModes  []string             `json:"defaultOutputModes"`
	Skills              []specAgentSkill     `json:"skills"`
	IconURL             *string              `json:"iconUrl,omitempty"`
}

type specAgentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	Tenant          string `json:"tenant,omitempty"`
	ProtocolVersion string `json:"protocolVersion"`
}

type specAgentProvider struct {
	URL          string `json:"url"`
	Organization string `json:"organization"`
}

type specCapabilities struct {
	Streaming         *bool                `json:"streaming,omitempty"`
	PushNotifications *bool                `json:"pushNotifications,omitempty"`
	Extensions        []specAgentExtension `json:"extensions,omitempty"`
	ExtendedAgentCard *bool                `json:"extendedAgentCard,omitempty"`
}

type specAgentExtension struct {
	URI         string         `json:"uri,omitempty"`
	Description string         `json:"description,omitempty"`
	Required    bool           `json:"required,omitempty"`
	Params      map[string]any `json:"params,omitempty"`
}

type specAgentSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
	InputModes  []string `json:"inputModes,omitempty"`
	OutputModes []string `json:"outputModes,omitempty"`
}

// unmodeled are 1.0 card members this verifier does not model; the cards
// these tests configure have none, and a card with them is reported rather
// than verified against a payload that would leave them out.
type unmodeled struct {
	SecuritySchemes      json.RawMessage `json:"securitySchemes"`
	SecurityRequirements json.RawMessage `json:"securityRequirements"`
	Skills               []struct {
		SecurityRequirements json.RawMessage `json:"securityRequirements"`
	} `json:"skills"`
}

// cardSignature is spec §4.4.7's AgentCardSignature.
type cardSignature struct {
	Protected string         `json:"protected"`
	Signature string         `json:"signature"`
	Header    map[string]any `json:"header,omitempty"`
}

// joseHeader is the protected header of §8.4.2.
type joseHeader struct {
	Alg string `json:"alg"`
	Typ string `json:"typ"`
	Kid string `json:"kid"`
	Jku string `json:"jku"`
}

// jsonWebKey is an RFC 7517 JWK, with the private members it must not carry
// in a published set.
type jsonWebKey struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Alg string `json:"alg,omitempty"`
	Use string `json:"use,omitempty"`
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`

	D  string `json:"d,omitempty"`
	P  string `json:"p,omitempty"`
	Q  string `json:"q,omitempty"`
	DP string `json:"dp,omitempty"`
	DQ string `json:"dq,omitempty"`
	QI string `json:"qi,omitempty"`
}

type jsonWebKeySet struct {
	Keys []jsonWebKey `json:"keys"`
}

func (s jsonWebKeySet) find(kid string) (jsonWebKey, bool) {
	for _, k := range s.Keys {
		if k.Kid == kid {
			return k, true
		}
	}
	return jsonWebKey{}, false
}

func parseJWKS(b []byte) (jsonWebKeySet, error) {
	var s jsonWebKeySet
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("JWK Set: %w: %s", err, b)
	}
	return s, nil
}

// publicKey is the crypto key golang-jwt verifies alg with.
func (k jsonWebKey) publicKey() (crypto.PublicKey, error) {
	b64 := func(name, v string) ([]byte, error) {
		b, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil || len(b) == 0 {
			return nil, fmt.Errorf("JWK %q: member %s is not base64url (%q)", k.Kid, name, v)
		}
		return b, nil
	}
	switch k.Kty {
	case "EC":
		curve := map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384()}[k.Crv]
		if curve == nil {
			return nil, fmt.Errorf("JWK %q: unsupported EC curve %q", k.Kid, k.Crv)
		}
		x, err := b64("x", k.X)
		if err != nil {
			return nil, err
		}
		y, err := b64("y", k.Y)
		if err != nil {
			return nil, err
		}
		size := (curve.Params().BitSize + 7) / 8
		if len(x) != size || len(y) != size { // RFC 7518 §6.2.1.2: full-length coordinates
			return nil, fmt.Errorf("JWK %q: coordinates of %d and %d bytes, want %d", k.Kid, len(x), len(y), size)
		}
		return ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, x...), y...))
	case "RSA":
		n, err := b64("n", k.N)
		if err != nil {
			return nil, err
		}
		e, err := b64("e", k.E)
		if err != nil {
			return nil, err
		}
		exp := new(big.Int).SetBytes(e)
		if !exp.IsInt64() || exp.Int64() > 1<<31-1 {
			return nil, fmt.Errorf("JWK %q: RSA exponent too large", k.Kid)
		}
		return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(exp.Int64())}, nil
	case "OKP":
		if k.Crv != "Ed25519" {
			return nil, fmt.Errorf("JWK %q: unsupported OKP curve %q", k.Kid, k.Crv)
		}
		x, err := b64("x", k.X)
		if err != nil {
			return nil, err
		}
		if len(x) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("JWK %q: Ed25519 key of %d bytes", k.Kid, len(x))
		}
		return ed25519.PublicKey(x), nil
	}
	return nil, fmt.Errorf("JWK %q: unsupported kty %q", k.Kid, k.Kty)
}

// jwsMethod is the golang-jwt method for a JWS alg. PS256 is checked with
// the salt length RFC 7518 §3.5 requires (the hash's size), not the "any
// salt" golang-jwt accepts by default.
func jwsMethod(alg string) (jwt.SigningMethod, error) {
	switch alg {
	case "ES256", "ES384", "RS256", "EdDSA":
		return jwt.GetSigningMethod(alg), nil
	case "PS256":
		return &jwt.SigningMethodRSAPSS{
			SigningMethodRSA: jwt.SigningMethodPS256.SigningMethodRSA,
			Options:          &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash},
		}, nil
	}
	return nil, fmt.Errorf("unsupported alg %q", alg)
}

// keyLookup finds the public key for a signature's kid and jku.
type keyLookup func(kid, jku string) (jsonWebKey, error)

// keysFromJKU fetches the key set named by each signature's jku.
func keysFromJKU(client *http.Client) keyLookup {
	sets := map[string]jsonWebKeySet{}
	return func(kid, jku string) (jsonWebKey, error) {
		if jku == "" {
			return jsonWebKey{}, errors.New("the protected header has no jku")
		}
		set, ok := sets[jku]
		if !ok {
			resp, err := client.Get(jku)
			if err != nil {
				return jsonWebKey{}, fmt.Errorf("fetching the jku: %w", err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				return jsonWebKey{}, fmt.Errorf("GET %s: %s %v: %s", jku, resp.Status, err, body)
			}
			if set, err = parseJWKS(body); err != nil {
				return jsonWebKey{}, err
			}
			sets[jku] = set
		}
		k, ok := set.find(kid)
		if !ok {
			return jsonWebKey{}, fmt.Errorf("no key %q in the JWK Set at %s", kid, jku)
		}
		return k, nil
	}
}

// keysHeld is a key set fetched earlier and kept, as a client caches it.
func keysHeld(set jsonWebKeySet) keyLookup {
	return func(kid, _ string) (jsonWebKey, error) {
		k, ok := set.find(kid)
		if !ok {
			return jsonWebKey{}, fmt.Errorf("no key %q in the held JWK Set", kid)
		}
		return k, nil
	}
}

// The payloads a signature may cover. formSpec is §8.4.1 applied to the 1.0
// card; formServed is the card as received without signatures (the literal
// reading of §8.4.3 steps 3-5 for a card that carries no default values),
// which also covers the 0.3 members of the union card.
const (
	formSpec   = "spec"
	formServed = "served"
)

// payloads canonicalizes the received card both ways.
func payloads(raw []byte) (map[string][]byte, error) {
	var probe unmodeled
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("card: %w", err)
	}
	if probe.SecuritySchemes != nil || probe.SecurityRequirements != nil {
		return nil, errors.New("card has security schemes, which this verifier does not model")
	}
	for _, s := range probe.Skills {
		if s.SecurityRequirements != nil {
			return nil, errors.New("card has skill security requirements, which this verifier does not model")
		}
	}

	var card specAgentCard
	if err := json.Unmarshal(raw, &card); err != nil {
		return nil, fmt.Errorf("card as a 1.0 AgentCard: %w", err)
	}
	// REQUIRED repeated fields are present even when empty.
	for _, l := range []*[]string{&card.DefaultInputModes, &card.DefaultOutputModes} {
		if *l == nil {
			*l = []string{}
		}
	}
	if card.SupportedInterfaces == nil {
		card.SupportedInterfaces = []specAgentInterface{}
	}
	if card.Skills == nil {
		card.Skills = []specAgentSkill{}
	}
	for i := range card.Skills {
		if card.Skills[i].Tags == nil {
			card.Skills[i].Tags = []string{}
		}
	}
	spec, err := canonical(card)
	if err != nil {
		return nil, err
	}

	var served map[string]json.RawMessage
	if err := json.Unmarshal(raw, &served); err != nil {
		return nil, fmt.Errorf("card: %w", err)
	}
	delete(served, "signatures")
	servedBytes, err := canonical(served)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{formSpec: spec, formServed: servedBytes}, nil
}

// canonical is v as RFC 8785 JSON.
func canonical(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	out, err := jcs.Transform(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("JCS: %w", err)
	}
	return out, nil
}

// sigResult is what became of one of the card's signatures.
type sigResult struct {
	Index  int
	Header joseHeader
	Form   string // the payload it verified with; "" if none
	Err    error  // why it did not verify
}

func (r sigResult) String() string {
	if r.Form != "" {
		return fmt.Sprintf("signature %d (kid %q, %s): verified, form %s", r.Index+1, r.Header.Kid, r.Header.Alg, r.Form)
	}
	return fmt.Sprintf("signature %d (kid %q, %s): %v", r.Index+1, r.Header.Kid, r.Header.Alg, r.Err)
}

type cardVerification struct {
	Results []sigResult
	// Payloads are the canonical payloads tried, by form.
	Payloads map[string][]byte
}

// verified is the results that verified.
func (v cardVerification) verified() []sigResult {
	var ok []sigResult
	for _, r := range v.Results {
		if r.Form != "" {
			ok = append(ok, r)
		}
	}
	return ok
}

func (v cardVerification) String() string {
	lines := make([]string, len(v.Results))
	for i, r := range v.Results {
		lines[i] = r.String()
	}
	return strings.Join(lines, "\n")
}

// verifyCard checks every signature of the card in raw against every
// payload form, per spec §8.4.3.
func verifyCard(raw []byte, keys keyLookup) (cardVerification, error) {
	var card struct {
		Signatures []cardSignature `json:"signatures"`
	}
	if err := json.Unmarshal(raw, &card); err != nil {
		return cardVerification{}, fmt.Errorf("card: %w", err)
	}
	if len(card.Signatures) == 0 {
		return cardVerification{}, errors.New("the card has no signatures")
	}
	forms, err := payloads(raw)
	if err != nil {
		return cardVerification{}, err
	}
	v := cardVerification{Payloads: forms}
	for i, sig := range card.Signatures {
		r := sigResult{Index: i}
		r.Header, r.Form, r.Err = verifySignature(sig, forms, keys)
		v.Results = append(v.Results, r)
	}
	return v, nil
}

func verifySignature(sig cardSignature, forms map[string][]byte, keys keyLookup) (joseHeader, string, error) {
	var h joseHeader
	hb, err := base64.RawURLEncoding.DecodeString(sig.Protected)
	if err != nil {
		return h, "", fmt.Errorf("protected is not base64url: %w", err)
	}
	if err := json.Unmarshal(hb, &h); err != nil {
		return h, "", fmt.Errorf("protected header: %w: %s", err, hb)
	}
	if h.Alg == "" || h.Kid == "" { // §8.4.2: MUST include alg and kid
		return h, "", fmt.Errorf("protected header lacks alg or kid: %s", hb)
	}
	method, err := jwsMethod(h.Alg)
	if err != nil {
		return h, "", err
	}
	jwk, err := keys(h.Kid, h.Jku)
	if err != nil {
		return h, "", err
	}
	if jwk.Alg != "" && jwk.Alg != h.Alg {
		return h, "", fmt.Errorf("key %q is for %s, the signature says %s", h.Kid, jwk.Alg, h.Alg)
	}
	pub, err := jwk.publicKey()
	if err != nil {
		return h, "", err
	}
	sb, err := base64.RawURLEncoding.DecodeString(sig.Signature)
	if err != nil {
		return h, "", fmt.Errorf("signature is not base64url: %w", err)
	}
	var errs []error
	for _, form := range []string{formSpec, formServed} {
		input := sig.Protected + "." + base64.RawURLEncoding.EncodeToString(forms[form])
		err := method.Verify(input, sb, pub)
		if err == nil {
			return h, form, nil
		}
		errs = append(errs, fmt.Errorf("%s form: %w", form, err))
	}
	return h, "", errors.Join(errs...)
}

// mustVerify verifies the card and fails unless both forms verified, each
// with a signature by wantKid.
func mustVerify(t *testing.T, what string, raw []byte, keys keyLookup, wantKid string) cardVerification {
	t.Helper()
	v, err := verifyCard(raw, keys)
	if err != nil {
		t.Fatalf("%s: %v\ncard: %s", what, err, raw)
	}
	got := map[string]bool{}
	for _, r := range v.verified() {
		if r.Header.Kid != wantKid {
			t.Errorf("%s: %s; want kid %q", what, r, wantKid)
		}
		got[r.Form] = true
	}
	if !got[formSpec] || !got[formServed] {
		t.Fatalf("%s: want a signature over the spec §8.4.1 payload and one over the served card; got\n%s\nspec payload:   %s\nserved payload: %s",
			what, v, v.Payloads[formSpec], v.Payloads[formServed])
	}
	return v
}

// mustNotVerify fails if any signature of the card verifies.
func mustNotVerify(t *testing.T, what string, raw []byte, keys keyLookup) cardVerification {
	t.Helper()
	v, err := verifyCard(raw, keys)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if ok := v.verified(); len(ok) > 0 {
		t.Fatalf("%s: want no signature to verify; got\n%s", what, v)
	}
	return v
}

// tamper decodes the card, applies change and encodes it again.
func tamper(t *testing.T, raw []byte, change func(card map[string]any)) []byte {
	t.Helper()
	var card map[string]any
	if err := json.Unmarshal(raw, &card); err != nil {
		t.Fatal(err)
	}
	change(card)
	out, err := json.Marshal(card)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func skillAt(card map[string]any, i int) map[string]any {
	return card["skills"].([]any)[i].(map[string]any)
}

// cardTampering changes 1.0 fields of a served card; each must break every
// signature.
var cardTampering = []struct {
	name   string
	change func(card map[string]any)
}{
	{"name", func(c map[string]any) { c["name"] = "Cafe <Agent> ✓" }},
	{"description", func(c map[string]any) { c["description"] = c["description"].(string) + "." }},
	{"version", func(c map[string]any) { c["version"] = "9.9.9" }},
	{"supportedInterfaces[0].url", func(c map[string]any) {
		c["supportedInterfaces"].([]any)[0].(map[string]any)["url"] = "https://attacker.example/"
	}},
	{"capabilities.streaming", func(c map[string]any) { c["capabilities"].(map[string]any)["streaming"] = false }},
	{"capabilities.pushNotifications removed", func(c map[string]any) { delete(c["capabilities"].(map[string]any), "pushNotifications") }},
	{"defaultInputModes", func(c map[string]any) { c["defaultInputModes"] = append(c["defaultInputModes"].([]any), "text/html") }},
	{"skills[0].name", func(c map[string]any) { skillAt(c, 0)["name"] = "Weather (tampered)" }},
	{"skills[1].tags", func(c map[string]any) { skillAt(c, 1)["tags"] = []any{"admin"} }},
	{"skills order", func(c map[string]any) {
		s := c["skills"].([]any)
		s[0], s[1] = s[1], s[0]
	}},
	{"a skill removed", func(c map[string]any) { c["skills"] = c["skills"].([]any)[1:] }},
	{"iconUrl added", func(c map[string]any) { c["iconUrl"] = "https://attacker.example/icon.png" }},
	{"protected headers", func(c map[string]any) {
		// The protected header is part of the signing input: a member added
		// to it (alg, kid and jku unchanged) must not verify.
		for _, s := range c["signatures"].([]any) {
			sig := s.(map[string]any)
			h, _ := base64.RawURLEncoding.DecodeString(sig["protected"].(string))
			h = append(bytes.TrimSuffix(h, []byte("}")), `,"tampered":true}`...)
			sig["protected"] = base64.RawURLEncoding.EncodeToString(h)
		}
	}},
}

// ---------------------------------------------------------------------------
// The tests.

// signingAlgorithms are the algorithms the product signs with.
var signingAlgorithms = []string{"ES256", "ES384", "RS256", "PS256", "EdDSA"}

// TestSignedCardAlgorithms: one Caddy with a key of every algorithm; each
// subtest makes one key active (a `caddy reload`) and checks the card it
// serves with the independent Go verifier, with tampered copies, and with
// @a2a-js/sdk.
func TestSignedCardAlgorithms(t *testing.T) {
	dir := t.TempDir()
	keys := make([]testKey, len(signingAlgorithms))
	lines := make([]string, len(keys))
	for i, alg := range signingAlgorithms {
		keys[i] = newTestKey(t, dir, "key-"+strings.ToLower(alg), alg)
		lines[i] = keys[i].Line
	}
	block := func(active string) string {
		return strings.Join(lines, "\n") + "\nactive " + active
	}
	c := startSignedCaddy(t, block(keys[0].Kid))

	t.Run("jwks", func(t *testing.T) {
		body, hdr := get(t, recordedHTTPClient(t), c.JWKSURL)
		if ct := hdr.Get("Content-Type"); ct != "application/jwk-set+json" {
			t.Errorf("JWK Set Content-Type %q, want application/jwk-set+json", ct)
		}
		if !strings.Contains(hdr.Get("Cache-Control"), "max-age=") {
			t.Errorf("JWK Set Cache-Control %q, want a max-age", hdr.Get("Cache-Control"))
		}
		set, err := parseJWKS(body)
		if err != nil {
			t.Fatal(err)
		}
		if len(set.Keys) != len(keys) {
			t.Errorf("JWK Set has %d keys, want %d (every configured key): %s", len(set.Keys), len(keys), body)
		}
		for _, k := range keys {
			jwk, ok := set.find(k.Kid)
			if !ok {
				t.Errorf("JWK Set lacks kid %q: %s", k.Kid, body)
				continue
			}
			if jwk.Alg != k.Alg || jwk.Use != "sig" {
				t.Errorf("JWK %q: alg %q use %q, want alg %q use sig", k.Kid, jwk.Alg, jwk.Use, k.Alg)
			}
			if jwk.D+jwk.P+jwk.Q+jwk.DP+jwk.DQ+jwk.QI != "" {
				t.Errorf("JWK %q publishes private key material: %s", k.Kid, body)
			}
			if _, err := jwk.publicKey(); err != nil {
				t.Error(err)
			}
		}
	})

	for _, k := range keys {
		t.Run(k.Alg, func(t *testing.T) {
			c.reload(t, block(k.Kid))
			client := recordedHTTPClient(t)
			raw, _ := get(t, client, c.CardURL)

			var card struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Signatures  []cardSignature `json:"signatures"`
			}
			if err := json.Unmarshal(raw, &card); err != nil {
				t.Fatalf("card: %v: %s", err, raw)
			}
			if card.Name != signedAgentName || card.Description != signedAgentDescription {
				t.Errorf("card name %q, description %q; want %q, %q", card.Name, card.Description, signedAgentName, signedAgentDescription)
			}
			for i, sig := range card.Signatures {
				hb, err := base64.RawURLEncoding.DecodeString(sig.Protected)
				if err != nil {
					t.Fatalf("signature %d: protected %q is not base64url without padding: %v", i+1, sig.Protected, err)
				}
				var h joseHeader
				if err := json.Unmarshal(hb, &h); err != nil {
					t.Fatalf("signature %d: protected header %s: %v", i+1, hb, err)
				}
				want := joseHeader{Alg: k.Alg, Typ: "JOSE", Kid: k.Kid, Jku: c.JWKSURL}
				if h != want {
					t.Errorf("signature %d: protected header %s, want %+v", i+1, hb, want)
				}
			}

			v := mustVerify(t, "the served card, keys from jku", raw, keysFromJKU(client), k.Kid)
			legacy, _ := get(t, client, c.Base+"/.well-known/agent.json")
			if !bytes.Equal(legacy, raw) {
				t.Errorf("the 0.3 card path serves other bytes than %s:\n%s", c.CardURL, legacy)
			}
			if !bytes.Contains(v.Payloads[formSpec], []byte(`"name":"`+signedAgentName+`"`)) {
				t.Errorf("the canonical payload does not hold the name as itself: %s", v.Payloads[formSpec])
			}

			t.Run("tampered", func(t *testing.T) {
				lookup := keysFromJKU(client)
				mustVerify(t, "the card decoded and encoded again, untouched", tamper(t, raw, func(map[string]any) {}), lookup, k.Kid)
				for _, tc := range cardTampering {
					mustNotVerify(t, "card with tampered "+tc.name, tamper(t, raw, tc.change), lookup)
				}
			})

			t.Run("js", func(t *testing.T) {
				runSigningJS(t, "A2A_CARD_BASE="+c.Base, "A2A_JWKS_URL="+c.JWKSURL,
					"A2A_SIGNING_KID="+k.Kid, "A2A_SIGNING_ALG="+k.Alg, "A2A_AGENT_NAME="+signedAgentName)
			})
		})
	}
}

// runSigningJS runs js/signing.test.js with env added; it skips when Node.js
// is not installed, as TestJavaScriptSDK does.
func runSigningJS(t *testing.T, env ...string) {
	t.Helper()
	t.Logf("node --test signing.test.js:\n%s", runNodeTests(t, "js", "@a2a-js/sdk", "signing.test.js", time.Minute, env...))
}

// TestSigningKeyRotation rotates from an ES256 key (A) to an Ed25519 key (B)
// the way the README says, a `caddy reload` per step:
//
//  0. A alone signs.
//  1. B is added and published; A still signs.
//  2. B becomes active.
//  3. A is kept as a public key only; B signs.
//  4. A is removed.
//
// A client that fetched the JWK Set after step 1, before the switch, keeps
// it: every card served from then on verifies with it, checked after each
// reload and by a poller that verifies the card continuously through all
// the reloads. The client that fetched the set at step 0 shows why step 1
// must come first: it cannot verify a card signed with B.
func TestSigningKeyRotation(t *testing.T) {
	dir := t.TempDir()
	a := newTestKey(t, dir, "agent-2026", "ES256")
	b := newTestKey(t, dir, "agent-2027", "EdDSA")
	c := startSignedCaddy(t, a.Line)
	client := recordedHTTPClient(t)

	fetchSet := func() jsonWebKeySet {
		t.Helper()
		body, _ := get(t, client, c.JWKSURL)
		set, err := parseJWKS(body)
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	served := map[string][]byte{} // ETag -> card
	fetchCard := func() []byte {
		t.Helper()
		raw, hdr := get(t, client, c.CardURL)
		checkRevalidation(t, client, c.CardURL, served, hdr.Get("ETag"), raw)
		return raw
	}

	// Step 0.
	set0 := fetchSet()
	card0 := fetchCard()
	mustVerify(t, "step 0: card signed by A, set from step 0", card0, keysHeld(set0), a.Kid)

	// Step 1: the new key is announced.
	c.reload(t, a.Line+"\n"+b.Line+"\nactive "+a.Kid)
	card1 := fetchCard()
	mustVerify(t, "step 1: card signed by A, set from step 0", card1, keysHeld(set0), a.Kid)
	set1 := fetchSet() // the client's copy, fetched before the switch
	if _, ok := set1.find(b.Kid); !ok {
		t.Fatalf("step 1: the JWK Set does not publish the new key %q: %+v", b.Kid, set1)
	}
	held := keysHeld(set1)

	p := startRotationPoller(t, c.CardURL, held)
	p.advance(t, 1)

	// Step 2: switch.
	c.reload(t, a.Line+"\n"+b.Line+"\nactive "+b.Kid)
	p.advance(t, 2)
	card2 := fetchCard()
	mustVerify(t, "step 2: card signed by B, set held since step 1", card2, held, b.Kid)
	for i, old := range [][]byte{card0, card1} {
		mustVerify(t, fmt.Sprintf("step 2: card %d (signed by A), set held since step 1", i), old, held, a.Kid)
	}
	v := mustNotVerify(t, "step 2: card signed by B, set from step 0 (before B was published)", card2, keysHeld(set0))
	for _, r := range v.Results {
		if r.Err == nil || !strings.Contains(r.Err.Error(), `no key "`+b.Kid+`"`) {
			t.Errorf("step 2 with the step-0 set: %s; want it to fail for lack of key %q", r, b.Kid)
		}
	}

	// Step 3: A is retired but its public key still published.
	c.reload(t, fmt.Sprintf("key %q %s\n%s", a.Public, a.Kid, b.Line))
	p.advance(t, 3)
	card3 := fetchCard()
	mustVerify(t, "step 3: card signed by B, set held since step 1", card3, held, b.Kid)
	set3 := fetchSet()
	if k, ok := set3.find(a.Kid); !ok || k.D != "" {
		t.Errorf("step 3: want the retired key %q published, public part only: %+v", a.Kid, set3)
	}
	mustVerify(t, "step 3: card from step 1 (signed by A), set from step 3", card1, keysHeld(set3), a.Kid)

	// Step 4: A is gone.
	c.reload(t, b.Line)
	p.advance(t, 4)
	card4 := fetchCard()
	mustVerify(t, "step 4: card signed by B, set held since step 1", card4, held, b.Kid)
	mustVerify(t, "step 4: card signed by B, keys from jku", card4, keysFromJKU(client), b.Kid)
	set4 := fetchSet()
	if _, ok := set4.find(a.Kid); ok || len(set4.Keys) != 1 {
		t.Errorf("step 4: want only %q published: %+v", b.Kid, set4)
	}
	mustNotVerify(t, "step 4: card from step 1 (signed by A), set from step 4 (A removed)", card1, keysHeld(set4))

	p.stop(t)

	// The command, with the key set held since step 1 pinned.
	pinned := filepath.Join(dir, "jwks-step1.json")
	b1, err := json.Marshal(set1)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pinned, b1, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := c.verifyCommand(t, c.Base, "--jwks", pinned); code != 0 {
		t.Errorf("caddy a2a-verify-card %s --jwks <set from step 1>: exit %d, want 0\n%s", c.Base, code, out)
	}
}

// checkRevalidation records the card just served under its ETag and
// revalidates every card served before: a client holding an older card must
// get the new one (200), never a 304 that keeps it on a card whose key may
// be gone; a 304 is right only for the same bytes.
func checkRevalidation(t *testing.T, client *http.Client, url string, served map[string][]byte, etag string, raw []byte) {
	t.Helper()
	if etag == "" {
		t.Fatalf("GET %s: no ETag", url)
	}
	if prev, ok := served[etag]; ok && !bytes.Equal(prev, raw) {
		t.Errorf("GET %s: ETag %s names two different cards:\n%s\n%s", url, etag, prev, raw)
	}
	served[etag] = raw
	for old, body := range served {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("If-None-Match", old)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s (If-None-Match: %s): %v", url, old, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := http.StatusOK
		if bytes.Equal(body, raw) {
			want = http.StatusNotModified
		}
		if resp.StatusCode != want || want == http.StatusOK && !bytes.Equal(got, raw) {
			t.Errorf("GET %s (If-None-Match: %s): %s, want %d with the current card", url, old, resp.Status, want)
		}
	}
}

// rotationPoller fetches the card continuously and verifies each copy with
// the key set a client holds. Each result is tagged with the step that was
// current when its fetch began, so a fetch tagged n saw step n's config.
type rotationPoller struct {
	url   string
	keys  keyLookup
	done  chan struct{} // closed to stop
	ended chan struct{} // closed when the poller has stopped
	poked chan struct{} // one token after each result

	mu       sync.Mutex
	step     int
	verified map[int]int // step -> cards verified
	kids     map[string]int
	failures []string
}

func startRotationPoller(t *testing.T, url string, keys keyLookup) *rotationPoller {
	p := &rotationPoller{
		url: url, keys: keys,
		done: make(chan struct{}), ended: make(chan struct{}), poked: make(chan struct{}, 1),
		verified: map[int]int{}, kids: map[string]int{},
	}
	go p.run()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			close(p.done)
		}
		<-p.ended
	})
	return p
}

func (p *rotationPoller) run() {
	defer close(p.ended)
	client := &http.Client{Timeout: 10 * time.Second}
	tick := time.NewTicker(5 * time.Millisecond) // poll interval, not synchronization
	defer tick.Stop()
	for {
		p.mu.Lock()
		step := p.step
		p.mu.Unlock()
		failure, kid := p.check(client)
		p.mu.Lock()
		if failure != "" {
			p.failures = append(p.failures, fmt.Sprintf("fetch during step %d: %s", step, failure))
		} else {
			p.verified[step]++
			p.kids[kid]++
		}
		p.mu.Unlock()
		select {
		case p.poked <- struct{}{}:
		default:
		}
		select {
		case <-p.done:
			return
		case <-tick.C:
		}
	}
}

// check fetches and verifies the card once; it answers why it failed, or
// the kid that verified it.
func (p *rotationPoller) check(client *http.Client) (failure, kid string) {
	resp, err := client.Get(p.url)
	// A reload closes the connections its stopping server accepted, the
	// one it took from the shared listener as it stopped among them:
	// before any answer, which a client takes again on a new connection.
	for resends := 0; resends < 2 && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF)); resends++ {
		resp, err = client.Get(p.url)
	}
	if err != nil {
		return err.Error(), ""
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("GET %s: %s %v: %s", p.url, resp.Status, err, raw), ""
	}
	v, err := verifyCard(raw, p.keys)
	if err != nil {
		return err.Error(), ""
	}
	ok := v.verified()
	if len(ok) == 0 {
		return fmt.Sprintf("no signature verified:\n%s\ncard: %s", v, raw), ""
	}
	return "", ok[0].Header.Kid
}

// advance marks step as current and waits until the poller has verified a
// card it began fetching after that, or failed.
func (p *rotationPoller) advance(t *testing.T, step int) {
	t.Helper()
	p.mu.Lock()
	p.step = step
	p.mu.Unlock()
	timeout := time.After(30 * time.Second)
	for {
		p.mu.Lock()
		n, failed := p.verified[step], len(p.failures) > 0
		p.mu.Unlock()
		if n > 0 || failed {
			return
		}
		select {
		case <-p.poked:
		case <-timeout:
			t.Fatalf("the poller verified no card in step %d within 30s", step)
		}
	}
}

// stop ends the poller and reports what it saw.
func (p *rotationPoller) stop(t *testing.T) {
	t.Helper()
	close(p.done)
	<-p.ended
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.failures) > 0 {
		t.Errorf("a client holding the key set fetched before the switch saw %d failures, the first: %s", len(p.failures), p.failures[0])
	}
	t.Logf("poller: cards verified per step %v, by kid %v", p.verified, p.kids)
}

// TestVerifyCardCommand runs `caddy a2a-verify-card` against the live card
// and against tampered copies of it in files.
func TestVerifyCardCommand(t *testing.T) {
	dir := t.TempDir()
	k := newTestKey(t, dir, "cmd-key", "ES256")
	c := startSignedCaddy(t, k.Line)
	raw, _ := get(t, recordedHTTPClient(t), c.CardURL)

	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	intact := write("card.json", raw)
	skillName := write("card-skill-name.json", tamper(t, raw, func(c map[string]any) { skillAt(c, 0)["name"] = "Weather (tampered)" }))
	// url is a 0.3 member: only the signature over the served card covers it.
	legacyURL := write("card-url.json", tamper(t, raw, func(c map[string]any) { c["url"] = "https://attacker.example/" }))

	for _, tc := range []struct {
		name     string
		args     []string
		wantExit int
		want     string // in the output
	}{
		{"live card, keys from jku", []string{c.Base}, 0, "result: verified"},
		{"live card URL, --jwks URL", []string{c.CardURL, "--jwks", c.JWKSURL}, 0, `kid "cmd-key"`},
		{"intact file, --jwks URL", []string{intact, "--jwks", c.JWKSURL}, 0, "result: verified"},
		{"intact file, keys from jku", []string{intact}, 0, "result: verified"},
		{"tampered skill name, --jwks URL", []string{skillName, "--jwks", c.JWKSURL}, 1, "INVALID"},
		{"tampered skill name, keys from jku", []string{skillName}, 1, "INVALID"},
		{"tampered skill name, --any", []string{skillName, "--any"}, 1, ""},
		{"tampered 0.3 url", []string{legacyURL, "--jwks", c.JWKSURL}, 1, "INVALID"},
		{"tampered 0.3 url, --any (as the SDKs verify)", []string{legacyURL, "--any"}, 0, "verified"},
		// A signature over a form --forms leaves out is not counted; one that
		// matches no form at all is still INVALID.
		{"intact file, --forms spec", []string{intact, "--forms", "spec"}, 0, "unverified"},
		{"tampered 0.3 url, --forms spec", []string{legacyURL, "--forms", "spec"}, 1, "INVALID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := c.verifyCommand(t, tc.args...)
			if code != tc.wantExit || !strings.Contains(out, tc.want) {
				t.Errorf("caddy a2a-verify-card %s: exit %d, want %d with %q in the output:\n%s",
					strings.Join(tc.args, " "), code, tc.wantExit, tc.want, out)
			}
		})
	}
}
