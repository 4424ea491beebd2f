package demoapi

// The endpoints of long-running work: a report made by a job that callers
// poll (202 Accepted + Location), and a count streamed as server-sent
// events.

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Bounds of the long-running endpoints.
const (
	// maxReports bounds the jobs POST /reports keeps: past it, it forgets.
	maxReports = 10000
	// MaxReportSteps bounds POST /reports?steps=N.
	MaxReportSteps = 100
	// MaxCount bounds GET /count?to=N.
	MaxCount = 100
	// countEvery is the pause between two numbers of GET /count.
	countEvery = 100 * time.Millisecond
)

// reportJob is how far a report job is, in percent, and how much each
// poll moves it on.
type reportJob struct{ percent, step int }

// startReport starts a report job: 202 Accepted, its Location, and the
// job's state. Each poll of the job moves it on by half, or with ?steps=N
// (1 to MaxReportSteps) by an N-th, so that it is done after N+1 polls.
func (a *API) startReport(w http.ResponseWriter, r *http.Request) {
	steps, ok := queryInt(w, r, "steps", 2, MaxReportSteps)
	if !ok {
		return
	}
	id := strconv.FormatInt(a.reportSeq.Add(1), 10)
	a.mu.Lock()
	if len(a.reports) >= maxReports {
		clear(a.reports)
	}
	a.reports[id] = reportJob{step: (100 + steps - 1) / steps}
	a.mu.Unlock()
	w.Header().Set("Location", "/reports/"+id)
	writeJSON(w, http.StatusAccepted, map[string]any{"id": id, "percent": 0})
}

// report answers a job's state: 202 and how far it is while it runs, 200
// and the report once it is done.
func (a *API) report(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	a.mu.Lock()
	job, ok := a.reports[id]
	if ok && job.percent < 100 {
		a.reports[id] = reportJob{percent: min(job.percent+job.step, 100), step: job.step}
	}
	a.mu.Unlock()
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, "no such report")
	case job.percent < 100:
		writeJSON(w, http.StatusAccepted, map[string]any{"id": id, "percent": job.percent})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "orders": a.orderSeq.Load(), "users": len(users)})
	}
}

// cancelReport cancels a job.
func (a *API) cancelReport(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	a.mu.Lock()
	_, ok := a.reports[id]
	delete(a.reports, id)
	a.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "no such report")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "canceled": true})
}

// countUp streams the numbers from 1 to ?to=N (default 5) as server-sent
// events, one every countEvery, then at once a [DONE] event.
func (a *API) countUp(w http.ResponseWriter, r *http.Request) {
	to, ok := queryInt(w, r, "to", 5, MaxCount)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	tick := time.NewTicker(countEvery)
	defer tick.Stop()
	for n := 1; n <= to; n++ {
		fmt.Fprintf(w, "data: {\"n\": %d}\n\n", n)
		if flusher != nil {
			flusher.Flush()
		}
		if n == to {
			break // [DONE] follows the last number at once, as a token stream's does
		}
		select {
		case <-tick.C:
		case <-r.Context().Done():
			return
		}
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}
