package server_test

import (
	"bytes"
	"context"
	"encoding/json"
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

const (
	aliceKey = "alice-key-0123456789"
	bobKey   = "bob-key-0123456789ab"
)

const authSkills = `upstream:
  url: http://127.0.0.1:1
skills:
  - id: echo
    description: calls the upstream on the caller's behalf
    request:
      path: /echo
      headers:
        X-On-Behalf-Of: "{caller.subject}"
  - id: admin
    description: for admins
    security:
      - key: [admin]
    request: {path: /admin}
  - id: secret
    description: on the extended card only
    extended: true
    request: {path: /secret}
  - id: ask
    description: asks for a city
    arguments:
      city: {type: string, required: true}
    request: {path: "/ask/{args.city}"}
  - id: forwarding
    description: forwards a trace header
    forward_headers: [X-Trace-Id]
    request: {path: /fwd}
`

// authAgent is an endpoint with an API key scheme in front of an upstream
// that records what it gets.
type authAgent struct {
	*agent
	upstream chan *http.Request
	auth     *authn.Authenticator
}

// newAuthAgent serves authSkills; require is the agent-wide requirement
// (nil: the key).
func newAuthAgent(t *testing.T, require []a2a.SecurityRequirement, tune func(*server.Config)) *authAgent {
	t.Helper()
	seen := make(chan *http.Request, 16)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Clone(context.Background())
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(upstream.Close)

	auth, err := authn.New(authn.Config{
		Schemes: map[string]*authn.Scheme{"key": {Type: authn.TypeAPIKey, In: "header", Name: "X-API-Key", Keys: []authn.APIKey{
			{Key: aliceKey, Subject: "alice", Scopes: []string{"tasks"}},
			{Key: bobKey, Subject: "bob", Scopes: []string{"tasks", "admin"}},
		}}},
		Require: require,
	}, authn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(auth.Close)
	skills, err := mapping.Parse("skills.yaml", []byte(authSkills), mapping.Options{
		UpstreamURL: upstream.URL, CheckSecurity: auth.CheckRequirements})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(skills.Close)
	manager := tasks.NewManager(tasks.Options{})
	t.Cleanup(manager.Close)

	front := httptest.NewUnstartedServer(nil)
	cardCfg := cardgen.Config{Name: "Auth Agent", Description: "d", Version: "1.0.0",
		URL:             "http://" + front.Listener.Addr().String() + "/",
		SecuritySchemes: auth.CardSchemes(), Security: auth.CardRequirements(), ExtendedCard: true}
	card, err := cardgen.Build(cardCfg)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := cardgen.NewDocument(card)
	if err != nil {
		t.Fatal(err)
	}
	cardCfg.Description = "the extended description"
	extCard, err := cardgen.Build(cardCfg)
	if err != nil {
		t.Fatal(err)
	}
	extDoc, err := cardgen.NewDocument(extCard)
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{Skills: skills, Tasks: manager, Card: doc, ExtendedCard: extDoc, Auth: auth}
	if tune != nil {
		tune(&cfg)
	}
	h, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	front.Config.Handler = h
	serveH2C(front)
	front.Start()
	t.Cleanup(front.Close)
	return &authAgent{agent: &agent{t: t, url: front.URL, http: front.Client(), tasks: manager, handler: h}, upstream: seen, auth: auth}
}

// authAnswer is an answer with its HTTP status and challenges.
type authAnswer struct {
	rpcAnswer
	status     int
	challenges []string
	raw        string
}

// as sends one JSON-RPC request (1.0) with the API key key ("" sends none)
// and extra headers.
func (a *authAgent) as(key, method string, params any, extra ...string) authAnswer {
	a.t.Helper()
	req, err := http.NewRequest(http.MethodPost, a.url+"/", strings.NewReader(rpcBody(method, params)))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		req.Header.Set(extra[i], extra[i+1])
	}
	resp, err := a.http.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	ans := authAnswer{status: resp.StatusCode, challenges: resp.Header.Values("WWW-Authenticate"), raw: string(body)}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		a.t.Fatalf("%s: Content-Type %q: %s", method, ct, body)
	}
	if err := json.Unmarshal(body, &ans.rpcAnswer); err != nil {
		a.t.Fatalf("%s: answer is not JSON: %v: %s", method, err, body)
	}
	return ans
}

// task sends a message to skill as key and returns the task it gets.
func (a *authAgent) task(key, skill string, data map[string]any) map[string]any {
	a.t.Helper()
	ans := a.as(key, "SendMessage", map[string]any{"message": message("1.0", skill, data)})
	if ans.status != http.StatusOK || ans.Error != nil {
		a.t.Fatalf("SendMessage to %s as %q: %d %s", skill, key, ans.status, ans.raw)
	}
	return taskOf("1.0", ans.Result)
}

