package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/caddy-a2a/caddy-a2a/bench/internal/fixture"
	"github.com/caddy-a2a/caddy-a2a/bench/internal/load"
	"github.com/caddy-a2a/caddy-a2a/bench/internal/procstat"
)

// redisKeyPrefix is the key_prefix of the benchmark's caddy-a2a on Redis.
const redisKeyPrefix = "bench"

// errNoRedis says what to do when redis-server is not installed.
var errNoRedis = errors.New("redis-server is not on PATH: install it (Debian: apt-get install redis-server), " +
	"or leave out the Redis contender and scenario (-only without \"Redis\", -scenarios without redis-store)")

// startRedis starts a redis-server of its own on a free loopback port, with
// no persistence and its working directory in the run's directory, and
// waits until it answers PING.
func (l *lab) startRedis(ctx context.Context, name string) (*proc, string, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, "", errNoRedis
	}
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p, _, err := l.start(ctx, name, false, nil, path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", l.dir)
	if err != nil {
		return nil, "", err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := dialRESP(addr)
		if err == nil {
			var pong string
			pong, err = c.do("PING")
			c.close()
			if err == nil && pong == "PONG" {
				return p, addr, nil
			}
			if err == nil {
				err = fmt.Errorf("PING answered %q", pong)
			}
		}
		if time.Now().After(deadline) {
			return p, "", fmt.Errorf("%s did not answer PING on %s within 30s (%v); its log:\n%s", name, addr, err, p.tail())
		}
		select {
		case <-p.exited:
			return p, "", fmt.Errorf("%s exited before it answered PING (%v); its log:\n%s", name, p.err, p.tail())
		case <-ctx.Done():
			return p, "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// redisTasks is the tasks block of a caddy-a2a keeping its tasks in the
// Redis at addr, with more inside it (tab-indented at the tasks block's
// depth plus one).
func redisTasks(addr, more string) string {
	return "\t\ttasks {\n" + more + "\t\t\tredis {\n\t\t\t\taddress " + addr + "\n\t\t\t\tkey_prefix " + redisKeyPrefix + "\n\t\t\t}\n\t\t}\n"
}

// meanTaskHash is the mean MEMORY USAGE of up to n task hashes picked with
// RANDOMKEY, and how many it sampled.
func (c *respConn) meanTaskHash(n int) (float64, int, error) {
	// A task's key is {prefix}:<layout version>:t:<id> (tasks/redisstore).
	prefix := "{" + redisKeyPrefix + "}:"
	var sum int64
	seen := map[string]bool{}
	for range 4 * n {
		if len(seen) == n {
			break
		}
		key, err := c.do("RANDOMKEY")
		if err != nil {
			return 0, 0, err
		}
		if !strings.HasPrefix(key, prefix) || !strings.Contains(key, ":t:") || seen[key] {
			continue
		}
		seen[key] = true
		usage, err := c.do("MEMORY", "USAGE", key, "SAMPLES", "0")
		if err != nil {
			return 0, 0, err
		}
		b, err := strconv.ParseInt(usage, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("redis: MEMORY USAGE %s: %q", key, usage)
		}
		sum += b
	}
	if len(seen) == 0 {
		return 0, 0, nil
	}
	return float64(sum) / float64(len(seen)), len(seen), nil
}

// respConn is a minimal RESP2 client: enough for PING, INFO, DBSIZE,
// RANDOMKEY and MEMORY USAGE.
type respConn struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialRESP(addr string) (*respConn, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	return &respConn{conn: conn, r: bufio.NewReader(conn)}, nil
}

func (c *respConn) close() { c.conn.Close() }

// do sends one command and reads its reply: a simple string, an integer
// (in decimal) or a bulk string. An error reply is returned as an error.
func (c *respConn) do(args ...string) (string, error) {
	c.conn.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("redis: empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", fmt.Errorf("redis: %s", line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", fmt.Errorf("redis: unexpected bulk reply %q", line)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("redis: unexpected reply %q", line)
}

// infoField reads one numeric field of an INFO section.
func (c *respConn) infoField(section, field string) (int64, error) {
	info, err := c.do("INFO", section)
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(info, "\n") {
		if name, value, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && name == field {
			return strconv.ParseInt(value, 10, 64)
		}
	}
	return 0, fmt.Errorf("redis: INFO %s has no %s", section, field)
}

// redisSample is Redis's memory and key count at one point.
type redisSample struct {
	usedMemory int64 // INFO memory used_memory
	keys       int64 // DBSIZE
}

func (c *respConn) sample() (redisSample, error) {
	mem, err := c.infoField("memory", "used_memory")
	if err != nil {
		return redisSample{}, err
	}
	keys, err := c.do("DBSIZE")
	if err != nil {
		return redisSample{}, err
	}
	n, err := strconv.ParseInt(keys, 10, 64)
	return redisSample{usedMemory: mem, keys: n}, err
}

// redisStoreRun is the redis-store scenario: a fresh redis-server and a
// caddy-a2a keeping its tasks there get tasks small blocking SendMessage
// calls (skill "small", as in the store scenario) after a warm-up of warm.
type redisStoreRun struct {
	warm, tasks int
	base, full  redisSample
	elapsed     time.Duration
	ok          int64
	caddyCPU    time.Duration
	redisCPU    time.Duration
	errors      int64
	firstError  string
	// hashBytes is the mean MEMORY USAGE of the hashes of some tasks
	// picked at random (0 when none could be sampled).
	hashBytes  float64
	hashSample int
}

// bytesPerTask is used_memory's growth over the measured tasks, divided by
// them: the task hashes and their entries in the indexes.
func (s *redisStoreRun) bytesPerTask() float64 {
	return float64(s.full.usedMemory-s.base.usedMemory) / float64(s.tasks)
}

func (s *redisStoreRun) keysPerTask() float64 {
	return float64(s.full.keys-s.base.keys) / float64(s.tasks)
}

func (l *lab) redisStoreScenario(ctx context.Context, upAddr string, n int, progress func(string)) (*redisStoreRun, error) {
	rp, raddr, err := l.startRedis(ctx, "redis-store")
	if rp != nil {
		defer l.stopProc(rp)
	}
	if err != nil {
		return nil, err
	}
	s := &redisStoreRun{warm: max(n/20, 100), tasks: n}
	// Room for every task, so that none is evicted while measuring.
	limits := fmt.Sprintf("\t\t\tmax_tasks %d\n\t\t\tmax_bytes 4GiB\n", s.warm+n+1000) + oneClient
	c, err := l.startA2A(ctx, "caddy-a2a-redis-store", upAddr, redisTasks(raddr, limits))
	if err != nil {
		return nil, err
	}
	defer l.stopProc(c.proc)
	rc, err := dialRESP(raddr)
	if err != nil {
		return nil, err
	}
	defer rc.close()
	target := load.Target{
		Addr:    c.addr,
		Request: load.NewRequest("POST", c.addr, "/", fixture.SendMessage("small", false), "Content-Type", "application/json", "A2A-Version", "1.0"),
		Expect:  [][]byte{[]byte(fixture.Completed10), []byte(fixture.SmallMarker)},
		Prepare: fixture.NewMessageID,
	}
	send := func(count int) (*load.Result, error) {
		res, err := load.Run(ctx, target, load.Options{Conns: 32, Count: int64(count)})
		if err != nil {
			return nil, err
		}
		s.errors += res.Errors
		if s.firstError == "" {
			s.firstError = res.FirstError
		}
		return res, nil
	}
	if _, err := send(s.warm); err != nil {
		return nil, err
	}
	if s.base, err = rc.sample(); err != nil {
		return nil, err
	}
	cpu := func() (caddy, redis time.Duration, err error) {
		if caddy, err = procstat.CPU(c.pid()); err == nil {
			redis, err = procstat.CPU(rp.pid())
		}
		return caddy, redis, err
	}
	c0, r0, err := cpu()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := send(n)
	if err != nil {
		return nil, err
	}
	s.elapsed, s.ok = time.Since(start), res.OK
	c1, r1, err := cpu()
	if err != nil {
		return nil, err
	}
	s.caddyCPU, s.redisCPU = c1-c0, r1-r0
	if s.full, err = rc.sample(); err != nil {
		return nil, err
	}
	if added := s.full.keys - s.base.keys; added < int64(n) {
		return s, fmt.Errorf("only %d keys added in Redis for %d tasks: tasks were evicted or refused, the figure would be wrong", added, n)
	}
	if s.hashBytes, s.hashSample, err = rc.meanTaskHash(100); err != nil {
		return s, err
	}
	progress(fmt.Sprintf("  %d tasks: used_memory %s → %s (%.0f B/task; a task's hash %.0f B), keys %d → %d, %.0f req/s",
		n, fmtMiB(s.base.usedMemory), fmtMiB(s.full.usedMemory), s.bytesPerTask(), s.hashBytes, s.base.keys, s.full.keys, float64(s.ok)/s.elapsed.Seconds()))
	return s, nil
}
