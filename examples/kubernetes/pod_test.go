package kubernetes

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
)

// The pod test runs in a network namespace of its own, where loopback has
// the pod's ports free whatever else runs on the machine: the test re-runs
// itself there, with these variables set.
const (
	envInPod = "K8STEST_IN_POD"
	envImage = "K8STEST_IMAGE" // the image's layout, built by the parent
)

// TestPod runs the sidecar exactly as the pod runs it: the binary of the
// image built here, unpacked from its layers, with the image's entrypoint,
// command and env, the ConfigMap's files and the Secret's where the
// Deployment mounts them over the image's files, the container's env
// (REDIS_ADDRESS aside: loopback has no cluster DNS), the legacy API and
// Redis beside it on loopback with the ports the manifests give. It answers the probes, serves a task, and on SIGTERM
// with a task running, a blocking call waiting and a stream open: readiness
// goes false, the blocking call and the stream get the task's final status
// (failed: the agent stopped), the process exits within the pod's grace
// period with no panic, and the next replica serves the stored task.
func TestPod(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the sidecar through a drain (about 20s)")
	}
	if os.Getenv(envInPod) == "" && enterPod(t) {
		return // the run in the namespace was this test
	}
	runPod(t)
}

// enterPod re-runs TestPod in a new network namespace and reports whether
// it could; without one (no privileges for it) the test runs on the
// machine's loopback, where the pod's ports must be free.
func enterPod(t *testing.T) bool {
	layout, err := imageLayout()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPod$", "-test.v", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), envInPod+"=1", envImage+"="+layout)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	if os.Geteuid() != 0 {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Start()
	var errno syscall.Errno // EPERM, EINVAL, ENOSPC: namespaces not allowed here
	if errors.As(err, &errno) {
		t.Logf("no network namespace (%v): running on this machine's loopback, whose ports must be free", err)
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	t.Logf("in the pod's network namespace:\n%s", out.String())
	if err != nil {
		t.Fatalf("the pod test failed: %v", err)
	}
	return true
}

func runPod(t *testing.T) {
	if os.Getenv(envInPod) != "" {
		loopbackUp(t)
	}
	m := loadManifests(t)
	c := container(t, &m.deployment, sidecarName)
	redisAddr := fmt.Sprintf("127.0.0.1:%d", m.redisServic.Spec.Ports[0].Port)
	p := layOut(t, m, map[string]string{"REDIS_ADDRESS": redisAddr})
	agentPort := portNumber(t, c, m.service.Spec.Ports[0].TargetPort)
	probePort := portNumber(t, c, c.ReadinessProbe.HTTPGet.Port)
	env := func(name string) string {
		for _, kv := range p.env {
			if k, v, _ := strings.Cut(kv, "="); k == name {
				return v
			}
		}
		t.Fatalf("no env %s", name)
		return ""
	}

	if os.Getenv(envInPod) == "" {
		for _, port := range []int32{agentPort, probePort, m.redisServic.Spec.Ports[0].Port, 9090, 2019} {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err != nil {
				t.Fatalf("the pod's port %d is taken on this machine, and no network namespace could be made: %v", port, err)
			}
			ln.Close()
		}
	}
	startRedis(t, redisAddr, env("REDIS_PASSWORD"))
	startLegacyAPI(t, m)

	replica := startSidecar(t, p)
	base := fmt.Sprintf("http://127.0.0.1:%d", agentPort)
	probe := func(path string) (int, error) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", probePort, path))
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	// The kubelet's view: polled until ready, as readiness probes are.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if status, _ := probe(c.ReadinessProbe.HTTPGet.Path); status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) || replica.exited() {
			t.Fatalf("never ready; Caddy's log:\n%s", replica.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if status, err := probe(c.LivenessProbe.HTTPGet.Path); status != http.StatusOK {
		t.Fatalf("liveness: %d %v", status, err)
	}

	// The card names the manifest's public URL, whatever Host the request
	// carries.
	req, _ := http.NewRequest(http.MethodGet, base+"/.well-known/agent-card.json", nil)
	req.Host = "attacker.example"
	var card struct {
		URL        string `json:"url"`
		Signatures []any  `json:"signatures"`
	}
	getJSON(t, req, &card)
	if card.URL != env("A2A_PUBLIC_URL") || len(card.Signatures) == 0 {
		t.Errorf("card: url %q with %d signatures; want %q, signed", card.URL, len(card.Signatures), env("A2A_PUBLIC_URL"))
	}

	client := a2aClient{base: base, key: env("A2A_CLIENT_KEY")}
	if task := client.send(t, "weather", `{"city":"Paris"}`); task.Status.State != "TASK_STATE_COMPLETED" {
		t.Fatalf("weather: %+v", task.Status)
	}

	// Prometheus, as the pod's annotations tell it, finds the agent's
	// metrics beside Caddy's, the task just run counted (a request is
	// counted once its answer is out, which may be after the client read
	// it; a task before its answer).
	ann := m.deployment.Spec.Template.Annotations
	if ann["prometheus.io/port"] != strconv.Itoa(int(probePort)) {
		t.Errorf("prometheus.io/port %q, want the probe port %d", ann["prometheus.io/port"], probePort)
	}
	// The scrape may come before the request is counted: it is repeated
	// for a while.
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%s%s", ann["prometheus.io/port"], ann["prometheus.io/path"]))
		if err != nil {
			t.Fatal(err)
		}
		scraped, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && strings.Contains(string(scraped), `caddy_a2a_tasks_total{skill="weather",state="completed"} 1`) &&
			strings.Contains(string(scraped), "# TYPE caddy_a2a_requests_total counter") {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("scraping %s: %d, without the agent's metrics or the weather task just run:\n%.2000s", ann["prometheus.io/path"], resp.StatusCode, scraped)
			break
		}
	}

	// A stream and a blocking call on reports that outlast the drain.
	stream := client.stream(t, "report", `{"seconds": 60}`)
	first := stream.next(t)
	if first.Task == nil {
		t.Fatalf("first stream event: %+v", first)
	}
	streamTask := first.Task.ID
	blocking := make(chan task, 1)
	go func() { blocking <- client.sendOrZero("report", `{"seconds": 60}`) }()
	// Both tasks are under way when the signal comes: the legacy API has
	// been called twice.
	deadline = time.Now().Add(10 * time.Second)
	for slowCalls() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the reports never reached the legacy API")
		}
		time.Sleep(10 * time.Millisecond)
	}

	sigterm := time.Now()
	if err := replica.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Readiness turns false as soon as Caddy has the signal: 503, or a
	// refused connection once the listener is closed.
	for {
		if status, err := probe(c.ReadinessProbe.HTTPGet.Path); err != nil || status != http.StatusOK {
			break
		}
		if time.Since(sigterm) > time.Second {
			t.Error("still ready a second after SIGTERM")
			break
		}
		time.Sleep(10 * time.Millisecond)
	}

	final := stream.final(t)
	if final.StatusUpdate == nil || final.StatusUpdate.TaskID != streamTask || final.StatusUpdate.Status.State != "TASK_STATE_FAILED" ||
		!strings.Contains(final.StatusUpdate.Status.text(), "agent stopped") {
		t.Errorf("the stream's last event: %+v; want its task's final failed status", final.StatusUpdate)
	}
	if b := <-blocking; b.Status.State != "TASK_STATE_FAILED" || !strings.Contains(b.Status.text(), "agent stopped") {
		t.Errorf("the blocking call's answer: %+v; want the task failed because the agent stopped", b.Status)
	}

	grace := time.Duration(*m.deployment.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	select {
	case <-replica.done:
	case <-time.After(grace - time.Since(sigterm)):
		t.Fatalf("still running %s after SIGTERM: the kubelet would kill it", grace)
	}
	t.Logf("exited %s after SIGTERM (grace period %s): %v", time.Since(sigterm).Round(time.Millisecond), grace, replica.err)
	if replica.err != nil {
		t.Errorf("exit: %v", replica.err)
	}
	logText := replica.log()
	for _, bad := range []string{"panic", "goroutine "} {
		if strings.Contains(logText, bad) {
			t.Errorf("Caddy's log mentions %q:\n%s", bad, logText)
		}
	}
	if !strings.Contains(logText, "drained") {
		t.Errorf("Caddy's log does not say it drained:\n%s", logText)
	}

	// The next replica (the same pod again, here) serves the stored task.
	next := startSidecar(t, p)
	if got := awaitTask(t, client, next, streamTask); got.Status.State != "TASK_STATE_FAILED" || !strings.Contains(got.Status.text(), "agent stopped") {
		t.Errorf("the next replica's view of the drained task: %+v", got.Status)
	}

	// caddy stop (through the admin endpoint in the pod) drains the same
	// way, also a task that runs with no connection open (returnImmediately):
	// it gets its time to finish, and the process exits once it is stored.
	var detached struct {
		Task task `json:"task"`
	}
	params := strings.TrimSuffix(sendParams("report", `{"seconds": 2}`), "}") + `,"configuration":{"returnImmediately":true}}`
	if err := client.call("SendMessage", params, &detached); err != nil || detached.Task.Status.State != "TASK_STATE_WORKING" {
		t.Fatalf("a task answered at once: %+v, %v", detached.Task, err)
	}
	if out, err := p.caddy(t, "stop").CombinedOutput(); err != nil {
		t.Fatalf("caddy stop: %v\n%s", err, out)
	}
	select {
	case <-next.done:
	case <-time.After(grace):
		t.Fatalf("still running %s after caddy stop", grace)
	}
	if next.err != nil || !strings.Contains(next.log(), "drained") {
		t.Errorf("after caddy stop: exit %v; log:\n%s", next.err, next.log())
	}
	third := startSidecar(t, p)
	if got := awaitTask(t, client, third, detached.Task.ID); got.Status.State != "TASK_STATE_COMPLETED" {
		t.Errorf("the 2-second task that ran without a connection, after caddy stop: %+v; want completed within the drain", got.Status)
	}
}

