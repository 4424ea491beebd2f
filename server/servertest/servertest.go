// Package servertest is what the tests of the engine and of its bindings
// share: an agent served on loopback in front of the demo API (or an
// upstream that records what it gets, behind an API key), its JSON-RPC
// requests, an in-memory handler for benchmarks, a task store that fails
// on demand, and an observer that records what it is told.
package servertest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/agent"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// moduleRoot is the module's directory, where the example skills are.
func moduleRoot(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("servertest: the module's directory is unknown")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Agent is an A2A endpoint under test in front of the demo API.
type Agent struct {
	T     *testing.T
	URL   string
	API   *demoapi.API
	HTTP  *http.Client
	Tasks *tasks.Manager
	// Skills are the skills it serves, and Config what its handler was
	// made from, for a test that makes another from it.
	Skills *mapping.Skills
	Config server.Config
	// Handler is the endpoint, for a test that serves it another way.
	Handler http.Handler
}

// NewAgent serves the example skills against the demo API, both on
// loopback. tune may adjust the server configuration.
func NewAgent(t *testing.T, tune func(*server.Config)) *Agent {
	t.Helper()
	api := demoapi.New(demoapi.Options{})
	upstream := httptest.NewServer(api)
	t.Cleanup(upstream.Close)
	a := serveAgent(t, agent.Config{
		SkillsFile: filepath.Join(moduleRoot(t), "examples", "skills.yaml"),
		Skills: mapping.Options{
			UpstreamURL: upstream.URL,
			LookupEnv: func(name string) (string, bool) {
				if name == "DEMO_API_KEY" {
					return demoapi.DefaultAPIKey, true
				}
				return "", false
			},
		},
	}, tune)
	a.API = api
	return a
}

// NewAgentWith serves the skills file src, which names its own upstream,
// on loopback. tune may adjust the server configuration.
func NewAgentWith(t *testing.T, src string, tune func(*server.Config)) *Agent {
	t.Helper()
	return serveAgent(t, agent.Config{SkillsFile: skillsFile(t, "skills.yaml", src)}, tune)
}

// serveAgent serves the agent of cfg on loopback, its card the test
// agent's, its tasks in memory.
func serveAgent(t *testing.T, cfg agent.Config, tune func(*server.Config)) *Agent {
	t.Helper()
	manager := tasks.NewManager(tasks.Options{})
	t.Cleanup(manager.Close)
	front := httptest.NewUnstartedServer(nil)
	cfg.Card = cardgen.Config{Name: "Test Agent", Description: "The demo API as an agent", Version: "1.0.0",
		URL: "http://" + front.Listener.Addr().String() + "/"}
	built := build(t, cfg, manager, tune)
	serve(t, front, built.Handler)
	return &Agent{T: t, URL: front.URL, HTTP: front.Client(), Tasks: manager, Skills: built.Skills, Config: built.config, Handler: built.Handler}
}

// CancelOnCleanup cancels, when the test ends, the tasks still running
// (of the anonymous owner): a test that leaves slow tasks behind does not
// wait for them to end.
func (a *Agent) CancelOnCleanup() {
	a.T.Cleanup(func() {
		list, err := a.Tasks.List("", &a2a.ListTasksRequest{})
		if err != nil {
			a.T.Error(err)
			return
		}
		for _, task := range list.Tasks {
			if !task.Status.State.Terminal() {
				_, _ = a.Tasks.Cancel("", task.ID)
			}
		}
	})
}

// RPCAnswer is a JSON-RPC answer, kept loose so tests see the wire.
type RPCAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result map[string]any  `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// Post sends a raw body with the given version header ("" sends none).
func (a *Agent) Post(version, body string) (*http.Response, []byte) {
	a.T.Helper()
	resp := a.send(context.Background(), version, body)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		a.T.Fatal(err)
	}
	return resp, out
}

// send posts body to the JSON-RPC endpoint under ctx, with the given
// version header ("" sends none), and returns the answer unread.
func (a *Agent) send(ctx context.Context, version, body string) *http.Response {
	a.T.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL+"/", strings.NewReader(body))
	if err != nil {
		a.T.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	resp, err := a.HTTP.Do(req)
	if err != nil {
		a.T.Fatal(err)
	}
	return resp
}

// Call sends one JSON-RPC request and decodes the answer.
func (a *Agent) Call(version, method string, params any) RPCAnswer {
	a.T.Helper()
	resp, body := a.Post(version, RPCBody(method, params))
	if resp.StatusCode != http.StatusOK {
		a.T.Fatalf("%s: HTTP %d: %s", method, resp.StatusCode, body)
	}
	var ans RPCAnswer
	if err := json.Unmarshal(body, &ans); err != nil {
		a.T.Fatalf("%s: answer is not JSON: %v: %s", method, err, body)
	}
	return ans
}

// RPCBody is a JSON-RPC request of method with params.
func RPCBody(method string, params any) string {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Stream sends a streaming request and returns its events as they come.
func (a *Agent) Stream(ctx context.Context, version, method string, params any) (*http.Response, <-chan map[string]any) {
	a.T.Helper()
	resp := a.send(ctx, version, RPCBody(method, params))
	return resp, SSEEvents(ctx, resp)
}

// SSEEvents returns the data of resp's SSE events, decoded, as they come.
func SSEEvents(ctx context.Context, resp *http.Response) <-chan map[string]any {
	events := make(chan map[string]any)
	go func() {
		defer close(events)
		defer resp.Body.Close()
		scanner := bufio.NewScanner(resp.Body)
		for scanner.Scan() {
			line, ok := strings.CutPrefix(scanner.Text(), "data: ")
			if !ok {
				continue
			}
			var ev map[string]any
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				ev = map[string]any{"undecodable": line}
			}
			select {
			case events <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return events
}

// Message builds a user message for a skill, in the wire form of version.
// messageIDs numbers the messages the tests make: each is a new message,
// since one sent again does not run again.
var messageIDs atomic.Int64

func NewMessageID() string { return fmt.Sprint("msg-", messageIDs.Add(1)) }

func Message(version, skill string, data map[string]any) map[string]any {
	m := map[string]any{
		"messageId": NewMessageID(),
		"metadata":  map[string]any{"skill": skill},
	}
	if version == "1.0" {
		m["role"] = "ROLE_USER"
		m["parts"] = []any{map[string]any{"data": data}}
	} else {
		m["kind"] = "message"
		m["role"] = "user"
		m["parts"] = []any{map[string]any{"kind": "data", "data": data}}
	}
	return m
}

// TaskOf unwraps a SendMessage result to the task: 1.0 wraps it, 0.3 not.
func TaskOf(version string, result map[string]any) map[string]any {
	if version == "1.0" {
		task, _ := result["task"].(map[string]any)
		return task
	}
	return result
}

// StateOf is a task's state in the version's spelling.
func StateOf(task map[string]any) string {
	status, _ := task["status"].(map[string]any)
	state, _ := status["state"].(string)
	return state
}

// FailingStore fails as a store does that cannot reach its server
// (UNAVAILABLE): every insert while FailInsert is set, every update while
// FailUpdate is, which an insert sets when FailAfterInsert is, every
// subscription while FailSubscribe is, and every read while FailGet is.
type FailingStore struct {
	tasks.Store
	FailInsert, FailUpdate, FailAfterInsert, FailSubscribe, FailGet atomic.Bool
}

var ErrUnreachable = &a2a.Error{Code: a2a.CodeInternalError, Message: "Internal error", Reason: "UNAVAILABLE",
	Description: "the task store cannot be reached"}

func (s *FailingStore) Insert(ctx context.Context, rec tasks.Record) error {
	if s.FailInsert.Load() {
		return ErrUnreachable
	}
	err := s.Store.Insert(ctx, rec)
	s.FailUpdate.Store(err == nil && s.FailAfterInsert.Load())
	return err
}

func (s *FailingStore) Update(ctx context.Context, id string, fn func(*tasks.Record, tasks.Tx) error) error {
	if s.FailUpdate.Load() {
		return ErrUnreachable
	}
	return s.Store.Update(ctx, id, fn)
}

func (s *FailingStore) Get(ctx context.Context, id string) (tasks.Record, error) {
	if s.FailGet.Load() {
		return tasks.Record{}, ErrUnreachable
	}
	return s.Store.Get(ctx, id)
}

func (s *FailingStore) Subscribe(ctx context.Context, id string) (tasks.Record, *tasks.Subscription, error) {
	if s.FailSubscribe.Load() {
		return tasks.Record{}, nil, ErrUnreachable
	}
	return s.Store.Subscribe(ctx, id)
}

// AgentOnFailingStore is an agent whose tasks are kept by a FailingStore,
// and its task manager.
func AgentOnFailingStore(t *testing.T, tune func(*server.Config)) (*Agent, *FailingStore, *tasks.Manager) {
	store, manager := FailingTasks(t)
	a := NewAgent(t, func(cfg *server.Config) {
		cfg.Tasks = manager
		if tune != nil {
			tune(cfg)
		}
	})
	return a, store, manager
}

// FailingTasks is a task manager whose tasks are kept by a FailingStore,
// in memory, for an agent's cfg.Tasks.
func FailingTasks(t *testing.T) (*FailingStore, *tasks.Manager) {
	opts := tasks.Options{}
	store := &FailingStore{Store: tasks.NewMemoryStore(opts.StoreLimits())}
	opts.Store = store
	manager := tasks.NewManager(opts)
	t.Cleanup(manager.Close)
	return store, manager
}

// ServeH2C lets a test server take HTTP/2 without TLS (h2c) beside
// HTTP/1, as Caddy does with `protocols h1 h2c`: gRPC clients speak it.
func ServeH2C(front *httptest.Server) {
	front.Config.Protocols = new(http.Protocols)
	front.Config.Protocols.SetHTTP1(true)
	front.Config.Protocols.SetUnencryptedHTTP2(true)
}

const (
	AliceKey = "alice-key-0123456789"
	BobKey   = "bob-key-0123456789ab"
)

const AuthSkills = `upstream:
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

// AuthAgent is an endpoint with an API key scheme in front of an upstream
// that records what it gets.
type AuthAgent struct {
	*Agent
	Upstream chan *http.Request
	Auth     *authn.Authenticator
}

// NewAuthAgent serves AuthSkills; require is the agent-wide requirement
// (nil: the key).
func NewAuthAgent(t *testing.T, require []a2a.SecurityRequirement, tune func(*server.Config)) *AuthAgent {
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
			{Key: AliceKey, Subject: "alice", Scopes: []string{"tasks"}},
			{Key: BobKey, Subject: "bob", Scopes: []string{"tasks", "admin"}},
		}}},
		Require: require,
	}, authn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(auth.Close)
	manager := tasks.NewManager(tasks.Options{})
	t.Cleanup(manager.Close)

	front := httptest.NewUnstartedServer(nil)
	built := build(t, agent.Config{
		SkillsFile: skillsFile(t, "skills.yaml", AuthSkills),
		Skills:     mapping.Options{UpstreamURL: upstream.URL},
		Auth:       auth,
		Card:       cardgen.Config{Name: "Auth Agent", Description: "d", Version: "1.0.0", URL: "http://" + front.Listener.Addr().String() + "/"},
		Extended:   &agent.ExtendedCard{Description: "the extended description"},
	}, manager, tune)
	serve(t, front, built.Handler)
	return &AuthAgent{Agent: &Agent{T: t, URL: front.URL, HTTP: front.Client(), Tasks: manager, Skills: built.Skills, Config: built.config, Handler: built.Handler},
		Upstream: seen, Auth: auth}
}

