package caddymodule

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/caddy-a2a/caddy-a2a/internal/redistest"
	"github.com/caddy-a2a/caddy-a2a/keys"
)

// webhook is a push notification receiver on loopback: it passes on each
// POST it gets.
type webhook struct {
	url string
	got chan notified
}

type notified struct {
	path   string
	header http.Header
	body   []byte
}

func newWebhook(t *testing.T) *webhook {
	w := &webhook{got: make(chan notified, 64)}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.got <- notified{r.URL.Path, r.Header.Clone(), body}
	}))
	t.Cleanup(srv.Close)
	w.url = srv.URL
	return w
}

func (w *webhook) next(t *testing.T) notified {
	t.Helper()
	select {
	case n := <-w.got:
		return n
	case <-time.After(15 * time.Second):
		t.Fatal("no push notification arrived")
	}
	return notified{}
}

// loadPush loads the signed agent with a push block.
func (a *signedAgent) loadPush(push string) {
	a.t.Helper()
	initServer(a.t, a.tester, fmt.Sprintf(`{
	admin localhost:%d
	persist_config off
	storage file_system %s
}

:%d {
	bind 127.0.0.1
	a2a {
		skills "%s"
		upstream %s
		url %s
		name "Push Agent"
		description "Pushes"
		signing {
			generate_key push-test
		}
		%s
	}
}
`, adminPort, a.storage, a.port, a.skills, a.upstream, a.url(), push))
}

func (a *signedAgent) call(version, body string) rpcResponse {
	a.t.Helper()
	return (&agent{t: a.t, tester: a.tester, port: a.port}).call(version, body)
}

// verifyNotification checks a notification's JWT as a receiver does: by
// kid from the agent's JWKS, its issuer, audience, lifetime, task and the
// hash of the body.
func verifyNotification(t *testing.T, jwks []byte, token, issuer, aud, taskID string, body []byte) {
	t.Helper()
	var set struct{ Keys []json.RawMessage }
	if err := json.Unmarshal(jwks, &set); err != nil {
		t.Fatal(err)
	}
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(token, claims, func(tok *jwt.Token) (any, error) {
		for _, raw := range set.Keys {
			if k, err := keys.ParseJWK(raw); err == nil && k.ID == tok.Header["kid"] {
				return k.Public, nil
			}
		}
		return nil, fmt.Errorf("kid %v is not in the agent's JWKS", tok.Header["kid"])
	}, jwt.WithIssuer(issuer), jwt.WithAudience(aud), jwt.WithIssuedAt(), jwt.WithExpirationRequired())
	if err != nil {
		t.Fatalf("the notification's JWT: %v", err)
	}
	sum := sha256.Sum256(body)
	if claims["taskId"] != taskID || claims["request_body_sha256"] != hex.EncodeToString(sum[:]) {
		t.Errorf("claims %v, want task %s and the body's hash", claims, taskID)
	}
}

