// Package redistest starts a throwaway redis-server for a test: its own
// process on a free loopback port, with its own directory, nothing saved to
// disk, stopped when the test ends. It is test support, imported only by
// _test.go files.
//
// A test that needs Redis never assumes one is running: it calls Start, and
// fails with a clear message when redis-server is not installed (test.sh
// installs it). It does not skip, so CI runs every Redis test.
package redistest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// readyTimeout bounds how long a started redis-server has to answer.
	readyTimeout = 10 * time.Second
	// pollInterval is the pause between two attempts to reach it.
	pollInterval = 10 * time.Millisecond
	// stopTimeout bounds how long it has to exit after SIGTERM, and again
	// after SIGKILL.
	stopTimeout = 5 * time.Second
	// startAttempts is how many free ports Start tries: another process may
	// take the port between the moment it is found free and redis-server's bind.
	startAttempts = 3
)

// Server is a redis-server process started by Start for one test.
type Server struct {
	bin   string   // the redis-server executable
	extra []string // a configuration file, then options beyond the defaults
	dir   string   // its working directory (--dir), kept across Restart
	log   string   // its stdout and stderr, appended across Restart
	port  int

	mu   sync.Mutex
	proc *process // nil when stopped
}

// process is one run of redis-server.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped
}

// Start starts a fresh redis-server on a free port of 127.0.0.1 and returns
// once it answers. It is stopped at the end of the test. Start fails the test
// when redis-server is not installed or does not answer within 10 seconds.
func Start(t testing.TB) *Server {
	t.Helper()
	return start(t)
}

func start(t testing.TB, extra ...string) *Server {
	t.Helper()
	bin, err := lookPath()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{bin: bin, extra: extra, dir: t.TempDir()}
	s.log = filepath.Join(s.dir, "redis-server.log")
	t.Cleanup(func() { s.stop(t) })

	for attempt := 1; ; attempt++ {
		if s.port, err = freePort(); err != nil {
			t.Fatalf("redistest: finding a free port: %v", err)
		}
		err = s.start()
		if err == nil {
			return s
		}
		if !errors.Is(err, errExited) || attempt == startAttempts {
			t.Fatalf("redistest: %v", err)
		}
		// The process exited before answering: most likely the port was
		// taken in the meantime. Try another.
	}
}

// Addr is the server's address, "127.0.0.1:port". It stays the same across
// Stop and Restart.
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Stop stops the server now (SIGTERM, then SIGKILL if it does not exit in
// time) and waits for it to exit: commands sent to Addr fail until Restart.
// Stopping a stopped server does nothing.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.stop(t)
}

// Restart starts the server again on the same port and directory, so the same
// address works again; it stops it first if it is running. Nothing is saved
// to disk, so the restarted server is empty.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.stop(t)
	if err := s.start(); err != nil {
		t.Fatalf("redistest: restarting: %v", err)
	}
}

// Client returns a client of the server for the test, closed when the test
// ends. It reconnects on its own after a Restart.
func (s *Server) Client(t testing.TB) redis.UniversalClient {
	t.Helper()
	c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{s.Addr()}})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

var errExited = errors.New("redis-server exited before it answered")

// start runs redis-server on s.port and waits until it answers, as this
// process (a server already on the port that is not ours does not count).
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return errors.New("redis-server is already running")
	}
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close() // the child holds its own copy

	// A configuration file must come first; options follow.
	var conf []string
	extra := s.extra
	if len(extra) > 0 && !strings.HasPrefix(extra[0], "--") {
		conf, extra = extra[:1], extra[1:]
	}
	cmd := exec.Command(s.bin, append(append(conf,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--save", "",
		"--appendonly", "no",
		"--protected-mode", "no",
		"--daemonize", "no",
		"--loglevel", "warning",
	), extra...)...)
	cmd.Dir = s.dir
	cmd.Stdout = logf // redis-server logs to stdout when no --logfile is given
	cmd.Stderr = logf
	cmd.SysProcAttr = sysProcAttr()

	p, err := spawn(cmd)
	if err != nil {
		return fmt.Errorf("starting %s: %w", s.bin, err)
	}
	if err := s.waitReady(p); err != nil {
		p.kill()
		return fmt.Errorf("%w (port %d)%s", err, s.port, s.logTail())
	}
	s.proc = p
	return nil
}

