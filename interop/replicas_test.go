package interop_test

import (
	"context"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReplicasBehindLoadBalancer: two Caddy replicas that share one Redis
// (tasks { redis { … } }) behind a third Caddy, a plain round-robin
// reverse_proxy, act as one agent for the official Go client (JSON-RPC,
// 1.0): consecutive requests alternate between the replicas, and every step
// of the flow passes whichever replica serves it — a task is read, listed,
// continued, subscribed to and canceled on the replica that did not run it.
func TestReplicasBehindLoadBalancer(t *testing.T) {
	cl := startReplicas(t)
	c, trail := replicaClient(t, cl.frontURL)

	t.Run("send and get", func(t *testing.T) {
		task := sendForTask(t, c, skillMessage("weather", map[string]any{"city": "Paris"}))
		sentOn := trail.last()
		if task.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("task state %s, want completed: %s", task.Status.State, jsonString(task))
		}
		requireWeatherArtifact(t, task.Artifacts)

		got, err := c.GetTask(ctxTimeout(t, 10*time.Second), &a2a.GetTaskRequest{ID: task.ID})
		if err != nil {
			t.Fatalf("GetTask: %v", err)
		}
		trail.requireOther(t, "GetTask", sentOn)
		if got.ID != task.ID || got.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("GetTask on replica %s: task %s state %s, want %s completed", trail.last(), got.ID, got.Status.State, task.ID)
		}
		requireWeatherArtifact(t, got.Artifacts)
		ids := messageIDs(got.History)
		if len(ids) == 0 {
			t.Fatalf("GetTask on replica %s: no history", trail.last())
		}
		requireHistoryLength(t, v10, c, task.ID, ids)
	})

	t.Run("list", func(t *testing.T) {
		contextID := a2a.NewContextID()
		var want []a2a.TaskID
		var sentOn []string
		for _, city := range []string{"Paris", "London"} {
			m := skillMessage("weather", map[string]any{"city": city})
			m.ContextID = contextID
			want = append(want, sendForTask(t, c, m).ID)
			sentOn = append(sentOn, trail.last())
		}
		if sentOn[0] == sentOn[1] {
			t.Fatalf("both tasks ran on replica %s: the front does not alternate", sentOn[0])
		}
		// Twice, so that each replica lists the task the other one ran.
		for range 2 {
			list, err := c.ListTasks(ctxTimeout(t, 10*time.Second), &a2a.ListTasksRequest{ContextID: contextID})
			if err != nil {
				t.Fatalf("ListTasks on replica %s: %v", trail.last(), err)
			}
			if got := taskIDs(list.Tasks); !sameSet(got, want) || list.TotalSize != 2 {
				t.Fatalf("ListTasks on replica %s: tasks %v totalSize %d, want %v and 2", trail.last(), got, list.TotalSize, want)
			}
		}
	})

	t.Run("stream", func(t *testing.T) {
		m := skillMessage("weather", map[string]any{"city": "Paris"})
		events, err := collect(c.SendStreamingMessage(ctxTimeout(t, 30*time.Second), &a2a.SendMessageRequest{Message: m}))
		if err != nil {
			t.Fatalf("stream on replica %s: %v after %d events:%s", trail.last(), err, len(events), describe(events))
		}
		streamedOn := trail.last()
		taskID := requireStreamShape(t, events, a2a.TaskStateCompleted, true)
		got, err := c.GetTask(ctxTimeout(t, 10*time.Second), &a2a.GetTaskRequest{ID: taskID})
		if err != nil {
			t.Fatalf("GetTask %s: %v", taskID, err)
		}
		trail.requireOther(t, "GetTask after the stream", streamedOn)
		if got.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("GetTask after the stream: state %s, want completed", got.Status.State)
		}
		requireWeatherArtifact(t, got.Artifacts)
	})

	t.Run("multi-turn", func(t *testing.T) {
		first := skillMessage("weather", map[string]any{})
		task := sendForTask(t, c, first)
		askedOn := trail.last()
		if task.Status.State != a2a.TaskStateInputRequired {
			t.Fatalf("weather without a city: state %s, want input-required: %s", task.Status.State, jsonString(task))
		}
		follow := a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewDataPart(map[string]any{"city": "Paris"}))
		done := sendForTask(t, c, follow)
		trail.requireOther(t, "the follow-up", askedOn)
		if done.ID != task.ID || done.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("the follow-up on replica %s answered task %s in state %s, want %s completed: %s", trail.last(), done.ID, done.Status.State, task.ID, jsonString(done))
		}
		requireWeatherArtifact(t, done.Artifacts)
		full, err := c.GetTask(ctxTimeout(t, 10*time.Second), &a2a.GetTaskRequest{ID: task.ID})
		if err != nil {
			t.Fatalf("GetTask: %v", err)
		}
		ids := messageIDs(full.History)
		if len(ids) < 3 || ids[0] != first.ID || !slices.Contains(ids, follow.ID) {
			t.Fatalf("history %v: want the first message %s, the agent's question, then the follow-up %s", ids, first.ID, follow.ID)
		}
	})

	// MCP at 2026-07-28 needs no session, so no affinity: a call's task
	// is read over A2A on the other replica, and a call that asks for a
	// missing argument is answered, by the client's second call, on the
	// replica that did not ask.
	t.Run("mcp", func(t *testing.T) {
		ctx := ctxTimeout(t, 30*time.Second)
		mcpTrail := &replicaTrail{}
		httpClient := recordedHTTPClient(t)
		httpClient.Transport = servedByTransport{base: httpClient.Transport, trail: mcpTrail}
		var askedOn string
		client := mcp.NewClient(&mcp.Implementation{Name: "caddy-a2a-interop", Version: "1.0.0"}, &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				askedOn = mcpTrail.last()
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"city": "London"}}, nil
			},
		})
		session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: strings.TrimSuffix(cl.frontURL, "/") + "/mcp",
			HTTPClient: httpClient}, nil)
		if err != nil {
			t.Fatalf("connecting over MCP: %v", err)
		}
		defer session.Close()
		if id := session.ID(); id != "" {
			t.Fatalf("the client got session %q: want the stateless 2026-07-28", id)
		}

		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{"city": "Paris"}})
		if err != nil || res.IsError {
			t.Fatalf("tools/call weather: %v %s", err, jsonString(res))
		}
		calledOn := mcpTrail.last()
		taskID, _ := res.Meta["a2a/taskId"].(string)
		for range 2 { // on each replica in turn
			got, err := c.GetTask(ctxTimeout(t, 10*time.Second), &a2a.GetTaskRequest{ID: a2a.TaskID(taskID)})
			if err != nil || got.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("GetTask of the MCP call's task %q on replica %s (called on %s): %v %s", taskID, trail.last(), calledOn, err, jsonString(got))
			}
		}

		res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{}})
		if err != nil || res.IsError || !strings.Contains(jsonString(res.StructuredContent), "London") {
			t.Fatalf("tools/call weather without a city, answered with London: %v %s", err, jsonString(res))
		}
		if askedOn == "" {
			t.Fatal("the agent did not ask for the city")
		}
		mcpTrail.requireOther(t, "the call that answers the question", askedOn)
	})

	t.Run("subscribe", func(t *testing.T) {
		task := startSlow(t, c, 2)
		runsOn := trail.last()
		events, err := collect(c.SubscribeToTask(ctxTimeout(t, 30*time.Second), &a2a.SubscribeToTaskRequest{ID: task.ID}))
		trail.requireOther(t, "SubscribeToTask", runsOn)
		if err != nil {
			t.Fatalf("SubscribeToTask on replica %s: %v after %d events:%s", trail.last(), err, len(events), describe(events))
		}
		if id := requireStreamShape(t, events, a2a.TaskStateCompleted, true); id != task.ID {
			t.Fatalf("subscription carried task %s, want %s", id, task.ID)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		before := getStats(t)
		task := startSlow(t, c, 30)
		runsOn := trail.last()
		waitStats(t, 15*time.Second, "the slow request", func(s demoStats) bool { return s.SlowStarted > before.SlowStarted })

		// The front alternates: the subscription lands on the other
		// replica, GetTask on the one running the task, and CancelTask on
		// the other again, so that the cancellation crosses replicas.
		next, stop := iter.Pull2(c.SubscribeToTask(ctxTimeout(t, 30*time.Second), &a2a.SubscribeToTaskRequest{ID: task.ID}))
		defer stop()
		ev, err, ok := next()
		if !ok || err != nil {
			t.Fatalf("SubscribeToTask: no first event (err %v)", err)
		}
		trail.requireOther(t, "SubscribeToTask", runsOn)
		subEvents := []a2a.Event{ev}
		if got, err := c.GetTask(ctxTimeout(t, 10*time.Second), &a2a.GetTaskRequest{ID: task.ID}); err != nil {
			t.Fatalf("GetTask: %v", err)
		} else if got.Status.State.Terminal() {
			t.Fatalf("GetTask of the running slow task: state %s, want it still running", got.Status.State)
		}

		canceled, err := c.CancelTask(ctxTimeout(t, 10*time.Second), &a2a.CancelTaskRequest{ID: task.ID})
		if err != nil {
			t.Fatalf("CancelTask on replica %s: %v", trail.last(), err)
		}
		trail.requireOther(t, "CancelTask", runsOn)
		if canceled.ID != task.ID || canceled.Status.State != a2a.TaskStateCanceled {
			t.Fatalf("CancelTask answered task %s in state %s, want %s canceled", canceled.ID, canceled.Status.State, task.ID)
		}
		// The cancellation reached the upstream call on the replica running it.
		waitStats(t, 10*time.Second, "the slow request's cancellation", func(s demoStats) bool { return s.SlowCanceled > before.SlowCanceled })

		got, err := c.GetTask(ctxTimeout(t, 10*time.Second), &a2a.GetTaskRequest{ID: task.ID})
		if err != nil {
			t.Fatalf("GetTask after cancel: %v", err)
		}
		if got.Status.State != a2a.TaskStateCanceled {
			t.Errorf("GetTask after cancel on replica %s: state %s, want canceled", trail.last(), got.Status.State)
		}
		for {
			ev, err, ok := next()
			if !ok {
				break
			}
			if err != nil {
				t.Fatalf("subscription after cancel: %v after:%s", err, describe(subEvents))
			}
			subEvents = append(subEvents, ev)
		}
		requireStreamShape(t, subEvents, a2a.TaskStateCanceled, true)
	})

	if n := trail.count(); n["a"] == 0 || n["b"] == 0 {
		t.Errorf("requests served per replica %v: want both to have served", n)
	}
}

