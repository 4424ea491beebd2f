// Command bench measures caddy-a2a against the upstream called directly,
// Caddy's reverse_proxy and respond, and agents written with the official
// Go and JavaScript A2A SDKs, all on loopback on one machine, and prints a
// Markdown report. bench/run builds everything and runs it; see
// bench/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type config struct {
	smoke                bool
	binDir, jsDir        string
	skills, workDir, out string
	node                 string
	scenarios            []string
	conns                []int
	rounds               int
	duration, warmup     time.Duration
	cardDuration         time.Duration
	rate                 float64
	rateDuration         time.Duration
	rateRounds           int
	streams              int
	streamRounds         int
	storeTasks           int
	flood                int64
	floodSteps           int
	redisTasks           int
	command              string
	only                 string
	pprofDir             string
}

var allScenarios = []string{"throughput", "latency", "card", "streaming", "store", "redis-store"}

func main() {
	os.Exit(run())
}

func run() int {
	var (
		cfg       config
		conns     string
		scenarios string
	)
	flag.BoolVar(&cfg.smoke, "smoke", false, "smoke mode: every scenario about a second, one concurrency (defaults below change; explicit flags still win)")
	flag.StringVar(&cfg.binDir, "bin", "", "directory holding the caddy, upstream and sdkagent binaries (required)")
	flag.StringVar(&cfg.jsDir, "js", "", "directory holding agent.mjs and its node_modules (required)")
	flag.StringVar(&cfg.skills, "skills", "", "the benchmark's skills YAML (required)")
	flag.StringVar(&cfg.workDir, "work", "", "directory for configuration files and logs (required)")
	flag.StringVar(&cfg.out, "out", "", "also write the report to this file")
	flag.StringVar(&cfg.pprofDir, "pprof", "", "save pprof profiles of the Caddy contenders into this directory: CPU at 32 connections, heap and goroutines with the streams open and the store full")
	flag.StringVar(&cfg.node, "node", "node", "the Node.js executable")
	flag.StringVar(&cfg.command, "command", "", "the command line to print in the report")
	flag.StringVar(&scenarios, "scenarios", strings.Join(allScenarios, ","), "scenarios to run")
	flag.StringVar(&cfg.only, "only", "", "run only the contenders whose names contain one of these comma-separated words, in any case (e.g. proxy,caddy-a2a,redis)")
	flag.StringVar(&conns, "conns", "1,8,32,128", "concurrencies (connections) of the throughput and card scenarios")
	flag.IntVar(&cfg.rounds, "rounds", 3, "rounds per contender and concurrency, in alternating order")
	flag.DurationVar(&cfg.duration, "duration", 7*time.Second, "length of one throughput run")
	flag.DurationVar(&cfg.warmup, "warmup", time.Second, "unmeasured warm-up of each contender before each concurrency")
	flag.DurationVar(&cfg.cardDuration, "card-duration", 4*time.Second, "length of one card run")
	flag.Float64Var(&cfg.rate, "rate", 1000, "requests per second of the fixed-rate latency scenario (32 connections)")
	flag.DurationVar(&cfg.rateDuration, "rate-duration", 8*time.Second, "length of one fixed-rate run")
	flag.IntVar(&cfg.rateRounds, "rate-rounds", 2, "rounds of the fixed-rate scenario")
	flag.IntVar(&cfg.streams, "streams", 5000, "SubscribeToTask streams held open at once")
	flag.IntVar(&cfg.streamRounds, "stream-rounds", 3, "rounds of the streaming scenario, each on a fresh caddy-a2a")
	flag.IntVar(&cfg.storeTasks, "store-tasks", 100000, "max_tasks of the task-store scenario's caddy-a2a")
	flag.Int64Var(&cfg.flood, "flood", 1000000, "SendMessage calls of the task-store flood, the fill included")
	flag.IntVar(&cfg.floodSteps, "flood-steps", 18, "memory samples during the flood")
	flag.IntVar(&cfg.redisTasks, "redis-tasks", 100000, "small tasks the redis-store scenario stores in Redis (after a warm-up of a twentieth as many)")
	flag.Parse()

	if cfg.smoke {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		smoke := map[string]string{
			"conns": "32", "rounds": "1", "duration": "1s", "warmup": "200ms", "card-duration": "1s",
			"rate": "200", "rate-duration": "1s", "rate-rounds": "1", "streams": "200", "stream-rounds": "1",
			"store-tasks": "1000", "flood": "5000", "flood-steps": "2",
			"redis-tasks": "1000",
		}
		for name, value := range smoke {
			if !set[name] {
				if err := flag.Set(name, value); err != nil {
					panic(err)
				}
			}
		}
	}
	for _, s := range strings.Split(conns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bench: -conns: %q is not a positive integer\n", s)
			return 2
		}
		cfg.conns = append(cfg.conns, n)
	}
	for _, s := range strings.Split(scenarios, ",") {
		if s = strings.TrimSpace(s); !slices.Contains(allScenarios, s) {
			fmt.Fprintf(os.Stderr, "bench: -scenarios: unknown %q (known: %s)\n", s, strings.Join(allScenarios, ", "))
			return 2
		}
		cfg.scenarios = append(cfg.scenarios, s)
	}
	if cfg.binDir == "" || cfg.jsDir == "" || cfg.skills == "" || cfg.workDir == "" {
		fmt.Fprintln(os.Stderr, "bench: -bin, -js, -skills and -work are required (bench/run sets them)")
		return 2
	}
	if cfg.storeTasks < 200 || cfg.flood < int64(cfg.storeTasks) {
		fmt.Fprintln(os.Stderr, "bench: -store-tasks must be at least 200 and -flood at least -store-tasks")
		return 2
	}
	if cfg.redisTasks < 100 {
		fmt.Fprintln(os.Stderr, "bench: -redis-tasks must be at least 100")
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	skills, err := filepath.Abs(cfg.skills)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	l := &lab{dir: cfg.workDir, binDir: cfg.binDir, jsDir: cfg.jsDir, skills: skills, client: &http.Client{Timeout: time.Minute}}
	if cfg.pprofDir != "" {
		if l.pprofDir, err = filepath.Abs(cfg.pprofDir); err == nil {
			err = os.MkdirAll(l.pprofDir, 0o755)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 2
		}
	}
	defer l.stopAll()

	rep := &report{cfg: cfg, machine: describeMachine(cfg)}
	progress := func(s string) { fmt.Fprintln(os.Stderr, s) }
	failed := l.runScenarios(ctx, &cfg, rep, progress)

	text := rep.markdown()
	fmt.Print(text)
	if cfg.out != "" {
		if err := os.WriteFile(cfg.out, []byte(text), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			failed = true
		}
	}
	if errs := rep.errorSummary(); len(errs) > 0 {
		fmt.Fprintln(os.Stderr, "bench: contenders answered with errors:")
		for _, e := range errs {
			fmt.Fprintln(os.Stderr, "  "+e)
		}
		failed = true
	}
	if failed {
		fmt.Fprintf(os.Stderr, "bench: FAILED (logs in %s)\n", cfg.workDir)
		return 1
	}
	return 0
}