// spawn starts cmd from a goroutine locked to its OS thread, and reaps it from
// the same goroutine. On Linux the child is killed when the thread that
// started it ends (Pdeathsig); keeping that thread busy in Wait means this
// happens only when the test binary itself dies (a panic, a -timeout), so no
// redis-server outlives it.
func spawn(cmd *exec.Cmd) (*process, error) {
	p := &process{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(p.done)
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// waitReady polls the server until it answers as process p, p exits, or
// readyTimeout passes.
func (s *Server) waitReady(p *process) error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	c := redis.NewClient(&redis.Options{
		Addr:        s.Addr(),
		MaxRetries:  -1, // this loop is the retry
		DialTimeout: 500 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond,
		PoolSize:    1,
	})
	defer c.Close()

	want := strconv.Itoa(p.cmd.Process.Pid)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var last error
	for {
		info, err := c.Info(ctx, "server").Result()
		switch pid := infoField(info, "process_id"); {
		case err != nil:
			last = err
		case pid == want:
			return nil
		default:
			last = fmt.Errorf("port %d is answered by another redis-server (pid %s, not %s)", s.port, pid, want)
		}
		select {
		case <-p.done:
			return fmt.Errorf("%w: %s", errExited, p.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("redis-server did not answer within %v: %v", readyTimeout, last)
		case <-tick.C:
		}
	}
}

// CPU is the processor time the server has used so far (INFO's
// used_cpu_sys and used_cpu_user), so that a benchmark can report what its
// work cost Redis.
func (s *Server) CPU(t testing.TB) time.Duration {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), PoolSize: 1})
	defer c.Close()
	info, err := c.Info(t.Context(), "cpu").Result()
	if err != nil {
		t.Fatalf("redistest: INFO cpu: %v", err)
	}
	var seconds float64
	for _, name := range []string{"used_cpu_sys", "used_cpu_user"} {
		v, err := strconv.ParseFloat(infoField(info, name), 64)
		if err != nil {
			t.Fatalf("redistest: INFO cpu has no %s: %v", name, err)
		}
		seconds += v
	}
	return time.Duration(seconds * float64(time.Second))
}

// infoField returns the value of one "name:value" line of an INFO answer.
func infoField(info, name string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// stop stops the running process, if any, and waits for it to exit.
func (s *Server) stop(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(stopTimeout):
	}
	if !p.kill() {
		t.Errorf("redistest: redis-server (pid %d) did not exit after SIGTERM and SIGKILL%s", p.cmd.Process.Pid, s.logTail())
	}
}

// kill sends SIGKILL and reports whether the process exited within stopTimeout.
func (p *process) kill() bool {
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
		return true
	case <-time.After(stopTimeout):
		return false
	}
}

// logTail returns the end of the server's log, to explain a failure.
func (s *Server) logTail() string {
	f, err := os.Open(s.log)
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 2048
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		_, _ = f.Seek(-max, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	if len(strings.TrimSpace(string(b))) == 0 {
		return ""
	}
	return "\nredis-server log (" + s.log + "):\n" + string(b)
}

// lookPath finds redis-server on PATH, or where Debian installs it.
func lookPath() (string, error) {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/bin/redis-server", "/usr/sbin/redis-server"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("redistest: redis-server is not installed (not on PATH, nor in /usr/bin or /usr/sbin): " +
		"run ./test.sh, which installs it, or `apt-get install redis-server`")
}

// freePort returns a port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// StartCluster starts n redis-servers in cluster mode, joins them into one
// Redis Cluster with every slot assigned (redis-cli --cluster create), and
// returns once the cluster answers as one: its nodes' addresses.
func StartCluster(t testing.TB, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000").Addr()
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redistest: redis-cli is not installed (it comes with redis-server): %v", err)
	}
	args := append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	for {
		// The cluster is up when a key of every node can be written.
		err := c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			info, err := node.ClusterInfo(ctx).Result()
			if err == nil && !strings.Contains(info, "cluster_state:ok") {
				err = errors.New("cluster_state is not ok")
			}
			return err
		})
		if err == nil {
			return addrs
		}
		select {
		case <-ctx.Done():
			t.Fatalf("redistest: the cluster did not come up: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// StartSentinel starts a Redis Sentinel that watches master under the name
// "mymaster", and returns its address once it knows the master.
func StartSentinel(t testing.TB, master *Server) string {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	host, port, _ := net.SplitHostPort(master.Addr())
	if err := os.WriteFile(conf, []byte("sentinel monitor mymaster "+host+" "+port+" 1\n"+
		"sentinel down-after-milliseconds mymaster 5000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, conf, "--sentinel")
	c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	for {
		addr, err := c.GetMasterAddrByName(ctx, "mymaster").Result()
		if err == nil && len(addr) == 2 && net.JoinHostPort(addr[0], addr[1]) == master.Addr() {
			return s.Addr()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("redistest: the sentinel does not know the master: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
