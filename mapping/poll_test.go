package mapping_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/mapping"
)

// jobAPI is an upstream that runs jobs: POST (or PUT) /jobs starts one with start's
// answer, each GET of /jobs/1 is answered by poll (n counts the polls from
// 1), and DELETE /jobs/1 cancels it. It records every request it gets.
type jobAPI struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string    // "METHOD /path"
	polls    []time.Time // when each poll came
	// polled gets the number of each poll, when a test listens.
	polled chan int
}

func newJobAPI(t *testing.T, start http.HandlerFunc, poll func(n int, w http.ResponseWriter)) *jobAPI {
	t.Helper()
	api := &jobAPI{polled: make(chan int, 100)}
	api.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.mu.Lock()
		api.requests = append(api.requests, r.Method+" "+r.URL.Path)
		n := 0
		if r.Method == http.MethodGet && r.URL.Path == "/jobs/1" {
			api.polls = append(api.polls, time.Now())
			n = len(api.polls)
		}
		api.mu.Unlock()
		switch {
		case r.URL.Path == "/jobs":
			start(w, r)
		case n > 0:
			poll(n, w)
			select {
			case api.polled <- n:
			default:
			}
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"rows": 3}`)
		}
	}))
	t.Cleanup(api.Close)
	return api
}

func (api *jobAPI) log() []string {
	api.mu.Lock()
	defer api.mu.Unlock()
	return append([]string(nil), api.requests...)
}

// gaps are the times between the job's start and each poll, then between
// polls.
func (api *jobAPI) gaps(start time.Time) []time.Duration {
	api.mu.Lock()
	defer api.mu.Unlock()
	var out []time.Duration
	for _, at := range api.polls {
		out = append(out, at.Sub(start))
		start = at
	}
	return out
}

func accepted(location string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", location)
		w.WriteHeader(http.StatusAccepted)
	}
}

func jsonAnswer(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// recordProgress collects the working messages of a run.
type recordProgress struct {
	mu    sync.Mutex
	texts []string
}

func (p *recordProgress) Working(m *a2a.Message) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.texts = append(p.texts, m.Parts[0].Text)
}

func (p *recordProgress) Artifact(a2a.Artifact, bool, bool) (string, error) { return "", nil }

const jobSkill = `upstream: {url: "http://ignored", timeout: 5s}
skills:
  - id: job
    description: d
    request:
      method: POST
      path: /jobs
      poll:
%s
`

func runJob(t *testing.T, api *jobAPI, poll string, progress mapping.Progress) mapping.Outcome {
	t.Helper()
	s := load(t, fmt.Sprintf(jobSkill, poll), api.URL, mapping.Options{})
	msg := message("job", map[string]any{}, "")
	return s.ByID("job").Run(context.Background(), mapping.Call{Message: msg, TaskID: "t", ContextID: "c"}, progress)
}

func TestPollUntilDone(t *testing.T) {
	api := newJobAPI(t, accepted("jobs/1"), func(n int, w http.ResponseWriter) {
		if n < 4 {
			jsonAnswer(w, http.StatusAccepted, fmt.Sprintf(`{"percent": %d}`, min(n, 2)*25))
			return
		}
		jsonAnswer(w, http.StatusOK, `{"answer": 42}`)
	})
	progress := &recordProgress{}
	start := time.Now()
	out := runJob(t, api, `        interval: 20ms
        backoff: 2
        max_interval: 50ms
        message: "{response.body.percent}% done"`, progress)
	if out.State != a2a.TaskStateCompleted || len(out.Artifacts) != 1 ||
		string(out.Artifacts[0].Parts[0].Data.(json.RawMessage)) != `{"answer": 42}` {
		t.Fatalf("outcome %+v (%v), want completed with the last poll's body", out, out.Err)
	}
	if got, want := strings.Join(api.log(), ", "), "POST /jobs, GET /jobs/1, GET /jobs/1, GET /jobs/1, GET /jobs/1"; got != want {
		t.Errorf("requests %s, want %s", got, want)
	}
	// Each change of the progress message is reported once.
	if got := strings.Join(progress.texts, ", "); got != "25% done, 50% done" {
		t.Errorf("progress %q, want 25%% done, 50%% done", got)
	}
	// The waits grow by the backoff factor up to max_interval.
	for i, min := range []time.Duration{20, 40, 50, 50} {
		if gaps := api.gaps(start); gaps[i] < min*time.Millisecond {
			t.Errorf("wait before poll %d was %s, want at least %dms (waits %v)", i+1, gaps[i], min, gaps)
		}
	}
}

func TestPollHonoursRetryAfter(t *testing.T) {
	api := newJobAPI(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/jobs/1")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusAccepted)
	}, func(n int, w http.ResponseWriter) { jsonAnswer(w, http.StatusOK, `{}`) })
	start := time.Now()
	out := runJob(t, api, `        interval: 10ms`, nil)
	if out.State != a2a.TaskStateCompleted {
		t.Fatalf("state %v (%v)", out.State, out.Err)
	}
	if gaps := api.gaps(start); len(gaps) != 1 || gaps[0] < time.Second {
		t.Errorf("the first poll came after %v; want it after the second Retry-After asks for", gaps)
	}

	// So is a Retry-After on a poll that tells nothing of the job.
	api = newJobAPI(t, accepted("/jobs/1"), failFirst(1, func(w http.ResponseWriter) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	start = time.Now()
	out = runJob(t, api, "        interval: 10ms\n        retry: {attempts: 1}", nil)
	if out.State != a2a.TaskStateCompleted {
		t.Fatalf("state %v (%v)", out.State, out.Err)
	}
	if gaps := api.gaps(start); len(gaps) != 2 || gaps[1] < time.Second {
		t.Errorf("the waits before the polls were %v; want the second one as long as the 503's Retry-After asks", gaps)
	}
}

func TestPollBodyLinkResultAndFailure(t *testing.T) {
	const poll = `        url: "{response.body.links.status}"
        interval: 10ms
        done: response.body.state == "done"
        failed: response.body.state == "failed"
        result: "{response.body.result}"`
	start := func(w http.ResponseWriter, r *http.Request) {
		jsonAnswer(w, http.StatusAccepted, `{"links": {"status": "/jobs/1"}}`)
	}

	api := newJobAPI(t, start, func(n int, w http.ResponseWriter) {
		if n == 1 {
			jsonAnswer(w, http.StatusOK, `{"state": "running"}`)
			return
		}
		jsonAnswer(w, http.StatusOK, `{"state": "done", "result": "/jobs/1/result"}`)
	})
	out := runJob(t, api, poll, nil)
	if out.State != a2a.TaskStateCompleted || len(out.Artifacts) != 1 ||
		string(out.Artifacts[0].Parts[0].Data.(json.RawMessage)) != `{"rows": 3}` {
		t.Fatalf("outcome %+v (%v), want the result link's body", out, out.Err)
	}
	if got, want := strings.Join(api.log(), ", "), "POST /jobs, GET /jobs/1, GET /jobs/1, GET /jobs/1/result"; got != want {
		t.Errorf("requests %s, want %s", got, want)
	}

	api = newJobAPI(t, start, func(n int, w http.ResponseWriter) {
		jsonAnswer(w, http.StatusOK, `{"state": "failed", "error": "disk full"}`)
	})
	out = runJob(t, api, poll+"\n    error_detail: true", nil)
	if want := `Skill "job" failed: the service's job failed. It said: "disk full".`; out.State != a2a.TaskStateFailed || messageText(out) != want {
		t.Errorf("failed job: %v %q, want failed %q", out.State, messageText(out), want)
	}
}

