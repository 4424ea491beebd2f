package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddy-a2a/caddy-a2a/bench/internal/fixture"
	"github.com/caddy-a2a/caddy-a2a/bench/internal/load"
	"github.com/caddy-a2a/caddy-a2a/bench/internal/procstat"
)

// streamRound is one run of the streaming scenario on a fresh caddy-a2a:
// n SubscribeToTask streams held open on one working task, then one status
// update (the task completing) fanned out to all of them.
type streamRound struct {
	// reference is set for the floor measured on a plain Go net/http
	// server (see holdFloor).
	reference           bool
	streams, opened     int
	openTime            time.Duration
	rssBefore, rssAfter int64
	goBefore, goAfter   memStats
	fanout              load.Histogram // from the upstream's release to each stream's completed event
	received            int
	errors              int64
	firstError          string
}

func (s *streamRound) rssPerStream() float64 {
	if s.opened == 0 {
		return 0
	}
	return float64(s.rssAfter-s.rssBefore) / float64(s.opened)
}

// goPerStream is the Go heap and the goroutine stacks in use per stream:
// where the RSS delta goes.
func (s *streamRound) goPerStream() (heap, stacks float64) {
	if s.opened == 0 {
		return 0, 0
	}
	n := float64(s.opened)
	return (float64(s.goAfter.HeapInuse) - float64(s.goBefore.HeapInuse)) / n,
		(float64(s.goAfter.StackInuse) - float64(s.goBefore.StackInuse)) / n
}

// How the fan-out is triggered: the "hold" skill's upstream call (GET
// /hold) waits until the benchmark posts /release to the upstream. So the
// task stays working while the streams subscribe; the release completes
// the upstream call, and caddy-a2a publishes the artifact and the final
// status update to every subscriber at once. The clock starts just before
// the release is posted.
func (l *lab) streamRound(ctx context.Context, name, upAddr string, n int, progress func(string)) (*streamRound, error) {
	c, err := l.startA2A(ctx, name, upAddr, "")
	if err != nil {
		return nil, err
	}
	defer l.stopProc(c.proc)
	round := &streamRound{streams: n}

	taskID, err := l.startHeldTask(c.addr)
	if err != nil {
		return nil, err
	}
	// The task is working, and stays so until the release, once the
	// upstream holds its call.
	if err := l.waitHolding(ctx, upAddr, 1); err != nil {
		return nil, err
	}
	if round.goBefore, err = l.gcAndMemStats(c); err != nil {
		return nil, err
	}
	mem, err := procstat.ReadMemory(c.pid())
	if err != nil {
		return nil, err
	}
	round.rssBefore = mem.RSS

	hold := make(chan struct{}) // closed when the streams may close
	var closeHold sync.Once
	release := func() { closeHold.Do(func() { close(hold) }) }
	defer release()
	var (
		got     = make([]time.Time, n)
		opened  atomic.Int64
		failed  atomic.Int64
		errOnce sync.Once
		ready   sync.WaitGroup // every stream has its first event, or failed
		settled sync.WaitGroup // every stream has the completed status, or failed
		done    sync.WaitGroup
		slots   = make(chan struct{}, 64) // streams being opened at once
	)
	fail := func(err error) {
		failed.Add(1)
		errOnce.Do(func() { round.firstError = err.Error() })
	}
	req := load.NewRequest("POST", c.addr, "/", fixture.SubscribeToTask(taskID), "Content-Type", "application/json", "A2A-Version", "1.0")
	start := time.Now()
	ready.Add(n)
	settled.Add(n)
	for i := range n {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		done.Go(func() {
			var readyOnce, settledOnce sync.Once
			isReady := func() { readyOnce.Do(func() { <-slots; ready.Done() }) }
			isSettled := func() { settledOnce.Do(settled.Done) }
			defer isReady()
			defer isSettled()
			if err := subscribe(c.addr, req, func() { opened.Add(1); isReady() }, isSettled, &got[i], hold); err != nil {
				fail(err)
			}
		})
	}
	if err := waitGroup(ctx, &ready, 3*time.Minute); err != nil {
		return nil, fmt.Errorf("opening %d streams: %w", n, err)
	}
	round.openTime = time.Since(start)
	round.opened = int(opened.Load())
	if round.goAfter, err = l.gcAndMemStats(c); err != nil {
		return nil, err
	}
	if mem, err = procstat.ReadMemory(c.pid()); err != nil {
		return nil, err
	}
	round.rssAfter = mem.RSS
	for _, kind := range []string{"heap", "goroutine"} {
		if err := l.profile(c, kind, fmt.Sprintf("%s.%s.pprof", name, kind)); err != nil {
			return nil, err
		}
	}
	progress(fmt.Sprintf("  %d streams open in %s; RSS %s → %s", round.opened, round.openTime.Round(time.Millisecond), fmtMiB(round.rssBefore), fmtMiB(round.rssAfter)))

	profiled := make(chan error, 1)
	if l.pprofDir != "" {
		// Profile Caddy and this load generator across the fan-out; the
		// pause lets Caddy's profiler start before the release.
		go func() { profiled <- l.profile(c, "profile?seconds=2", name+".fanout.cpu.pprof") }()
		stopSelf, err := l.profileSelf(name + ".fanout.loadgen.cpu.pprof")
		if err != nil {
			return nil, err
		}
		defer stopSelf()
		time.Sleep(100 * time.Millisecond)
	} else {
		profiled <- nil
	}
	t0 := time.Now()
	resp, err := l.client.Post("http://"+upAddr+"/release", "", nil)
	if err != nil {
		return nil, fmt.Errorf("releasing the held upstream call: %w", err)
	}
	resp.Body.Close()
	if err := waitGroup(ctx, &settled, time.Minute); err != nil {
		fail(fmt.Errorf("not every stream had the completed status a minute after the release"))
	}
	release()
	if err := waitGroup(ctx, &done, time.Minute); err != nil {
		fail(fmt.Errorf("streams still open a minute after the release: %w", err))
	}
	if err := <-profiled; err != nil {
		return nil, err
	}
	for _, at := range got {
		if !at.IsZero() {
			round.fanout.Record(at.Sub(t0))
			round.received++
		}
	}
	round.errors = failed.Load() + int64(n-round.received)
	if round.received < n && round.firstError == "" {
		round.firstError = fmt.Sprintf("%d of %d streams never had the completed status", n-round.received, n)
	}
	return round, nil
}