// TestIntegrationPush registers push configs through both versions, runs
// tasks, and checks that a loopback receiver gets every update in order,
// in the config's version, with a JWT the agent's JWKS verifies.
func TestIntegrationPush(t *testing.T) {
	a := startSignedAgent(t)
	hook := newWebhook(t)
	a.loadPush(`push {
			allow_insecure
			allow_private
			initial_backoff 10ms
			max_backoff 20ms
		}`)
	var card struct {
		Capabilities struct {
			PushNotifications bool `json:"pushNotifications"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(a.get("/.well-known/agent-card.json"), &card); err != nil || !card.Capabilities.PushNotifications {
		t.Fatalf("the card does not say pushNotifications: %v", err)
	}
	jwks := a.get("/.well-known/jwks.json")

	t.Run("1.0 config in SendMessage", func(t *testing.T) {
		r := a.call("1.0", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":
			{"messageId":"push-1","role":"ROLE_USER","parts":[{"text":"What's the weather in Paris?"}]},
			"configuration":{"taskPushNotificationConfig":{"url":%q,"token":"tok-10"}}}}`, hook.url+"/v10"))
		if r.Error != nil {
			t.Fatalf("error %d: %s", r.Error.Code, r.Error.Message)
		}
		tk := decodeTask10(t, r.Result)
		for i, want := range []string{`{"task":`, `{"artifactUpdate":`, `{"statusUpdate":`} {
			n := hook.next(t)
			if n.path != "/v10" || !strings.HasPrefix(string(n.body), want) {
				t.Fatalf("notification %d: %s %s, want %s…", i, n.path, n.body, want)
			}
			if n.header.Get("Content-Type") != "application/a2a+json" || n.header.Get("X-A2A-Notification-Token") != "tok-10" {
				t.Errorf("notification %d headers: %v", i, n.header)
			}
			bearer, _ := strings.CutPrefix(n.header.Get("Authorization"), "Bearer ")
			verifyNotification(t, jwks, bearer, a.url(), hook.url+"/v10", tk.ID, n.body)
			if i == 2 && !strings.Contains(string(n.body), "TASK_STATE_COMPLETED") {
				t.Errorf("last notification: %s", n.body)
			}
		}
	})

	t.Run("0.3 config methods", func(t *testing.T) {
		r := a.call("", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":
			{"kind":"message","messageId":"push-2","role":"user","parts":[{"kind":"text","text":"How is the weather?"}]}}}`)
		if r.Error != nil {
			t.Fatalf("error %d: %s", r.Error.Code, r.Error.Message)
		}
		tk := decodeTask(t, r.Result)
		if tk.Status.State != "input-required" {
			t.Fatalf("state %s, want input-required", tk.Status.State)
		}
		set := a.call("", fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tasks/pushNotificationConfig/set","params":
			{"taskId":%q,"pushNotificationConfig":{"id":"mine","url":%q,"token":"tok-03","authentication":{"schemes":["Bearer"]}}}}`,
			tk.ID, hook.url+"/v03"))
		want := fmt.Sprintf(`{"taskId":%q,"pushNotificationConfig":{"url":%q,"id":"mine","token":"tok-03","authentication":{"schemes":["Bearer"]}}}`,
			tk.ID, hook.url+"/v03")
		if set.Error != nil || string(set.Result) != want {
			t.Fatalf("set: %+v %s, want %s", set.Error, set.Result, want)
		}
		if got := a.call("", fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"tasks/pushNotificationConfig/get","params":{"id":%q,"pushNotificationConfigId":"mine"}}`, tk.ID)); string(got.Result) != want {
			t.Errorf("get: %+v %s", got.Error, got.Result)
		}
		if got := a.call("", fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"tasks/pushNotificationConfig/list","params":{"id":%q}}`, tk.ID)); string(got.Result) != "["+want+"]" {
			t.Errorf("list: %+v %s", got.Error, got.Result)
		}
		// The same config read in 1.0.
		if got := a.call("1.0", fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":"ListTaskPushNotificationConfigs","params":{"taskId":%q}}`, tk.ID)); !strings.Contains(string(got.Result), `"configs":[{"url"`) {
			t.Errorf("1.0 list: %+v %s", got.Error, got.Result)
		}

		next := a.call("", fmt.Sprintf(`{"jsonrpc":"2.0","id":6,"method":"message/send","params":{"message":
			{"kind":"message","messageId":"push-3","taskId":%q,"role":"user","parts":[{"kind":"text","text":"Tokyo"}]}}}`, tk.ID))
		if next.Error != nil {
			t.Fatalf("follow-up: %d %s", next.Error.Code, next.Error.Message)
		}
		for i, state := range []string{"working", "completed"} {
			n := hook.next(t)
			got := decodeTask(t, n.body)
			if n.path != "/v03" || got.Kind != "task" || got.ID != tk.ID || got.Status.State != state {
				t.Fatalf("notification %d: %s %s, want the task %s", i, n.path, n.body, state)
			}
			if n.header.Get("Content-Type") != "application/json" || n.header.Get("X-A2A-Notification-Token") != "tok-03" {
				t.Errorf("notification %d headers: %v", i, n.header)
			}
			bearer, _ := strings.CutPrefix(n.header.Get("Authorization"), "Bearer ")
			verifyNotification(t, jwks, bearer, a.url(), hook.url+"/v03", tk.ID, n.body)
		}
		if got := a.call("", fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tasks/pushNotificationConfig/delete","params":{"id":%q,"pushNotificationConfigId":"mine"}}`, tk.ID)); got.Error != nil || string(got.Result) != "null" {
			t.Errorf("delete: %+v %s", got.Error, got.Result)
		}
		if got := a.call("", fmt.Sprintf(`{"jsonrpc":"2.0","id":8,"method":"tasks/pushNotificationConfig/list","params":{"id":%q}}`, tk.ID)); string(got.Result) != "[]" {
			t.Errorf("list after delete: %+v %s", got.Error, got.Result)
		}
	})

	t.Run("own key, published in the JWKS", func(t *testing.T) {
		pem := keyFile(t, t.TempDir(), "push.pem", "ES256")
		a.loadPush(fmt.Sprintf(`push {
			key %s push-own
			allow_insecure
			allow_private
		}`, pem))
		jwks := a.get("/.well-known/jwks.json")
		if !strings.Contains(string(jwks), `"kid":"push-own"`) || !strings.Contains(string(jwks), `"kid":"push-test"`) {
			t.Fatalf("the JWKS does not list both keys: %s", jwks)
		}
		r := a.call("1.0", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":
			{"messageId":"push-own","role":"ROLE_USER","parts":[{"text":"What's the weather in Tokyo?"}]},
			"configuration":{"taskPushNotificationConfig":{"url":%q}}}}`, hook.url+"/own"))
		if r.Error != nil {
			t.Fatalf("error %d: %s", r.Error.Code, r.Error.Message)
		}
		tk := decodeTask10(t, r.Result)
		for range 3 {
			n := hook.next(t)
			bearer, _ := strings.CutPrefix(n.header.Get("Authorization"), "Bearer ")
			tok, _, err := jwt.NewParser().ParseUnverified(bearer, jwt.MapClaims{})
			if err != nil || tok.Header["kid"] != "push-own" {
				t.Fatalf("kid %v, want push-own (%v)", tok.Header["kid"], err)
			}
			verifyNotification(t, jwks, bearer, a.url(), hook.url+"/own", tk.ID, n.body)
		}
	})

	t.Run("receiver URLs refused by default", func(t *testing.T) {
		a.loadPush(`push`)
		for _, url := range []string{"http://example.com/hook", "https://127.0.0.1/hook", "https://[::1]/hook",
			"https://169.254.169.254/latest", "https://10.0.0.1/", "https://localhost/"} {
			r := a.call("1.0", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":
				{"messageId":"push-refused","role":"ROLE_USER","parts":[{"text":"What's the weather in Paris?"}]},
				"configuration":{"taskPushNotificationConfig":{"url":%q}}}}`, url))
			if r.Error == nil || r.Error.Code != -32602 {
				t.Errorf("%s: %+v %s, want -32602", url, r.Error, r.Result)
			}
		}
		select {
		case n := <-hook.got:
			t.Errorf("a refused config was notified: %s", n.body)
		default:
		}
	})

	t.Run("off without the push block", func(t *testing.T) {
		a.load("No push", "generate_key push-test")
		if err := json.Unmarshal(a.get("/.well-known/agent-card.json"), &card); err != nil || card.Capabilities.PushNotifications {
			t.Errorf("the card says pushNotifications without push: %v", err)
		}
		r := a.call("1.0", `{"jsonrpc":"2.0","id":1,"method":"ListTaskPushNotificationConfigs","params":{"taskId":"x"}}`)
		if r.Error == nil || r.Error.Code != -32003 {
			t.Errorf("%+v, want -32003", r.Error)
		}
	})
}

