package server_test

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
	"strings"
	"sync/atomic"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// agent is an A2A endpoint under test in front of the demo API.
type agent struct {
	t     *testing.T
	url   string
	api   *demoapi.API
	http  *http.Client
	tasks *tasks.Manager
	// handler is the endpoint, for a test that serves it another way.
	handler http.Handler
}

// newAgent serves the example skills against the demo API, both on
// loopback. tune may adjust the server configuration.
func newAgent(t *testing.T, tune func(*server.Config)) *agent {
	t.Helper()
	api := demoapi.New(demoapi.Options{})
	upstream := httptest.NewServer(api)
	t.Cleanup(upstream.Close)

	src, err := os.ReadFile(filepath.Join("..", "examples", "skills.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	skills, err := mapping.Parse("skills.yaml", src, mapping.Options{
		UpstreamURL: upstream.URL,
		LookupEnv: func(name string) (string, bool) {
			if name == "DEMO_API_KEY" {
				return demoapi.DefaultAPIKey, true
			}
			return "", false
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(skills.Close)

	manager := tasks.NewManager(tasks.Options{})
	t.Cleanup(manager.Close)

	front := httptest.NewUnstartedServer(nil)
	card, err := cardgen.Build(cardgen.Config{
		Name: "Test Agent", Description: "The demo API as an agent", Version: "1.0.0",
		URL: "http://" + front.Listener.Addr().String() + "/",
	})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := cardgen.NewDocument(card)
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{Skills: skills, Tasks: manager, Card: doc}
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
	return &agent{t: t, url: front.URL, api: api, http: front.Client(), tasks: manager, handler: h}
}

// cancelOnCleanup cancels, when the test ends, the tasks still running
// (of the anonymous owner): a test that leaves slow tasks behind does not
// wait for them to end.
func (a *agent) cancelOnCleanup() {
	a.t.Cleanup(func() {
		list, err := a.tasks.List("", &a2a.ListTasksRequest{})
		if err != nil {
			a.t.Error(err)
			return
		}
		for _, task := range list.Tasks {
			if !task.Status.State.Terminal() {
				_, _ = a.tasks.Cancel("", task.ID)
			}
		}
	})
}

// rpcAnswer is a JSON-RPC answer, kept loose so tests see the wire.
type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result map[string]any  `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// post sends a raw body with the given version header ("" sends none).
func (a *agent) post(version, body string) (*http.Response, []byte) {
	a.t.Helper()
	req, err := http.NewRequest(http.MethodPost, a.url+"/", strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	return resp, out
}

// call sends one JSON-RPC request and decodes the answer.
func (a *agent) call(version, method string, params any) rpcAnswer {
	a.t.Helper()
	resp, body := a.post(version, rpcBody(method, params))
	if resp.StatusCode != http.StatusOK {
		a.t.Fatalf("%s: HTTP %d: %s", method, resp.StatusCode, body)
	}
	var ans rpcAnswer
	if err := json.Unmarshal(body, &ans); err != nil {
		a.t.Fatalf("%s: answer is not JSON: %v: %s", method, err, body)
	}
	return ans
}

func rpcBody(method string, params any) string {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// stream sends a streaming request and returns its events as they come.
func (a *agent) stream(ctx context.Context, version, method string, params any) (*http.Response, <-chan map[string]any) {
	a.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url+"/", strings.NewReader(rpcBody(method, params)))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	return resp, sseEvents(ctx, resp)
}

// sseEvents returns the data of resp's SSE events, decoded, as they come.
func sseEvents(ctx context.Context, resp *http.Response) <-chan map[string]any {
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

// message builds a user message for a skill, in the wire form of version.
// messageIDs numbers the messages the tests make: each is a new message,
// since one sent again does not run again.
var messageIDs atomic.Int64

func newMessageID() string { return fmt.Sprint("msg-", messageIDs.Add(1)) }

func message(version, skill string, data map[string]any) map[string]any {
	m := map[string]any{
		"messageId": newMessageID(),
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

// methodName is m's name in the version the tests speak.
func methodName(version string, m a2a.Method) string {
	v, err := a2a.ParseVersion(version)
	if err != nil {
		panic(err)
	}
	return m.Name(v)
}

// taskOf unwraps a SendMessage result to the task: 1.0 wraps it, 0.3 not.
func taskOf(version string, result map[string]any) map[string]any {
	if version == "1.0" {
		task, _ := result["task"].(map[string]any)
		return task
	}
	return result
}

// stateOf is a task's state in the version's spelling.
func stateOf(task map[string]any) string {
	status, _ := task["status"].(map[string]any)
	state, _ := status["state"].(string)
	return state
}

// wireState spells a state as version writes it.
func wireState(version string, s a2a.TaskState) string {
	if version == "1.0" {
		return "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(s.String(), "-", "_"))
	}
	return s.String()
}

var versions = []string{"", "1.0"}

func versionName(v string) string {
	if v == "" {
		return "0.3"
	}
	return v
}

// failingStore fails as a store does that cannot reach its server
// (UNAVAILABLE): every insert while insert is set, every update while
// update is, which an insert sets when afterInsert is, and every
// subscription while subscribe is.
type failingStore struct {
	tasks.Store
	insert, update, afterInsert, subscribe atomic.Bool
}

var errUnreachable = &a2a.Error{Code: a2a.CodeInternalError, Message: "Internal error", Reason: "UNAVAILABLE",
	Description: "the task store cannot be reached"}

func (s *failingStore) Insert(ctx context.Context, rec tasks.Record) error {
	if s.insert.Load() {
		return errUnreachable
	}
	err := s.Store.Insert(ctx, rec)
	s.update.Store(err == nil && s.afterInsert.Load())
	return err
}

func (s *failingStore) Update(ctx context.Context, id string, fn func(*tasks.Record, tasks.Tx) error) error {
	if s.update.Load() {
		return errUnreachable
	}
	return s.Store.Update(ctx, id, fn)
}

func (s *failingStore) Subscribe(ctx context.Context, id string) (tasks.Record, *tasks.Subscription, error) {
	if s.subscribe.Load() {
		return tasks.Record{}, nil, errUnreachable
	}
	return s.Store.Subscribe(ctx, id)
}

// agentOnFailingStore is an agent whose tasks are kept by a failingStore,
// and its task manager.
func agentOnFailingStore(t *testing.T, tune func(*server.Config)) (*agent, *failingStore, *tasks.Manager) {
	store := &failingStore{}
	var manager *tasks.Manager
	a := newAgent(t, func(cfg *server.Config) {
		opts := tasks.Options{}
		store.Store = tasks.NewMemoryStore(opts.StoreLimits())
		opts.Store = store
		manager = tasks.NewManager(opts)
		t.Cleanup(manager.Close)
		cfg.Tasks = manager
		if tune != nil {
			tune(cfg)
		}
	})
	return a, store, manager
}
