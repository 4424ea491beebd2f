package mapping_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/internal/oauthtest"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/upstreamauth"
)

const oauthSecret = "oauth-Secret-42"

// oauthEnv is the environment of the oauth2 tests' files.
func oauthEnv(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// oauthFile is a skills file whose upstream takes tokens of the given
// grant from tokenURL; a skill "order" POSTs a body.
func oauthFile(grant, tokenURL, extra string) string {
	return fmt.Sprintf(`upstream:
  url: http://127.0.0.1:1
  oauth2:
    grant: %s
    token_url: %s
    client_id: '{env.API_CLIENT_ID}'
    client_secret: '{env.API_CLIENT_SECRET}'
    scopes: [orders]
    audience: https://api.example.com
skills:
  - id: order
    description: places an order
    request:
      method: POST
      path: /orders
      body: '{"item": "tea"}'
%s`, grant, tokenURL, extra)
}

func TestOAuth2ParseErrors(t *testing.T) {
	env := oauthEnv(map[string]string{"API_CLIENT_ID": "agent", "API_CLIENT_SECRET": oauthSecret})
	tests := []struct{ name, yaml, want string }{
		{"grant", oauthFile("password", "https://idp.example.com/token", ""),
			`t.yaml:4: upstream.oauth2: grant must be client_credentials or token_exchange, not "password"`},
		{"plain http to another host", oauthFile("client_credentials", "http://idp.example.com/token", ""),
			`t.yaml:4: upstream.oauth2: token_url must be https:// (http:// only to a loopback address)`},
		{"an expression", oauthFile("client_credentials", "'https://{args.host}/token'", ""),
			`t.yaml:5: upstream.oauth2.token_url: may hold {env.NAME} placeholders but no expressions`},
		{"unset secret", strings.Replace(oauthFile("client_credentials", "https://idp.example.com/token", ""), "API_CLIENT_SECRET", "UNSET", 1),
			`t.yaml:7: upstream.oauth2.client_secret: environment variable UNSET is not set`},
		{"upstream Authorization header", strings.Replace(oauthFile("client_credentials", "https://idp.example.com/token", ""),
			"  oauth2:", "  headers: {Authorization: Bearer static}\n  oauth2:", 1),
			`upstream.headers.Authorization: is set by upstream.oauth2: keep one`},
		{"skill's Authorization header", oauthFile("client_credentials", "https://idp.example.com/token", "      headers: {authorization: Bearer x}\n"),
			`skill "order": request.headers.Authorization: is set by upstream.oauth2: keep one`},
		{"forwarded Authorization", oauthFile("client_credentials", "https://idp.example.com/token", "    forward_headers: [Authorization]\n"),
			`skill "order": forward_headers: Authorization is set by upstream.oauth2: keep one`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mapping.Parse("t.yaml", []byte(tc.yaml), mapping.Options{LookupEnv: env})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant one holding %q", err, tc.want)
			}
			if strings.Contains(err.Error(), oauthSecret) {
				t.Fatalf("the error shows the secret: %v", err)
			}
		})
	}
}

// A file's skills share one token, sent as Bearer.
func TestOAuth2ClientCredentialsRun(t *testing.T) {
	idp := oauthtest.New(t, "agent", oauthSecret, 3600)
	srv, ch := recorder(t, nil)
	s := load(t, oauthFile("client_credentials", idp.URL, `  - id: list
    description: lists the orders
    request: {path: /orders}
`), srv.URL, mapping.Options{LookupEnv: oauthEnv(map[string]string{"API_CLIENT_ID": "agent", "API_CLIENT_SECRET": oauthSecret})})
	for _, id := range []string{"order", "list", "order"} {
		if out := runSkill(t, s, message(id, map[string]any{}, "")); out.State != a2a.TaskStateCompleted {
			t.Fatalf("%s: %s %q %v", id, out.State, messageText(out), out.Err)
		}
		if got := received(t, ch); got.Header.Get("Authorization") != "Bearer tok-1" {
			t.Fatalf("%s: Authorization = %q, want Bearer tok-1", id, got.Header.Get("Authorization"))
		}
	}
	if idp.Fetches() != 1 {
		t.Fatalf("%d tokens fetched for three runs of two skills, want 1", idp.Fetches())
	}
}

