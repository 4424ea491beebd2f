package server_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

func TestAuthenticationRequired(t *testing.T) {
	a := newAuthAgent(t, nil, nil)
	for _, tt := range []struct {
		name, key string
		message   string
	}{
		{"no credentials", "", "authentication required"},
		{"a wrong key", "not-a-key-0123456789", "the credentials presented were not accepted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ans := a.As(tt.key, "SendMessage", map[string]any{"message": message("1.0", "echo", map[string]any{})})
			if ans.Status != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401: %s", ans.Status, ans.Raw)
			}
			if want := `APIKey realm="a2a", in="header", name="X-API-Key"`; len(ans.Challenges) != 1 || ans.Challenges[0] != want {
				t.Errorf("WWW-Authenticate %q, want %q", ans.Challenges, want)
			}
			if ans.Error == nil || ans.Error.Code != a2a.CodeUnauthenticated || ans.Error.Message != tt.message ||
				string(ans.ID) != "null" || !strings.Contains(string(ans.Error.Data), `"UNAUTHENTICATED"`) {
				t.Errorf("body %s; want a JSON-RPC error -31401 %q with id null", ans.Raw, tt.message)
			}
			a.NoUpstreamCall()
		})
	}
	// The card stays public unless configured otherwise.
	resp, err := a.HTTP.Get(a.URL + server.CardPath)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("card: %v %v", resp, err)
	}
	resp.Body.Close()
}

// Each caller sees only its own tasks; another caller's task answers
// exactly like a task that does not exist.
func TestOwnerIsolationBetweenCallers(t *testing.T) {
	a := newAuthAgent(t, nil, nil)
	asked := a.Task(aliceKey, "ask", map[string]any{})
	if stateOf(asked) != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("alice's task: %v", asked)
	}
	id, contextID := asked["id"].(string), asked["contextId"].(string)
	const unknownID = "00000000-0000-4000-8000-000000000000"

	same := func(method string, params func(id string) any) {
		t.Helper()
		theirs := a.As(bobKey, method, params(id))
		unknown := a.As(bobKey, method, params(unknownID))
		if theirs.Status != http.StatusOK || theirs.Error == nil || theirs.Error.Code != a2a.CodeTaskNotFound {
			t.Errorf("%s of alice's task as bob: %d %s; want TaskNotFound", method, theirs.Status, theirs.Raw)
		}
		if got, want := strings.ReplaceAll(theirs.Raw, id, "ID"), strings.ReplaceAll(unknown.Raw, unknownID, "ID"); got != want {
			t.Errorf("%s: alice's task answers bob\n%s\nan unknown task\n%s", method, got, want)
		}
	}
	same("GetTask", func(id string) any { return map[string]any{"id": id} })
	same("CancelTask", func(id string) any { return map[string]any{"id": id} })
	same("SendMessage", func(id string) any {
		m := message("1.0", "ask", map[string]any{"city": "Paris"})
		m["taskId"], m["contextId"] = id, contextID
		return map[string]any{"message": m}
	})
	// A streaming follow-up and a subscription answer the same error as
	// an SSE event.
	for _, method := range []string{"SubscribeToTask", "SendStreamingMessage"} {
		params := map[string]any{"id": id}
		if method == "SendStreamingMessage" {
			m := message("1.0", "ask", map[string]any{"city": "Paris"})
			m["taskId"] = id
			params = map[string]any{"message": m}
		}
		req, _ := http.NewRequest(http.MethodPost, a.URL+"/", strings.NewReader(rpcBody(method, params)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		req.Header.Set("X-API-Key", bobKey)
		resp, err := a.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), `"code":-32001`) {
			t.Errorf("%s of alice's task as bob: %s", method, body)
		}
	}
	list := a.As(bobKey, "ListTasks", map[string]any{"contextId": contextID})
	if list.Error != nil || list.Result["totalSize"] != float64(0) {
		t.Errorf("bob's ListTasks of alice's context: %s", list.Raw)
	}
	// Bob may use the same context id: it is his own conversation.
	m := message("1.0", "echo", map[string]any{})
	m["contextId"] = contextID
	if ans := a.As(bobKey, "SendMessage", map[string]any{"message": m}); ans.Error != nil {
		t.Errorf("bob starting a task in a context id alice uses: %s", ans.Raw)
	}
	a.UpstreamCall()

	// Alice's task is untouched, and hers to finish.
	m = message("1.0", "ask", map[string]any{"city": "Paris"})
	m["taskId"] = id
	done := a.As(aliceKey, "SendMessage", map[string]any{"message": m})
	if done.Error != nil || stateOf(taskOf("1.0", done.Result)) != "TASK_STATE_COMPLETED" {
		t.Fatalf("alice's follow-up: %s", done.Raw)
	}
	if r := a.UpstreamCall(); r.URL.Path != "/ask/Paris" {
		t.Errorf("upstream path %s", r.URL.Path)
	}
	for key, want := range map[string]float64{aliceKey: 1, bobKey: 1} {
		if list := a.As(key, "ListTasks", map[string]any{"contextId": contextID}); list.Result["totalSize"] != want {
			t.Errorf("ListTasks of the shared context id: %s", list.Raw)
		}
	}
}

