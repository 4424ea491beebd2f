package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/caddy-a2a/caddy-a2a/bench/internal/fixture"
	"github.com/caddy-a2a/caddy-a2a/bench/internal/load"
	"github.com/caddy-a2a/caddy-a2a/bench/internal/procstat"
)

// storeRun is the task-store scenario: a fresh caddy-a2a whose store holds
// at most maxTasks tasks is sent small blocking SendMessage calls (skill
// "small": a completed task with a small data artifact) until it is full,
// then flooded with many more.
type storeRun struct {
	maxTasks, warm int
	// After a warm-up of warm tasks and after the fill to maxTasks, each
	// measured after a garbage collection.
	base, full memSample
	samples    []memSample // during the flood, every step
	flood      int64       // calls sent in all
	floodTime  time.Duration
	floodOK    int64
	errors     int64
	firstError string
	floodPeak  int64 // VmHWM from the fill to the end
}

type memSample struct {
	sent int64 // SendMessage calls so far
	rss  int64 // VmRSS as the process left it (no collection forced)
	heap uint64
	rps  float64 // of the step that ended here
}

func (s *storeRun) heapPerTask() float64 {
	return float64(int64(s.full.heap)-int64(s.base.heap)) / float64(s.maxTasks-s.warm)
}

func (s *storeRun) rssPerTask() float64 {
	return float64(s.full.rss-s.base.rss) / float64(s.maxTasks-s.warm)
}

// drift compares the mean RSS of the flood's second half of samples with
// its first half: a store that grows without bound (or a leak) shows as a
// rise; a bounded one stays near zero once the garbage collector has
// settled on the full store.
func (s *storeRun) drift() float64 {
	n := len(s.samples) / 2
	if n == 0 {
		return 0
	}
	mean := func(ms []memSample) float64 {
		var sum float64
		for _, m := range ms {
			sum += float64(m.rss)
		}
		return sum / float64(len(ms))
	}
	first, second := mean(s.samples[:n]), mean(s.samples[len(s.samples)-n:])
	return second/first - 1
}

func (l *lab) storeScenario(ctx context.Context, upAddr string, maxTasks int, flood int64, steps int, progress func(string)) (*storeRun, error) {
	c, err := l.startA2A(ctx, "caddy-a2a-store", upAddr, "\t\ttasks {\n\t\t\tmax_tasks "+strconv.Itoa(maxTasks)+"\n"+oneClient+"\t\t}\n")
	if err != nil {
		return nil, err
	}
	defer l.stopProc(c.proc)
	s := &storeRun{maxTasks: maxTasks, warm: max(maxTasks/20, 100), flood: flood}
	target := load.Target{
		Addr:    c.addr,
		Request: load.NewRequest("POST", c.addr, "/", fixture.SendMessage("small", false), "Content-Type", "application/json", "A2A-Version", "1.0"),
		Expect:  [][]byte{[]byte(fixture.Completed10), []byte(fixture.SmallMarker)},
		Prepare: fixture.NewMessageID,
	}
	var sent int64
	send := func(n int64) (*load.Result, error) {
		res, err := load.Run(ctx, target, load.Options{Conns: 32, Count: n})
		if err != nil {
			return nil, err
		}
		sent += n
		s.errors += res.Errors
		if s.firstError == "" {
			s.firstError = res.FirstError
		}
		return res, nil
	}
	sample := func(gc bool) (memSample, error) {
		m := memSample{sent: sent}
		if gc {
			st, err := l.gcAndMemStats(c)
			if err != nil {
				return m, err
			}
			m.heap = st.HeapAlloc
		}
		mem, err := procstat.ReadMemory(c.pid())
		m.rss = mem.RSS
		return m, err
	}

	// Warm up (pools, connections, maps' first growth), then fill.
	if _, err := send(int64(s.warm)); err != nil {
		return nil, err
	}
	if s.base, err = sample(true); err != nil {
		return nil, err
	}
	if _, err := send(int64(maxTasks - s.warm)); err != nil {
		return nil, err
	}
	if s.full, err = sample(true); err != nil {
		return nil, err
	}
	progress(fmt.Sprintf("  store full: %d tasks; live heap %s → %s (%.0f B/task), RSS %s → %s",
		maxTasks, fmtMiB(int64(s.base.heap)), fmtMiB(int64(s.full.heap)), s.heapPerTask(), fmtMiB(s.base.rss), fmtMiB(s.full.rss)))
	if err := l.profile(c, "heap", "caddy-a2a-store-full.heap.pprof"); err != nil {
		return nil, err
	}
	if err := procstat.ResetPeak(c.pid()); err != nil {
		return nil, err
	}

	// The flood: the rest of the calls in steps, the RSS read after each
	// as the process left it, then the live heap after a collection.
	rest := flood - int64(maxTasks)
	start := time.Now()
	for i := range steps {
		n := rest / int64(steps)
		if i == steps-1 {
			n = rest - n*int64(steps-1)
		}
		if n <= 0 {
			continue
		}
		res, err := send(n)
		if err != nil {
			return nil, err
		}
		s.floodOK += res.OK
		m, err := sample(false)
		if err != nil {
			return nil, err
		}
		st, err := l.gcAndMemStats(c)
		if err != nil {
			return nil, err
		}
		m.heap, m.rps = st.HeapAlloc, res.Throughput()
		s.samples = append(s.samples, m)
		progress(fmt.Sprintf("  flood: %9d calls  RSS %s  live heap %s  %6.0f req/s  errors %d", sent, fmtMiB(m.rss), fmtMiB(int64(m.heap)), m.rps, s.errors))
	}
	s.floodTime = time.Since(start)
	mem, err := procstat.ReadMemory(c.pid())
	if err != nil {
		return nil, err
	}
	s.floodPeak = mem.Peak
	return s, nil
}