// A 401 from the upstream replaces the token. A request that may be sent
// twice (an idempotent method, an idempotency key: a retry's rule) is
// sent again with the new one, its body too; another's 401 is the
// answer, and its next run has the new token. A 401 to the new token is
// the answer too, and costs no more fetches for a while.
func TestOAuth2Upstream401(t *testing.T) {
	const skills = `  - id: list
    description: lists the orders
    request: {path: /orders}
  - id: keyed
    description: places an order, once
    request: {method: POST, path: /orders, body: '{"item": "tea"}', idempotency_key: true}
  - id: job
    description: starts a job
    request: {method: POST, path: /jobs, poll: {interval: 1ms}}
  - id: keyed-job
    description: starts a job, once
    request: {method: POST, path: /jobs, idempotency_key: true, poll: {interval: 1ms}}
`
	type run struct {
		state a2a.TaskState
		seen  []string // token method path body, and "key" when it had an Idempotency-Key
	}
	for _, tc := range []struct {
		name, skill string
		refused     []string // tokens, or "GET token": refused to GETs only
		runs        []run
	}{
		{"GET sent again", "list", []string{"tok-1"},
			[]run{{a2a.TaskStateCompleted, []string{"tok-1 GET /orders ", "tok-2 GET /orders "}}}},
		{"POST with an idempotency key sent again", "keyed", []string{"tok-1"},
			[]run{{a2a.TaskStateCompleted, []string{`tok-1 POST /orders {"item":"tea"} key`, `tok-2 POST /orders {"item":"tea"} key`}}}},
		{"POST: the 401 is the answer", "order", []string{"tok-1"}, []run{
			{a2a.TaskStateFailed, []string{`tok-1 POST /orders {"item":"tea"}`}},
			{a2a.TaskStateCompleted, []string{`tok-2 POST /orders {"item":"tea"}`}}}},
		{"a poll sent again", "job", []string{"GET tok-1"},
			[]run{{a2a.TaskStateCompleted, []string{"tok-1 POST /jobs ", "tok-1 GET /jobs/1 ", "tok-2 GET /jobs/1 "}}}},
		{"a POST with an idempotency key starting a job sent again", "keyed-job", []string{"tok-1"},
			[]run{{a2a.TaskStateCompleted, []string{"tok-1 POST /jobs  key", "tok-2 POST /jobs  key", "tok-2 GET /jobs/1 "}}}},
		{"an upstream refusing every token", "list", []string{"tok-1", "tok-2", "tok-3"}, []run{
			{a2a.TaskStateFailed, []string{"tok-1 GET /orders ", "tok-2 GET /orders "}},
			{a2a.TaskStateFailed, []string{"tok-2 GET /orders "}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idp := oauthtest.New(t, "agent", oauthSecret, 3600)
			srv, ch := recorder(t, func(w http.ResponseWriter, r *http.Request) {
				tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
				switch {
				case slices.Contains(tc.refused, tok) || slices.Contains(tc.refused, r.Method+" "+tok):
					w.WriteHeader(http.StatusUnauthorized)
				case r.Method == http.MethodPost && r.URL.Path == "/jobs":
					w.Header().Set("Location", "/jobs/1")
					w.WriteHeader(http.StatusAccepted)
				default:
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprint(w, `{"ok":true}`)
				}
			})
			s := load(t, oauthFile("client_credentials", idp.URL, skills), srv.URL,
				mapping.Options{LookupEnv: oauthEnv(map[string]string{"API_CLIENT_ID": "agent", "API_CLIENT_SECRET": oauthSecret})})
			for i, want := range tc.runs {
				out := runSkill(t, s, message(tc.skill, map[string]any{}, ""))
				var seen []string
				for len(ch) > 0 {
					r := <-ch
					v := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + " " + r.Method + " " + r.RequestURI + " " + r.Body
					if r.Header.Get("Idempotency-Key") != "" {
						v += " key"
					}
					seen = append(seen, v)
				}
				if out.State != want.state || fmt.Sprint(seen) != fmt.Sprint(want.seen) {
					t.Fatalf("run %d: %s (%q) after %q; want %s after %q", i+1, out.State, messageText(out), seen, want.state, want.seen)
				}
			}
			if idp.Fetches() != 2 {
				t.Fatalf("%d tokens fetched, want 2", idp.Fetches())
			}
		})
	}
}

// A token endpoint that cannot be reached, or refuses, fails the task and
// sends nothing. The message says no more (the token URL may hold a
// tenant's id, the endpoint's error what it was sent); the log says which
// endpoint and why, and neither shows the secret.
func TestOAuth2TokenFailuresFailClosed(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	echoing := oauthtest.New(t, "agent", "another secret", 3600)
	for _, tc := range []struct{ name, tokenURL, logged string }{
		{"down", down.URL, "could not get a token for the service from " + down.URL + ": it cannot be reached"},
		{"refused", echoing.URL, "could not get a token for the service from " + echoing.URL +
			": it answered HTTP 401 (invalid_client: bad secret ***)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, ch := recorder(t, nil)
			s := load(t, oauthFile("client_credentials", tc.tokenURL, ""), srv.URL,
				mapping.Options{LookupEnv: oauthEnv(map[string]string{"API_CLIENT_ID": "agent", "API_CLIENT_SECRET": oauthSecret})})
			out := runSkill(t, s, message("order", map[string]any{}, ""))
			const public = `Skill "order" could not get a token for the service, so the request was not sent.`
			if out.State != a2a.TaskStateFailed || messageText(out) != public {
				t.Fatalf("%s %q\nwant failed %q", out.State, messageText(out), public)
			}
			if !strings.Contains(out.Err.Error(), tc.logged) {
				t.Fatalf("the log's error %q, want it holding %q", out.Err, tc.logged)
			}
			if strings.Contains(out.Err.Error(), oauthSecret) {
				t.Fatalf("the log's error shows the secret: %v", out.Err)
			}
			noRequest(t, ch)
		})
	}
}

