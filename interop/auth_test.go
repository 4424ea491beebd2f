package interop_test

// Authentication as the official Go SDK client does it: a Caddy whose
// agent requires a bearer token (a JWT whose keys come from a JWK Set on
// loopback) or an API key, and SDK clients that learn the schemes from the
// card and attach their credentials with a2aclient.AuthInterceptor.

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
)

const (
	authAudience = "interop-agent"
	authAPIKey   = "interop-api-key-0123456789"
	// authOtherAPIKey is a second caller's key, for isolation between callers.
	authOtherAPIKey = "interop-api-key-other-98765"
	// The client the authorization server knows, for the client
	// credentials grant.
	authClientID     = "interop-mcp-client"
	authClientSecret = "interop-mcp-client-secret"
)

// tokenIssuer is an OAuth 2.0 authorization server on loopback: its issuer
// identifier is its URL, where it serves its metadata (RFC 8414), the public
// half of its RSA key as a JWK Set, and a token endpoint that grants RS256
// JWTs to one client by client credentials (for the audience of the
// resource it names, RFC 8707). Tests also mint tokens directly.
type tokenIssuer struct {
	key     *rsa.PrivateKey
	issuer  string
	jwksURL string
}

func newTokenIssuer(t *testing.T) *tokenIssuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	jwks, err := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": "interop-1", "use": "sig", "alg": "RS256",
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	ti := &tokenIssuer{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(jwks)
	})
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		// RFC 8414 requires an authorization endpoint; no test goes there.
		writeJSONAnswer(w, http.StatusOK, map[string]any{
			"issuer": ti.issuer, "authorization_endpoint": ti.issuer + "/authorize", "token_endpoint": ti.issuer + "/token",
			"jwks_uri":                              ti.jwksURL,
			"grant_types_supported":                 []string{"client_credentials"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
			"response_types_supported":              []string{"code"},
		})
	})
	mux.HandleFunc("POST /token", ti.grant)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ti.issuer, ti.jwksURL = srv.URL, srv.URL+"/jwks"
	return ti
}

