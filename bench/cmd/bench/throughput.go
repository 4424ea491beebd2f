package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/caddy-a2a/caddy-a2a/bench/internal/fixture"
	"github.com/caddy-a2a/caddy-a2a/bench/internal/load"
	"github.com/caddy-a2a/caddy-a2a/bench/internal/procstat"
)

// contender is one thing driven with load: whose process's CPU and memory
// are reported, and what it is asked.
type contender struct {
	name   string
	what   string // one line for the report
	proc   *proc
	target load.Target
	// caddy is set for the contenders that are a Caddy, whose CPU can be
	// profiled through its admin API.
	caddy *caddy
	// aux is a process the contender needs for each answer (its Redis),
	// whose CPU is reported next to the contender's own.
	aux     *proc
	auxName string
}

// Names of the contenders, as the report shows them.
const (
	nameDirect   = "direct"
	nameProxy    = "caddy reverse_proxy"
	nameA2A10    = "caddy-a2a 1.0 SendMessage"
	nameA2A03    = "caddy-a2a 0.3 message/send"
	nameA2AREST  = "caddy-a2a 1.0 HTTP+JSON send"
	nameA2ARedis = "caddy-a2a 1.0 SendMessage (Redis)"
	nameA2AGRPC  = "caddy-a2a 1.0 SendMessage (gRPC)"
	nameA2AMCP   = "caddy-a2a MCP tools/call"
	// The gRPC binding on a listener of its own, and its floor.
	nameA2AGRPCNative = "caddy-a2a 1.0 SendMessage (gRPC native)"
	nameGRPCFloor     = "gRPC floor"
	nameA2ANine       = "caddy-a2a 1.0 SendMessage (9 skills)"
	nameSDKGo         = "a2a-go SDK agent"
	nameSDKJS         = "@a2a-js/sdk agent"
	nameCard          = "caddy-a2a card"
	nameRespond       = "caddy respond"
)

// fleet is every process of the throughput, latency and card scenarios.
type fleet struct {
	upstream   *proc
	upAddr     string
	a2a, proxy *caddy
	// nineAddr is the second site of a2a: an agent of nine skills.
	nineAddr string
	// variants is caddy-a2a with the gRPC binding on a listener of its own
	// (grpcAddr).
	variants  *caddy
	grpcAddr  string
	floor     *proc
	floorAddr string
	// a2aRedis is caddy-a2a with its tasks in redis, when that contender
	// is wanted.
	a2aRedis  *caddy
	redis     *proc
	respond   string // the respond site's address, in the proxy's Caddy
	sdkGo     *proc
	sdkGoAddr string
	sdkJS     *proc
	sdkJSAddr string
	card      []byte
}

// startFleet starts every contender's process; withRedis adds caddy-a2a
// on a redis-server of its own.
func (l *lab) startFleet(ctx context.Context, node string, withRedis bool) (*fleet, error) {
	f := &fleet{}
	var err error
	if f.upstream, f.upAddr, err = l.start(ctx, "upstream", true, nil, filepath.Join(l.binDir, "upstream")); err != nil {
		return nil, err
	}
	if f.a2a, f.nineAddr, err = l.startAgents(ctx, f.upAddr); err != nil {
		return nil, err
	}
	if f.variants, f.grpcAddr, err = l.startVariants(ctx, f.upAddr); err != nil {
		return nil, err
	}
	if f.floor, f.floorAddr, err = l.start(ctx, "grpc-floor", true, nil, filepath.Join(l.binDir, "grpcfloor"), "-upstream", "http://"+f.upAddr); err != nil {
		return nil, err
	}
	if withRedis {
		var raddr string
		if f.redis, raddr, err = l.startRedis(ctx, "redis"); err != nil {
			return nil, err
		}
		// The same skills and limits as caddy-a2a's; only the store differs.
		if f.a2aRedis, err = l.startA2A(ctx, "caddy-a2a-redis", f.upAddr, redisTasks(raddr, oneClient)); err != nil {
			return nil, err
		}
	}
	resp, err := l.client.Get("http://" + f.a2a.addr + "/.well-known/agent-card.json")
	if err != nil {
		return nil, fmt.Errorf("fetching the card: %w", err)
	}
	f.card, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching the card: %s %v", resp.Status, err)
	}
	if slices.Contains(f.card, '`') {
		return nil, fmt.Errorf("the card holds a backtick, which the respond site's Caddyfile quoting cannot carry")
	}
	// Plain Caddy: reverse_proxy with the same upstream keep-alive pool as
	// caddy-a2a's (1,024 idle connections), and respond with the card's bytes.
	sites := `http://:%[1]s {
	bind 127.0.0.1
	reverse_proxy ` + f.upAddr + ` {
		transport http {
			keepalive_idle_conns_per_host 1024
		}
	}
}

http://:%[2]s {
	bind 127.0.0.1
	header Content-Type application/json
	respond ` + "`" + string(f.card) + "`" + ` 200
}
`
	var second string
	if f.proxy, second, err = l.startCaddy(ctx, "caddy-proxy", "", sites, "/item"); err != nil {
		return nil, err
	}
	f.respond = second
	if err := l.checkSameBody("http://"+f.respond+"/.well-known/agent-card.json", f.card); err != nil {
		return nil, fmt.Errorf("caddy respond: %w", err)
	}
	if f.sdkGo, f.sdkGoAddr, err = l.start(ctx, "sdk-go", true, nil, filepath.Join(l.binDir, "sdkagent"), "-upstream", "http://"+f.upAddr); err != nil {
		return nil, err
	}
	// The SDK's in-memory store keeps every task; a larger old space keeps
	// Node from running out of heap over a long run.
	if f.sdkJS, f.sdkJSAddr, err = l.start(ctx, "sdk-js", true, nil, node, "--max-old-space-size=8192",
		filepath.Join(l.jsDir, "agent.mjs"), "--upstream", "http://"+f.upAddr); err != nil {
		return nil, err
	}
	return f, nil
}