// AuthAnswer is an answer with its HTTP status and challenges.
type AuthAnswer struct {
	RPCAnswer
	Status     int
	Challenges []string
	Raw        string
}

// As sends one JSON-RPC request (1.0) with the API key key ("" sends none)
// and extra headers.
func (a *AuthAgent) As(key, method string, params any, extra ...string) AuthAnswer {
	a.T.Helper()
	req, err := http.NewRequest(http.MethodPost, a.URL+"/", strings.NewReader(RPCBody(method, params)))
	if err != nil {
		a.T.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		req.Header.Set(extra[i], extra[i+1])
	}
	resp, err := a.HTTP.Do(req)
	if err != nil {
		a.T.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		a.T.Fatal(err)
	}
	ans := AuthAnswer{Status: resp.StatusCode, Challenges: resp.Header.Values("WWW-Authenticate"), Raw: string(body)}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		a.T.Fatalf("%s: Content-Type %q: %s", method, ct, body)
	}
	if err := json.Unmarshal(body, &ans.RPCAnswer); err != nil {
		a.T.Fatalf("%s: answer is not JSON: %v: %s", method, err, body)
	}
	return ans
}

// Task sends a message to skill as key and returns the task it gets.
func (a *AuthAgent) Task(key, skill string, data map[string]any) map[string]any {
	a.T.Helper()
	ans := a.As(key, "SendMessage", map[string]any{"message": Message("1.0", skill, data)})
	if ans.Status != http.StatusOK || ans.Error != nil {
		a.T.Fatalf("SendMessage to %s as %q: %d %s", skill, key, ans.Status, ans.Raw)
	}
	return TaskOf("1.0", ans.Result)
}