// upstreamCall returns the request the upstream got; a blocking
// SendMessage has returned, so it has been recorded.
func (a *authAgent) upstreamCall() *http.Request {
	a.t.Helper()
	select {
	case r := <-a.upstream:
		return r
	default:
		a.t.Fatal("the upstream got no request")
		return nil
	}
}

func (a *authAgent) noUpstreamCall() {
	a.t.Helper()
	select {
	case r := <-a.upstream:
		a.t.Errorf("the upstream got %s %s; want no call", r.Method, r.URL)
	default:
	}
}

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
			ans := a.as(tt.key, "SendMessage", map[string]any{"message": message("1.0", "echo", map[string]any{})})
			if ans.status != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401: %s", ans.status, ans.raw)
			}
			if want := `APIKey realm="a2a", in="header", name="X-API-Key"`; len(ans.challenges) != 1 || ans.challenges[0] != want {
				t.Errorf("WWW-Authenticate %q, want %q", ans.challenges, want)
			}
			if ans.Error == nil || ans.Error.Code != a2a.CodeUnauthenticated || ans.Error.Message != tt.message ||
				string(ans.ID) != "null" || !strings.Contains(string(ans.Error.Data), `"UNAUTHENTICATED"`) {
				t.Errorf("body %s; want a JSON-RPC error -31401 %q with id null", ans.raw, tt.message)
			}
			a.noUpstreamCall()
		})
	}
	// The card stays public unless configured otherwise.
	resp, err := a.http.Get(a.url + server.CardPath)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("card: %v %v", resp, err)
	}
	resp.Body.Close()
}