// A token exchange trades the caller's validated token for the
// upstream's; the caller's own token never reaches the upstream, and a
// caller without one gets a failed task before anything is sent.
func TestOAuth2TokenExchangeRun(t *testing.T) {
	idp := oauthtest.New(t, "agent", oauthSecret, 3600)
	srv, ch := recorder(t, nil)
	s := load(t, oauthFile("token_exchange", idp.URL, ""), srv.URL,
		mapping.Options{LookupEnv: oauthEnv(map[string]string{"API_CLIENT_ID": "agent", "API_CLIENT_SECRET": oauthSecret})})
	run := func(caller mapping.Caller) mapping.Outcome {
		msg := message("order", map[string]any{}, "")
		return s.ByID("order").Run(context.Background(), mapping.Call{Message: msg, TaskID: "t", ContextID: "c", Caller: caller,
			Headers: http.Header{"Authorization": {"Bearer " + caller.Token}}}, nil)
	}
	out := run(mapping.Caller{Subject: "alice"})
	if want := `Skill "order" acts on behalf of its caller, who presented no bearer token the agent validated, so the request was not sent.`; out.State != a2a.TaskStateFailed || messageText(out) != want {
		t.Fatalf("no caller's token: %s %q", out.State, messageText(out))
	}
	if !errors.Is(out.Err, upstreamauth.ErrNoSubject) {
		t.Errorf("no caller's token: the log's error is %v", out.Err)
	}
	noRequest(t, ch)
	if out := run(mapping.Caller{Subject: "alice", Token: "alice-jwt"}); out.State != a2a.TaskStateCompleted {
		t.Fatalf("%s %q %v", out.State, messageText(out), out.Err)
	}
	got := received(t, ch)
	if v := got.Header.Get("Authorization"); v != "Bearer tok-1-for-alice-jwt" {
		t.Fatalf("Authorization = %q, want the exchanged token", v)
	}
	for name, vals := range got.Header {
		if strings.Contains(strings.Join(vals, " "), "alice-jwt") && name != "Authorization" {
			t.Errorf("the caller's token reached the upstream in %s", name)
		}
	}
	if f := idp.Form(0); f.Get("subject_token") != "alice-jwt" || f.Get("scope") != "orders" {
		t.Errorf("the exchange sent %v", f)
	}
}