// runScenarios runs what cfg asks, filling rep. It reports whether a
// scenario could not run to its end.
func (l *lab) runScenarios(ctx context.Context, cfg *config, rep *report, progress func(string)) (failed bool) {
	want := func(s string) bool { return slices.Contains(cfg.scenarios, s) }
	fail := func(scenario string, err error) {
		failed = true
		rep.failures = append(rep.failures, fmt.Sprintf("%s: %v", scenario, err))
		progress(fmt.Sprintf("bench: %s: %v", scenario, err))
	}

	var upstream string
	if want("throughput") || want("latency") || want("card") {
		progress("== starting the upstream, caddy-a2a, plain Caddy and the SDK agents")
		f, err := l.startFleet(ctx, cfg.node, (want("throughput") || want("latency")) && cfg.keeps(nameA2ARedis))
		if err != nil {
			fail("starting the contenders", err)
			return failed
		}
		upstream = f.upAddr
		rep.cardSize = len(f.card)
		sends, cards := cfg.filter(f.sendContenders()), cfg.filter(f.cardContenders())
		rep.contenders = append(sends, cards...)
		if want("throughput") {
			progress("== throughput (closed loop)")
			rep.throughput, err = l.alternate(ctx, "throughput", sends, cfg.conns, cfg.rounds, cfg.duration, cfg.warmup, 0, progress)
			if err != nil {
				fail("throughput", err)
			}
		}
		if want("latency") && ctx.Err() == nil {
			progress(fmt.Sprintf("== latency at a fixed rate (%.0f req/s over 32 connections)", cfg.rate))
			rep.latency, err = l.alternate(ctx, "latency", sends, []int{32}, cfg.rateRounds, cfg.rateDuration, cfg.warmup, cfg.rate, progress)
			if err != nil {
				fail("latency", err)
			}
		}
		if want("card") && ctx.Err() == nil {
			progress("== card")
			rep.card, err = l.alternate(ctx, "card", cards, cfg.conns, cfg.rounds, cfg.cardDuration, cfg.warmup, 0, progress)
			if err != nil {
				fail("card", err)
			}
		}
		// The rest needs only the upstream: free the machine of the others.
		for _, p := range []*proc{f.sdkJS, f.sdkGo, f.proxy.proc, f.floor, f.variants.proc, f.a2a.proc} {
			l.stopProc(p)
		}
		if f.a2aRedis != nil {
			l.stopProc(f.a2aRedis.proc)
			l.stopProc(f.redis)
		}
	}
	if (want("streaming") || want("store") || want("redis-store")) && upstream == "" && ctx.Err() == nil {
		_, addr, err := l.start(ctx, "upstream", true, nil, filepath.Join(l.binDir, "upstream"))
		if err != nil {
			fail("starting the upstream", err)
			return failed
		}
		upstream = addr
	}
	if want("streaming") && ctx.Err() == nil {
		progress(fmt.Sprintf("== streaming floor: %d requests held open on a plain Go net/http server, then answered at once", cfg.streams))
		if round, err := l.holdFloor(ctx, cfg.streams, progress); err != nil {
			fail("streaming floor", err)
		} else {
			progress(fmt.Sprintf("  fan-out: %d/%d answered; p50 %s p99 %s max %s",
				round.received, round.streams, fmtDur(round.fanout.Quantile(0.5)), fmtDur(round.fanout.Quantile(0.99)), fmtDur(round.fanout.Max())))
			rep.streamFloor = round
		}
		for r := range cfg.streamRounds {
			if ctx.Err() != nil {
				break
			}
			progress(fmt.Sprintf("== streaming, round %d/%d: %d SubscribeToTask streams on one task", r+1, cfg.streamRounds, cfg.streams))
			round, err := l.streamRound(ctx, fmt.Sprintf("caddy-a2a-stream-%d", r+1), upstream, cfg.streams, progress)
			if err != nil {
				fail("streaming", err)
				break
			}
			progress(fmt.Sprintf("  fan-out: %d/%d streams had the update; p50 %s p99 %s max %s",
				round.received, round.streams, fmtDur(round.fanout.Quantile(0.5)), fmtDur(round.fanout.Quantile(0.99)), fmtDur(round.fanout.Max())))
			rep.streams = append(rep.streams, round)
		}
	}
	if want("store") && ctx.Err() == nil {
		progress(fmt.Sprintf("== task store: max_tasks %d, %d SendMessage calls", cfg.storeTasks, cfg.flood))
		s, err := l.storeScenario(ctx, upstream, cfg.storeTasks, cfg.flood, cfg.floodSteps, progress)
		if err != nil {
			fail("task store", err)
		}
		rep.store = s
	}
	if want("redis-store") && ctx.Err() == nil {
		progress(fmt.Sprintf("== tasks in Redis: bytes per stored task over %d small tasks", cfg.redisTasks))
		s, err := l.redisStoreScenario(ctx, upstream, cfg.redisTasks, progress)
		if err != nil {
			fail("tasks in Redis", err)
		}
		rep.redisStore = s
	}
	if err := ctx.Err(); err != nil {
		fail("interrupted", errors.New("the run was interrupted"))
	}
	return failed
}

// filter keeps the contenders -only names.
func (cfg *config) filter(cs []*contender) []*contender {
	if cfg.only == "" {
		return cs
	}
	return slices.DeleteFunc(cs, func(c *contender) bool { return !cfg.keeps(c.name) })
}

// keeps reports whether -only keeps the contender named name (the words
// match in any case: "redis" names the Redis contender).
func (cfg *config) keeps(name string) bool {
	if cfg.only == "" {
		return true
	}
	for _, w := range strings.Split(cfg.only, ",") {
		if w = strings.TrimSpace(w); w != "" && strings.Contains(strings.ToLower(name), strings.ToLower(w)) {
			return true
		}
	}
	return false
}