// TestReplicaKilledMidTask: when the replica running a task dies (SIGKILL,
// no chance to clean up), the other replica fails the task once its lease
// runs out, with a message that tells the caller to send it again; it is
// not left working for ever.
func TestReplicaKilledMidTask(t *testing.T) {
	cl := startReplicas(t)
	onA, _ := replicaClient(t, cl.a.url)
	onB, _ := replicaClient(t, cl.b.url)

	before := getStats(t)
	task := startSlow(t, onA, 60)
	waitStats(t, 15*time.Second, "the slow request", func(s demoStats) bool { return s.SlowStarted > before.SlowStarted })
	if got, err := onB.GetTask(ctxTimeout(t, 10*time.Second), &a2a.GetTaskRequest{ID: task.ID}); err != nil {
		t.Fatalf("GetTask on replica b: %v", err)
	} else if got.Status.State.Terminal() {
		t.Fatalf("GetTask on replica b before the kill: state %s, want the task still running", got.Status.State)
	}

	if err := cl.a.proc.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatalf("killing replica a: %v", err)
	}
	select {
	case <-cl.a.proc.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("replica a did not exit within 10s of SIGKILL")
	}
	killed := time.Now()

	// Waiting for a condition with a deadline, not sleeping to synchronize:
	// the lease is 30s (the Caddyfile has no option for it), renewed every
	// 10s, and replica b sweeps at least every 10s, so the task fails about
	// 30-45s after the kill (40s measured). Poll every 500ms, for at most 90s.
	const pollEvery, limit = 500 * time.Millisecond, 90 * time.Second
	ctx := ctxTimeout(t, limit+15*time.Second)
	var got *a2a.Task
	for {
		var err error
		got, err = onB.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
		if err != nil {
			t.Fatalf("GetTask on replica b %s after the kill: %v", time.Since(killed).Round(time.Millisecond), err)
		}
		if got.Status.State.Terminal() {
			break
		}
		if time.Since(killed) > limit {
			t.Fatalf("the task of the killed replica is still %s on replica b %s after the kill", got.Status.State, limit)
		}
		time.Sleep(pollEvery)
	}
	t.Logf("the task ended %s on replica b %s after the kill", got.Status.State, time.Since(killed).Round(time.Millisecond))
	if got.Status.State != a2a.TaskStateFailed {
		t.Fatalf("state %s, want failed: %s", got.Status.State, jsonString(got))
	}
	const want = "The agent stopped while this task ran, so whether its work was done is unknown; to try again, send a new message (a new messageId)."
	if got.Status.Message == nil || messageText(got.Status.Message) != want {
		t.Fatalf("status message %s, want the text %q", jsonString(got.Status.Message), want)
	}
}

