package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/caddy-a2a/caddy-a2a/bench/internal/load"
)

// report gathers every scenario's figures and writes them as Markdown.
type report struct {
	cfg        config
	machine    string
	contenders []*contender
	cardSize   int
	throughput grid
	latency    grid
	card       grid
	streams    []*streamRound
	// streamFloor is the same measured on a plain Go net/http server.
	streamFloor *streamRound
	store       *storeRun
	redisStore  *redisStoreRun
	failures    []string
}

// The concurrency the targets are judged at.
const targetConns = 32

func describeMachine(cfg config) string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if name, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "model name" {
				cpu = strings.TrimSpace(value)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0]); len(f) == 3 {
			var kb int64
			fmt.Sscan(f[1], &kb)
			mem = fmt.Sprintf(", %.0f GiB RAM", float64(kb)/(1<<20))
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	version := func(name string, args ...string) string {
		out, err := exec.Command(name, args...).Output()
		if err != nil {
			return "unknown"
		}
		return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	}
	caddyVersion := version(filepath.Join(cfg.binDir, "caddy"), "version")
	redis := ""
	for _, f := range strings.Fields(version("redis-server", "--version")) { // "Redis server v=7.0.15 sha=…"
		if v, ok := strings.CutPrefix(f, "v="); ok {
			redis = "; Redis " + v
		}
	}
	return fmt.Sprintf("%s, %d logical CPUs%s, Linux %s; Go %s, Node.js %s; Caddy %s%s",
		cpu, runtime.NumCPU(), mem, strings.TrimSpace(string(kernel)), strings.TrimPrefix(runtime.Version(), "go"),
		strings.TrimPrefix(version(cfg.node, "--version"), "v"), strings.Fields(caddyVersion + " ?")[0], redis)
}

func (r *report) markdown() string {
	var b bytes.Buffer
	mode := "full run"
	if r.cfg.smoke {
		mode = "smoke run (figures mean nothing; it checks that every contender answers)"
	}
	fmt.Fprintf(&b, "# caddy-a2a benchmark: %s\n\n", mode)
	fmt.Fprintf(&b, "- Machine: %s.\n", r.machine)
	if r.cfg.command != "" {
		fmt.Fprintf(&b, "- Command: `%s`\n", r.cfg.command)
	}
	fmt.Fprintf(&b, "- Date: %s. Everything on 127.0.0.1; the load generator runs on the same machine (closed loop, one keep-alive HTTP/1.1 connection per concurrent caller).\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- Runs: %s per contender and concurrency, %d rounds in alternating order (A B … B A …), after a %s warm-up; the tables pool the rounds; the targets' ratios, of requests/s and of CPU per answer, are the median of the rounds' (each round runs the contenders back to back).\n\n",
		r.cfg.duration, r.cfg.rounds, r.cfg.warmup)
	for _, f := range r.failures {
		fmt.Fprintf(&b, "**FAILED: %s**\n\n", f)
	}

	if r.throughput != nil {
		b.WriteString("## Throughput: one SendMessage (or GET) → upstream → answer\n\n")
		b.WriteString("CPU is the contender process's own (user + system, from `/proc/<pid>/stat`), per 1,000 good answers, with its Redis server's next to it for caddy-a2a on Redis; peak RSS is its `VmHWM` over the run (Caddy's alone). The ratio is requests/s against `caddy reverse_proxy` at the same concurrency.\n\n")
		r.grid(&b, r.throughput, nameProxy, "× proxy")
	}
	if r.latency != nil {
		fmt.Fprintf(&b, "## Latency at a fixed rate: %.0f requests/s over 32 connections (open loop)\n\n", r.cfg.rate)
		b.WriteString("A contender that sustains the rate is measured on the work of one request rather than on queueing behind others; one that cannot (requests/s below the rate) queues, and its latency shows it. A late request counts from when it was due. \"Added\" is over direct's.\n\n")
		r.latencyTable(&b)
	}
	if r.card != nil {
		fmt.Fprintf(&b, "## Agent Card: `GET /.well-known/agent-card.json` (%d bytes) against Caddy `respond` with the same body\n\n", r.cardSize)
		r.grid(&b, r.card, nameRespond, "× respond")
	}
	if r.streams != nil || r.streamFloor != nil {
		r.streamTable(&b)
	}
	if r.store != nil {
		r.storeTable(&b)
	}
	if r.redisStore != nil {
		r.redisStoreTable(&b)
	}
	r.targets(&b)
	if len(r.contenders) > 0 {
		b.WriteString("## The contenders\n\n")
		seen := map[string]bool{}
		for _, c := range r.contenders {
			if !seen[c.name] {
				seen[c.name] = true
				fmt.Fprintf(&b, "- **%s**: %s.\n", c.name, c.what)
			}
		}
		b.WriteString("- The upstream (`cmd/upstream`) is one Go `net/http` server answering a fixed 1,024-byte JSON body with a `Content-Length`.\n\n")
	}
	return b.String()
}

