package caddymodule

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/caddy-a2a/caddy-a2a/internal/redistest"
	"github.com/caddy-a2a/caddy-a2a/push/pushtest"
)

// loadPush loads the signed agent with a push block.
func (a *signedAgent) loadPush(push string) {
	a.t.Helper()
	a.loadBlocks("Pushes", "generate_key push-test", push)
}

func (a *signedAgent) call(version, body string) rpcResponse {
	a.t.Helper()
	return (&agent{t: a.t, tester: a.tester, port: a.port}).call(version, body)
}

// TestIntegrationPush registers push configs through both versions, runs
// tasks, and checks that a loopback receiver gets every update in order,
// in the config's version, with a JWT the agent's JWKS verifies.
func TestIntegrationPush(t *testing.T) {
	a := startSignedAgent(t)
	hook := pushtest.NewReceiver(t)
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
			"configuration":{"taskPushNotificationConfig":{"url":%q,"token":"tok-10"}}}}`, hook.URL+"/v10"))
		if r.Error != nil {
			t.Fatalf("error %d: %s", r.Error.Code, r.Error.Message)
		}
		tk := decodeTask10(t, r.Result)
		for i, want := range []string{`{"task":`, `{"artifactUpdate":`, `{"statusUpdate":`} {
			n := hook.Next(t)
			if n.Path != "/v10" || !strings.HasPrefix(string(n.Body), want) {
				t.Fatalf("notification %d: %s %s, want %s…", i, n.Path, n.Body, want)
			}
			if n.Header.Get("Content-Type") != "application/a2a+json" || n.Header.Get("X-A2A-Notification-Token") != "tok-10" {
				t.Errorf("notification %d headers: %v", i, n.Header)
			}
			bearer, _ := strings.CutPrefix(n.Header.Get("Authorization"), "Bearer ")
			pushtest.Verify(t, jwks, bearer, a.url(), hook.URL+"/v10", tk.ID, n.Body)
			if i == 2 && !strings.Contains(string(n.Body), "TASK_STATE_COMPLETED") {
				t.Errorf("last notification: %s", n.Body)
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
			tk.ID, hook.URL+"/v03"))
		want := fmt.Sprintf(`{"taskId":%q,"pushNotificationConfig":{"url":%q,"id":"mine","token":"tok-03","authentication":{"schemes":["Bearer"]}}}`,
			tk.ID, hook.URL+"/v03")
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
			n := hook.Next(t)
			got := decodeTask(t, n.Body)
			if n.Path != "/v03" || got.Kind != "task" || got.ID != tk.ID || got.Status.State != state {
				t.Fatalf("notification %d: %s %s, want the task %s", i, n.Path, n.Body, state)
			}
			if n.Header.Get("Content-Type") != "application/json" || n.Header.Get("X-A2A-Notification-Token") != "tok-03" {
				t.Errorf("notification %d headers: %v", i, n.Header)
			}
			bearer, _ := strings.CutPrefix(n.Header.Get("Authorization"), "Bearer ")
			pushtest.Verify(t, jwks, bearer, a.url(), hook.URL+"/v03", tk.ID, n.Body)
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
			"configuration":{"taskPushNotificationConfig":{"url":%q}}}}`, hook.URL+"/own"))
		if r.Error != nil {
			t.Fatalf("error %d: %s", r.Error.Code, r.Error.Message)
		}
		tk := decodeTask10(t, r.Result)
		for range 3 {
			n := hook.Next(t)
			bearer, _ := strings.CutPrefix(n.Header.Get("Authorization"), "Bearer ")
			tok, _, err := jwt.NewParser().ParseUnverified(bearer, jwt.MapClaims{})
			if err != nil || tok.Header["kid"] != "push-own" {
				t.Fatalf("kid %v, want push-own (%v)", tok.Header["kid"], err)
			}
			pushtest.Verify(t, jwks, bearer, a.url(), hook.URL+"/own", tk.ID, n.Body)
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
		case n := <-hook.Got:
			t.Errorf("a refused config was notified: %s", n.Body)
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
	hook := pushtest.NewReceiver(t)
	portB := freePort(t)
	site := func(port int, name string) string {
		return replicaSite(port, name, a.skills, a.upstream, srv.Addr(), "push-replicas", `signing {
			generate_key
		}
		push {
			allow_insecure
			allow_private
		}`)
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
		{"taskId":%q,"url":%q,"token":"replicated"}}`, tk.ID, hook.URL+"/r"))
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
		n := hook.Next(t)
		if !strings.Contains(string(n.Body), want) || n.Header.Get("X-A2A-Notification-Token") != "replicated" {
			t.Fatalf("notification %d: %s, want %s", i, n.Body, want)
		}
		bearer, _ := strings.CutPrefix(n.Header.Get("Authorization"), "Bearer ")
		// Signed with A's own key (each replica generated one): A, which
		// made the changes, delivered them.
		pushtest.Verify(t, jwksA, bearer, fmt.Sprintf("http://127.0.0.1:%d/a", a.port), hook.URL+"/r", tk.ID, n.Body)
	}
}