func messageText(m *a2a.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p != nil {
			b.WriteString(p.Text())
		}
	}
	return b.String()
}

// cluster is one Redis, two replicas of the agent on it, and a front that
// balances between them.
type cluster struct {
	a, b     *replica
	frontURL string // the A2A endpoint behind the front; the replicas' url
}

type replica struct {
	name string
	url  string // its own A2A endpoint, bypassing the front
	proc *process
}

// startReplicas starts a throwaway Redis, replicas a and b of the agent on
// it (same a2a block, same public url: the front's), and the front: a Caddy
// reverse_proxy with lb_policy round_robin. Each replica names itself in an
// X-Replica response header. All stop when the test ends; their logs are
// printed if it failed.
func startReplicas(t *testing.T) *cluster {
	t.Helper()
	redisAddr := startRedis(t)
	caddy := caddyBinary(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			t.Fatal(err)
		}
	}
	frontBase := "http://127.0.0.1:" + strconv.Itoa(ports[2])
	cl := &cluster{frontURL: frontBase + "/"}

	for i, name := range []string{"a", "b"} {
		cfg := fmt.Sprintf(`{
	admin off
	auto_https off
	persist_config off
}

:%d {
	bind 127.0.0.1
	header X-Replica %s
	a2a {
		skills "%s"
		upstream %s
		url %s
		name "%s"
		description "caddy-a2a replicas on one Redis"
		heartbeat 1s
		mcp
		tasks {
			redis {
				address %s
				key_prefix interop
			}
		}
	}
}
`, ports[i], name, filepath.Join(root, "examples", "skills.yaml"), agent.DemoURL, cl.frontURL, agentName, redisAddr)
		base := "http://127.0.0.1:" + strconv.Itoa(ports[i])
		p := startCaddy(t, caddy, "replica-"+name, cfg, base+"/.well-known/agent-card.json")
		r := &replica{name: name, url: base + "/", proc: p}
		if i == 0 {
			cl.a = r
		} else {
			cl.b = r
		}
	}

	front := fmt.Sprintf(`{
	admin off
	auto_https off
	persist_config off
}

:%d {
	bind 127.0.0.1
	reverse_proxy 127.0.0.1:%d 127.0.0.1:%d {
		lb_policy round_robin
	}
}
`, ports[2], ports[0], ports[1])
	// Two GETs, so that each replica answers one: both are up behind it.
	p := startCaddy(t, caddy, "front", front, frontBase+"/.well-known/agent-card.json")
	if err := waitReady(p, frontBase+"/.well-known/agent-card.json", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	return cl
}

