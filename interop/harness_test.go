package interop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// agent is the system under test, started once by TestMain.
var agent *agentEnv

type agentEnv struct {
	// BaseURL is the site root (the card lives under it); URL is the A2A
	// endpoint the card advertises; RESTURL its HTTP+JSON binding's, empty
	// when not known.
	BaseURL, URL, RESTURL string
	// DemoURL is the demo REST API behind the agent (for GET /stats).
	DemoURL string
	// Name is the agent's configured name; empty when not known.
	Name string
	// Dir holds the binaries, the Caddyfile and the processes' logs.
	Dir string
}

const agentName = "Interop Agent"

const demoAPIKey = "interop-secret"

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if url := os.Getenv("INTEROP_AGENT_URL"); url != "" {
		// An agent someone else runs, over the demo API at INTEROP_DEMO_URL.
		u, err := neturl.Parse(url)
		if err != nil || os.Getenv("INTEROP_DEMO_URL") == "" {
			fmt.Fprintln(os.Stderr, "interop: INTEROP_AGENT_URL needs to be a URL, and INTEROP_DEMO_URL set to the demo API's")
			return 1
		}
		agent = &agentEnv{BaseURL: u.Scheme + "://" + u.Host, URL: url, DemoURL: os.Getenv("INTEROP_DEMO_URL"),
			RESTURL: os.Getenv("INTEROP_REST_URL")}
		return m.Run()
	}
	env, stop, err := startAgent()
	if err != nil {
		fmt.Fprintf(os.Stderr, "interop: starting the agent: %v\n", err)
		if env != nil {
			fmt.Fprintf(os.Stderr, "interop: logs kept in %s\n", env.Dir)
		}
		stop(false)
		return 1
	}
	agent = env
	code := m.Run()
	stop(code == 0)
	if code != 0 {
		fmt.Fprintf(os.Stderr, "interop: Caddy and demo API logs kept in %s\n", env.Dir)
	}
	return code
}

// startAgent builds Caddy and the demo API from the repository root, starts
// the demo API, then Caddy with the a2a handler in front of it, and waits for
// both to answer. stop ends both and, when clean, removes their directory.
func startAgent() (*agentEnv, func(clean bool), error) {
	var procs []*process
	env := &agentEnv{Name: agentName}
	stop := func(clean bool) {
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].stop()
		}
		switch {
		case env.Dir == "":
		case clean:
			os.RemoveAll(env.Dir)
		default: // keep the logs and the Caddyfile, not the binaries
			os.Remove(filepath.Join(env.Dir, "caddy"))
			os.Remove(filepath.Join(env.Dir, "demoapi"))
		}
	}

	root, err := filepath.Abs("..")
	if err != nil {
		return nil, stop, err
	}
	dir, err := os.MkdirTemp("", "caddy-a2a-interop-")
	if err != nil {
		return nil, stop, err
	}
	env.Dir = dir

	build := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "./cmd/caddy", "./examples/demoapi/cmd/demoapi")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return env, stop, fmt.Errorf("go build ./cmd/caddy ./examples/demoapi/cmd/demoapi in %s: %w\n%s", root, err, out)
	}

	demoPort, err := freePort()
	if err != nil {
		return env, stop, err
	}
	env.DemoURL = "http://127.0.0.1:" + strconv.Itoa(demoPort)
	childEnv := append(os.Environ(),
		"DEMO_API_KEY="+demoAPIKey,
		"HOME="+dir,
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"XDG_DATA_HOME="+filepath.Join(dir, "data"),
	)
	demo, err := startProcess(dir, "demoapi", childEnv, filepath.Join(dir, "demoapi"), "-addr", "127.0.0.1:"+strconv.Itoa(demoPort))
	if err != nil {
		return env, stop, err
	}
	procs = append(procs, demo)
	if err := waitReady(demo, env.DemoURL+"/stats", 30*time.Second); err != nil {
		return env, stop, err
	}

	sitePort, err := freePort()
	if err != nil {
		return env, stop, err
	}
	adminPort, err := freePort()
	if err != nil {
		return env, stop, err
	}
	env.BaseURL = "http://127.0.0.1:" + strconv.Itoa(sitePort)
	env.URL = env.BaseURL + "/"
	env.RESTURL = env.BaseURL + "/rest"
	caddyfile := fmt.Sprintf(`{
	admin 127.0.0.1:%d
	auto_https off
	persist_config off
	servers {
		protocols h1 h2c
	}
}

%s {
	bind 127.0.0.1
	a2a {
		skills "%s"
		upstream %s
		url %s
		name "%s"
		description "caddy-a2a under the official A2A SDK clients"
		heartbeat 100ms # often: the official clients meet SSE comments in their streams
		rest /rest
		grpc
		mcp
	}
}
`, adminPort, env.BaseURL, filepath.Join(root, "examples", "skills.yaml"), env.DemoURL, env.URL, agentName)
	cfgPath := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cfgPath, []byte(caddyfile), 0o644); err != nil {
		return env, stop, err
	}
	caddy, err := startProcess(dir, "caddy", childEnv, filepath.Join(dir, "caddy"), "run", "--config", cfgPath, "--adapter", "caddyfile")
	if err != nil {
		return env, stop, err
	}
	procs = append(procs, caddy)
	if err := waitReady(caddy, env.BaseURL+"/.well-known/agent-card.json", 60*time.Second); err != nil {
		return env, stop, err
	}
	return env, stop, nil
}