// A skill's own requirement is checked once the skill is chosen, before a
// task exists or the upstream is called: the spec's authorization error
// (403, -31403) for a caller without the scope.
func TestSkillRequirement(t *testing.T) {
	a := newAuthAgent(t, nil, nil)
	params := map[string]any{"message": message("1.0", "admin", map[string]any{})}
	for _, method := range []string{"SendMessage", "SendStreamingMessage"} {
		ans := a.As(aliceKey, method, params)
		if ans.Status != http.StatusForbidden || ans.Error == nil || ans.Error.Code != a2a.CodeUnauthorized ||
			!strings.Contains(ans.Error.Message, `scheme "key" with scopes [admin]`) || string(ans.ID) != "7" {
			t.Errorf("%s as alice: %d %s; want 403 -31403 naming the scope", method, ans.Status, ans.Raw)
		}
		a.NoUpstreamCall()
	}
	if list := a.As(aliceKey, "ListTasks", map[string]any{}); list.Result["totalSize"] != float64(0) {
		t.Errorf("a refused message left a task: %s", list.Raw)
	}
	if task := a.Task(bobKey, "admin", map[string]any{}); stateOf(task) != "TASK_STATE_COMPLETED" {
		t.Errorf("bob (admin): %v", task)
	}
	a.UpstreamCall()
}

func TestCallerReachesTheSkill(t *testing.T) {
	a := newAuthAgent(t, nil, nil)
	a.Task(aliceKey, "echo", map[string]any{})
	r := a.UpstreamCall()
	if got := r.Header.Get("X-On-Behalf-Of"); got != "alice" {
		t.Errorf("X-On-Behalf-Of = %q, want alice", got)
	}
	if got := r.Header.Get("X-API-Key"); got != "" {
		t.Errorf("the caller's API key reached the upstream: %q", got)
	}

	ans := a.As(aliceKey, "SendMessage", map[string]any{"message": message("1.0", "forwarding", map[string]any{})},
		"X-Trace-Id", "trace-7")
	if ans.Error != nil {
		t.Fatal(ans.Raw)
	}
	r = a.UpstreamCall()
	if got := r.Header.Get("X-Trace-Id"); got != "trace-7" {
		t.Errorf("X-Trace-Id = %q, want it forwarded", got)
	}
	if got := r.Header.Get("X-API-Key"); got != "" {
		t.Errorf("the caller's API key reached the upstream: %q", got)
	}
}

// With anonymous callers admitted, the extended card and the skills listed
// only there still need an authenticated caller.
func TestAnonymousCallers(t *testing.T) {
	a := newAuthAgent(t, []a2a.SecurityRequirement{{}, {"key": nil}}, nil)
	if task := a.Task("", "echo", map[string]any{}); stateOf(task) != "TASK_STATE_COMPLETED" {
		t.Fatalf("anonymous echo: %v", task)
	}
	if r := a.UpstreamCall(); r.Header.Get("X-On-Behalf-Of") != "" {
		t.Errorf("anonymous caller's subject %q", r.Header.Get("X-On-Behalf-Of"))
	}
	// A presented key that fails is refused, not downgraded.
	if ans := a.As("wrong-key-0123456789", "ListTasks", map[string]any{}); ans.Status != http.StatusUnauthorized {
		t.Errorf("wrong key: %d %s", ans.Status, ans.Raw)
	}
	// Anonymous callers share one owner; alice does not see their tasks.
	if list := a.As(aliceKey, "ListTasks", map[string]any{}); list.Result["totalSize"] != float64(0) {
		t.Errorf("alice sees anonymous tasks: %s", list.Raw)
	}

	for _, tt := range []struct{ name, method string }{
		{"extended card", "GetExtendedAgentCard"},
		{"extended skill", "SendMessage"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var params any
			if tt.method == "SendMessage" {
				params = map[string]any{"message": message("1.0", "secret", map[string]any{})}
			}
			ans := a.As("", tt.method, params)
			if ans.Status != http.StatusUnauthorized || ans.Error == nil || ans.Error.Code != a2a.CodeUnauthenticated ||
				len(ans.Challenges) != 1 || !strings.HasPrefix(ans.Challenges[0], "APIKey ") {
				t.Errorf("anonymous: %d %q %s; want 401 with the key's challenge", ans.Status, ans.Challenges, ans.Raw)
			}
			a.NoUpstreamCall()
			if ans := a.As(aliceKey, tt.method, params); ans.Status != http.StatusOK || ans.Error != nil {
				t.Errorf("alice: %d %s", ans.Status, ans.Raw)
			}
		})
	}
	// A message for no skill is rejected with the list of skills: the
	// extended card's only for those who may have it.
	for key, listed := range map[string]bool{"": false, aliceKey: true} {
		m := message("1.0", "", nil)
		delete(m, "metadata")
		m["parts"] = []any{map[string]any{"text": "hello"}}
		ans := a.As(key, "SendMessage", map[string]any{"message": m})
		task := taskOf("1.0", ans.Result)
		if stateOf(task) != "TASK_STATE_REJECTED" || !strings.Contains(ans.Raw, "echo, admin") {
			t.Fatalf("a message for no skill, key %q: %s", key, ans.Raw)
		}
		if strings.Contains(ans.Raw, "secret") != listed {
			t.Errorf("key %q: the rejection lists the extended skill: %v, want %v: %s", key, !listed, listed, ans.Raw)
		}
	}

	ext := a.As(aliceKey, "GetExtendedAgentCard", nil)
	if ext.Result["description"] != "the extended description" {
		t.Errorf("extended card: %s", ext.Raw)
	}
}

