package caddymodule

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/crypto/bcrypt"
)

// The skills of the secured agents: whoami tells the upstream who calls
// (and the upstream answers with the headers it got), admin_report needs
// the admin scope, internal_stats is on the extended card only, and ask
// waits for a city (input-required) so that follow-ups can be tried.
const securedSkills = `upstream:
  url: http://127.0.0.1:1
skills:
  - id: whoami
    description: Tells the upstream who is calling
    request:
      path: /whoami
      headers:
        X-On-Behalf-Of: "{caller.subject}"
  - id: admin_report
    description: The admins' report
    security:
      - key: [admin]
    request: {path: /admin}
  - id: internal_stats
    description: Internal statistics, for known callers
    extended: true
    request: {path: /internal}
  - id: ask
    description: Asks for a city
    arguments:
      city: {type: string, required: true}
    request:
      path: "/city/{args.city}"
`

const (
	aliceKey = "alice-key-0123456789"
	bobKey   = "bob-key-0123456789ab"
)

// headerEcho is an upstream that answers with the headers it got, so that
// a task's artifact shows what reached the upstream.
func headerEcho(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{
			"path":          r.URL.Path,
			"on_behalf_of":  r.Header.Get("X-On-Behalf-Of"),
			"authorization": r.Header.Get("Authorization"),
			"api_key":       r.Header.Get("X-API-Key"),
		})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// jwksServer serves the public half of an RSA key as a JWK Set on
// loopback, as an identity provider would, and mints tokens with it.
type jwksServer struct {
	url string
	key *rsa.PrivateKey
}

func newJWKSServer(t *testing.T) *jwksServer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
	}}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(jwks)
	}))
	t.Cleanup(srv.Close)
	return &jwksServer{url: srv.URL, key: key}
}

// token mints an RS256 token for sub, valid from now for ttl (negative:
// already expired).
func (j *jwksServer) token(t *testing.T, sub string, ttl time.Duration) string {
	t.Helper()
	return j.tokenFor(t, sub, "a2a-test", ttl)
}