func (l *lab) checkSameBody(url string, want []byte) error {
	resp, err := l.client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if string(got) != string(want) {
		return fmt.Errorf("GET %s answered %d bytes that differ from the card's %d", url, len(got), len(want))
	}
	return nil
}

// sendContenders are the contenders of the throughput and latency scenarios.
func (f *fleet) sendContenders() []*contender {
	json := []string{"Content-Type", "application/json"}
	v10 := append(json, "A2A-Version", "1.0")
	item := [][]byte{[]byte(fixture.ItemMarker)}
	task10 := [][]byte{[]byte(fixture.Completed10), []byte(fixture.ItemMarker)}
	cs := []*contender{
		{name: nameDirect, what: "the load generator calls the upstream's `GET /item` itself (the physical limit; CPU is the upstream's)",
			proc: f.upstream, target: load.Target{Addr: f.upAddr, Request: load.NewRequest("GET", f.upAddr, "/item", nil), Expect: item}},
		{name: nameProxy, what: "plain Caddy `reverse_proxy` to the upstream, 1,024 idle keep-alive connections (as caddy-a2a keeps)",
			proc: f.proxy.proc, caddy: f.proxy, target: load.Target{Addr: f.proxy.addr, Request: load.NewRequest("GET", f.proxy.addr, "/item", nil), Expect: item}},
		{name: nameA2A10, what: "blocking 1.0 `SendMessage` → skill `item` → `GET /item` → completed task with the body as a data artifact",
			proc: f.a2a.proc, caddy: f.a2a, target: load.Target{Addr: f.a2a.addr, Request: load.NewRequest("POST", f.a2a.addr, "/", fixture.SendMessage("item", false), v10...), Expect: task10, Prepare: fixture.NewMessageID}},
		{name: nameA2ANine, what: "the same blocking 1.0 `SendMessage`, on an agent of nine skills ([`skills9.yaml`](skills9.yaml)) chosen by `metadata.skill`, on a second site of the same Caddy",
			proc: f.a2a.proc, caddy: f.a2a, target: load.Target{Addr: f.nineAddr, Request: load.NewRequest("POST", f.nineAddr, "/", fixture.SendMessage("item", false), v10...), Expect: task10, Prepare: fixture.NewMessageID}},
		{name: nameA2A03, what: "the same in 0.3 `message/send` (no `A2A-Version` header)",
			proc: f.a2a.proc, caddy: f.a2a, target: load.Target{Addr: f.a2a.addr, Request: load.NewRequest("POST", f.a2a.addr, "/", fixture.MessageSend03("item"), json...),
				Expect: [][]byte{[]byte(fixture.Completed03), []byte(fixture.ItemMarker)}, Prepare: fixture.NewMessageID}},
		{name: nameA2AREST, what: "the same 1.0 call over the HTTP+JSON binding: `POST /rest/message:send`, the same Caddy",
			proc: f.a2a.proc, caddy: f.a2a, target: load.Target{Addr: f.a2a.addr, Request: load.NewRequest("POST", f.a2a.addr, "/rest/message:send", fixture.RESTSendMessage("item"),
				"Content-Type", "application/a2a+json", "A2A-Version", "1.0"), Expect: task10, Prepare: fixture.NewMessageID}},
		{name: nameA2AMCP, what: "the same skill as an MCP tool: a `tools/call` in protocol " + fixture.MCPProtocolVersion + " (stateless: no session) to `POST /mcp` (`mcp`), the same Caddy; the call is a task in the same store",
			proc: f.a2a.proc, caddy: f.a2a, target: load.Target{Addr: f.a2a.addr, Request: load.NewRequest("POST", f.a2a.addr, "/mcp", fixture.MCPToolsCall("item"),
				"Content-Type", "application/json", "Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", fixture.MCPProtocolVersion,
				"Mcp-Method", "tools/call", "Mcp-Name", "item"), Expect: item}},
		{name: nameA2AGRPC, what: "the same blocking 1.0 `SendMessage` over the gRPC binding (h2c), one gRPC client connection per load connection",
			proc: f.a2a.proc, caddy: f.a2a, target: grpcSendMessage(f.a2a.addr, "item")},
		{name: nameA2AGRPCNative, what: "the same blocking 1.0 `SendMessage` over the gRPC binding on a listener of its own (`grpc { listen … }`: grpc-go's own transport), on `caddy-a2a-variants`, by the same gRPC load client",
			proc: f.variants.proc, caddy: f.variants, target: grpcSendMessage(f.grpcAddr, "item")},
		{name: nameGRPCFloor, what: "a bare grpc-go server on its own transport ([`cmd/grpcfloor`](cmd/grpcfloor)) that only fetches `GET /item` and answers a completed task with it (no store, authentication or mapping), by the same gRPC load client",
			proc: f.floor, target: grpcSendMessage(f.floorAddr, "item")},
		{name: nameSDKGo, what: "`a2asrv` JSON-RPC handler, default in-memory task store, an executor doing the same `GET /item` and returning the same task (`cmd/sdkagent`)",
			proc: f.sdkGo, target: load.Target{Addr: f.sdkGoAddr, Request: load.NewRequest("POST", f.sdkGoAddr, "/", fixture.SendMessage("item", false), v10...), Expect: task10, Prepare: fixture.NewMessageID}},
		{name: nameSDKJS, what: "`DefaultRequestHandler` + `InMemoryTaskStore` + `JsonRpcTransportHandler` on `node:http`, the same executor (`js/agent.mjs`)",
			proc: f.sdkJS, target: load.Target{Addr: f.sdkJSAddr, Request: load.NewRequest("POST", f.sdkJSAddr, "/", fixture.SendMessage("item", false), v10...), Expect: task10, Prepare: fixture.NewMessageID}},
	}
	if c := f.a2aRedis; c != nil {
		// After caddy-a2a's HTTP ones, so that the report shows them together.
		cs = slices.Insert(cs, slices.IndexFunc(cs, func(c *contender) bool { return c.name == nameA2AREST })+1, &contender{name: nameA2ARedis,
			what: "the same blocking 1.0 `SendMessage`, by the same Caddy build and skills, with the tasks in a redis-server of its own on loopback (`tasks { redis { … } }`: two round trips per call); CPU is Caddy's + Redis's",
			proc: c.proc, caddy: c, aux: f.redis, auxName: "Redis",
			target: load.Target{Addr: c.addr, Request: load.NewRequest("POST", c.addr, "/", fixture.SendMessage("item", false), v10...), Expect: task10, Prepare: fixture.NewMessageID}})
	}
	return cs
}