// jwtFile is a skills file whose upstream's token client authenticates
// by private_key_jwt; lines holds the oauth2 keys from line 8 on.
func jwtFile(tokenURL string, lines ...string) string {
	var extra strings.Builder
	for _, l := range lines {
		extra.WriteString("    " + l + "\n")
	}
	return fmt.Sprintf(`upstream:
  url: http://127.0.0.1:1
  oauth2:
    grant: client_credentials
    token_url: %s
    client_id: agent
    client_auth: private_key_jwt
%sskills:
  - id: order
    description: places an order
    request: {method: POST, path: /orders}
`, tokenURL, extra.String())
}

func pemOf(t *testing.T, typ string, der []byte, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

// writeFile writes data at dir/name, and returns its path.
func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Each mistake in a private_key_jwt client names the file, the line and
// the key, and never shows the key.
func TestOAuth2PrivateKeyJWTLoadErrors(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	rsaPEM := oauthtest.KeyPEM(t, rsaKey)
	weakPEM := oauthtest.KeyPEM(t, weak)
	garbled := "-----BEGIN PRIVATE KEY-----\nR2FyYmxlZEtleU1hdGVyaWFsMDEyMzQ1Njc4OQ==\n-----END PRIVATE KEY-----\n"
	publicPEM := pemOf(t, "PUBLIC KEY", nil, nil)
	if der, err := x509.MarshalPKIXPublicKey(rsaKey.Public()); err == nil {
		publicPEM = pemOf(t, "PUBLIC KEY", der, nil)
	}
	_, otherCert := oauthtest.SelfSigned(t, weak)
	dir := t.TempDir()
	badFile := writeFile(t, dir, "bad.pem", garbled)
	keyFile := writeFile(t, dir, "agent.pem", rsaPEM)
	certFile := writeFile(t, dir, "other.crt", otherCert)
	env := oauthEnv(map[string]string{"KEY": rsaPEM, "WEAK": weakPEM, "GARBLED": garbled, "PUBLIC": publicPEM, "SECRET": oauthSecret,
		"CERT": otherCert})
	const idp = "https://idp.example.com/token"
	for _, tc := range []struct{ name, yaml, want string }{
		{"a key that does not parse", jwtFile(idp, "private_key: '{env.GARBLED}'"),
			`t.yaml:8: upstream.oauth2.private_key: is not a usable private key: PEM block "PRIVATE KEY": asn1:`},
		{"a key file that does not parse", jwtFile(idp, "private_key_file: "+badFile),
			`t.yaml:8: upstream.oauth2.private_key_file: ` + badFile + ` is not a usable private key: PEM block "PRIVATE KEY": asn1:`},
		{"a key file that is not there", jwtFile(idp, "private_key_file: "+filepath.Join(dir, "none.pem")),
			`t.yaml:8: upstream.oauth2.private_key_file: cannot read the file: open ` + filepath.Join(dir, "none.pem") + `: no such file or directory`},
		{"a public key", jwtFile(idp, "private_key: '{env.PUBLIC}'"),
			`t.yaml:8: upstream.oauth2.private_key: is not a usable private key: it holds a public key; the client signs with its private key`},
		{"RSA 1024", jwtFile(idp, "private_key: '{env.WEAK}'"),
			`t.yaml:8: upstream.oauth2.private_key: is not a usable private key: unsupported key: RSA key of 1024 bits; want 2048 bits or more`},
		{"both forms of the key", jwtFile(idp, "private_key: '{env.KEY}'", "private_key_file: "+keyFile),
			`t.yaml:9: upstream.oauth2.private_key_file: give private_key or private_key_file, not both`},
		{"no key", jwtFile(idp),
			`t.yaml:4: upstream.oauth2: client_auth private_key_jwt needs the private key that signs its assertions`},
		{"a key and a client secret", jwtFile(idp, "private_key: '{env.KEY}'", "client_secret: '{env.SECRET}'"),
			`t.yaml:9: upstream.oauth2.client_secret: is not sent with client_auth private_key_jwt: give the private key alone`},
		{"an unknown alg", jwtFile(idp, "private_key: '{env.KEY}'", "signing_alg: HS256"),
			`t.yaml:9: upstream.oauth2.signing_alg: algorithm "HS256" is not supported`},
		{"an alg not the key's", jwtFile(idp, "private_key: '{env.KEY}'", "signing_alg: ES256"),
			`t.yaml:9: upstream.oauth2.signing_alg: algorithm ES256 does not match the key (RSA 2048 bits)`},
		{"a certificate that does not parse", jwtFile(idp, "private_key: '{env.KEY}'", "certificate: '{env.GARBLED}'"),
			`t.yaml:9: upstream.oauth2.certificate: is not a usable certificate: no PEM certificate found`},
		{"both forms of the certificate", jwtFile(idp, "private_key: '{env.KEY}'", "certificate: '{env.CERT}'", "certificate_file: "+certFile),
			`t.yaml:10: upstream.oauth2.certificate_file: give certificate or certificate_file, not both`},
		{"a certificate not the key's", jwtFile(idp, "private_key: '{env.KEY}'", "certificate_file: "+certFile),
			`t.yaml:9: upstream.oauth2.certificate_file: is not the private key's: its public key is another`},
		{"a key for a secret's client_auth", strings.Replace(jwtFile(idp, "private_key: '{env.KEY}'", "client_secret: '{env.SECRET}'"), "private_key_jwt", "post", 1),
			`t.yaml:4: upstream.oauth2: a private key, a certificate, signing_alg and key_id are for client_auth private_key_jwt, which sends no client_secret`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mapping.Parse("t.yaml", []byte(tc.yaml), mapping.Options{LookupEnv: env})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant one holding %q", err, tc.want)
			}
			for _, key := range []string{rsaPEM, weakPEM, garbled, publicPEM} {
				if line := strings.Split(key, "\n")[1]; strings.Contains(err.Error(), line) {
					t.Fatalf("the error shows a key: %v", err)
				}
			}
			if strings.Contains(err.Error(), oauthSecret) {
				t.Fatalf("the error shows the secret: %v", err)
			}
		})
	}
}