// UpstreamCall returns the request the upstream got; a blocking
// SendMessage has returned, so it has been recorded.
func (a *AuthAgent) UpstreamCall() *http.Request {
	a.T.Helper()
	select {
	case r := <-a.Upstream:
		return r
	default:
		a.T.Fatal("the upstream got no request")
		return nil
	}
}

func (a *AuthAgent) NoUpstreamCall() {
	a.T.Helper()
	select {
	case r := <-a.Upstream:
		a.T.Errorf("the upstream got %s %s; want no call", r.Method, r.URL)
	default:
	}
}

const BenchSkills = `
upstream:
  url: http://upstream.invalid
  headers:
    X-Api-Key: k3y
skills:
  - id: weather
    name: Weather
    description: Current weather for a city.
    request:
      path: /weather/{args.city}
  - id: user
    name: User
    description: A user by id.
    request:
      path: /users/{args.id}
`

// WeatherBody is a typical small JSON answer of the upstream.
const WeatherBody = `{"city":"Paris","temperatureC":18.5,"conditions":"partly cloudy","humidity":0.62,"wind":{"speedKph":14,"direction":"WSW"}}`

// Answering is an upstream that answers every request in memory with the
// JSON body, so that a benchmark measures the module's own work and not the
// network.
type Answering string