// grant is the token endpoint: the client credentials grant for the one
// client, a token whose audience is the resource asked for, else
// authAudience.
func (ti *tokenIssuer) grant(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSONAnswer(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != authClientID || secret != authClientSecret {
		writeJSONAnswer(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	if r.PostForm.Get("grant_type") != "client_credentials" {
		writeJSONAnswer(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	aud := r.PostForm.Get("resource")
	if aud == "" {
		aud = authAudience
	}
	token, err := ti.sign(id, aud)
	if err != nil {
		writeJSONAnswer(w, http.StatusInternalServerError, map[string]string{"error": "server_error"})
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSONAnswer(w, http.StatusOK, map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": 3600})
}

func writeJSONAnswer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// token mints an RS256 JWT for sub, for authAudience.
func (ti *tokenIssuer) token(t *testing.T, sub string) string {
	t.Helper()
	token, err := ti.sign(sub, authAudience)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// sign makes an RS256 JWT for sub and aud (RFC 7515 compact serialization).
func (ti *tokenIssuer) sign(sub, aud string) (string, error) {
	b64 := base64.RawURLEncoding.EncodeToString
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": "interop-1"})
	now := time.Now()
	claims, _ := json.Marshal(map[string]any{"iss": ti.issuer, "aud": aud, "sub": sub,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	input := b64(header) + "." + b64(claims)
	digest := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, ti.key, crypto.SHA256, digest[:])
	if err != nil {
		return "", fmt.Errorf("signing a token: %w", err)
	}
	return input + "." + b64(sig), nil
}

// startAuthAgent starts a second Caddy, from the binary the suite built,
// whose a2a handler requires a bearer token of issuer's (for authAudience,
// or for the MCP endpoint at /mcp when directives turn it on) or one of two
// API keys, and serves an extended card. With a prefix, the handler is
// under handle_path <prefix>/*; directives may name the agent's public
// URL (with the prefix) as {$INTEROP_AUTH_URL}. It is stopped when the
// test ends; its URL is returned, with the prefix, and its process.
func startAuthAgent(t *testing.T, issuer *tokenIssuer, prefix string, directives ...string) (agentURL string, proc *process) {
	t.Helper()
	if agent.Dir == "" {
		t.Skip("INTEROP_AGENT_URL is set: no caddy binary was built to start an agent that requires authentication")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sitePort, adminPort := caddyPorts(t)
	agentURL = "http://127.0.0.1:" + strconv.Itoa(sitePort) + prefix
	handler := fmt.Sprintf(`a2a {
		skills %q
		upstream %s
		url %s/
		name "Interop Secured Agent"
		description "caddy-a2a requiring a bearer token or an API key"
		security {
			bearer jwt {
				issuer %s
				audience %s %s/mcp
				jwks_url %s
			}
			api_key key header X-API-Key {
				key {env.INTEROP_AUTH_API_KEY} interop-key-client
				key {env.INTEROP_AUTH_OTHER_API_KEY} interop-key-other
			}
		}
		extended_card {
			description "The extended card, for authenticated callers"
		}
		%s
	}`, filepath.Join(root, "examples", "skills.yaml"), agent.DemoURL, agentURL,
		issuer.issuer, authAudience, agentURL, issuer.jwksURL, strings.Join(directives, "\n\t\t"))
	if prefix != "" {
		handler = fmt.Sprintf("handle_path %s/* {\n\t%s\n\t}", prefix, handler)
	}
	cfg := fmt.Sprintf(`{
	admin 127.0.0.1:%d
	auto_https off
	persist_config off
}

%s {
	bind 127.0.0.1
	%s
}
`, adminPort, "http://127.0.0.1:"+strconv.Itoa(sitePort), handler)
	cfgPath := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"DEMO_API_KEY="+demoAPIKey,
		"INTEROP_AUTH_API_KEY="+authAPIKey,
		"INTEROP_AUTH_OTHER_API_KEY="+authOtherAPIKey,
		"INTEROP_AUTH_URL="+agentURL,
		"HOME="+dir,
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"XDG_DATA_HOME="+filepath.Join(dir, "data"),
	)
	proc, err = startProcess(dir, "caddy", env, filepath.Join(agent.Dir, "caddy"), "run", "--config", cfgPath, "--adapter", "caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		proc.stop()
		if t.Failed() {
			t.Logf("the authenticating Caddy's log:\n%s", proc.tail())
		}
	})
	// The card is public: clients read it to learn how to authenticate.
	if err := waitReady(proc, agentURL+"/.well-known/agent-card.json", 60*time.Second); err != nil {
		t.Fatal(err)
	}
	return agentURL, proc
}

// sdkCardParser lets a2a-go v2.3.1 read the card's security requirements.
// The card writes them in the proto's ProtoJSON form, {"schemes": {"jwt":
// {"list": []}}} (a2a.proto's SecurityRequirement of StringList), which
// that version's parsers refuse (a2a-go issue #430; its own cards write
// {"schemes": {"jwt": []}}). The parser rewrites that one member and hands
// the card to the SDK's parser; everything else is the SDK's own reading.
func sdkCardParser(parse agentcard.Parser) agentcard.Parser {
	return func(b []byte) (*a2a.AgentCard, error) {
		var card map[string]any
		if err := json.Unmarshal(b, &card); err != nil {
			return nil, err
		}
		bareLists(card["securityRequirements"])
		skills, _ := card["skills"].([]any)
		for _, sk := range skills {
			if sk, ok := sk.(map[string]any); ok {
				bareLists(sk["securityRequirements"])
			}
		}
		b, err := json.Marshal(card)
		if err != nil {
			return nil, err
		}
		return parse(b)
	}
}

func bareLists(reqs any) {
	list, _ := reqs.([]any)
	for _, r := range list {
		r, _ := r.(map[string]any)
		schemes, _ := r["schemes"].(map[string]any)
		for name, scopes := range schemes {
			if s, ok := scopes.(map[string]any); ok {
				l, _ := s["list"].([]any)
				if l == nil {
					l = []any{}
				}
				schemes[name] = l
			}
		}
	}
}

// With card_bare_scopes, a2a-go v2.3.1's own card parsers, 1.0 and 0.3,
// read the card's security requirements as served (no rewriting, unlike
// sdkCardParser), and a client made from it authenticates.
func TestCardBareScopesForA2AGo(t *testing.T) {
	issuer := newTokenIssuer(t)
	base, _ := startAuthAgent(t, issuer, "", "card_bare_scopes")
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			parser := agentcard.DefaultCardParser
			if p.version == a2av0.Version {
				parser = a2av0.NewAgentCardParser()
			}
			resolver := &agentcard.Resolver{Client: recordedHTTPClient(t), CardParser: parser}
			card, err := resolver.Resolve(ctxTimeout(t, 30*time.Second), base)
			if err != nil {
				t.Fatalf("the SDK's parser cannot read the card with bare scopes: %v", err)
			}
			if len(card.SecurityRequirements) != 2 {
				t.Fatalf("card security requirements %v, want one per scheme", card.SecurityRequirements)
			}
			c := newAuthClient(t, p, card)
			res, err := c.SendMessage(c.session(t, "api-key", "key", authAPIKey),
				&a2a.SendMessageRequest{Message: skillMessage("weather", map[string]any{"city": "Paris"})})
			if task, ok := res.(*a2a.Task); err != nil || !ok || task.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("SendMessage with the API key: %s, %v", jsonString(res), err)
			}
		})
	}
}

// authClient is an SDK client made from the card, with the SDK's auth
// interceptor over an in-memory credential store.
type authClient struct {
	*a2aclient.Client
	creds *a2aclient.InMemoryCredentialsStore
}

func newAuthClient(t *testing.T, p protocol, card *a2a.AgentCard) *authClient {
	t.Helper()
	hc := recordedHTTPClient(t)
	creds := a2aclient.NewInMemoryCredentialsStore()
	opts := []a2aclient.FactoryOption{a2aclient.WithCallInterceptors(&a2aclient.AuthInterceptor{Service: creds})}
	if p.version == a2av0.Version {
		opts = append(opts, a2aclient.WithDefaultsDisabled(), a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: hc}))
	} else {
		opts = append(opts, a2aclient.WithJSONRPCTransport(hc))
	}
	c, err := a2aclient.NewFromCard(ctxTimeout(t, 30*time.Second), card, opts...)
	if err != nil {
		t.Fatalf("creating the %s client from the card: %v", p.name, err)
	}
	t.Cleanup(func() { c.Destroy() })
	return &authClient{Client: c, creds: creds}
}

// session is a context whose calls carry the credential stored for scheme
// (none when scheme is "").
func (c *authClient) session(t *testing.T, name string, scheme a2a.SecuritySchemeName, credential string) context.Context {
	t.Helper()
	if scheme != "" {
		c.creds.Set(a2aclient.SessionID(name), scheme, a2aclient.AuthCredential(credential))
	}
	return a2aclient.AttachSessionID(ctxTimeout(t, 30*time.Second), a2aclient.SessionID(name))
}

// TestAuthentication: SDK clients, 1.0 and 0.3, read the schemes from the
// card and authenticate with a bearer token or an API key; without
// credentials they are refused; each caller sees only its own tasks; the
// extended card is theirs for the asking.
func TestAuthentication(t *testing.T) {
	issuer := newTokenIssuer(t)
	base, _ := startAuthAgent(t, issuer, "")

	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			parser := agentcard.DefaultCardParser
			if p.version == a2av0.Version {
				parser = a2av0.NewAgentCardParser()
			}
			resolver := &agentcard.Resolver{Client: recordedHTTPClient(t), CardParser: sdkCardParser(parser)}
			card, err := resolver.Resolve(ctxTimeout(t, 30*time.Second), base)
			if err != nil {
				t.Fatalf("resolving the card: %v", err)
			}
			if s, ok := card.SecuritySchemes["jwt"].(a2a.HTTPAuthSecurityScheme); !ok || !strings.EqualFold(s.Scheme, "bearer") {
				t.Errorf("card scheme jwt = %#v, want HTTP bearer", card.SecuritySchemes["jwt"])
			}
			if s, ok := card.SecuritySchemes["key"].(a2a.APIKeySecurityScheme); !ok || s.Name != "X-API-Key" {
				t.Errorf("card scheme key = %#v, want an API key in X-API-Key", card.SecuritySchemes["key"])
			}
			if len(card.SecurityRequirements) != 2 {
				t.Errorf("card security requirements %v, want one per scheme", card.SecurityRequirements)
			}
			if !card.Capabilities.ExtendedAgentCard {
				t.Errorf("the card does not announce the extended card")
			}
			c := newAuthClient(t, p, card)

			bearer := c.session(t, "bearer", "jwt", issuer.token(t, "sdk-user"))
			keyed := c.session(t, "api-key", "key", authAPIKey)
			anonymous := c.session(t, "anonymous", "", "")

			tasks := map[string]*a2a.Task{}
			for name, ctx := range map[string]context.Context{"bearer": bearer, "api key": keyed} {
				res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: skillMessage("weather", map[string]any{"city": "Paris"})})
				if err != nil {
					t.Fatalf("%s: SendMessage: %v", name, err)
				}
				task, ok := res.(*a2a.Task)
				if !ok || task.Status.State != a2a.TaskStateCompleted {
					t.Fatalf("%s: SendMessage answered %s", name, jsonString(res))
				}
				tasks[name] = task
				if got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID}); err != nil || got.ID != task.ID {
					t.Errorf("%s: GetTask of its own task: %v", name, err)
				}
			}

			// Another caller's task is as unknown as a task that never was.
			_, err = c.GetTask(bearer, &a2a.GetTaskRequest{ID: tasks["api key"].ID})
			requireError(t, err, a2a.ErrTaskNotFound, -32001)
			_, err = c.GetTask(keyed, &a2a.GetTaskRequest{ID: tasks["bearer"].ID})
			requireError(t, err, a2a.ErrTaskNotFound, -32001)

			// Without credentials, the agent answers 401; the SDK reports
			// the status without reading the JSON-RPC body that goes with it.
			_, err = c.SendMessage(anonymous, &a2a.SendMessageRequest{Message: skillMessage("weather", map[string]any{"city": "Paris"})})
			if err == nil || !strings.Contains(err.Error(), "401") {
				t.Errorf("SendMessage without credentials: %v; want a 401", err)
			}

			// The SDK sends the token and gets the extended card, but
			// v2.3.1 cannot parse its ProtoJSON security requirements
			// either (a2a-go #430, as for the public card above): then the
			// same call is checked on the wire.
			const extended = "The extended card, for authenticated callers"
			ext, err := c.GetExtendedAgentCard(bearer, &a2a.GetExtendedAgentCardRequest{})
			switch {
			case err != nil && strings.Contains(err.Error(), "SecuritySchemeScopes"):
				if got := extendedCardDescription(t, base, p, "Bearer "+issuer.token(t, "sdk-user")); got != extended {
					t.Errorf("GetExtendedAgentCard with a token, on the wire: description %q, want %q", got, extended)
				}
			case err != nil || ext.Description != extended:
				t.Errorf("GetExtendedAgentCard with a token: %v %+v", err, ext)
			}
			if got := extendedCardDescription(t, base, p, ""); got != "" {
				t.Errorf("GetExtendedAgentCard without credentials answered a card: %q", got)
			}
		})
	}
}

// extendedCardDescription asks for the extended card with the given
// Authorization header ("" for none) and returns its description, or ""
// when the agent refused with 401.
func extendedCardDescription(t *testing.T, base string, p protocol, authorization string) string {
	t.Helper()
	method := "GetExtendedAgentCard"
	if p.version == a2av0.Version {
		method = "agent/getAuthenticatedExtendedCard"
	}
	req, err := http.NewRequest(http.MethodPost, base+"/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", string(p.version))
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := recordedHTTPClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Result struct{ Description string }
		Error  *struct{ Code int }
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		t.Fatalf("%s: the answer is not JSON: %v", method, err)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		if answer.Error == nil || answer.Error.Code != -31401 || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: a 401 without its JSON-RPC error or challenge", method)
		}
		return ""
	}
	if resp.StatusCode != http.StatusOK || answer.Error != nil {
		t.Fatalf("%s: %s, error %+v", method, resp.Status, answer.Error)
	}
	return answer.Result.Description
}