// TestIntegrationPushRedisReplicas: two replicas on one Redis act as one
// agent: a config created on B applies to the task A runs, and A, which
// makes the changes, delivers them.
func TestIntegrationPushRedisReplicas(t *testing.T) {
	srv := redistest.Start(t)
	a := startSignedAgent(t)
	hook := newWebhook(t)
	portB := freePort(t)
	site := func(port int, name string) string {
		return fmt.Sprintf(`
:%d {
	bind 127.0.0.1
	a2a {
		skills "%s"
		upstream %s
		url http://127.0.0.1:%d/%s
		name "Replica %s"
		description "One of two"
		signing {
			generate_key
		}
		push {
			allow_insecure
			allow_private
		}
		tasks {
			redis {
				address %s
				key_prefix push-replicas
			}
		}
	}
}
`, port, a.skills, a.upstream, port, name, name, srv.Addr())
	}
	initServer(t, a.tester, fmt.Sprintf("{\n\tadmin localhost:%d\n\tpersist_config off\n\tstorage file_system %s\n}\n",
		adminPort, a.storage)+site(a.port, "a")+site(portB, "b"))
	on := func(port int) *agent { return &agent{t: t, tester: a.tester, port: port} }

	// A weather question without a city waits for input on A.
	sent := on(a.port).call("1.0", sendMessage("weather", `{}`))
	if sent.Error != nil {
		t.Fatal(sent.Error.Message)
	}
	tk := decodeTask10(t, sent.Result)
	created := on(portB).call("1.0", fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"CreateTaskPushNotificationConfig","params":
		{"taskId":%q,"url":%q,"token":"replicated"}}`, tk.ID, hook.url+"/r"))
	if created.Error != nil {
		t.Fatalf("create on B: %d %s", created.Error.Code, created.Error.Message)
	}
	follow := fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"SendMessage","params":{"message":{"messageId":"m2","role":"ROLE_USER",
		"taskId":%q,"parts":[{"data":{"city":"Paris"}}]}}}`, tk.ID)
	if r := on(a.port).call("1.0", follow); r.Error != nil {
		t.Fatalf("follow-up on A: %s", r.Error.Message)
	}
	jwksA := func() []byte {
		resp, err := a.tester.Client.Get(fmt.Sprintf("http://127.0.0.1:%d/.well-known/jwks.json", a.port))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b
	}()
	for i, want := range []string{"TASK_STATE_WORKING", "artifactUpdate", "TASK_STATE_COMPLETED"} {
		n := hook.next(t)
		if !strings.Contains(string(n.body), want) || n.header.Get("X-A2A-Notification-Token") != "replicated" {
			t.Fatalf("notification %d: %s, want %s", i, n.body, want)
		}
		bearer, _ := strings.CutPrefix(n.header.Get("Authorization"), "Bearer ")
		// Signed with A's own key (each replica generated one): A, which
		// made the changes, delivered them.
		verifyNotification(t, jwksA, bearer, fmt.Sprintf("http://127.0.0.1:%d/a", a.port), hook.url+"/r", tk.ID, n.body)
	}
}