func TestPollMaxWait(t *testing.T) {
	api := newJobAPI(t, accepted("/jobs/1"), func(n int, w http.ResponseWriter) {
		w.WriteHeader(http.StatusAccepted)
	})
	out := runJob(t, api, `        interval: 10ms
        max_wait: 100ms
        cancel: DELETE`, nil)
	if want := `Skill "job" failed: the service's job did not finish within 100ms.`; out.State != a2a.TaskStateFailed || messageText(out) != want {
		t.Fatalf("outcome %v %q, want failed %q", out.State, messageText(out), want)
	}
	if log := api.log(); log[len(log)-1] != "DELETE /jobs/1" {
		t.Errorf("requests %v, want the job deleted last", log)
	}
}

// A canceled run stops polling and sends the declared cancel call. (Its
// URL reads no response: which answer is the last one depends on whether
// the cancel comes before or after a poll's answer is read.)
func TestPollCancel(t *testing.T) {
	api := newJobAPI(t, accepted("/jobs/1"), func(n int, w http.ResponseWriter) {
		w.WriteHeader(http.StatusAccepted)
	})
	s := load(t, fmt.Sprintf(jobSkill, `        interval: 10ms
        cancel: {method: POST, url: "/jobs/{args.job ?? 1}/cancel"}`), api.URL, mapping.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan mapping.Outcome)
	go func() {
		done <- s.ByID("job").Run(ctx, mapping.Call{Message: message("job", nil, "")}, nil)
	}()
	<-api.polled
	cancel()
	out := <-done
	if want := `Skill "job" was canceled.`; out.State != a2a.TaskStateCanceled || messageText(out) != want {
		t.Fatalf("outcome %v %q, want canceled", out.State, messageText(out))
	}
	if log := api.log(); log[len(log)-1] != "POST /jobs/1/cancel" {
		t.Errorf("requests %v, want the cancel call last", log)
	}
}

