package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// lab starts and stops the benchmark's processes, all on loopback, each
// with its log in dir.
type lab struct {
	dir    string // configuration files and logs
	binDir string // caddy, upstream, sdkagent
	jsDir  string // agent.mjs and its node_modules
	skills string // the skills YAML
	procs  []*proc
	client *http.Client
	// pprofDir, when set, receives profiles of caddy-a2a taken during
	// the scenarios (see profile).
	pprofDir string
}

type proc struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{} // closed when the process has exited
	err    error         // Wait's result, valid once exited is closed
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// start runs a process with its output in dir/name.log. When printsAddr is
// set, the process prints its listen address as its first line of stdout,
// and start returns it.
func (l *lab) start(ctx context.Context, name string, printsAddr bool, env []string, path string, args ...string) (*proc, string, error) {
	logPath := filepath.Join(l.dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = l.dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = logFile
	// A benchmark that dies takes its contenders with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stdout io.ReadCloser
	if printsAddr {
		if stdout, err = cmd.StdoutPipe(); err != nil {
			logFile.Close()
			return nil, "", err
		}
	} else {
		cmd.Stdout = logFile
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, "", fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, exited: make(chan struct{})}
	l.procs = append(l.procs, p)
	addrc := make(chan string, 1)
	go func() {
		if stdout != nil {
			r := bufio.NewReader(stdout)
			line, _ := r.ReadString('\n')
			addrc <- strings.TrimSpace(line)
			io.Copy(logFile, r)
		}
		p.err = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	if !printsAddr {
		return p, "", nil
	}
	select {
	case addr := <-addrc:
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return p, "", fmt.Errorf("%s printed %q, not its address; its log:\n%s", name, addr, p.tail())
		}
		return p, addr, nil
	case <-time.After(30 * time.Second):
		return p, "", fmt.Errorf("%s did not print its address within 30s; its log:\n%s", name, p.tail())
	case <-ctx.Done():
		return p, "", ctx.Err()
	}
}

// stop asks the process to end (SIGTERM) and kills it after ten seconds.
func (p *proc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// stopAll ends every process still running, the last started first.
func (l *lab) stopAll() {
	for i := len(l.procs) - 1; i >= 0; i-- {
		l.procs[i].stop()
	}
	l.procs = nil
}

// stopProc ends p and forgets it.
func (l *lab) stopProc(p *proc) {
	p.stop()
	for i, q := range l.procs {
		if q == p {
			l.procs = append(l.procs[:i], l.procs[i+1:]...)
			break
		}
	}
}

// freePort asks the kernel for a free loopback port. Another process could
// take it before it is bound; on loopback that does not happen in practice,
// and a clash shows as a clear startup error.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls url until it answers 200, the process exits, or a minute
// passes.
func (l *lab) waitReady(ctx context.Context, p *proc, url string) error {
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		resp, err := l.client.Get(url)
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
			return fmt.Errorf("%s not ready after a minute (GET %s: %s); its log:\n%s", p.name, url, last, p.tail())
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before it was ready (%v); its log:\n%s", p.name, p.err, p.tail())
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// caddy is one Caddy process: its site's address and its admin address
// (where /debug/pprof and /debug/vars live).
type caddy struct {
	*proc
	addr, admin string
}

// startCaddy writes a Caddyfile with the global options every instance
// shares and global (more of them, or ""), then sites (with %[1]s standing for the site port and %[2]s for a
// second port), and starts Caddy on it. ready is the path polled on the
// site until it answers 200.
func (l *lab) startCaddy(ctx context.Context, name, global, sites, ready string) (*caddy, string, error) {
	ports := make([]int, 3)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, "", err
		}
		ports[i] = p
	}
	c := &caddy{addr: "127.0.0.1:" + strconv.Itoa(ports[0]), admin: "127.0.0.1:" + strconv.Itoa(ports[2])}
	second := "127.0.0.1:" + strconv.Itoa(ports[1])
	caddyfile := fmt.Sprintf(`{
	admin %s
	auto_https off
	persist_config off
	log {
		level WARN
	}
%s}

`, c.admin, global) + fmt.Sprintf(sites, strconv.Itoa(ports[0]), strconv.Itoa(ports[1]))
	cfg := filepath.Join(l.dir, name+".Caddyfile")
	if err := os.WriteFile(cfg, []byte(caddyfile), 0o644); err != nil {
		return nil, "", err
	}
	env := []string{
		"HOME=" + l.dir,
		"XDG_CONFIG_HOME=" + filepath.Join(l.dir, "config"),
		"XDG_DATA_HOME=" + filepath.Join(l.dir, "data"),
	}
	p, _, err := l.start(ctx, name, false, env, filepath.Join(l.binDir, "caddy"), "run", "--config", cfg, "--adapter", "caddyfile")
	if err != nil {
		return nil, "", err
	}
	c.proc = p
	if err := l.waitReady(ctx, p, "http://"+c.addr+ready); err != nil {
		return nil, "", err
	}
	return c, second, nil
}

// a2aSite is the Caddyfile site of a caddy-a2a instance in front of
// upstream, with every binding on its port; extra goes inside the a2a
// block.
func (l *lab) a2aSite(upstream, extra string) string {
	return agentSite("%[1]s", l.skills, upstream, "\t\trest /rest\n\t\tgrpc\n\t\tmcp\n"+extra)
}

// agentSite is a Caddyfile site on port (a startCaddy placeholder) with
// an a2a handler of skills in front of upstream; extra goes inside the a2a
// block.
func agentSite(port, skills, upstream, extra string) string {
	return `http://:` + port + ` {
	bind 127.0.0.1
	a2a {
		skills "` + skills + `"
		upstream http://` + upstream + `
		url http://127.0.0.1:` + port + `/
		name "Bench Agent"
		description "caddy-a2a under the benchmark"
` + extra + `	}
}
`
}

// oneClient is a tasks block line for a caddy-a2a that the load generator
// drives: all its connections come from one address, one anonymous client,
// whose share of live tasks must hold every call under way (by default it
// is a hundredth of max_tasks).
const oneClient = "\t\t\tmax_live_per_client 1024\n"

// oneClientTasks is the tasks block of oneClient alone.
const oneClientTasks = "\t\ttasks {\n" + oneClient + "\t\t}\n"

// h2c lets a Caddy take HTTP/2 without TLS beside HTTP/1.1, for the gRPC
// binding.
const h2c = `	servers {
		protocols h1 h2c
	}
`

// startA2A starts a caddy-a2a instance in front of upstream.
func (l *lab) startA2A(ctx context.Context, name, upstream, extra string) (*caddy, error) {
	c, _, err := l.startCaddy(ctx, name, h2c, l.a2aSite(upstream, extra), "/.well-known/agent-card.json")
	return c, err
}

// startAgents starts the caddy-a2a that most contenders share, in front of
// upstream: the one-skill agent with every binding on its port, and on the
// second (nineAddr) an agent of nine skills (skills9.yaml, beside the
// skills file). One process holds both, so that the two compare with the
// same heap, stores and garbage collector's load.
func (l *lab) startAgents(ctx context.Context, upstream string) (c *caddy, nineAddr string, err error) {
	nine := filepath.Join(filepath.Dir(l.skills), "skills9.yaml")
	sites := l.a2aSite(upstream, oneClientTasks) + agentSite("%[2]s", nine, upstream, oneClientTasks)
	return l.startCaddy(ctx, "caddy-a2a", h2c, sites, "/.well-known/agent-card.json")
}

// startVariants starts a caddy-a2a with the gRPC binding on a listener of
// its own (its address is grpcAddr), in front of upstream.
func (l *lab) startVariants(ctx context.Context, upstream string) (c *caddy, grpcAddr string, err error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	grpcAddr = "127.0.0.1:" + strconv.Itoa(port)
	site := agentSite("%[1]s", l.skills, upstream, "\t\tgrpc {\n\t\t\tlisten "+grpcAddr+"\n\t\t}\n"+oneClientTasks)
	c, _, err = l.startCaddy(ctx, "caddy-a2a-variants", "", site, "/.well-known/agent-card.json")
	if err != nil {
		return nil, "", err
	}
	return c, grpcAddr, nil
}

// memStats is the part of runtime.MemStats the benchmark reads from a Go
// process's /debug/vars.
type memStats struct {
	HeapAlloc, HeapInuse, StackInuse uint64
}

// gcAndMemStats runs a garbage collection in Caddy (through its admin
// API's heap profile, which collects first) and reads its memory figures.
func (l *lab) gcAndMemStats(c *caddy) (memStats, error) {
	resp, err := l.client.Get("http://" + c.admin + "/debug/pprof/heap?gc=1")
	if err != nil {
		return memStats{}, fmt.Errorf("forcing a GC in %s: %w", c.name, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return memStats{}, fmt.Errorf("forcing a GC in %s: %s", c.name, resp.Status)
	}
	resp, err = l.client.Get("http://" + c.admin + "/debug/vars")
	if err != nil {
		return memStats{}, fmt.Errorf("reading %s's /debug/vars: %w", c.name, err)
	}
	defer resp.Body.Close()
	var vars struct {
		MemStats *memStats `json:"memstats"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&vars); err != nil || vars.MemStats == nil {
		return memStats{}, errors.Join(fmt.Errorf("reading %s's /debug/vars: no memstats", c.name), err)
	}
	return *vars.MemStats, nil
}

// profile saves Caddy's pprof profile kind (e.g. "heap", "goroutine",
// "profile?seconds=5") into pprofDir/name, when profiles were asked for.
func (l *lab) profile(c *caddy, kind, name string) error {
	if l.pprofDir == "" {
		return nil
	}
	client := &http.Client{Timeout: 5 * time.Minute}
	resp, err := client.Get("http://" + c.admin + "/debug/pprof/" + kind)
	if err != nil {
		return fmt.Errorf("profiling %s: %w", c.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profiling %s: %s", c.name, resp.Status)
	}
	f, err := os.Create(filepath.Join(l.pprofDir, name))
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}

// profileSelf starts a CPU profile of this process into pprofDir/name; the
// returned function stops it.
func (l *lab) profileSelf(name string) (func(), error) {
	f, err := os.Create(filepath.Join(l.pprofDir, name))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