func TestProtectedCard(t *testing.T) {
	a := newAuthAgent(t, nil, func(c *server.Config) { c.ProtectCard = true })
	for _, tt := range []struct {
		key    string
		status int
	}{{"", http.StatusUnauthorized}, {"wrong-key-0123456789", http.StatusUnauthorized}, {aliceKey, http.StatusOK}} {
		req, _ := http.NewRequest(http.MethodGet, a.URL+server.CardPath, nil)
		if tt.key != "" {
			req.Header.Set("X-API-Key", tt.key)
		}
		resp, err := a.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("card with key %q: %d %s, want %d", tt.key, resp.StatusCode, body, tt.status)
		}
		if tt.status == http.StatusUnauthorized && (resp.Header.Get("WWW-Authenticate") == "" || !strings.Contains(string(body), "-31401")) {
			t.Errorf("card refusal: %q %s", resp.Header.Get("WWW-Authenticate"), body)
		}
	}
}

// Without an authenticator, nothing that needs one can be configured: a
// requirement that could not be checked is refused, not ignored.
func TestNewNeedsAnAuthenticator(t *testing.T) {
	skills, err := mapping.Parse("skills.yaml", []byte(authSkills), mapping.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer skills.Close()
	manager := tasks.NewManager(tasks.Options{})
	defer manager.Close()
	card, err := cardgen.Build(cardgen.Config{Name: "n", Description: "d", Version: "1", URL: "http://localhost/"})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := cardgen.NewDocument(card)
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]server.Config{
		"skill security": {Skills: skills, Tasks: manager, Card: doc},
		"extended card":  {Skills: skills, Tasks: manager, Card: doc, ExtendedCard: doc},
		"protected card": {Skills: skills, Tasks: manager, Card: doc, ProtectCard: true},
	} {
		if _, err := server.New(cfg); err == nil || !strings.Contains(err.Error(), "authenticator") {
			t.Errorf("%s: err = %v, want one about the authenticator", name, err)
		}
	}
}

// BenchmarkSendMessageAuthenticated is BenchmarkSendMessage (1.0) with an
// API key checked and the caller made the task's owner and the skill's
// caller: what authentication adds to the request path.
func BenchmarkSendMessageAuthenticated(b *testing.B) {
	skills, err := mapping.Parse("bench.yaml", []byte(benchSkills), mapping.Options{Transport: answering(weatherBody)})
	if err != nil {
		b.Fatal(err)
	}
	manager := tasks.NewManager(tasks.Options{MaxTasks: 1000})
	defer manager.Close()
	auth, err := authn.New(authn.Config{Schemes: map[string]*authn.Scheme{"key": {Type: authn.TypeAPIKey, In: "header",
		Name: "X-API-Key", Keys: []authn.APIKey{{Key: aliceKey, Subject: "alice"}, {Key: bobKey, Subject: "bob"}}}}}, authn.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer auth.Close()
	card, err := cardgen.Build(cardgen.Config{Name: "Bench", Description: "Bench", Version: "1", URL: "http://localhost/",
		SecuritySchemes: auth.CardSchemes(), Security: auth.CardRequirements()})
	if err != nil {
		b.Fatal(err)
	}
	doc, err := cardgen.NewDocument(card)
	if err != nil {
		b.Fatal(err)
	}
	h, err := server.New(server.Config{Skills: skills, Tasks: manager, Card: doc, Auth: auth})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-0000000000000000","role":"ROLE_USER","metadata":{"skill":"weather"},"parts":[{"data":{"city":"Paris"}}]}}}`)
	id := body[bytes.Index(body, []byte("m-0000000000000000"))+2:][:16]
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("X-API-Key", bobKey)
	reader := bytes.NewReader(body)
	w := &discardWriter{HeaderMap: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		newMessageNumber(id) // a new message: one sent again does not run
		reader.Reset(body)
		req.Body = io.NopCloser(reader)
		clear(w.HeaderMap)
		h.ServeHTTP(w, req)
		if w.Status != http.StatusOK {
			b.Fatalf("status %d", w.Status)
		}
	}
}