// A run canceled while its job is being started waits for the job's
// address and cancels it, rather than leave a job the service started
// and nobody follows.
func TestPollCancelWhileStarting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	api := newJobAPI(t, func(w http.ResponseWriter, r *http.Request) {
		cancel()
		<-ctx.Done() // the run is canceled before the service answers
		accepted("/jobs/1")(w, r)
	}, nil)
	s := load(t, fmt.Sprintf(jobSkill, `        interval: 10ms
        cancel: POST`), api.URL, mapping.Options{})
	out := s.ByID("job").Run(ctx, mapping.Call{Message: message("job", nil, "")}, nil)
	if out.State != a2a.TaskStateCanceled {
		t.Fatalf("outcome %v %q, want canceled", out.State, messageText(out))
	}
	if log := api.log(); log[len(log)-1] != "POST /jobs/1" {
		t.Errorf("requests %v, want the job's cancel call last", log)
	}
}

func TestPollOrigins(t *testing.T) {
	other := newJobAPI(t, nil, func(n int, w http.ResponseWriter) { jsonAnswer(w, http.StatusOK, `{"elsewhere": true}`) })
	for _, link := range []string{other.URL + "/jobs/1", "//" + strings.TrimPrefix(other.URL, "http://") + "/jobs/1",
		"ftp://x/jobs/1", "http://user:pw@" + strings.TrimPrefix(other.URL, "http://") + "/jobs/1"} {
		api := newJobAPI(t, accepted(link), nil)
		out := runJob(t, api, `        interval: 10ms`, nil)
		if want := `Skill "job" failed: the service pointed its job to another address, which this skill may not call.`; out.State != a2a.TaskStateFailed || messageText(out) != want {
			t.Errorf("Location %s: %v %q, want failed %q", link, out.State, messageText(out), want)
		}
	}
	if log := other.log(); len(log) != 0 {
		t.Fatalf("the other origin got %v; want no request", log)
	}

	api := newJobAPI(t, accepted(other.URL+"/jobs/1"), nil)
	out := runJob(t, api, fmt.Sprintf(`        interval: 10ms
        allow_origins: [%q]`, other.URL), nil)
	if out.State != a2a.TaskStateCompleted || len(other.log()) != 1 {
		t.Errorf("an allowed origin: %v (%v), requests %v; want it polled", out.State, out.Err, other.log())
	}
}

func TestPollOnlyWhenAJobStarts(t *testing.T) {
	api := newJobAPI(t, func(w http.ResponseWriter, r *http.Request) { jsonAnswer(w, http.StatusOK, `{"now": true}`) }, nil)
	out := runJob(t, api, `        interval: 10ms`, nil)
	if out.State != a2a.TaskStateCompleted || len(api.log()) != 1 {
		t.Errorf("a 200 answer: %v, requests %v; want it mapped at once", out.State, api.log())
	}
	api = newJobAPI(t, accepted(""), nil)
	out = runJob(t, api, `        interval: 10ms`, nil)
	if want := `Skill "job" failed: the service did not say where to follow its job.`; messageText(out) != want {
		t.Errorf("a 202 without Location: %q, want %q", messageText(out), want)
	}
}