// names returns the contenders of g in the order they were declared.
func (r *report) names(g grid) []string {
	var names []string
	for _, c := range r.contenders {
		if _, ok := g[c.name]; ok && !slices.Contains(names, c.name) {
			names = append(names, c.name)
		}
	}
	return names
}

func (r *report) grid(b *bytes.Buffer, g grid, ref, refLabel string) {
	fmt.Fprintf(b, "| contender | conns | requests/s | p50 | p90 | p99 | errors | CPU s / 1k req | peak RSS | %s |\n", refLabel)
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, n := range r.cfg.conns {
		for _, name := range r.names(g) {
			c := g[name][n]
			if c == nil {
				continue
			}
			ratio := "–"
			if rc := g[ref][n]; rc != nil && rc.res.Throughput() > 0 {
				ratio = fmt.Sprintf("%.2f", c.res.Throughput()/rc.res.Throughput())
			}
			fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %d | %s | %s | %s |\n", name, n, fmtRate(c.res.Throughput()),
				fmtDur(c.res.Latency.Quantile(0.5)), fmtDur(c.res.Latency.Quantile(0.9)), fmtDur(c.res.Latency.Quantile(0.99)),
				c.res.Errors, c.cpuText(), fmtMiB(c.peak), ratio)
		}
	}
	b.WriteString("\n")
}