func (body Answering) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, ContentLength: int64(len(body)), Request: req,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(string(body)))}, nil
}

// DiscardWriter is a ResponseWriter that keeps nothing, reusing its header
// map, so the figures are the handler's and not a recorder's.
type DiscardWriter struct {
	HeaderMap http.Header
	Status    int
}

func (w *DiscardWriter) Header() http.Header         { return w.HeaderMap }
func (w *DiscardWriter) WriteHeader(status int)      { w.Status = status }
func (w *DiscardWriter) Write(b []byte) (int, error) { return len(b), nil }

// Deadlines and flushing, as the HTTP server's own writer supports them.
func (w *DiscardWriter) SetReadDeadline(time.Time) error  { return nil }
func (w *DiscardWriter) SetWriteDeadline(time.Time) error { return nil }
func (w *DiscardWriter) FlushError() error                { return nil }

// MemoryHandler serves the skills src (named name), the upstream answered
// in memory by upstream, with the configuration tune makes (nil: none).
func MemoryHandler(b testing.TB, name, src string, upstream http.RoundTripper, tune func(*server.Config)) *server.Handler {
	manager := tasks.NewManager(tasks.Options{MaxTasks: 1000})
	b.Cleanup(manager.Close)
	return build(b, agent.Config{
		SkillsFile: skillsFile(b, name, src),
		Skills:     mapping.Options{Transport: upstream},
		Card:       cardgen.Config{Name: "Bench", Description: "Bench", Version: "1", URL: "http://localhost/"},
	}, manager, tune).Handler
}