// startCaddy writes cfg to its own directory, runs Caddy on it, and waits
// until readyURL answers 200.
func startCaddy(t *testing.T, caddy, name, cfg, readyURL string) *process {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"DEMO_API_KEY="+demoAPIKey,
		"HOME="+dir,
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"XDG_DATA_HOME="+filepath.Join(dir, "data"),
	)
	p, err := startProcess(dir, name, env, caddy, "run", "--config", cfgPath, "--adapter", "caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	ready := false
	t.Cleanup(func() {
		if t.Failed() && ready { // waitReady's error already holds the log
			t.Logf("%s log:\n%s", name, p.tail())
		}
		p.stop()
	})
	if err := waitReady(p, readyURL, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	ready = true
	return p
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// startRedis starts a throwaway redis-server on a free loopback port, with
// its own directory and nothing saved to disk, waits until it answers PING,
// and stops it when the test ends. It returns its address. The interop module
// cannot import the main module's internal/redistest; this is its small
// equivalent. A missing redis-server fails the test: it does not skip.
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		bin = "/usr/bin/redis-server" // where the Debian package puts it
		if !fileExists(bin) {
			t.Fatalf("redis-server is not installed (not on PATH, nor %s): ./test.sh installs it, or apt-get install redis-server", bin)
		}
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	dir := t.TempDir()
	p, err := startProcess(dir, "redis-server", os.Environ(), bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop) // SIGINT: redis-server shuts down

	deadline := time.Now().Add(10 * time.Second)
	for {
		err := redisPing(addr)
		if err == nil {
			return addr
		}
		select {
		case <-p.exited:
			t.Fatalf("redis-server exited before it answered (%v); its log:\n%s", p.err, p.tail())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not answer PING within 10s: %v; its log:\n%s", addr, err, p.tail())
		}
		time.Sleep(20 * time.Millisecond) // poll interval, not synchronization
	}
}

// redisPing sends PING as a raw RESP command and wants +PONG back.
func redisPing(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return err
	}
	if _, err := io.WriteString(conn, "*1\r\n$4\r\nPING\r\n"); err != nil {
		return err
	}
	buf := make([]byte, len("+PONG\r\n"))
	if _, err := io.ReadFull(conn, buf); err != nil {
		return err
	}
	if string(buf) != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", buf)
	}
	return nil
}