func TestPollLoadErrors(t *testing.T) {
	for _, tt := range []struct {
		poll, want string
	}{
		{"        backoff: 0.5", `t.yaml:9: skill "job": request.poll.backoff: must be a factor from 1 (a steady interval) to 10, not "0.5"`},
		{"        interval: 1m", `t.yaml:9: skill "job": request.poll.max_interval: must not be shorter than interval (1m0s)`},
		{"        max_wait: soon", `t.yaml:9: skill "job": request.poll.max_wait: must be a positive duration`},
		{"        allow_origins: [https://jobs.example.com/path]", `t.yaml:9: skill "job": request.poll.allow_origins[0]: "https://jobs.example.com/path" must be an origin alone`},
		{"        allow_origins: [jobs.example.com]", `request.poll.allow_origins[0]: "jobs.example.com" must be an origin such as https://jobs.example.com`},
		{"        cancel: GET", `t.yaml:9: skill "job": request.poll.cancel: must be one of DELETE, POST, PUT, PATCH, not "GET"`},
		{"        cancel: {methd: DELETE}", `t.yaml:9: skill "job": request.poll.cancel.methd: unknown key (known keys: method, url, timeout)`},
		{"        done: response.status + 1", `t.yaml:9: skill "job": request.poll.done: expected bool`},
		{"        message: '{args.nope}'", `t.yaml:9: skill "job": request.poll.message: args.nope`},
		{"        when: response.status == '202'", `t.yaml:9: skill "job": request.poll.when: invalid operation`},
		{"        retry: {backoff: 1s}", `t.yaml:9: skill "job": request.poll.retry.attempts: is required`},
		{"        every: 1s", `t.yaml:9: skill "job": request.poll.every: unknown key (known keys: when, url, interval`},
	} {
		src := fmt.Sprintf(jobSkill, tt.poll)
		if strings.Contains(tt.poll, "args.") {
			src = strings.Replace(src, "    request:", "    arguments: {a: string}\n    request:", 1)
			tt.want = strings.Replace(tt.want, "t.yaml:9:", "t.yaml:10:", 1)
		}
		_, err := mapping.Parse("t.yaml", []byte(src), mapping.Options{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("poll %q: error %v, want %q", tt.poll, err, tt.want)
		}
	}
}

// A polled request may be any step: the job's answer is the step's, and
// the next step reads it.
func TestPollInSteps(t *testing.T) {
	api := newJobAPI(t, accepted("/jobs/1"), func(n int, w http.ResponseWriter) {
		jsonAnswer(w, http.StatusOK, `{"part": "result"}`)
	})
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - id: two
    description: d
    steps:
      - name: job
        request:
          method: POST
          path: /jobs
          poll: {interval: 10ms}
      - name: fetch
        request:
          path: /jobs/1/{steps.job.body.part}
`, api.URL, mapping.Options{})
	out := s.ByID("two").Run(context.Background(), mapping.Call{Message: message("two", nil, "")}, nil)
	if out.State != a2a.TaskStateCompleted || len(out.Artifacts) != 1 ||
		string(out.Artifacts[0].Parts[0].Data.(json.RawMessage)) != `{"rows": 3}` {
		t.Fatalf("outcome %+v (%v), want the second step's answer", out, out.Err)
	}
}

// A skill with a polled job may run longer than its timeout: timeout
// bounds each call, the run has room for the job. The message of a call
// that runs out of time names the limit that passed: timeout for a poll, the
// run's for a later step, which has what the job left of the run.
func TestPollTimeLimits(t *testing.T) {
	const skill = `upstream: {url: "http://ignored"}
skills:
  - id: two
    description: d
    timeout: 100ms
    steps:
      - name: job
        request:
          method: POST
          path: /jobs
          poll: {interval: 10ms, backoff: 1, max_wait: 1s}
      - name: next
        request: {path: /next}
`
	for _, tt := range []struct {
		name       string
		poll, next http.HandlerFunc
		want       string
	}{
		{"a poll", hang, nil, `Skill "two" timed out: the service did not answer within 100ms.`},
		{"the step after the job", nil, hang, `Skill "two" timed out: the service did not answer within 1.2s.`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var polls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/jobs":
					accepted("/jobs/1")(w, r)
				case r.URL.Path == "/jobs/1" && tt.poll != nil:
					tt.poll(w, r)
				case r.URL.Path == "/jobs/1" && polls.Add(1) < 15: // 15 polls 10ms apart: the job outlives timeout
					w.WriteHeader(http.StatusAccepted)
				case r.URL.Path == "/jobs/1":
					jsonAnswer(w, http.StatusOK, `{}`)
				default:
					tt.next(w, r)
				}
			}))
			t.Cleanup(srv.Close)
			s := load(t, skill, srv.URL, mapping.Options{})
			out := s.ByID("two").Run(context.Background(), mapping.Call{Message: message("two", nil, "")}, nil)
			if out.State != a2a.TaskStateFailed || messageText(out) != tt.want || !errors.Is(out.Err, context.DeadlineExceeded) {
				t.Errorf("outcome %v %q (%v), want failed %q", out.State, messageText(out), out.Err, tt.want)
			}
		})
	}
}

// hang answers when the caller gives up.
func hang(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// Polls are retried as the poll's retry (by default the request's, else
// three attempts on 502, 503 and 504 and transport errors) says, and a
// poll that still fails is not the job's answer: the next poll comes at
// the interval (see TestPollOutageIsNoNews).
func TestPollRetries(t *testing.T) {
	unavailable := func(w http.ResponseWriter) { jsonAnswer(w, http.StatusServiceUnavailable, `{"error": "busy"}`) }
	reset := func(w http.ResponseWriter) { // the connection breaks before an answer
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}
	for _, tt := range []struct {
		name, method, retry, poll string
		answer                    func(n int, w http.ResponseWriter)
		wantState                 a2a.TaskState
		wantText                  string
		wantPolls                 int
	}{
		{name: "a 503, then done", poll: "        interval: 10ms",
			answer: failFirst(1, unavailable), wantState: a2a.TaskStateCompleted, wantPolls: 2},
		// The transport itself sends a GET again once when a kept-alive
		// connection breaks, and not when a new one does.
		{name: "connection resets, then done", poll: "        interval: 10ms",
			answer: failFirst(2, reset), wantState: a2a.TaskStateCompleted, wantPolls: 3},
		{name: "503 after every attempt, then done", poll: "        interval: 10ms",
			answer: failFirst(3, unavailable), wantState: a2a.TaskStateCompleted, wantPolls: 4},
		{name: "poll.retry", poll: "        interval: 10ms\n        retry: {attempts: 2, backoff: 1ms, statuses: [500]}",
			answer: func(n int, w http.ResponseWriter) {
				if n == 1 {
					w.WriteHeader(http.StatusInternalServerError)
					return
				}
				unavailable(w) // not a status this retry names: the job's answer
			}, wantState: a2a.TaskStateFailed, wantText: `Skill "job" failed: the service answered HTTP 503 Service Unavailable.`, wantPolls: 2},
		{name: "the request's retry", method: "PUT", retry: "{attempts: 4, backoff: 1ms}", poll: "        interval: 10ms",
			answer: failFirst(3, unavailable), wantState: a2a.TaskStateCompleted, wantPolls: 4},
		{name: "no retry", poll: "        interval: 10ms\n        retry: {attempts: 1}",
			answer: failFirst(1, unavailable), wantState: a2a.TaskStateCompleted, wantPolls: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api := newJobAPI(t, accepted("/jobs/1"), tt.answer)
			src := fmt.Sprintf(jobSkill, tt.poll)
			if tt.method == "" {
				tt.method = "POST"
			} else {
				src = strings.Replace(src, "method: POST", "method: "+tt.method+"\n      retry: "+tt.retry, 1)
			}
			s := load(t, src, api.URL, mapping.Options{})
			out := s.ByID("job").Run(context.Background(), mapping.Call{Message: message("job", nil, "")}, nil)
			if out.State != tt.wantState || (tt.wantText != "" && messageText(out) != tt.wantText) {
				t.Errorf("outcome %v %q (%v), want %v %q", out.State, messageText(out), out.Err, tt.wantState, tt.wantText)
			}
			if want := tt.method + " /jobs" + strings.Repeat(", GET /jobs/1", tt.wantPolls); strings.Join(api.log(), ", ") != want {
				t.Errorf("requests %v, want %s", api.log(), want)
			}
		})
	}
}

// failFirst answers the first k polls with fail, then says the job is done.
func failFirst(k int, fail func(http.ResponseWriter)) func(n int, w http.ResponseWriter) {
	return func(n int, w http.ResponseWriter) {
		if n <= k {
			fail(w)
			return
		}
		jsonAnswer(w, http.StatusOK, `{"answer": 42}`)
	}
}

// The result's GET is retried as the polls are; its last answer is the
// one mapped, as a request's is, unless it has a retry status: that is the
// service's trouble, never the job's result, even for a rule that would
// claim it.
func TestPollResultRetried(t *testing.T) {
	for _, tt := range []struct {
		name        string
		fail        int // the result GETs that answer 503
		wantState   a2a.TaskState
		wantText    string
		wantErr     string
		wantResults int32
	}{
		{name: "a 503, then the result", fail: 1, wantState: a2a.TaskStateCompleted, wantResults: 2},
		{name: "503 after every attempt", fail: 3, wantState: a2a.TaskStateFailed, wantResults: 3,
			wantText: `Skill "job" failed: the result of the service's job could not be fetched: the service answered HTTP 503 Service Unavailable.`,
			wantErr:  `mapping: skill "job": upstream: poll.result: the result's URL answered HTTP 503`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var results atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/jobs":
					accepted("/jobs/1")(w, r)
				case "/jobs/1":
					jsonAnswer(w, http.StatusOK, `{"result": "/jobs/1/result"}`)
				default:
					if results.Add(1) <= int32(tt.fail) {
						jsonAnswer(w, http.StatusServiceUnavailable, `{"error": "busy"}`)
						return
					}
					jsonAnswer(w, http.StatusOK, `{"rows": 3}`)
				}
			}))
			t.Cleanup(srv.Close)
			out := runJob(t, &jobAPI{Server: srv}, `        interval: 10ms
        retry: {attempts: 3, backoff: 1ms}
        result: "{response.body.result}"
    response:
      - when: response.status == 503
        state: completed
        message: the result is "busy"`, nil)
			if out.State != tt.wantState || (tt.wantText != "" && messageText(out) != tt.wantText) || results.Load() != tt.wantResults {
				t.Errorf("outcome %v %q (%v) after %d GETs of the result; want %v %q after %d",
					out.State, messageText(out), out.Err, results.Load(), tt.wantState, tt.wantText, tt.wantResults)
			}
			if tt.wantErr != "" && (out.Err == nil || out.Err.Error() != tt.wantErr) {
				t.Errorf("error %v, want %s", out.Err, tt.wantErr)
			}
		})
	}
}

