package caddymodule

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
	"github.com/caddy-a2a/caddy-a2a/push"
	"github.com/caddy-a2a/caddy-a2a/push/pushtest"
)

// loadAllBindings (re)loads the signed agent with JSON-RPC, HTTP+JSON at
// /rest and gRPC on the same port, and more of the a2a block (push, tasks).
func (a *signedAgent) loadAllBindings(more string) {
	a.t.Helper()
	initServer(a.t, a.tester, allBindingsConfig(a.port, a.skills, a.upstream, a.url(), "storage file_system "+a.storage,
		`description "Push bounds"
		signing {
			generate_key push-bounds
		}
		`+more))
}

// devReceiverExample is the push block docs/push.md gives for a receiver on
// loopback, for the receiver port 9000.
func devReceiverExample(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../docs/push.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "### A receiver on loopback, for development")
	_, block, _ := strings.Cut(section, "```caddyfile\n")
	block, _, found := strings.Cut(block, "```")
	if !found || !strings.Contains(block, ":9000") {
		t.Fatalf("docs/push.md has no Caddyfile example for a receiver on port 9000:\n%s", section)
	}
	return block
}

// withConfig is a blocking SendMessage (the weather in Paris, which
// completes) that registers a push config with url.
func withConfig(url string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":%q,"role":"ROLE_USER",
		"metadata":{"skill":"weather"},"parts":[{"data":{"city":"Paris"}}]},
		"configuration":{"taskPushNotificationConfig":{"url":%q}}}}`, newMessageID(), url)
}

// TestIntegrationPushDevelopmentReceiver: the example docs/push.md gives
// for a development receiver on loopback works as it is written: both of
// its origins are notified, and nothing else is.
func TestIntegrationPushDevelopmentReceiver(t *testing.T) {
	a := startSignedAgent(t)
	hook := pushtest.NewReceiver(t)
	port := hook.URL[strings.LastIndexByte(hook.URL, ':')+1:]
	a.loadAllBindings(strings.ReplaceAll(devReceiverExample(t), ":9000", ":"+port))

	for _, url := range []string{"http://127.0.0.1:" + port + "/dev", "http://localhost:" + port + "/dev"} {
		if r := a.call("1.0", withConfig(url)); r.Error != nil {
			t.Fatalf("%s: error %d: %s", url, r.Error.Code, r.Error.Message)
		}
		for _, want := range []string{`{"task":`, `{"artifactUpdate":`, `{"statusUpdate":`} {
			if n := hook.Next(t); n.Path != "/dev" || !strings.HasPrefix(string(n.Body), want) {
				t.Fatalf("%s: notification %s %.60s, want %s…", url, n.Path, n.Body, want)
			}
		}
	}
	other := freePort(t)
	for _, url := range []string{fmt.Sprintf("http://127.0.0.1:%d/dev", other), "http://10.0.0.1:" + port + "/dev",
		"https://127.0.0.1:" + port + "/dev"} {
		if r := a.call("1.0", withConfig(url)); r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("%s: %+v, want -32602", url, r.Error)
		}
	}
}

// TestIntegrationPushHeadersRefusedInEveryBinding: a token, scheme or
// credentials that a header cannot carry (CR, LF) is refused when the
// config is created, in each binding, as invalid params; the same config
// without them is taken.
func TestIntegrationPushHeadersRefusedInEveryBinding(t *testing.T) {
	a := startSignedAgent(t)
	hook := pushtest.NewReceiver(t)
	a.loadAllBindings(`push {
			allow_insecure
			allow_private
		}`)
	waiting := a.call("1.0", sendMessage("weather", `{}`)) // input-required: it takes configs
	if waiting.Error != nil {
		t.Fatal(waiting.Error.Message)
	}
	taskID := decodeTask10(t, waiting.Result).ID
	const injected = "x\r\nX-Injected: 1"

	t.Run("JSON-RPC 1.0", func(t *testing.T) {
		for _, tc := range []struct{ auth, token string }{
			{`{"scheme":"Bearer","credentials":` + strconv.Quote(injected) + `}`, ""},
			{`{"scheme":"Bearer\nX-Injected: 1","credentials":"x"}`, ""},
			{`{"scheme":"Bearer","credentials":"x"}`, injected},
		} {
			create := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":
				{"taskId":%q,"url":%q,"token":%q,"authentication":%s}}`, taskID, hook.URL, tc.token, tc.auth)
			if r := a.call("1.0", create); r.Error == nil || r.Error.Code != -32602 {
				t.Errorf("create with %s, token %q: %+v %s, want -32602", tc.auth, tc.token, r.Error, r.Result)
			}
		}
		send := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER",
			"metadata":{"skill":"weather"},"parts":[{"data":{"city":"Paris"}}]},"configuration":{"taskPushNotificationConfig":
			{"url":%q,"authentication":{"scheme":"Basic","credentials":%q}}}}}`, hook.URL, injected)
		if r := a.call("1.0", send); r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("SendMessage with the config: %+v, want -32602", r.Error)
		}
		ok := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":
			{"taskId":%q,"url":%q,"token":"t","authentication":{"scheme":"Bearer","credentials":"x"}}}`, taskID, hook.URL)
		if r := a.call("1.0", ok); r.Error != nil {
			t.Errorf("a config without CR or LF: %d %s", r.Error.Code, r.Error.Message)
		}
	})

	t.Run("JSON-RPC 0.3", func(t *testing.T) {
		set := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/set","params":
			{"taskId":%q,"pushNotificationConfig":{"url":%q,"authentication":{"schemes":["Bearer"],"credentials":%q}}}}`,
			taskID, hook.URL, injected)
		if r := a.call("", set); r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("set: %+v %s, want -32602", r.Error, r.Result)
		}
	})

	t.Run("HTTP+JSON", func(t *testing.T) {
		body := fmt.Sprintf(`{"url":%q,"authentication":{"scheme":"Bearer","credentials":%q}}`, hook.URL, injected)
		req, err := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/rest/tasks/%s/pushNotificationConfigs", a.port, taskID),
			strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		resp, err := a.tester.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(answer), "control character") {
			t.Errorf("create: %s %s, want 400 naming the control character", resp.Status, answer)
		}
	})

	t.Run("gRPC", func(t *testing.T) {
		conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", a.port), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		c := a2apb.NewA2AServiceClient(conn)
		ctx := metadata.AppendToOutgoingContext(t.Context(), "a2a-version", "1.0")
		_, err = c.CreateTaskPushNotificationConfig(ctx, &a2apb.TaskPushNotificationConfig{TaskId: taskID, Url: hook.URL,
			Authentication: &a2apb.AuthenticationInfo{Scheme: "Bearer", Credentials: injected}})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("create: %v, want InvalidArgument", err)
		}
		if _, err := c.CreateTaskPushNotificationConfig(ctx, &a2apb.TaskPushNotificationConfig{TaskId: taskID, Url: hook.URL,
			Authentication: &a2apb.AuthenticationInfo{Scheme: "Bearer", Credentials: "x"}}); err != nil {
			t.Errorf("a config without CR or LF: %v", err)
		}
	})
}

// TestIntegrationPushBudgetFromTheTaskStore: without max_bytes, push holds
// at most a quarter of tasks.max_bytes. With 1 MiB for the tasks, push has
// 256 KiB: receivers that hang hold two 100 KiB notifications, and the
// third is dropped, which the metrics count.
func TestIntegrationPushBudgetFromTheTaskStore(t *testing.T) {
	a := startSignedAgent(t)
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) })
	a.loadAllBindings(`tasks {
			max_bytes 1MiB
			max_live_bytes_per_client 256KiB
		}
		push {
			allow_insecure
			allow_private
		}`)

	dropped := func() float64 {
		return sample(scrape(t), "caddy_a2a_push_deliveries_total", "outcome", "dropped")
	}
	before := dropped()
	text := strings.Repeat("x", 100<<10)
	for i := range 3 {
		send := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"big-%d","role":"ROLE_USER",
			"metadata":{"skill":"weather"},"parts":[{"data":{"city":"Paris"}},{"text":%q}]},
			"configuration":{"taskPushNotificationConfig":{"url":%q}}}}`, i, text, hang.URL)
		if r := a.call("1.0", send); r.Error != nil {
			t.Fatalf("message %d: error %d: %s", i, r.Error.Code, r.Error.Message)
		}
	}
	// Each change is handed to the sender before the blocking answer is
	// written: every drop is counted by now.
	if got := dropped() - before; got < 1 {
		t.Errorf("%v notifications dropped, want the third task's first (over a quarter of tasks.max_bytes)", got)
	}
}

// TestValidatePushOrigins: an allowed origin with a path is refused when the
// config loads, naming the option and the value, rather than its path
// silently dropped; so are a negative max_bytes and a scheme other than
// http or https.
func TestValidatePushOrigins(t *testing.T) {
	for _, tc := range []struct {
		push PushConfig
		want string
	}{
		{PushConfig{Config: push.Config{AllowedOrigins: []string{"http://127.0.0.1:9000", "https://hooks.example.com/"}, MaxBytes: 1 << 20}}, ""},
		{PushConfig{Config: push.Config{AllowedOrigins: []string{"http://127.0.0.1:9000/hook"}}},
			`push: allowed_origins: "http://127.0.0.1:9000/hook" is not an origin alone`},
		{PushConfig{Config: push.Config{AllowedOrigins: []string{"file://hooks"}}}, `push: allowed_origins: "file://hooks" is not an http or https origin`},
		{PushConfig{Config: push.Config{MaxBytes: -1}}, "max_bytes"},
	} {
		h := validHandler()
		h.Signing = &SigningConfig{GenerateKey: &GeneratedKey{}}
		h.Push = &tc.push
		err := h.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.push, err, tc.want)
		}
	}
}