// skillsFile writes the skills file src, named name, for t.
func skillsFile(t testing.TB, name, src string) string {
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// build is the agent cfg describes, by the composition root the adapter
// uses, with the task manager manager (unless tune, nil or not, sets
// another in the server configuration).
func build(t testing.TB, cfg agent.Config, manager *tasks.Manager, tune func(*server.Config)) *built {
	if tune != nil {
		tune(&cfg.Server)
	}
	b := new(built)
	cfg.Acquire = func(s *server.Config) error {
		if s.Tasks == nil {
			s.Tasks = manager
		}
		b.config = *s // the last step before the handler is made
		return nil
	}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Skills.Close)
	b.Agent = a
	return b
}

// built is an agent and the server configuration its handler was made of.
type built struct {
	*agent.Agent
	config server.Config
}

// serve serves h on front, over HTTP/1 and h2c, until the test ends.
func serve(t testing.TB, front *httptest.Server, h http.Handler) {
	front.Config.Handler = h
	ServeH2C(front)
	front.Start()
	t.Cleanup(front.Close)
}

// Observations records what a server.Observer is told, one line per call,
// in a channel the test reads (EndRequest comes after the answer is out).
type Observations chan string

type spanKey struct{}

// methodOf is c's method as the observations name it: another protocol's
// by its binding's name for it, an A2A method by its 1.0 name, "" when
// the request did not decode.
func methodOf(c server.Call) string {
	if c.Operation != "" {
		return c.Operation
	}
	return c.Method.Name(a2a.V10)
}

func (o Observations) StartMethod(r *http.Request, c server.Call) context.Context {
	o <- fmt.Sprintf("start %s %s %s", c.Binding, methodOf(c), c.VersionLabel())
	return context.WithValue(r.Context(), spanKey{}, methodOf(c))
}

func (o Observations) EndRequest(ctx context.Context, c server.Call) {
	span, _ := ctx.Value(spanKey{}).(string)
	o <- fmt.Sprintf("end %s %s %d span=%s", methodOf(c), c.VersionLabel(), c.Code, span)
}

func (o Observations) Detach(request, run context.Context) context.Context {
	span, _ := request.Value(spanKey{}).(string)
	o <- "detach span=" + span
	return run
}

func (o Observations) TaskEnded(skill string, state a2a.TaskState) {
	o <- fmt.Sprintf("ended %s %s", skill, state)
}

func (o Observations) TaskRun(skill string, d time.Duration) {
	o <- fmt.Sprintf("run %s %t", skill, d > 0)
}

func (o Observations) AuthFailure(f *authn.Failure) {
	o <- fmt.Sprintf("auth %s %q", f.Scheme, f.Cause)
}

func (o Observations) Annotate(_ context.Context, skill, taskID string) {
	o <- fmt.Sprintf("annotate %s %t", skill, taskID != "")
}

// expect reads the next Observations and compares them with want.
func (o Observations) Expect(t *testing.T, want ...string) {
	t.Helper()
	for _, w := range want {
		select {
		case got := <-o:
			if got != w {
				t.Fatalf("observed %q; want %q", got, w)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("nothing observed; want %q", w)
		}
	}
	select {
	case got := <-o:
		t.Fatalf("observed %q more", got)
	default:
	}
}

// Until reads observations until one starts with prefix, and returns it.
func (o Observations) Until(t *testing.T, prefix string) string {
	t.Helper()
	for {
		select {
		case got := <-o:
			if strings.HasPrefix(got, prefix) {
				return got
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("nothing observed starting with %q", prefix)
		}
	}
}

// MustJSON is v as JSON text.
func MustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// StatusParts is the parts of a task's (or status update's) status message.
func StatusParts(task map[string]any) []map[string]any {
	status, _ := task["status"].(map[string]any)
	msg, _ := status["message"].(map[string]any)
	raw, _ := msg["parts"].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, p := range raw {
		if m, ok := p.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}