// cardContenders are the contenders of the card scenario.
func (f *fleet) cardContenders() []*contender {
	name := [][]byte{[]byte(`"name":"Bench Agent"`)}
	path := "/.well-known/agent-card.json"
	return []*contender{
		{name: nameCard, what: fmt.Sprintf("`GET %s` from caddy-a2a (%d bytes, precomputed, with ETag)", path, len(f.card)),
			proc: f.a2a.proc, caddy: f.a2a, target: load.Target{Addr: f.a2a.addr, Request: load.NewRequest("GET", f.a2a.addr, path, nil), Expect: name}},
		{name: nameRespond, what: "plain Caddy `respond` with the same bytes as a static body",
			proc: f.proxy.proc, caddy: f.proxy, target: load.Target{Addr: f.respond, Request: load.NewRequest("GET", f.respond, path, nil), Expect: name}},
	}
}

// cell is what all the runs of one contender at one concurrency measured.
type cell struct {
	res  load.Result
	cpu  time.Duration
	peak int64
	// auxCPU is the CPU of the contender's aux process (its Redis).
	auxCPU  time.Duration
	auxName string
	// rounds is what each measured round gave, in the order run.
	rounds []round
}

// round is one measured run of a contender: its requests/s and its CPU
// seconds per 1,000 answers.
type round struct{ rps, cpu float64 }

func (c *cell) cpuPer1000() float64 { return c.per1000(c.cpu) }

func (c *cell) per1000(d time.Duration) float64 {
	if c.res.OK == 0 {
		return 0
	}
	return d.Seconds() * 1000 / float64(c.res.OK)
}