// tokenFor mints a token for the audience aud.
func (j *jwksServer) tokenFor(t *testing.T, sub, aud string, ttl time.Duration) string {
	t.Helper()
	now := time.Now()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss": "https://issuer.test", "aud": aud, "sub": sub,
		"iat": now.Add(-time.Minute).Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(ttl).Unix(),
	})
	tok.Header["kid"] = "k1"
	s, err := tok.SignedString(j.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// securedAgent is Caddy with the a2a handler and a security block.
type securedAgent struct {
	t      *testing.T
	tester *caddytest.Tester
	base   string // scheme://host:port
	client *http.Client
}

// writeSkills puts a skills file in a temporary directory.
func writeSkills(t *testing.T, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "skills.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// newTester is a tester of the Caddy the tests share, on its admin port.
func newTester(t *testing.T) *caddytest.Tester {
	adminPortOnce.Do(func() { adminPort = freePort(t) })
	return caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{
		AdminPort:          adminPort,
		TestRequestTimeout: 30 * time.Second,
		LoadRequestTimeout: 30 * time.Second,
	})
}

// loadSecured loads site (the site block's address and directives around
// the a2a block) into Caddy.
func loadSecured(t *testing.T, siteAddress, siteDirectives, a2aBlock string) *caddytest.Tester {
	t.Helper()
	tester := newTester(t)
	initServer(t, tester, securedConfig(siteAddress, siteDirectives, a2aBlock))
	return tester
}

// securedConfig is the Caddyfile loadSecured loads.
func securedConfig(siteAddress, siteDirectives, a2aBlock string) string {
	return securedSite(siteAddress, fmt.Sprintf("%s\n\ta2a {\n%s\n\t}", siteDirectives, a2aBlock))
}

// securedSite is a Caddyfile of one site on loopback, body its
// directives, with the test's admin endpoint and no automatic HTTPS.
func securedSite(siteAddress, body string) string {
	return fmt.Sprintf(`{
	admin localhost:%d
	persist_config off
	auto_https off
}

%s {
	bind 127.0.0.1
%s
}
`, adminPort, siteAddress, body)
}

// rpc sends a 1.0 JSON-RPC request with the given headers.
func (a *securedAgent) rpc(method, params string, header ...string) (*http.Response, rpcResponse, string) {
	a.t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
	req, err := http.NewRequest(http.MethodPost, a.base+"/", strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := a.client.Do(req)
	if err != nil {
		a.t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	var r rpcResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		a.t.Fatalf("%s: answer is not JSON-RPC: %v: %s", method, err, raw)
	}
	return resp, r, string(raw)
}

// send sends a message for skill (its data part given as JSON) and
// returns the answer.
func (a *securedAgent) send(skill, data, extra string, header ...string) (*http.Response, rpcResponse, string) {
	a.t.Helper()
	return a.rpc("SendMessage", fmt.Sprintf(`{"message":{"messageId":"m-%d","role":"ROLE_USER",
		"metadata":{"skill":%q},"parts":[{"data":%s}]%s}}`, time.Now().UnixNano(), skill, data, extra), header...)
}

// echoed is what the header-echo upstream reported, read from a task's
// first artifact.
func echoed(t *testing.T, r rpcResponse) map[string]string {
	t.Helper()
	var res struct {
		Task struct {
			Status    struct{ State string }
			Artifacts []struct {
				Parts []struct{ Data map[string]string }
			}
		}
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || len(res.Task.Artifacts) == 0 || len(res.Task.Artifacts[0].Parts) == 0 {
		t.Fatalf("no artifact in %s (%v)", r.Result, err)
	}
	if res.Task.Status.State != "TASK_STATE_COMPLETED" {
		t.Fatalf("task %s, want completed: %s", res.Task.Status.State, r.Result)
	}
	return res.Task.Artifacts[0].Parts[0].Data
}

// TestIntegrationAuthentication runs a Caddy whose agent takes API keys,
// JWTs (keys from a JWKS on loopback) and basic logins.
func TestIntegrationAuthentication(t *testing.T) {
	idp := newJWKSServer(t)
	hash, err := bcrypt.GenerateFromPassword([]byte("carol's password"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	a := &securedAgent{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	// A deferred header shows the identity placeholder as handlers after
	// the a2a handler (and the access log) see it.
	a.tester = loadSecured(t, fmt.Sprintf(":%d", port), "\theader {\n\t\tdefer\n\t\tX-Auth-User \"{http.auth.user.id} via {http.auth.user.scheme}\"\n\t}", fmt.Sprintf(`
		skills "%s"
		upstream %s
		url http://127.0.0.1:%d/
		name "Secured Agent"
		description "Who may call is on the card"
		security {
			api_key key header X-API-Key {
				key %s alice tasks
				key %s bob tasks admin
			}
			bearer jwt {
				issuer https://issuer.test
				audience a2a-test
				jwks_url %s
			}
			basic staff {
				user carol %s
			}
		}
		extended_card {
			description "Everything, for the callers we know"
		}`, writeSkills(t, securedSkills), headerEcho(t), port, aliceKey, bobKey, idp.url, hash))
	a.client = a.tester.Client

	t.Run("card", func(t *testing.T) {
		resp, err := a.client.Get(a.base + "/.well-known/agent-card.json")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var card struct {
			SecuritySchemes      map[string]map[string]any `json:"securitySchemes"`
			SecurityRequirements []map[string]any          `json:"securityRequirements"`
			Security             []map[string][]string     `json:"security"`
			Capabilities         struct {
				ExtendedAgentCard bool `json:"extendedAgentCard"`
			} `json:"capabilities"`
			SupportsAuthenticatedExtendedCard bool `json:"supportsAuthenticatedExtendedCard"`
			Skills                            []struct {
				ID                   string           `json:"id"`
				SecurityRequirements []map[string]any `json:"securityRequirements"`
			} `json:"skills"`
		}
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&card) != nil {
			t.Fatalf("GET card: %s", resp.Status)
		}
		for _, name := range []string{"key", "jwt", "staff"} {
			if card.SecuritySchemes[name] == nil {
				t.Errorf("card securitySchemes lacks %q: %v", name, card.SecuritySchemes)
			}
		}
		if s := card.SecuritySchemes["key"]; s["in"] != "header" || s["name"] != "X-API-Key" || s["apiKeySecurityScheme"] == nil {
			t.Errorf("key scheme on the card: %v", s)
		}
		if len(card.SecurityRequirements) != 3 || len(card.Security) != 3 {
			t.Errorf("card requirements: %v / %v; want one alternative per scheme", card.SecurityRequirements, card.Security)
		}
		if !card.Capabilities.ExtendedAgentCard || !card.SupportsAuthenticatedExtendedCard {
			t.Errorf("the card does not announce the extended card")
		}
		var ids []string
		for _, sk := range card.Skills {
			ids = append(ids, sk.ID)
			if sk.ID == "admin_report" && len(sk.SecurityRequirements) != 1 {
				t.Errorf("admin_report's securityRequirements: %v", sk.SecurityRequirements)
			}
		}
		if slices.Contains(ids, "internal_stats") || !slices.Contains(ids, "whoami") {
			t.Errorf("public card skills %v: want whoami, not internal_stats", ids)
		}
	})

	t.Run("no credentials", func(t *testing.T) {
		resp, r, raw := a.send("whoami", "{}", "")
		if resp.StatusCode != http.StatusUnauthorized || r.Error == nil || r.Error.Code != -31401 {
			t.Fatalf("%s %s; want 401 -31401", resp.Status, raw)
		}
		got := resp.Header.Values("WWW-Authenticate")
		want := []string{`APIKey realm="a2a", in="header", name="X-API-Key"`, `Bearer realm="a2a"`, `Basic realm="a2a", charset="UTF-8"`}
		if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
			t.Errorf("WWW-Authenticate %q, want %q", got, want)
		}
	})

	t.Run("bad credentials", func(t *testing.T) {
		for _, tt := range []struct {
			name   string
			header []string
			want   string // in a WWW-Authenticate value
		}{
			{"a wrong key", []string{"X-API-Key", "not-the-key-0123456789"}, "APIKey"},
			{"an expired token", []string{"Authorization", "Bearer " + idp.token(t, "dave", -time.Hour)}, `error="invalid_token", error_description="token expired"`},
			{"a token for another audience", []string{"Authorization", "Bearer " + idp.tokenFor(t, "dave", "another-service", time.Hour)}, `error="invalid_token"`},
			{"a wrong password", []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("carol:guess"))}, "Basic"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				resp, r, raw := a.send("whoami", "{}", "", tt.header...)
				if resp.StatusCode != http.StatusUnauthorized || r.Error == nil || r.Error.Code != -31401 {
					t.Fatalf("%s %s; want 401", resp.Status, raw)
				}
				if !strings.Contains(strings.Join(resp.Header.Values("WWW-Authenticate"), "\n"), tt.want) {
					t.Errorf("WWW-Authenticate %q lacks %q", resp.Header.Values("WWW-Authenticate"), tt.want)
				}
			})
		}
	})

	t.Run("each scheme", func(t *testing.T) {
		for _, tt := range []struct {
			name, subject, scheme string
			header                []string
		}{
			{"api key", "alice", "key", []string{"X-API-Key", aliceKey}},
			{"bearer token", "dave", "jwt", []string{"Authorization", "Bearer " + idp.token(t, "dave", time.Hour)}},
			{"basic", "carol", "staff", []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("carol:carol's password"))}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				resp, r, raw := a.send("whoami", "{}", "", tt.header...)
				if resp.StatusCode != http.StatusOK || r.Error != nil {
					t.Fatalf("%s %s", resp.Status, raw)
				}
				got := echoed(t, r)
				if got["on_behalf_of"] != tt.subject {
					t.Errorf("caller.subject reached the upstream as %q, want %q", got["on_behalf_of"], tt.subject)
				}
				if got["authorization"] != "" || got["api_key"] != "" {
					t.Errorf("the caller's credentials reached the upstream: %v", got)
				}
				if want := tt.subject + " via " + tt.scheme; resp.Header.Get("X-Auth-User") != want {
					t.Errorf("{http.auth.user.id} via {http.auth.user.scheme} = %q, want %q", resp.Header.Get("X-Auth-User"), want)
				}
			})
		}
	})

	t.Run("owner isolation", func(t *testing.T) {
		_, r, raw := a.send("ask", "{}", "", "X-API-Key", aliceKey)
		var res struct{ Task task }
		if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || res.Task.Status.State != "TASK_STATE_INPUT_REQUIRED" {
			t.Fatalf("alice's task: %s", raw)
		}
		id := res.Task.ID
		for _, call := range []struct{ method, params string }{
			{"GetTask", fmt.Sprintf(`{"id":%q}`, id)},
			{"CancelTask", fmt.Sprintf(`{"id":%q}`, id)},
		} {
			_, theirs, theirsRaw := a.rpc(call.method, call.params, "X-API-Key", bobKey)
			_, unknown, unknownRaw := a.rpc(call.method, strings.Replace(call.params, id, "no-such-task", 1), "X-API-Key", bobKey)
			if theirs.Error == nil || theirs.Error.Code != -32001 || unknown.Error == nil ||
				strings.Replace(theirsRaw, id, "ID", -1) != strings.Replace(unknownRaw, "no-such-task", "ID", -1) {
				t.Errorf("%s of alice's task as bob:\n%s\nof an unknown task:\n%s", call.method, theirsRaw, unknownRaw)
			}
		}
		// Bob's follow-up naming alice's task is refused as for an unknown
		// task; alice's own completes it.
		follow := fmt.Sprintf(`,"taskId":%q`, id)
		if _, r, raw := a.send("ask", `{"city":"Paris"}`, follow, "X-API-Key", bobKey); r.Error == nil || r.Error.Code != -32001 {
			t.Errorf("bob's follow-up on alice's task: %s", raw)
		}
		_, list, raw := a.rpc("ListTasks", "{}", "X-API-Key", bobKey)
		if list.Error != nil || strings.Contains(string(list.Result), id) {
			t.Errorf("bob's ListTasks: %s", raw)
		}
		if _, r, raw := a.send("ask", `{"city":"Paris"}`, follow, "X-API-Key", aliceKey); r.Error != nil || echoed(t, r)["path"] != "/city/Paris" {
			t.Errorf("alice's follow-up: %s", raw)
		}
	})

	t.Run("skill scope", func(t *testing.T) {
		resp, r, raw := a.send("admin_report", "{}", "", "X-API-Key", aliceKey)
		if resp.StatusCode != http.StatusForbidden || r.Error == nil || r.Error.Code != -31403 {
			t.Fatalf("alice on admin_report: %s %s; want 403 -31403", resp.Status, raw)
		}
		if _, r, raw := a.send("admin_report", "{}", "", "X-API-Key", bobKey); r.Error != nil || echoed(t, r)["path"] != "/admin" {
			t.Errorf("bob on admin_report: %s", raw)
		}
	})

	t.Run("extended card", func(t *testing.T) {
		resp, r, raw := a.rpc("GetExtendedAgentCard", "{}")
		if resp.StatusCode != http.StatusUnauthorized || r.Error == nil {
			t.Fatalf("anonymous: %s %s; want 401", resp.Status, raw)
		}
		_, r, raw = a.rpc("GetExtendedAgentCard", "{}", "Authorization", "Bearer "+idp.token(t, "dave", time.Hour))
		var card struct {
			Description string `json:"description"`
			Skills      []struct {
				ID string `json:"id"`
			} `json:"skills"`
		}
		if r.Error != nil || json.Unmarshal(r.Result, &card) != nil {
			t.Fatalf("GetExtendedAgentCard: %s", raw)
		}
		var ids []string
		for _, sk := range card.Skills {
			ids = append(ids, sk.ID)
		}
		if card.Description != "Everything, for the callers we know" || !slices.Contains(ids, "internal_stats") {
			t.Errorf("extended card: description %q, skills %v", card.Description, ids)
		}
		if _, r, raw := a.send("internal_stats", "{}", "", "X-API-Key", aliceKey); r.Error != nil || echoed(t, r)["path"] != "/internal" {
			t.Errorf("alice on internal_stats: %s", raw)
		}
	})
}

