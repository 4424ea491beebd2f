package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
	"github.com/caddy-a2a/caddy-a2a/internal/redistest"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

func init() { caddy.RegisterModule(countingStore{}) }

// countingStore is a task store module as a third party writes one, with
// no change to this package: the memory store, recording the stores it
// made. In the Caddyfile: store counting <label>.
type countingStore struct {
	Label string `json:"label,omitempty"`
}

// countingStores records what countingStore modules made and closed.
var countingStores struct {
	sync.Mutex
	labels []string        // of the module that made each store
	opts   []tasks.Options // each store was made with
	closed []bool          // each store was closed
	// since is where the current test's stores start: an earlier run's
	// (go test -count) may close during this one's.
	since int
}

func (countingStore) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.a2a.stores.counting", New: func() caddy.Module { return new(countingStore) }}
}

func (c *countingStore) NewStore(opts tasks.Options, _ *zap.Logger) (tasks.Store, func() error, error) {
	countingStores.Lock()
	defer countingStores.Unlock()
	countingStores.labels = append(countingStores.labels, c.Label)
	countingStores.opts = append(countingStores.opts, opts)
	countingStores.closed = append(countingStores.closed, false)
	i := len(countingStores.closed) - 1
	return tasks.NewMemoryStore(opts.StoreLimits()), func() error {
		countingStores.Lock()
		defer countingStores.Unlock()
		countingStores.closed[i] = true
		return nil
	}, nil
}

func (c *countingStore) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the module's name
	if !d.Args(&c.Label) {
		return d.ArgErr()
	}
	return nil
}

// madeStores is what countingStore modules made since the test began, and
// how many of those were closed.
func madeStores() (labels []string, opts []tasks.Options, closed int) {
	countingStores.Lock()
	defer countingStores.Unlock()
	since := countingStores.since
	for _, c := range countingStores.closed[since:] {
		if c {
			closed++
		}
	}
	return slices.Clone(countingStores.labels[since:]), slices.Clone(countingStores.opts[since:]), closed
}