// replicaClient is a 1.0 JSON-RPC client of the official Go SDK on url,
// with a trail of which replica served each of its requests.
func replicaClient(t *testing.T, url string) (*a2aclient.Client, *replicaTrail) {
	t.Helper()
	trail := &replicaTrail{}
	httpClient := recordedHTTPClient(t)
	httpClient.Transport = servedByTransport{base: httpClient.Transport, trail: trail}
	iface := &a2a.AgentInterface{URL: url, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version}
	c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{iface}, a2aclient.WithJSONRPCTransport(httpClient))
	if err != nil {
		t.Fatalf("creating the client of %s: %v", url, err)
	}
	t.Cleanup(func() { c.Destroy() })
	return c, trail
}

// replicaTrail is the X-Replica header of each response, in order.
type replicaTrail struct {
	mu     sync.Mutex
	served []string
}

func (r *replicaTrail) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.served) == 0 {
		return ""
	}
	return r.served[len(r.served)-1]
}

func (r *replicaTrail) count() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := map[string]int{}
	for _, s := range r.served {
		n[s]++
	}
	return n
}

// requireOther fails the test unless the last request (what) was served by
// a replica other than not: the step crossed replicas.
func (r *replicaTrail) requireOther(t *testing.T, what, not string) {
	t.Helper()
	if got := r.last(); got == "" || got == not {
		t.Fatalf("%s was served by replica %q, want the other one than %q (the front's round robin should alternate)", what, got, not)
	}
}

type servedByTransport struct {
	base  http.RoundTripper
	trail *replicaTrail
}

func (s servedByTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.base.RoundTrip(req)
	if err == nil {
		s.trail.mu.Lock()
		s.trail.served = append(s.trail.served, resp.Header.Get("X-Replica"))
		s.trail.mu.Unlock()
	}
	return resp, err
}