// cpuText is the CPU column: the contender's own, and its aux process's
// next to it.
func (c *cell) cpuText() string {
	if c.auxName == "" {
		return fmt.Sprintf("%.3f", c.cpuPer1000())
	}
	return fmt.Sprintf("%.3f + %.3f %s", c.cpuPer1000(), c.per1000(c.auxCPU), c.auxName)
}

// measure runs one load run against c, with its process's CPU time and
// peak memory over exactly that run.
func measure(ctx context.Context, c *contender, o load.Options, into *cell) (*load.Result, error) {
	pid := c.proc.pid()
	if err := procstat.ResetPeak(pid); err != nil {
		return nil, fmt.Errorf("%s: resetting its peak RSS: %w", c.name, err)
	}
	auxCPU := func() (time.Duration, error) {
		if c.aux == nil {
			return 0, nil
		}
		d, err := procstat.CPU(c.aux.pid())
		if err != nil {
			return 0, fmt.Errorf("%s: its %s: %w", c.name, c.auxName, err)
		}
		return d, nil
	}
	aux0, err := auxCPU()
	if err != nil {
		return nil, err
	}
	cpu0, err := procstat.CPU(pid)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	res, err := load.Run(ctx, c.target, o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	cpu1, err := procstat.CPU(pid)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	aux1, err := auxCPU()
	if err != nil {
		return nil, err
	}
	mem, err := procstat.ReadMemory(pid)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	into.res.Merge(res)
	into.cpu += cpu1 - cpu0
	into.auxCPU += aux1 - aux0
	into.auxName = c.auxName
	into.peak = max(into.peak, mem.Peak)
	return res, nil
}

// grid holds one scenario's cells: by contender name, then concurrency.
type grid map[string]map[int]*cell

func (g grid) at(name string, conns int) *cell {
	if g[name] == nil {
		g[name] = map[int]*cell{}
	}
	if g[name][conns] == nil {
		g[name][conns] = &cell{}
	}
	return g[name][conns]
}

// alternate drives every contender at each concurrency for rounds rounds
// of d each, in alternating order (A B C … then … C B A), so that slow
// drifts of a shared machine fall on all of them alike. Each concurrency
// starts with a short unmeasured warm-up of every contender.
//
// With profile set, the first round at targetConns takes a CPU profile of
// every Caddy contender, named after the scenario.
func (l *lab) alternate(ctx context.Context, scenario string, cs []*contender, conns []int, rounds int, d, warmup time.Duration, rate float64, progress func(string)) (grid, error) {
	g := grid{}
	for _, n := range conns {
		if warmup > 0 {
			for _, c := range cs {
				res, err := measure(ctx, c, load.Options{Conns: n, Duration: warmup, Rate: rate}, &cell{})
				if err != nil {
					return g, err
				}
				// Only errors count from a warm-up: a contender must not fail then either.
				cl := g.at(c.name, n)
				cl.res.Errors += res.Errors
				if cl.res.FirstError == "" {
					cl.res.FirstError = res.FirstError
				}
			}
		}
		for r := range rounds {
			order := slices.Clone(cs)
			if r%2 == 1 {
				slices.Reverse(order)
			}
			for _, c := range order {
				if err := ctx.Err(); err != nil {
					return g, err
				}
				profiled := make(chan error, 1)
				if l.pprofDir != "" && c.caddy != nil && n == targetConns && r == 0 {
					name := fmt.Sprintf("%s-%s-c%d.cpu.pprof", scenario, strings.NewReplacer(" ", "_", "/", "_", "@", "").Replace(c.name), n)
					go func() {
						profiled <- l.profile(c.caddy, fmt.Sprintf("profile?seconds=%d", max(int(d/time.Second)-1, 1)), name)
					}()
				} else {
					profiled <- nil
				}
				cl := g.at(c.name, n)
				cpu0, ok0 := cl.cpu, cl.res.OK
				res, err := measure(ctx, c, load.Options{Conns: n, Duration: d, Rate: rate}, cl)
				if perr := <-profiled; perr != nil && err == nil {
					err = perr
				}
				if err != nil {
					return g, err
				}
				rd := round{rps: res.Throughput()}
				if answers := cl.res.OK - ok0; answers > 0 {
					rd.cpu = (cl.cpu - cpu0).Seconds() * 1000 / float64(answers)
				}
				cl.rounds = append(cl.rounds, rd)
				progress(fmt.Sprintf("  %-34s c=%-3d round %d/%d  %8.0f req/s  p99 %-9s errors %d",
					c.name, n, r+1, rounds, res.Throughput(), fmtDur(res.Latency.Quantile(0.99)), res.Errors))
			}
		}
	}
	return g, nil
}