// Each caller sees only its own tasks; another caller's task answers
// exactly like a task that does not exist.
func TestOwnerIsolationBetweenCallers(t *testing.T) {
	a := newAuthAgent(t, nil, nil)
	asked := a.task(aliceKey, "ask", map[string]any{})
	if stateOf(asked) != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("alice's task: %v", asked)
	}
	id, contextID := asked["id"].(string), asked["contextId"].(string)
	const unknownID = "00000000-0000-4000-8000-000000000000"

	same := func(method string, params func(id string) any) {
		t.Helper()
		theirs := a.as(bobKey, method, params(id))
		unknown := a.as(bobKey, method, params(unknownID))
		if theirs.status != http.StatusOK || theirs.Error == nil || theirs.Error.Code != a2a.CodeTaskNotFound {
			t.Errorf("%s of alice's task as bob: %d %s; want TaskNotFound", method, theirs.status, theirs.raw)
		}
		if got, want := strings.ReplaceAll(theirs.raw, id, "ID"), strings.ReplaceAll(unknown.raw, unknownID, "ID"); got != want {
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
		req, _ := http.NewRequest(http.MethodPost, a.url+"/", strings.NewReader(rpcBody(method, params)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		req.Header.Set("X-API-Key", bobKey)
		resp, err := a.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), `"code":-32001`) {
			t.Errorf("%s of alice's task as bob: %s", method, body)
		}
	}
	list := a.as(bobKey, "ListTasks", map[string]any{"contextId": contextID})
	if list.Error != nil || list.Result["totalSize"] != float64(0) {
		t.Errorf("bob's ListTasks of alice's context: %s", list.raw)
	}
	// Bob may use the same context id: it is his own conversation.
	m := message("1.0", "echo", map[string]any{})
	m["contextId"] = contextID
	if ans := a.as(bobKey, "SendMessage", map[string]any{"message": m}); ans.Error != nil {
		t.Errorf("bob starting a task in a context id alice uses: %s", ans.raw)
	}
	a.upstreamCall()

	// Alice's task is untouched, and hers to finish.
	m = message("1.0", "ask", map[string]any{"city": "Paris"})
	m["taskId"] = id
	done := a.as(aliceKey, "SendMessage", map[string]any{"message": m})
	if done.Error != nil || stateOf(taskOf("1.0", done.Result)) != "TASK_STATE_COMPLETED" {
		t.Fatalf("alice's follow-up: %s", done.raw)
	}
	if r := a.upstreamCall(); r.URL.Path != "/ask/Paris" {
		t.Errorf("upstream path %s", r.URL.Path)
	}
	for key, want := range map[string]float64{aliceKey: 1, bobKey: 1} {
		if list := a.as(key, "ListTasks", map[string]any{"contextId": contextID}); list.Result["totalSize"] != want {
			t.Errorf("ListTasks of the shared context id: %s", list.raw)
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
		ans := a.as(aliceKey, method, params)
		if ans.status != http.StatusForbidden || ans.Error == nil || ans.Error.Code != a2a.CodeUnauthorized ||
			!strings.Contains(ans.Error.Message, `scheme "key" with scopes [admin]`) || string(ans.ID) != "7" {
			t.Errorf("%s as alice: %d %s; want 403 -31403 naming the scope", method, ans.status, ans.raw)
		}
		a.noUpstreamCall()
	}
	if list := a.as(aliceKey, "ListTasks", map[string]any{}); list.Result["totalSize"] != float64(0) {
		t.Errorf("a refused message left a task: %s", list.raw)
	}
	if task := a.task(bobKey, "admin", map[string]any{}); stateOf(task) != "TASK_STATE_COMPLETED" {
		t.Errorf("bob (admin): %v", task)
	}
	a.upstreamCall()
}

func TestCallerReachesTheSkill(t *testing.T) {
	a := newAuthAgent(t, nil, nil)
	a.task(aliceKey, "echo", map[string]any{})
	r := a.upstreamCall()
	if got := r.Header.Get("X-On-Behalf-Of"); got != "alice" {
		t.Errorf("X-On-Behalf-Of = %q, want alice", got)
	}
	if got := r.Header.Get("X-API-Key"); got != "" {
		t.Errorf("the caller's API key reached the upstream: %q", got)
	}

	ans := a.as(aliceKey, "SendMessage", map[string]any{"message": message("1.0", "forwarding", map[string]any{})},
		"X-Trace-Id", "trace-7")
	if ans.Error != nil {
		t.Fatal(ans.raw)
	}
	r = a.upstreamCall()
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
	if task := a.task("", "echo", map[string]any{}); stateOf(task) != "TASK_STATE_COMPLETED" {
		t.Fatalf("anonymous echo: %v", task)
	}
	if r := a.upstreamCall(); r.Header.Get("X-On-Behalf-Of") != "" {
		t.Errorf("anonymous caller's subject %q", r.Header.Get("X-On-Behalf-Of"))
	}
	// A presented key that fails is refused, not downgraded.
	if ans := a.as("wrong-key-0123456789", "ListTasks", map[string]any{}); ans.status != http.StatusUnauthorized {
		t.Errorf("wrong key: %d %s", ans.status, ans.raw)
	}
	// Anonymous callers share one owner; alice does not see their tasks.
	if list := a.as(aliceKey, "ListTasks", map[string]any{}); list.Result["totalSize"] != float64(0) {
		t.Errorf("alice sees anonymous tasks: %s", list.raw)
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
			ans := a.as("", tt.method, params)
			if ans.status != http.StatusUnauthorized || ans.Error == nil || ans.Error.Code != a2a.CodeUnauthenticated ||
				len(ans.challenges) != 1 || !strings.HasPrefix(ans.challenges[0], "APIKey ") {
				t.Errorf("anonymous: %d %q %s; want 401 with the key's challenge", ans.status, ans.challenges, ans.raw)
			}
			a.noUpstreamCall()
			if ans := a.as(aliceKey, tt.method, params); ans.status != http.StatusOK || ans.Error != nil {
				t.Errorf("alice: %d %s", ans.status, ans.raw)
			}
		})
	}
	// A message for no skill is rejected with the list of skills: the
	// extended card's only for those who may have it.
	for key, listed := range map[string]bool{"": false, aliceKey: true} {
		m := message("1.0", "", nil)
		delete(m, "metadata")
		m["parts"] = []any{map[string]any{"text": "hello"}}
		ans := a.as(key, "SendMessage", map[string]any{"message": m})
		task := taskOf("1.0", ans.Result)
		if stateOf(task) != "TASK_STATE_REJECTED" || !strings.Contains(ans.raw, "echo, admin") {
			t.Fatalf("a message for no skill, key %q: %s", key, ans.raw)
		}
		if strings.Contains(ans.raw, "secret") != listed {
			t.Errorf("key %q: the rejection lists the extended skill: %v, want %v: %s", key, !listed, listed, ans.raw)
		}
	}

	ext := a.as(aliceKey, "GetExtendedAgentCard", nil)
	if ext.Result["description"] != "the extended description" {
		t.Errorf("extended card: %s", ext.raw)
	}
}

func TestProtectedCard(t *testing.T) {
	a := newAuthAgent(t, nil, func(c *server.Config) { c.ProtectCard = true })
	for _, tt := range []struct {
		key    string
		status int
	}{{"", http.StatusUnauthorized}, {"wrong-key-0123456789", http.StatusUnauthorized}, {aliceKey, http.StatusOK}} {
		req, _ := http.NewRequest(http.MethodGet, a.url+server.CardPath, nil)
		if tt.key != "" {
			req.Header.Set("X-API-Key", tt.key)
		}
		resp, err := a.http.Do(req)
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
	w := &discardWriter{header: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		newMessageNumber(id) // a new message: one sent again does not run
		reader.Reset(body)
		req.Body = io.NopCloser(reader)
		clear(w.header)
		h.ServeHTTP(w, req)
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}
}