// The log tells a failed poll, and a failed result GET, from the request.
func TestPollErrorsSayWhere(t *testing.T) {
	for _, tt := range []struct {
		name, poll string
		job        func(n int, w http.ResponseWriter)
		want       string
	}{
		{"a poll", "        interval: 10ms",
			func(n int, w http.ResponseWriter) { jsonAnswer(w, http.StatusOK, `{"state": "done"}`) },
			`mapping: skill "job": upstream: poll: response body: larger than the limit (10 bytes)`},
		{"a poll that answers 503 until max_wait", "        interval: 10ms\n        retry: {attempts: 1}\n        max_wait: 100ms",
			func(n int, w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) },
			`mapping: skill "job": upstream: poll: context deadline exceeded; the job's status could not be read: the job's URL answered HTTP 503`},
		{"the result", "        interval: 10ms\n        result: /jobs/1/result", // {"rows": 3}
			func(n int, w http.ResponseWriter) { jsonAnswer(w, http.StatusOK, `{}`) },
			`mapping: skill "job": upstream: poll.result: response body: larger than the limit (10 bytes)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api := newJobAPI(t, accepted("/jobs/1"), tt.job)
			s := load(t, fmt.Sprintf(jobSkill, tt.poll)+"    max_response_bytes: 10\n", api.URL, mapping.Options{})
			out := s.ByID("job").Run(context.Background(), mapping.Call{Message: message("job", nil, "")}, nil)
			if out.State != a2a.TaskStateFailed || out.Err == nil || out.Err.Error() != tt.want {
				t.Errorf("outcome %v, error %v; want failed, %s", out.State, out.Err, tt.want)
			}
		})
	}
}

// Polling that stops on a failure, not the job's, cancels the job: the
// agent will not look at it again.
func TestPollFailureCancelsTheJob(t *testing.T) {
	for _, tt := range []struct {
		name, poll string
		job        func(n int, w http.ResponseWriter)
	}{
		{"an answer too large", "    max_response_bytes: 10",
			func(n int, w http.ResponseWriter) { jsonAnswer(w, http.StatusAccepted, `{"percent": 10}`) }},
		{"an expression fails", `        message: '{response.body.percent + 1}%'`,
			func(n int, w http.ResponseWriter) { jsonAnswer(w, http.StatusAccepted, `{"percent": "ten"}`) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api := newJobAPI(t, accepted("/jobs/1"), tt.job)
			out := runJob(t, api, "        interval: 10ms\n        cancel: DELETE\n"+tt.poll, &recordProgress{})
			if out.State != a2a.TaskStateFailed {
				t.Errorf("state %v (%v), want failed", out.State, out.Err)
			}
			if got, want := strings.Join(api.log(), ", "), "POST /jobs, GET /jobs/1, DELETE /jobs/1"; got != want {
				t.Errorf("requests %s, want %s", got, want)
			}
		})
	}
	// A job that fails is not canceled.
	api := newJobAPI(t, accepted("/jobs/1"), func(n int, w http.ResponseWriter) { jsonAnswer(w, http.StatusOK, `{"state": "failed"}`) })
	out := runJob(t, api, "        interval: 10ms\n        cancel: DELETE\n        failed: response.body.state == \"failed\"", nil)
	if got, want := strings.Join(api.log(), ", "), "POST /jobs, GET /jobs/1"; out.State != a2a.TaskStateFailed || got != want {
		t.Errorf("a failed job: %v, requests %s; want failed, %s", out.State, got, want)
	}
}

// A poll that tells nothing of the job — a retry status, or no answer, after
// its retries — is no news: the job, which may be fine (its service being
// deployed, say), is polled again at the next interval, and is neither
// failed nor canceled for it. Only when max_wait passes does the task fail,
// saying why the job's status could not be read, and the job is canceled.
func TestPollOutageIsNoNews(t *testing.T) {
	unavailable := func(w http.ResponseWriter) { jsonAnswer(w, http.StatusServiceUnavailable, `{"error": "deploying"}`) }
	reset := func(w http.ResponseWriter) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}
	const quick = "        retry: {attempts: 2, backoff: 1ms}\n"
	for _, tt := range []struct {
		name, poll string
		answer     func(n int, w http.ResponseWriter)
		wantState  a2a.TaskState
		wantText   string
	}{
		{name: "503s, then done", poll: quick,
			answer: failFirst(6, unavailable), wantState: a2a.TaskStateCompleted},
		{name: "503s with the default retry, then done",
			answer: failFirst(4, unavailable), wantState: a2a.TaskStateCompleted},
		{name: "dropped connections, then done", poll: quick,
			answer: failFirst(6, reset), wantState: a2a.TaskStateCompleted},
		{name: "503 until max_wait", poll: quick + "        max_wait: 200ms\n",
			answer:    func(n int, w http.ResponseWriter) { unavailable(w) },
			wantState: a2a.TaskStateFailed,
			wantText:  `Skill "job" failed: the service's job did not finish within 200ms, and its status could not be read: the service answered HTTP 503 Service Unavailable.`},
		{name: "dropped connections until max_wait", poll: quick + "        max_wait: 200ms\n",
			answer:    func(n int, w http.ResponseWriter) { reset(w) },
			wantState: a2a.TaskStateFailed,
			wantText:  `Skill "job" failed: the service's job did not finish within 200ms, and its status could not be read: the service is unavailable.`},
		{name: "503s, then working until max_wait", poll: quick + "        max_wait: 200ms\n",
			answer: func(n int, w http.ResponseWriter) {
				if n <= 2 {
					unavailable(w)
					return
				}
				w.WriteHeader(http.StatusAccepted)
			},
			wantState: a2a.TaskStateFailed, wantText: `Skill "job" failed: the service's job did not finish within 200ms.`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api := newJobAPI(t, accepted("/jobs/1"), tt.answer)
			out := runJob(t, api, "        interval: 10ms\n        cancel: DELETE\n"+tt.poll, nil)
			if out.State != tt.wantState || (tt.wantText != "" && messageText(out) != tt.wantText) {
				t.Fatalf("outcome %v %q (%v), want %v %q", out.State, messageText(out), out.Err, tt.wantState, tt.wantText)
			}
			log := api.log()
			if canceled := log[len(log)-1] == "DELETE /jobs/1"; canceled != (tt.wantState == a2a.TaskStateFailed) {
				t.Errorf("requests %v; want the job canceled (last) only when the task failed", log)
			}
			if tt.wantState == a2a.TaskStateFailed && !errors.Is(out.Err, context.DeadlineExceeded) {
				t.Errorf("error %v, want max_wait's deadline in it", out.Err)
			}
		})
	}
}