// testPKI is a CA and the certificates it issues, written as PEM files.
type testPKI struct {
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // the CA certificate's PEM file
}

func newTestCA(t *testing.T, dir, name string) *testPKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &testPKI{dir: dir, cert: cert, key: key, file: filepath.Join(dir, name+"-ca.pem")}
	writePEM(t, ca.file, "CERTIFICATE", der)
	return ca
}

// issue makes a leaf certificate; server ones name 127.0.0.1, client ones
// carry uri as their SPIFFE-style SAN.
func (ca *testPKI) issue(t *testing.T, name string, server bool, uri string) (certFile, keyFile string, pair tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		u, _ := url.Parse(uri)
		tmpl.URIs = []*url.URL{u}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	// .pem names: caddytest rewrites paths ending in .crt and .key.
	certFile, keyFile = filepath.Join(ca.dir, name+"-cert.pem"), filepath.Join(ca.dir, name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", keyDER)
	pair, err = tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, pair
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestIntegrationMutualTLS runs Caddy on a real TLS listener that asks
// for client certificates; the agent names the caller after its
// certificate and refuses one from a CA it does not trust.
func TestIntegrationMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, dir, "trusted")
	rogue := newTestCA(t, dir, "rogue")
	serverCert, serverKey, _ := ca.issue(t, "server", true, "")
	_, _, alice := ca.issue(t, "alice", false, "spiffe://test.example/alice")
	_, _, bob := ca.issue(t, "bob", false, "spiffe://test.example/bob")
	_, _, mallory := rogue.issue(t, "mallory", false, "spiffe://test.example/alice")

	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	clientFor := func(certs ...tls.Certificate) *http.Client {
		// By name, not by address: a client sends no SNI for an IP
		// address, and Caddy matches its client_auth policy by SNI.
		var dialer net.Dialer
		return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs, ServerName: "localhost"},
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				_, port, _ := net.SplitHostPort(addr)
				return dialer.DialContext(ctx, network, "127.0.0.1:"+port)
			},
		}}
	}
	// The skills without those that need the API key scheme.
	skills, upstream := writeSkills(t, securedSkills[:strings.Index(securedSkills, "  - id: admin_report")]+
		securedSkills[strings.Index(securedSkills, "  - id: ask"):]), headerEcho(t)
	a2aBlock := func(port int, mtls string) string {
		return fmt.Sprintf(`
		skills "%s"
		upstream %s
		url https://localhost:%d/
		name "mTLS Agent"
		description "Callers are named by their certificates"
		security {
			mutual_tls mtls {%s
			}
		}`, skills, upstream, port, mtls)
	}

	// Caddy asks for a certificate without verifying it; the scheme
	// verifies it against its own trusted CA.
	t.Run("verified by the scheme", func(t *testing.T) {
		port := freePort(t)
		loadSecured(t, fmt.Sprintf("https://localhost:%d", port),
			fmt.Sprintf("\ttls %s %s {\n\t\tclient_auth {\n\t\t\tmode request\n\t\t}\n\t}", serverCert, serverKey),
			a2aBlock(port, "\n\t\t\t\ttrusted_ca "+ca.file))
		base := fmt.Sprintf("https://localhost:%d", port)

		as := func(c *http.Client) *securedAgent { return &securedAgent{t: t, base: base, client: c} }
		for _, tt := range []struct {
			name    string
			client  *http.Client
			subject string // "" wants 401
		}{
			{"trusted client", clientFor(alice), "spiffe://test.example/alice"},
			{"another trusted client", clientFor(bob), "spiffe://test.example/bob"},
			{"no certificate", clientFor(), ""},
			{"a certificate from an untrusted CA", clientFor(mallory), ""},
		} {
			t.Run(tt.name, func(t *testing.T) {
				resp, r, raw := as(tt.client).send("whoami", "{}", "")
				if tt.subject == "" {
					if resp.StatusCode != http.StatusUnauthorized || r.Error == nil || r.Error.Code != -31401 ||
						resp.Header.Get("WWW-Authenticate") != `MutualTLS realm="a2a"` {
						t.Fatalf("%s %q %s; want 401", resp.Status, resp.Header.Get("WWW-Authenticate"), raw)
					}
					return
				}
				if r.Error != nil || echoed(t, r)["on_behalf_of"] != tt.subject {
					t.Fatalf("%s %s; want the upstream called for %s", resp.Status, raw, tt.subject)
				}
			})
		}

		// Tasks belong to the certificate's subject.
		_, r, raw := as(clientFor(alice)).send("ask", "{}", "")
		var res struct{ Task task }
		if r.Error != nil || json.Unmarshal(r.Result, &res) != nil {
			t.Fatalf("alice's task: %s", raw)
		}
		if _, r, raw := as(clientFor(bob)).rpc("GetTask", fmt.Sprintf(`{"id":%q}`, res.Task.ID)); r.Error == nil || r.Error.Code != -32001 {
			t.Errorf("bob reading alice's task: %s", raw)
		}
	})

	// Caddy verifies the certificate (require_and_verify); the scheme takes
	// the caller from what Caddy verified.
	t.Run("verified by Caddy", func(t *testing.T) {
		port := freePort(t)
		loadSecured(t, fmt.Sprintf("https://localhost:%d", port),
			fmt.Sprintf("\ttls %s %s {\n\t\tclient_auth {\n\t\t\tmode require_and_verify\n\t\t\ttrust_pool file %s\n\t\t}\n\t}", serverCert, serverKey, ca.file),
			a2aBlock(port, ""))
		a := &securedAgent{t: t, base: fmt.Sprintf("https://localhost:%d", port), client: clientFor(alice)}
		if _, r, raw := a.send("whoami", "{}", ""); r.Error != nil || echoed(t, r)["on_behalf_of"] != "spiffe://test.example/alice" {
			t.Fatalf("alice: %s", raw)
		}
		// An untrusted certificate does not get past the handshake.
		req, _ := http.NewRequest(http.MethodPost, a.base+"/", strings.NewReader("{}"))
		if resp, err := clientFor(mallory).Do(req); err == nil {
			resp.Body.Close()
			t.Errorf("a certificate from an untrusted CA got an answer: %s", resp.Status)
		}
	})
}