// A store module of a third party, registered in http.handlers.a2a.stores,
// is named by tasks.store: it makes the store with the tasks limits, the
// store is kept across a reload that keeps the url (the module of the new
// config makes none), and closed once no loaded config uses it.
func TestIntegrationStoreModule(t *testing.T) {
	t.Setenv("DEMO_API_KEY", testAPIKey)
	countingStores.Lock()
	countingStores.since = len(countingStores.labels)
	countingStores.Unlock()
	skills, err := filepath.Abs(filepath.Join("..", "examples", "skills.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, skills, demoapi.New(demoapi.Options{APIKey: testAPIKey}))
	store := func(label string) string { return "tasks {\n max_tasks 7\n store counting " + label + "\n }" }
	a.loadWith(a.publicURL(), "First", store("first"))

	sent := a.call("1.0", sendMessage("weather", `{"city":"Paris"}`))
	if sent.Error != nil {
		t.Fatalf("SendMessage: error %d: %s", sent.Error.Code, sent.Error.Message)
	}
	id := decodeTask10(t, sent.Result).ID
	labels, opts, closed := madeStores()
	if len(labels) != 1 || labels[0] != "first" || closed != 0 {
		t.Fatalf("after the first load: stores made by %q, %d closed; want one, by first, none closed", labels, closed)
	}
	// No security: anonymous callers may use the whole store.
	if opts[0].MaxTasks != 7 || opts[0].MaxLiveAnonymous != 7 {
		t.Errorf("the store was made with max_tasks %d and max_live_anonymous %d, want 7 and 7", opts[0].MaxTasks, opts[0].MaxLiveAnonymous)
	}

	a.loadWith(a.publicURL(), "Second", store("second"))
	if r := a.call("1.0", fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":%q}}`, id)); r.Error != nil {
		t.Errorf("GetTask after the reload: error %d: %s", r.Error.Code, r.Error.Message)
	}
	if labels, _, closed := madeStores(); len(labels) != 1 || closed != 0 {
		t.Errorf("after a reload that keeps the url: stores made by %q, %d closed; want the first kept", labels, closed)
	}

	a.loadWith(fmt.Sprintf("http://127.0.0.1:%d/", a.port), "Another agent", store("third"))
	if labels, _, closed := madeStores(); len(labels) != 2 || labels[1] != "third" || closed != 1 {
		t.Errorf("after a reload with another url: stores made by %q, %d closed; want a new one by third, the first closed", labels, closed)
	}
}

// The redis store module, named by tasks.store, is the store the tasks
// block's redis block makes: an agent with one and an agent with the other
// on the same Redis and key_prefix share their tasks.
func TestIntegrationStoreModuleRedis(t *testing.T) {
	srv := redistest.Start(t)
	a := startAgent(t)
	portB := freePort(t)
	site := func(port int, name string) string {
		return replicaSite(port, name, a.skills, a.upstream, srv.Addr(), "modules", "")
	}
	withModule := strings.Replace(site(a.port, "a"), "redis {", "store redis {", 1)
	initServer(t, a.tester, fmt.Sprintf("{\n\tadmin localhost:%d\n\tpersist_config off\n}\n", adminPort)+withModule+site(portB, "b"))

	sent := a.postTo(a.port, sendMessage("weather", `{"city":"Paris"}`))
	if sent.Error != nil {
		t.Fatalf("SendMessage on the agent with store redis: error %d: %s", sent.Error.Code, sent.Error.Message)
	}
	id := decodeTask10(t, sent.Result).ID
	got := a.postTo(portB, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":%q}}`, id))
	if got.Error != nil {
		t.Fatalf("GetTask on the agent with the redis block: error %d: %s", got.Error.Code, got.Error.Message)
	}
	if tk := decodeTask(t, got.Result); tk.ID != id || tk.Status.State != "TASK_STATE_COMPLETED" {
		t.Errorf("GetTask on the agent with the redis block: %s, want task %s completed", got.Result, id)
	}
}

// In JSON, tasks.store names the module by its "module" member; memory is
// the default store, and a name in the namespace that is no module fails
// the provisioning, naming it.
func TestStoreModuleJSON(t *testing.T) {
	t.Setenv("DEMO_API_KEY", testAPIKey)
	upstream := httptest.NewServer(demoapi.New(demoapi.Options{APIKey: testAPIKey}))
	defer upstream.Close()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	handler := func(store string) *Handler {
		return &Handler{Skills: filepath.Join("..", "examples", "skills.yaml"), Upstream: upstream.URL,
			URL: "https://agent.example.com/" + store, Name: "Test Agent", Description: "Provisioned by a test",
			Tasks: &TasksConfig{StoreRaw: json.RawMessage(`{"module":"` + store + `"}`)}}
	}

	h := handler("memory")
	if err := h.Provision(ctx); err != nil {
		t.Fatalf("Provision with the memory module: %v", err)
	}
	defer h.Cleanup()
	sent := rpc(t, h, sendMessage("weather", `{"city":"Paris"}`))
	if sent.Error != nil {
		t.Fatalf("SendMessage: error %d: %s", sent.Error.Code, sent.Error.Message)
	}
	if r := getTask(t, h, decodeTask10(t, sent.Result).ID); r.Error != nil {
		t.Errorf("GetTask: error %d: %s", r.Error.Code, r.Error.Message)
	}

	none := handler("postgres")
	err := none.Provision(ctx)
	defer none.Cleanup()
	if err == nil || !strings.Contains(err.Error(), "tasks: store: ") || !strings.Contains(err.Error(), "http.handlers.a2a.stores.postgres") {
		t.Errorf("Provision with an unknown store module: %v; want an error naming http.handlers.a2a.stores.postgres", err)
	}
	if _, held := stores.References(none.URL); held {
		t.Errorf("a failed Provision left the store of %s taken", none.URL)
	}
}