// freePort asks the kernel for a free loopback port. Another process could
// take it before we bind it; on loopback in a test run that does not happen
// in practice, and a clash shows up as a clear startup error.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// caddyPorts asks for two free loopback ports: a Caddy site's and its
// admin endpoint's.
func caddyPorts(t *testing.T) (site, admin int) {
	t.Helper()
	site, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	if admin, err = freePort(); err != nil {
		t.Fatal(err)
	}
	return site, admin
}

type process struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{} // closed when the process has exited
	err    error         // Wait's result, valid after exited is closed
}

func startProcess(dir, name string, env []string, path string, args ...string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// stop asks the process to shut down (SIGINT) and kills it if it has not
// within ten seconds.
func (p *process) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

func (p *process) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// waitReady polls url until it answers 200, the process exits, or the
// deadline passes.
func waitReady(p *process, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		resp, err := client.Get(url)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s (GET %s: %s); its log:\n%s", p.name, timeout, url, last, p.tail())
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before it was ready (%v); its log:\n%s", p.name, p.err, p.tail())
		case <-tick.C:
		}
	}
}

// demoStats is the demo API's GET /stats.
type demoStats struct {
	SlowStarted  int64 `json:"slowStarted"`
	SlowCanceled int64 `json:"slowCanceled"`
}

func getStats(t *testing.T) demoStats {
	t.Helper()
	resp, err := http.Get(agent.DemoURL + "/stats")
	if err != nil {
		t.Fatalf("GET /stats: %v", err)
	}
	defer resp.Body.Close()
	var s demoStats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatalf("GET /stats: decoding: %v", err)
	}
	return s
}

// waitStats polls the demo API's counters until cond holds or timeout passes.
func waitStats(t *testing.T, timeout time.Duration, what string, cond func(demoStats) bool) demoStats {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := getStats(t)
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstream never reported %s within %s (stats %+v)", what, timeout, s)
		}
		time.Sleep(20 * time.Millisecond) // poll interval, not synchronization
	}
}

// wireLog records the HTTP exchanges of one test, so that a failure shows
// the exact requests and responses that led to it.
type wireLog struct {
	mu        sync.Mutex
	exchanges []*exchange
}

type exchange struct {
	method, url string
	reqHeader   http.Header
	reqBody     []byte
	status      string
	respHeader  http.Header
	respBody    cappedBuffer
	err         error
}

type cappedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

const wireCap = 16 << 10

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := wireCap - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *cappedBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

type recordingTransport struct {
	base http.RoundTripper
	log  *wireLog
}

func (rt recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ex := &exchange{method: req.Method, url: req.URL.String(), reqHeader: req.Header.Clone()}
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		ex.reqBody = body
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	rt.log.mu.Lock()
	rt.log.exchanges = append(rt.log.exchanges, ex)
	rt.log.mu.Unlock()
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		ex.err = err
		return nil, err
	}
	ex.status = resp.Status
	ex.respHeader = resp.Header.Clone()
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(resp.Body, &ex.respBody), resp.Body}
	return resp, nil
}

func (l *wireLog) dump(t *testing.T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, ex := range l.exchanges {
		var b strings.Builder
		fmt.Fprintf(&b, "exchange %d: %s %s\n", i+1, ex.method, ex.url)
		for _, h := range []string{"A2A-Version", "Mcp-Protocol-Version", "Mcp-Session-Id", "Content-Type", "Accept"} {
			if v := ex.reqHeader.Get(h); v != "" {
				fmt.Fprintf(&b, "  > %s: %s\n", h, v)
			}
		}
		if len(ex.reqBody) > 0 {
			fmt.Fprintf(&b, "  > %s\n", ex.reqBody)
		}
		if ex.err != nil {
			fmt.Fprintf(&b, "  < transport error: %v\n", ex.err)
		} else {
			fmt.Fprintf(&b, "  < %s (Content-Type: %s)\n", ex.status, ex.respHeader.Get("Content-Type"))
			fmt.Fprintf(&b, "  < %s\n", strings.TrimSpace(ex.respBody.String()))
		}
		t.Log(b.String())
	}
}

// recordedHTTPClient returns an HTTP client whose exchanges are printed if
// the test fails.
func recordedHTTPClient(t *testing.T) *http.Client {
	log := &wireLog{}
	t.Cleanup(func() {
		if t.Failed() {
			log.dump(t)
		}
	})
	return &http.Client{
		Timeout:   60 * time.Second,
		Transport: recordingTransport{base: http.DefaultTransport, log: log},
	}
}

// rpcReply is a JSON-RPC answer read off the wire without an SDK.
type rpcReply struct {
	Status      int
	ContentType string
	Raw         []byte
	Envelope    map[string]json.RawMessage
	Error       *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
}

// postRPC posts body to the A2A endpoint, with the A2A-Version header when
// version is not empty, and decodes the JSON-RPC envelope.
func postRPC(t *testing.T, version, body string) rpcReply {
	t.Helper()
	client := recordedHTTPClient(t)
	req, err := http.NewRequest(http.MethodPost, agent.URL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", agent.URL, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: reading the answer: %v", agent.URL, err)
	}
	r := rpcReply{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Raw: raw}
	if err := json.Unmarshal(raw, &r.Envelope); err != nil {
		t.Fatalf("POST %s: answer is not a JSON object (%v): %s %s", agent.URL, err, resp.Status, raw)
	}
	if e, ok := r.Envelope["error"]; ok {
		if err := json.Unmarshal(e, &r.Error); err != nil {
			t.Fatalf("answer's error is not a JSON-RPC error object (%v): %s", err, raw)
		}
	}
	return r
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}