// A private_key_jwt client takes its key in each PEM form, from the
// environment or from a file, read when the file loads, a relative path
// being the skills file's directory's: the token endpoint verifies the
// assertion, and the upstream gets the token.
func TestOAuth2PrivateKeyJWTRun(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sec1, err := x509.MarshalECPrivateKey(ecKey)
	for _, tc := range []struct {
		name, pem, setting string
		key                crypto.Signer
	}{
		{"PKCS #8 RSA in the environment", oauthtest.KeyPEM(t, rsaKey), "private_key: '{env.KEY}'", rsaKey},
		{"PKCS #1 RSA in a file", pemOf(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey), nil), "private_key_file: keys/agent.pem", rsaKey},
		{"SEC 1 EC in a file", pemOf(t, "EC PRIVATE KEY", sec1, err), "private_key_file: keys/agent.pem", ecKey},
		{"PKCS #8 Ed25519 in the environment", oauthtest.KeyPEM(t, edKey), "private_key: '{env.KEY}'", edKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idp := oauthtest.NewWithKey(t, "agent", tc.key.Public(), 3600)
			srv, ch := recorder(t, nil)
			dir := t.TempDir()
			writeFile(t, dir, "keys/agent.pem", tc.pem)
			path := writeFile(t, dir, "skills.yaml", jwtFile(idp.URL, tc.setting))
			s, err := mapping.Load(path, mapping.Options{UpstreamURL: srv.URL, LookupEnv: oauthEnv(map[string]string{"KEY": tc.pem})})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			if err := os.RemoveAll(filepath.Join(dir, "keys")); err != nil { // read once, at load
				t.Fatal(err)
			}
			if out := runSkill(t, s, message("order", map[string]any{}, "")); out.State != a2a.TaskStateCompleted {
				t.Fatalf("%s %q %v", out.State, messageText(out), out.Err)
			}
			if got := received(t, ch).Header.Get("Authorization"); got != "Bearer tok-1" {
				t.Fatalf("Authorization = %q, want Bearer tok-1", got)
			}
		})
	}
}