// startHeldTask sends a non-blocking SendMessage for the "hold" skill and
// returns the task's id.
func (l *lab) startHeldTask(addr string) (string, error) {
	body := fixture.SendMessage("hold", true)
	fixture.NewMessageID(body)
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := l.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("starting the held task: %w", err)
	}
	defer resp.Body.Close()
	var answer struct {
		Result struct {
			Task struct {
				ID string `json:"id"`
			} `json:"task"`
		} `json:"result"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &answer); err != nil || answer.Result.Task.ID == "" {
		return "", fmt.Errorf("starting the held task: no task id in %s %s", resp.Status, raw)
	}
	return answer.Result.Task.ID, nil
}

// waitHolding waits until the upstream holds at least n /hold calls.
func (l *lab) waitHolding(ctx context.Context, upAddr string, n int) error {
	deadline := time.Now().Add(30*time.Second + time.Duration(n)*time.Millisecond)
	for {
		resp, err := l.client.Get("http://" + upAddr + "/stats")
		if err != nil {
			return err
		}
		var stats struct{ Holding int }
		err = json.NewDecoder(resp.Body).Decode(&stats)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("reading the upstream's /stats: %w", err)
		}
		if stats.Holding >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the upstream holds %d calls, not %d, after 30s", stats.Holding, n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond): // polling interval
		}
	}
}

// subscribe opens one SubscribeToTask stream, calls opened once its first
// event (the task) has arrived, records in *completed when the completed
// status update arrives and calls settled, then keeps the connection open
// until hold is closed, so that no stream's teardown competes with the
// fan-out.
func subscribe(addr string, req []byte, opened, settled func(), completed *time.Time, hold <-chan struct{}) error {
	s, err := load.OpenStream(addr, req)
	if err != nil {
		return fmt.Errorf("SubscribeToTask: %w", err)
	}
	defer s.Close()
	first := true
	for {
		data, err := s.Data()
		if err != nil {
			return fmt.Errorf("the stream ended before the completed status: %w", err)
		}
		switch {
		case bytes.Contains(data, []byte(`"error"`)):
			return fmt.Errorf("error event: %s", data)
		case first:
			if !bytes.Contains(data, []byte(`"task"`)) {
				return fmt.Errorf("first event is not the task: %s", data)
			}
			first = false
			opened()
		case bytes.Contains(data, []byte(`"statusUpdate"`)) && bytes.Contains(data, []byte(fixture.Completed10)):
			*completed = time.Now()
			settled()
			<-hold
			return nil
		}
	}
}

// waitGroup waits for wg, for at most d.
func waitGroup(ctx context.Context, wg *sync.WaitGroup, d time.Duration) error {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-time.After(d):
		return fmt.Errorf("still waiting after %s", d)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// holdFloor measures the same on the plain Go net/http server that the
// upstream is: n GET /hold requests held open on a fresh upstream (one
// connection each, a handler blocked in a select), then all released at
// once, each answer a single small write. No Go HTTP server can hold an
// open request for less, or answer n waiting clients faster, on this
// machine: it is the floor the streaming figures compare with.
func (l *lab) holdFloor(ctx context.Context, n int, progress func(string)) (*streamRound, error) {
	p, addr, err := l.start(ctx, "upstream-floor", true, nil, filepath.Join(l.binDir, "upstream"))
	if err != nil {
		return nil, err
	}
	defer l.stopProc(p)
	round := &streamRound{reference: true, streams: n}
	mem, err := procstat.ReadMemory(p.pid())
	if err != nil {
		return nil, err
	}
	round.rssBefore = mem.RSS

	req := load.NewRequest("GET", addr, "/hold", nil)
	hold := make(chan struct{}) // closed when the connections may close
	var closeHold sync.Once
	release := func() { closeHold.Do(func() { close(hold) }) }
	defer release()
	var (
		got     = make([]time.Time, n)
		failed  atomic.Int64
		errOnce sync.Once
		settled sync.WaitGroup // every request answered, or failed
		done    sync.WaitGroup
		slots   = make(chan struct{}, 64) // requests being sent at once
	)
	start := time.Now()
	settled.Add(n)
	for i := range n {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		done.Go(func() {
			var once sync.Once
			isSettled := func() { once.Do(settled.Done) }
			defer isSettled()
			err := load.Hold(addr, req, func() { <-slots }, isSettled, &got[i], []byte(fixture.SmallMarker), hold)
			if err != nil {
				failed.Add(1)
				errOnce.Do(func() { round.firstError = err.Error() })
			}
		})
	}
	if err := l.waitHolding(ctx, addr, n); err != nil {
		return nil, err
	}
	round.openTime = time.Since(start)
	round.opened = n
	if mem, err = procstat.ReadMemory(p.pid()); err != nil {
		return nil, err
	}
	round.rssAfter = mem.RSS
	progress(fmt.Sprintf("  %d requests held in %s; RSS %s → %s", n, round.openTime.Round(time.Millisecond), fmtMiB(round.rssBefore), fmtMiB(round.rssAfter)))

	t0 := time.Now()
	resp, err := l.client.Post("http://"+addr+"/release", "", nil)
	if err != nil {
		return nil, fmt.Errorf("releasing the held requests: %w", err)
	}
	resp.Body.Close()
	if err := waitGroup(ctx, &settled, time.Minute); err != nil {
		return nil, fmt.Errorf("held requests not answered a minute after the release: %w", err)
	}
	release()
	if err := waitGroup(ctx, &done, time.Minute); err != nil {
		return nil, fmt.Errorf("connections still open a minute after the release: %w", err)
	}
	for _, at := range got {
		if !at.IsZero() {
			round.fanout.Record(at.Sub(t0))
			round.received++
		}
	}
	round.errors = failed.Load()
	return round, nil
}