func (r *report) latencyTable(b *bytes.Buffer) {
	b.WriteString("| contender | requests/s | p50 | p90 | p99 | max | errors | CPU s / 1k req | added p50 | added p99 |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	direct := r.latency[nameDirect][32]
	for _, name := range r.names(r.latency) {
		c := r.latency[name][32]
		added50, added99 := "–", "–"
		if direct != nil && name != nameDirect {
			added50 = fmtDur(c.res.Latency.Quantile(0.5) - direct.res.Latency.Quantile(0.5))
			added99 = fmtDur(c.res.Latency.Quantile(0.99) - direct.res.Latency.Quantile(0.99))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %d | %s | %s | %s |\n", name, fmtRate(c.res.Throughput()),
			fmtDur(c.res.Latency.Quantile(0.5)), fmtDur(c.res.Latency.Quantile(0.9)), fmtDur(c.res.Latency.Quantile(0.99)),
			fmtDur(c.res.Latency.Max()), c.res.Errors, c.cpuText(), added50, added99)
	}
	b.WriteString("\n")
}

func (r *report) streamTable(b *bytes.Buffer) {
	fmt.Fprintf(b, "## Streaming: %d SubscribeToTask streams on one caddy-a2a, then one status update to all\n\n", r.cfg.streams)
	b.WriteString("Each round starts a fresh caddy-a2a and one task whose upstream call (`GET /hold`) waits; the streams all subscribe to that working task. ")
	b.WriteString("Memory is Caddy's RSS after all streams are open minus before, both after a forced garbage collection, divided by the streams; the Go heap and stacks in use (from `/debug/vars`) show where it goes. ")
	b.WriteString("Then the upstream is released: the task completes and its final status update goes to every stream; the fan-out latency runs from the release to each client reading the update. ")
	b.WriteString("The floor row does the same on the plain Go `net/http` server that the upstream is: as many `GET /hold` requests held open (one connection each, the handler blocked), then all answered at once with one small write each. No Go HTTP server holds an open request for less, or answers that many waiting clients faster, on this machine.\n\n")
	b.WriteString("| round | streams open | opened in | RSS before → after | RSS / stream | Go heap / stream | Go stacks / stream | fan-out p50 | p90 | p99 | max | updates received | errors |\n")
	b.WriteString("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	rows := r.streams
	if r.streamFloor != nil {
		rows = append([]*streamRound{r.streamFloor}, rows...)
	}
	for i, s := range rows {
		label, heap, stacks := fmt.Sprint(i+1), "–", "–"
		if s.reference {
			label = "floor: plain Go net/http"
		} else {
			if r.streamFloor != nil {
				label = fmt.Sprint(i)
			}
			h, st := s.goPerStream()
			heap, stacks = fmtKiB(h), fmtKiB(st)
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s → %s | %s | %s | %s | %s | %s | %s | %s | %d / %d | %d |\n", label, s.opened, s.openTime.Round(time.Millisecond),
			fmtMiB(s.rssBefore), fmtMiB(s.rssAfter), fmtKiB(s.rssPerStream()), heap, stacks,
			fmtDur(s.fanout.Quantile(0.5)), fmtDur(s.fanout.Quantile(0.9)), fmtDur(s.fanout.Quantile(0.99)), fmtDur(s.fanout.Max()),
			s.received, s.streams, s.errors)
	}
	b.WriteString("\n")
}

func (r *report) storeTable(b *bytes.Buffer) {
	s := r.store
	fmt.Fprintf(b, "## Task store: `max_tasks %d`, then %s SendMessage calls in all\n\n", s.maxTasks, fmtCount(s.flood))
	b.WriteString("Skill `small`: a completed task holding the user message and a small data artifact. ")
	fmt.Fprintf(b, "After %d warm-up calls and again when the store is full, Caddy collects its garbage; the difference divided by the tasks added is the memory per stored task.\n\n", s.warm)
	b.WriteString("| | stored tasks | live Go heap | RSS |\n| --- | ---: | ---: | ---: |\n")
	fmt.Fprintf(b, "| after the warm-up | %d | %s | %s |\n", s.warm, fmtMiB(int64(s.base.heap)), fmtMiB(s.base.rss))
	fmt.Fprintf(b, "| store full | %d | %s | %s |\n", s.maxTasks, fmtMiB(int64(s.full.heap)), fmtMiB(s.full.rss))
	fmt.Fprintf(b, "| **per stored task** | | **%s** | %s |\n\n", fmtBytes(s.heapPerTask()), fmtBytes(s.rssPerTask()))
	if len(s.samples) > 0 {
		fmt.Fprintf(b, "The flood (32 connections, %s, %s calls/s on average): RSS as the process left it after each step, live heap after a collection.\n\n",
			s.floodTime.Round(time.Second), fmtRate(float64(s.floodOK)/s.floodTime.Seconds()))
		b.WriteString("| calls so far | RSS | live Go heap | requests/s in the step |\n| ---: | ---: | ---: | ---: |\n")
		for _, m := range s.samples {
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", fmtCount(m.sent), fmtMiB(m.rss), fmtMiB(int64(m.heap)), fmtRate(m.rps))
		}
		fmt.Fprintf(b, "\nMean RSS of the flood's second half against its first half: %+.1f%%. Peak RSS from the fill to the end: %s. Errors: %d.\n\n",
			100*s.drift(), fmtMiB(s.floodPeak), s.errors)
	}
}

func (r *report) redisStoreTable(b *bytes.Buffer) {
	s := r.redisStore
	fmt.Fprintf(b, "## Tasks in Redis: %s small tasks\n\n", fmtCount(int64(s.tasks)))
	fmt.Fprintf(b, "A fresh redis-server (no persistence) and a caddy-a2a keeping its tasks there (`max_tasks` above what is sent, so nothing is evicted) get %s warm-up calls of skill `small` (as in the task store scenario), then %s more (32 connections). ", fmtCount(int64(s.warm)), fmtCount(int64(s.tasks)))
	b.WriteString("Memory per stored task is the growth of Redis's `INFO memory` `used_memory` over those calls divided by them: each task's hash and its entries in the indexes.\n\n")
	b.WriteString("| | keys | `used_memory` |\n| --- | ---: | ---: |\n")
	fmt.Fprintf(b, "| after the warm-up | %s | %s |\n", fmtCount(s.base.keys), fmtMiB(s.base.usedMemory))
	fmt.Fprintf(b, "| after %s more tasks | %s | %s |\n", fmtCount(int64(s.tasks)), fmtCount(s.full.keys), fmtMiB(s.full.usedMemory))
	fmt.Fprintf(b, "| **per stored task** | %.2f | **%s** |\n\n", s.keysPerTask(), fmtBytes(s.bytesPerTask()))
	if s.hashSample > 0 {
		fmt.Fprintf(b, "Of that, the task's own hash takes %s (`MEMORY USAGE`, mean of %d tasks picked at random); the other %s are its entries in the sorted-set indexes and in Redis's keyspace, and the allocator's rounding.\n\n",
			fmtBytes(s.hashBytes), s.hashSample, fmtBytes(s.bytesPerTask()-s.hashBytes))
	}
	if s.ok > 0 {
		per := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(s.ok) }
		fmt.Fprintf(b, "The calls ran at %s/s; CPU per 1,000: %.3f s Caddy, %.3f s Redis. Errors: %d.\n\n",
			fmtRate(float64(s.ok)/s.elapsed.Seconds()), per(s.caddyCPU), per(s.redisCPU), s.errors)
	}
}

// targets judges the targets on what was measured.
func (r *report) targets(b *bytes.Buffer) {
	type row struct{ target, measured, verdict string }
	var rows []row
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**missed**"
	}
	conns := targetConns
	if !slices.Contains(r.cfg.conns, conns) && len(r.cfg.conns) > 0 {
		conns = slices.Max(r.cfg.conns)
	}
	rps := func(g grid, name string) float64 {
		if c := g[name][conns]; c != nil {
			return c.res.Throughput()
		}
		return 0
	}
	t := r.throughput
	// medianRatio is a's figure over b's at c connections (of: requests/s,
	// or CPU per answer): the median of the rounds' ratios (each round runs
	// a and b back to back, so that the machine's drift falls on both), and
	// every round's.
	medianRatio := func(a, b string, c int, of func(round) float64) (median float64, each string, ok bool) {
		ca, cb := t[a][c], t[b][c]
		if ca == nil || cb == nil || len(ca.rounds) == 0 || len(ca.rounds) != len(cb.rounds) {
			return 0, "", false
		}
		var rs []float64
		texts := make([]string, len(ca.rounds))
		for i := range ca.rounds {
			texts[i] = "–" // a round where either side answered nothing does not count
			if n, d := of(ca.rounds[i]), of(cb.rounds[i]); n > 0 && d > 0 {
				rs = append(rs, n/d)
				texts[i] = fmt.Sprintf("%.2f", n/d)
			}
		}
		if len(rs) == 0 {
			return 0, "", false
		}
		slices.Sort(rs)
		median = rs[len(rs)/2]
		if len(rs)%2 == 0 {
			median = (rs[len(rs)/2-1] + rs[len(rs)/2]) / 2
		}
		return median, strings.Join(texts, ", "), true
	}
	ratio := func(a, b string, c int) (median float64, text string, ok bool) {
		median, each, ok := medianRatio(a, b, c, func(r round) float64 { return r.rps })
		return median, fmt.Sprintf("%.2f× (rounds %s)", median, each), ok
	}
	cpuRatio := func(a, b string, c int) (median float64, text string) {
		median, each, ok := medianRatio(a, b, c, func(r round) float64 { return r.cpu })
		if !ok {
			return math.Inf(1), "unknown (no round answered)"
		}
		return median, fmt.Sprintf("%.2f× (rounds %s)", median, each)
	}
	cpu := func(name string, c int) float64 { return t[name][c].cpuPer1000() }
	if t != nil {
		// Issue 23: the JSON bindings at the proxy's speed, for no more CPU.
		for _, c := range r.cfg.conns {
			if c != 32 && c != 128 {
				continue
			}
			for _, name := range []string{nameA2A10, nameA2AREST} {
				m, text, ok := ratio(name, nameProxy, c)
				if !ok {
					continue
				}
				cm, ctext := cpuRatio(name, nameProxy, c)
				rows = append(rows, row{fmt.Sprintf("%s ≥ 1.0 × reverse_proxy at ≤ 1.0 × its CPU per request, %d connections", name, c),
					fmt.Sprintf("%s, at %s its CPU", text, ctext), verdict(m >= 1 && cm <= 1)})
			}
		}
		if m, text, ok := ratio(nameA2ANine, nameA2A10, conns); ok {
			rows = append(rows, row{nameA2ANine + " within 5% of one skill's requests/s", text, verdict(m >= 0.95)})
		}
		if m, text, ok := ratio(nameA2AGRPCNative, nameGRPCFloor, conns); ok {
			rows = append(rows, row{nameA2AGRPCNative + " ≥ 0.9 × gRPC floor (requests/s)", text, verdict(m >= 0.9)})
			if t[nameA2A10][conns] != nil {
				cm, ctext := cpuRatio(nameA2AGRPCNative, nameA2A10, conns)
				rows = append(rows, row{nameA2AGRPCNative + " CPU per request ≤ JSON-RPC's",
					fmt.Sprintf("%s (pooled: %.3f vs %.3f CPU s / 1k)", ctext, cpu(nameA2AGRPCNative, conns), cpu(nameA2A10, conns)), verdict(cm <= 1)})
			}
		}
		if m, text, ok := ratio(nameA2AMCP, nameA2A10, conns); ok {
			rows = append(rows, row{nameA2AMCP + " ≥ 0.9 × JSON-RPC SendMessage (requests/s)", text, verdict(m >= 0.9)})
		}
		if m, text, ok := ratio(nameA2ARedis, nameProxy, conns); ok {
			rows = append(rows, row{nameA2ARedis + " ≥ 0.7 × reverse_proxy (requests/s)", fmt.Sprintf("%s; CPU s / 1k: %s", text, t[nameA2ARedis][conns].cpuText()), verdict(m >= 0.7)})
		}
	}
	if t != nil && rps(t, nameProxy) > 0 && rps(t, nameSDKGo) > 0 && rps(t, nameSDKJS) > 0 {
		p99 := func(name string) time.Duration { return t[name][conns].res.Latency.Quantile(0.99) }
		added := p99(nameA2A10) - p99(nameDirect)
		rows = append(rows, row{"added p99 over direct ≤ 1 ms (closed loop)",
			fmt.Sprintf("%s (p99 %s vs %s)", fmtDur(added), fmtDur(p99(nameA2A10)), fmtDur(p99(nameDirect))), verdict(added <= time.Millisecond)})
		if l := r.latency; l != nil && l[nameDirect][32] != nil && l[nameA2A10][32] != nil {
			lp := func(name string) time.Duration { return l[name][32].res.Latency.Quantile(0.99) }
			added := lp(nameA2A10) - lp(nameDirect)
			rows = append(rows, row{fmt.Sprintf("added p99 over direct ≤ 1 ms (%.0f req/s, 32 connections)", r.cfg.rate),
				fmt.Sprintf("%s (p99 %s vs %s)", fmtDur(added), fmtDur(lp(nameA2A10)), fmtDur(lp(nameDirect))), verdict(added <= time.Millisecond)})
		}
		goRatio, jsRatio := rps(t, nameA2A10)/rps(t, nameSDKGo), rps(t, nameA2A10)/rps(t, nameSDKJS)
		rows = append(rows, row{"caddy-a2a ≥ 1.2 × a2a-go SDK agent", fmt.Sprintf("%.2f×", goRatio), verdict(goRatio >= 1.2)})
		rows = append(rows, row{"caddy-a2a ≥ 3 × @a2a-js/sdk agent", fmt.Sprintf("%.2f×", jsRatio), verdict(jsRatio >= 3)})
		rows = append(rows, row{"caddy-a2a CPU per request lower than both SDK agents",
			fmt.Sprintf("%.3f vs %.3f (Go) and %.3f (JS) CPU s / 1k", cpu(nameA2A10, conns), cpu(nameSDKGo, conns), cpu(nameSDKJS, conns)),
			verdict(cpu(nameA2A10, conns) < cpu(nameSDKGo, conns) && cpu(nameA2A10, conns) < cpu(nameSDKJS, conns))})
	}
	if s := r.redisStore; s != nil && s.full.usedMemory > 0 {
		rows = append(rows, row{"Redis memory per stored small task ≤ 2 KiB", fmtBytes(s.bytesPerTask()) + " of `used_memory`", verdict(s.bytesPerTask() <= 2048)})
	}
	if c := r.card; c != nil && rps(c, nameRespond) > 0 {
		ratio := rps(c, nameCard) / rps(c, nameRespond)
		rows = append(rows, row{"card ≥ 0.9 × Caddy respond", fmt.Sprintf("%.2f×", ratio), verdict(ratio >= 0.9)})
	}
	if len(r.streams) > 0 {
		var worst float64
		var all load.Histogram
		for _, s := range r.streams {
			worst = max(worst, s.rssPerStream())
			all.Merge(&s.fanout)
		}
		rows = append(rows, row{fmt.Sprintf("memory per open stream ≤ 16 KiB (%d streams)", r.cfg.streams),
			fmt.Sprintf("%s (worst round)", fmtKiB(worst)), verdict(worst <= 16<<10)})
		p99 := all.Quantile(0.99)
		rows = append(rows, row{fmt.Sprintf("status update to all %d subscribers, p99 ≤ 50 ms", r.cfg.streams),
			fmt.Sprintf("%s (all rounds)", fmtDur(p99)), verdict(p99 <= 50*time.Millisecond && all.Count() > 0)})
	}
	if s := r.store; s != nil && s.full.rss > 0 {
		rows = append(rows, row{"memory per stored small task ≤ 4 KiB",
			fmt.Sprintf("%s live heap (%s RSS)", fmtBytes(s.heapPerTask()), fmtBytes(s.rssPerTask())), verdict(s.heapPerTask() <= 4096)})
		if len(s.samples) > 1 {
			last := s.samples[len(s.samples)-1]
			rows = append(rows, row{fmt.Sprintf("RSS flat after the store fills (%s calls)", fmtCount(s.flood)),
				fmt.Sprintf("second half of the flood %+.1f%% over the first (RSS %s at the end, live heap %s when full and %s at the end)",
					100*s.drift(), fmtMiB(last.rss), fmtMiB(int64(s.full.heap)), fmtMiB(int64(last.heap))),
				verdict(s.drift() <= 0.10)})
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "## Targets (at %d connections unless stated)\n\n| target | measured | |\n| --- | --- | --- |\n", conns)
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %s | %s |\n", r.target, r.measured, r.verdict)
	}
	b.WriteString("\n")
}