// awaitTask reads a task from a replica that is starting.
func awaitTask(t *testing.T, client a2aClient, replica *sidecar, id string) task {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := client.get(id)
		if err == nil {
			return got
		}
		if time.Now().After(deadline) || replica.exited() {
			t.Fatalf("GetTask %s: %v\n%s", id, err, replica.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// loopbackUp brings up the new namespace's loopback interface.
func loopbackUp(t *testing.T) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		t.Fatal(err)
	}
	ifr.SetUint16(unix.IFF_UP | unix.IFF_LOOPBACK | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		t.Fatalf("bringing loopback up: %v", err)
	}
}

// signingKeyPEM is a fresh P-256 key, for the Secret's placeholder.
func signingKeyPEM(t *testing.T) string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// startRedis runs redis-server as the Redis Deployment does, on addr.
func startRedis(t *testing.T, addr, password string) {
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("redis-server", "--bind", host, "--port", port, "--requirepass", password,
		"--save", "", "--appendonly", "no", "--dir", t.TempDir())
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server never listened on %s: %v\n%s", addr, err, log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// legacy is the legacy API of the pod: the demo API, with the container's
// address and key.
var legacy *demoapi.API

func startLegacyAPI(t *testing.T, m *manifests) {
	c := container(t, &m.deployment, legacyName)
	addr := c.Args[1] // -addr <address>
	var key string
	for _, e := range c.Env {
		if e.Name == "DEMO_API_KEY" {
			key = m.secret.StringData[e.ValueFrom.SecretKeyRef.Key]
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	legacy = demoapi.New(demoapi.Options{APIKey: key})
	srv := &http.Server{Handler: legacy}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

func slowCalls() int64 { return legacy.Stats().SlowStarted }

// sidecar is one run of the caddy-a2a container.
type sidecar struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
	err  error
}

func startSidecar(t *testing.T, p *pod) *sidecar {
	s := &sidecar{cmd: p.caddy(t, p.args...), out: new(lockedBuffer), done: make(chan struct{})}
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() { s.stop(t) })
	return s
}

func (s *sidecar) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *sidecar) log() string { return s.out.String() }

func (s *sidecar) stop(t *testing.T) {
	if !s.exited() {
		s.cmd.Process.Kill()
		<-s.done
	}
}

// a2aClient talks A2A 1.0 JSON-RPC to the agent with the client key.
type a2aClient struct{ base, key string }

type task struct {
	ID     string `json:"id"`
	Status status `json:"status"`
}

type status struct {
	State   string `json:"state"`
	Message *struct {
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"message"`
}

func (s status) text() string {
	if s.Message == nil || len(s.Message.Parts) == 0 {
		return ""
	}
	return s.Message.Parts[0].Text
}

type event struct {
	Task         *task `json:"task"`
	StatusUpdate *struct {
		TaskID string `json:"taskId"`
		Status status `json:"status"`
	} `json:"statusUpdate"`
}

func (c a2aClient) request(method, params string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, c.base+"/", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("X-API-Key", c.key)
	return req
}

func sendParams(skill, data string) string {
	return `{"message":{"messageId":"` + fmt.Sprint(time.Now().UnixNano()) + `","role":"ROLE_USER","metadata":{"skill":"` +
		skill + `"},"parts":[{"data":` + data + `}]}}`
}

// call sends one request and decodes its result into out.
func (c a2aClient) call(method, params string, out any) error {
	resp, err := http.DefaultClient.Do(c.request(method, params))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Errorf("%s: %s: %w", method, resp.Status, err)
	}
	if r.Error != nil {
		return fmt.Errorf("%s: %s", method, r.Error)
	}
	return json.Unmarshal(r.Result, out)
}

func (c a2aClient) send(t *testing.T, skill, data string) task {
	t.Helper()
	var r struct {
		Task task `json:"task"`
	}
	if err := c.call("SendMessage", sendParams(skill, data), &r); err != nil {
		t.Fatal(err)
	}
	return r.Task
}

// sendOrZero is send for another goroutine: a failure is a zero task.
func (c a2aClient) sendOrZero(skill, data string) task {
	var r struct {
		Task task `json:"task"`
	}
	if err := c.call("SendMessage", sendParams(skill, data), &r); err != nil {
		return task{Status: status{State: "error: " + err.Error()}}
	}
	return r.Task
}

func (c a2aClient) get(id string) (task, error) {
	var got task
	err := c.call("GetTask", `{"id":"`+id+`"}`, &got)
	return got, err
}

// sseStream reads a streamed answer's events.
type sseStream struct {
	body   io.ReadCloser
	events chan event
	errs   chan error
}

func (c a2aClient) stream(t *testing.T, skill, data string) *sseStream {
	t.Helper()
	req := c.request("SendStreamingMessage", sendParams(skill, data))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("stream: %s %s", resp.Status, ct)
	}
	s := &sseStream{body: resp.Body, events: make(chan event, 64), errs: make(chan error, 1)}
	t.Cleanup(func() { resp.Body.Close() })
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var r struct {
				Result event           `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal([]byte(data), &r); err != nil || r.Error != nil {
				s.errs <- fmt.Errorf("stream event %s: %v", data, err)
				return
			}
			s.events <- r.Result
		}
		s.errs <- sc.Err()
	}()
	return s
}

func (s *sseStream) next(t *testing.T) event {
	t.Helper()
	ev, ok := <-s.events
	if !ok {
		t.Fatalf("the stream ended: %v", <-s.errs)
	}
	return ev
}

// final reads the stream to its end and returns its last event; the stream
// must end cleanly right after it.
func (s *sseStream) final(t *testing.T) event {
	t.Helper()
	var last event
	for ev := range s.events {
		last = ev
	}
	if err := <-s.errs; err != nil {
		t.Fatalf("the stream ended badly: %v", err)
	}
	return last
}

func getJSON(t *testing.T, req *http.Request, out any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s", req.Method, req.URL, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