// errorSummary lists every contender and scenario that had errors.
func (r *report) errorSummary() []string {
	var out []string
	for _, sc := range []struct {
		name string
		g    grid
	}{{"throughput", r.throughput}, {"latency", r.latency}, {"card", r.card}} {
		for _, name := range r.names(sc.g) {
			for n, c := range sc.g[name] {
				if c.res.Errors > 0 {
					out = append(out, fmt.Sprintf("%s, %s at %d connections: %d errors, e.g. %s", sc.name, name, n, c.res.Errors, c.res.FirstError))
				}
			}
		}
	}
	for i, s := range r.streams {
		if s.errors > 0 {
			out = append(out, fmt.Sprintf("streaming round %d: %d errors, e.g. %s", i+1, s.errors, s.firstError))
		}
	}
	if s := r.streamFloor; s != nil && s.errors > 0 {
		out = append(out, fmt.Sprintf("streaming floor: %d errors, e.g. %s", s.errors, s.firstError))
	}
	if s := r.store; s != nil && s.errors > 0 {
		out = append(out, fmt.Sprintf("task store: %d errors, e.g. %s", s.errors, s.firstError))
	}
	if s := r.redisStore; s != nil && s.errors > 0 {
		out = append(out, fmt.Sprintf("tasks in Redis: %d errors, e.g. %s", s.errors, s.firstError))
	}
	return out
}

func fmtDur(d time.Duration) string {
	switch {
	case d < 0:
		return "−" + fmtDur(-d)
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

func fmtRate(r float64) string { return fmtCount(int64(r + 0.5)) }

func fmtCount(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func fmtMiB(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func fmtKiB(b float64) string { return fmt.Sprintf("%.1f KiB", b/1024) }

func fmtBytes(b float64) string { return fmt.Sprintf("%s B", fmtCount(int64(b+0.5))) }
