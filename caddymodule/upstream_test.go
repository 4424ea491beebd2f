package caddymodule

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests of long-running upstreams: jobs polled through 202 + Location,
// and streamed bodies, each through a real Caddy in front of an upstream on
// loopback that the test drives.

// startAgentWith starts Caddy with the a2a handler in front of upstream,
// with the skills file skills.
func startAgentWith(t *testing.T, skills string, upstream http.Handler) *agent {
	t.Helper()
	path := filepath.Join(t.TempDir(), "skills.yaml")
	if err := os.WriteFile(path, []byte(skills), 0o600); err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, path, upstream)
	a.load(a.publicURL(), "Long-running upstreams")
	return a
}

// events opens a stream (version "" is 0.3) and passes its events' results
// on, in order; the channel closes when the stream ends.
func (a *agent) events(version, body string) <-chan json.RawMessage {
	a.t.Helper()
	resp := a.post(version, body)
	if resp.StatusCode != http.StatusOK {
		a.t.Fatalf("%s: status %d", body, resp.StatusCode)
	}
	ch := make(chan json.RawMessage, 64)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		_ = readSSE(resp.Body, func(data []byte) bool {
			var ev struct {
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(data, &ev) != nil || ev.Result == nil {
				ch <- data // an error event: the test sees it as it is
				return false
			}
			ch <- ev.Result
			return true
		})
	}()
	return ch
}

// until reads events until one holds all of want, and returns it.
func until(t *testing.T, events <-chan json.RawMessage, want ...string) string {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, open := <-events:
			if !open {
				t.Fatalf("the stream ended before an event with %q", want)
			}
			s := compactJSON(t, ev)
			if containsAll(s, want) {
				return s
			}
		case <-timeout:
			t.Fatalf("no event with %q", want)
		}
	}
}

func containsAll(s string, want []string) bool {
	for _, w := range want {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

// jobs is an upstream of reports made by jobs: POST /reports starts one
// and answers 202 with its Location; GET /reports/<n> answers its progress
// while it runs, and the report once the test finishes it; DELETE cancels
// it.
type jobs struct {
	mu       sync.Mutex
	progress map[string]int // percent done, by job path; 100 is done
	n        int
	polled   chan string // the path of each poll, when a test listens
	deleted  chan string
}

func newJobs() *jobs {
	return &jobs{progress: map[string]int{}, polled: make(chan string, 256), deleted: make(chan string, 8)}
}

func (j *jobs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	j.mu.Lock()
	defer j.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.Method {
	case http.MethodPost:
		j.n++
		path := fmt.Sprintf("/reports/%d", j.n)
		j.progress[path] = 10
		w.Header().Set("Location", path)
		w.WriteHeader(http.StatusAccepted)
	case http.MethodGet:
		select {
		case j.polled <- r.URL.Path:
		default:
		}
		p, ok := j.progress[r.URL.Path]
		switch {
		case !ok:
			w.WriteHeader(http.StatusNotFound)
		case p >= 100:
			fmt.Fprintf(w, `{"report": %q}`, r.URL.Path)
		default:
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, `{"percent": %d}`, p)
		}
	case http.MethodDelete:
		delete(j.progress, r.URL.Path)
		w.WriteHeader(http.StatusNoContent)
		j.deleted <- r.URL.Path
	}
}

// latestN is the number of the last job started, and latest its path.
func (j *jobs) latestN() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.n
}

func (j *jobs) latest() string { return fmt.Sprintf("/reports/%d", j.latestN()) }

// set moves the job at path on.
func (j *jobs) set(path string, percent int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.progress[path] = percent
}

const jobsSkills = `upstream: {url: "http://ignored", timeout: 10s}
skills:
  - id: report
    description: Makes a report, slowly.
    request:
      method: POST
      path: /reports
      poll:
        interval: 10ms
        backoff: 1
        message: "Report {response.body.percent}% done"
        cancel: DELETE
`

// TestIntegrationPolledJob: a skill whose upstream answers 202 + Location
// keeps its task working while the job runs, each progress message reaches
// the streams, the job's result completes the task, and CancelTask stops
// the polling and deletes the job; in 1.0 and 0.3.
func TestIntegrationPolledJob(t *testing.T) {
	up := newJobs()
	a := startAgentWith(t, jobsSkills, up)

	for _, tt := range []struct{ version, method, message, working, artifact, completed string }{
		{"1.0", "SendStreamingMessage", `{"messageId":"j1","role":"ROLE_USER","parts":[{"text":"report"}]}`,
			`"TASK_STATE_WORKING"`, `"artifactUpdate"`, `"TASK_STATE_COMPLETED"`},
		{"", "message/stream", `{"kind":"message","messageId":"j2","role":"user","parts":[{"kind":"text","text":"report"}]}`,
			`"state":"working"`, `"kind":"artifact-update"`, `"state":"completed"`},
	} {
		t.Run(tt.version+" "+tt.method, func(t *testing.T) {
			events := a.events(tt.version, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{"message":%s}}`, tt.method, tt.message))
			until(t, events, tt.working, `Report 10% done`)
			job := up.latest()
			up.set(job, 60)
			until(t, events, tt.working, `Report 60% done`)
			up.set(job, 100)
			until(t, events, tt.artifact, `"report":"`+job+`"`)
			until(t, events, tt.completed)
		})
	}

	t.Run("0.3 message/send", func(t *testing.T) {
		next := fmt.Sprintf("/reports/%d", up.latestN()+1)
		go func() { // the job is done once it has been polled
			for path := range up.polled {
				if path == next {
					up.set(path, 100)
					return
				}
			}
		}()
		r := a.call("", `{"jsonrpc":"2.0","id":2,"method":"message/send","params":{"message":
			{"kind":"message","messageId":"j3","role":"user","parts":[{"kind":"text","text":"report"}]}}}`)
		if r.Error != nil {
			t.Fatalf("error %d: %s", r.Error.Code, r.Error.Message)
		}
		if s := compactJSON(t, r.Result); !containsAll(s, []string{`"state":"completed"`, `"report":"` + next + `"`, `Report 10% done`}) {
			t.Errorf("answer %s: want the task completed with the report, its progress in the history", s)
		}
	})

	for _, tt := range []struct{ version, send, subscribe, cancel, working, canceled string }{
		{"1.0", `"SendMessage"`, "SubscribeToTask", "CancelTask", "TASK_STATE_WORKING", "TASK_STATE_CANCELED"},
		{"", `"message/send"`, "tasks/resubscribe", "tasks/cancel", `"working"`, `"canceled"`},
	} {
		t.Run(tt.version+" SubscribeToTask and CancelTask while polling", func(t *testing.T) {
			message := `{"messageId":"jc` + tt.version + `","role":"ROLE_USER","parts":[{"text":"report"}]},"configuration":{"returnImmediately":true}`
			if tt.version == "" {
				message = `{"kind":"message","messageId":"jc","role":"user","parts":[{"kind":"text","text":"report"}]},"configuration":{"blocking":false}`
			}
			started := a.call(tt.version, `{"jsonrpc":"2.0","id":3,"method":`+tt.send+`,"params":{"message":`+message+`}}`)
			if started.Error != nil {
				t.Fatalf("error %d: %s", started.Error.Code, started.Error.Message)
			}
			var id string
			if tt.version == "1.0" {
				id = decodeTask10(t, started.Result).ID
			} else {
				id = decodeTask(t, started.Result).ID
			}
			events := a.events(tt.version, fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":%q,"params":{"id":%q}}`, tt.subscribe, id))
			until(t, events, tt.working, "Report 10% done")

			canceled := a.call(tt.version, fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":%q,"params":{"id":%q}}`, tt.cancel, id))
			if canceled.Error != nil || !strings.Contains(string(canceled.Result), tt.canceled) {
				t.Fatalf("cancel: %+v %s", canceled.Error, canceled.Result)
			}
			until(t, events, tt.canceled)
			select {
			case <-up.deleted:
			case <-time.After(20 * time.Second):
				t.Fatal("the job was not deleted upstream")
			}
		})
	}
}

// chat is an upstream that streams: GET /chat answers server-sent events,
// the first two chunks at once (the agent sends a chunk when the next one
// comes, so that it can mark the last) and the rest only when the test
// releases them (each request hands its release channel to arrived once
// its first chunks are sent); GET /numbers answers NDJSON.
type chat struct{ arrived chan chan struct{} }

func (c *chat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/chat":
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"delta": "Hel"}`+"\n\n"+`data: {"delta": "lo"}`+"\n\n")
		w.(http.Flusher).Flush()
		release := make(chan struct{})
		select {
		case c.arrived <- release:
		case <-r.Context().Done():
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, `data: {"delta": "!"}`+"\n\n"+"data: [DONE]\n\n")
	case "/numbers":
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, `{"n": 1}`+"\n"+`{"n": 2}`+"\n")
	}
}

const chatSkills = `upstream: {url: "http://ignored", timeout: 10s}
skills:
  - id: chat
    description: Answers word by word.
    request: {path: /chat}
    stream:
      artifact: {name: reply, text: "{event.data.delta}"}
      done: event.text == "[DONE]"
  - id: numbers
    description: Counts.
    request: {path: /numbers}
    stream: {}
`

// TestIntegrationStreamedUpstream: an upstream's SSE or NDJSON answer
// reaches the caller chunk by chunk, as it comes, as one artifact (append,
// lastChunk) over SendStreamingMessage and SubscribeToTask in 1.0 and 0.3;
// a blocking SendMessage answers with the whole artifact, and so does the
// stored task; a client that hangs up does not stop the task.
func TestIntegrationStreamedUpstream(t *testing.T) {
	up := &chat{arrived: make(chan chan struct{})}
	a := startAgentWith(t, chatSkills, up)
	released := func() chan struct{} {
		select {
		case release := <-up.arrived:
			return release
		case <-time.After(20 * time.Second):
			t.Fatal("the upstream got no request")
			return nil
		}
	}

	for _, tt := range []struct {
		version, method, message, first, next, last string
	}{
		{"1.0", "SendStreamingMessage", `{"messageId":"c1","role":"ROLE_USER","metadata":{"skill":"chat"},"parts":[{"text":"hi"}]}`,
			`"artifactUpdate":{"artifact":{"artifactId":`, `"append":true`, `"lastChunk":true`},
		{"", "message/stream", `{"kind":"message","messageId":"c2","role":"user","metadata":{"skill":"chat"},"parts":[{"kind":"text","text":"hi"}]}`,
			`"kind":"artifact-update"`, `"append":true`, `"lastChunk":true`},
	} {
		t.Run(tt.version+" "+tt.method, func(t *testing.T) {
			events := a.events(tt.version, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{"message":%s}}`, tt.method, tt.message))
			release := released()
			first := until(t, events, tt.first, `"text":"Hel"`, `"name":"reply"`)
			if strings.Contains(first, `"append":true`) || strings.Contains(first, `"lastChunk":true`) {
				t.Errorf("first chunk %s: want neither append nor lastChunk", first)
			}
			close(release) // only now does the upstream send the third chunk, and the second is sent
			until(t, events, tt.next, `"text":"lo"`)
			until(t, events, tt.last, `"text":"!"`)
			final := until(t, events, map[string]string{"1.0": "TASK_STATE_COMPLETED", "": `"completed"`}[tt.version])
			var id struct {
				TaskID       string `json:"taskId"`
				StatusUpdate struct {
					TaskID string `json:"taskId"`
				} `json:"statusUpdate"`
			}
			_ = json.Unmarshal([]byte(final), &id)
			taskID := id.TaskID + id.StatusUpdate.TaskID
			got := a.call(tt.version, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":%q,"params":{"id":%q}}`,
				map[string]string{"1.0": "GetTask", "": "tasks/get"}[tt.version], taskID))
			if s := compactJSON(t, got.Result); strings.Count(s, `"artifactId"`) != 1 || !strings.Contains(s, `{"text":"Hel"},{"text":"lo"}`) &&
				!strings.Contains(s, `{"kind":"text","text":"Hel"},{"kind":"text","text":"lo"}`) {
				t.Errorf("stored task %s: want one artifact with every chunk", s)
			}
		})
	}

	t.Run("1.0 SendMessage answers the whole artifact", func(t *testing.T) {
		go func() { close(released()) }()
		r := a.call("1.0", `{"jsonrpc":"2.0","id":3,"method":"SendMessage","params":{"message":
			{"messageId":"c3","role":"ROLE_USER","metadata":{"skill":"chat"},"parts":[{"text":"hi"}]}}}`)
		if s := compactJSON(t, r.Result); !strings.Contains(s, `"TASK_STATE_COMPLETED"`) || !strings.Contains(s, `"parts":[{"text":"Hel"},{"text":"lo"},{"text":"!"}]`) {
			t.Errorf("answer %s: want the task completed with the whole artifact", s)
		}
	})

	t.Run("0.3 message/send of NDJSON", func(t *testing.T) {
		r := a.call("", `{"jsonrpc":"2.0","id":4,"method":"message/send","params":{"message":
			{"kind":"message","messageId":"c4","role":"user","metadata":{"skill":"numbers"},"parts":[{"kind":"text","text":"count"}]}}}`)
		if s := compactJSON(t, r.Result); !strings.Contains(s, `"state":"completed"`) ||
			!strings.Contains(s, `"parts":[{"data":{"n":1},"kind":"data"},{"data":{"n":2},"kind":"data"}]`) {
			t.Errorf("answer %s: want the task completed with both lines as data", s)
		}
	})

	for _, tt := range []struct{ version, send, subscribe, config, message string }{
		{"1.0", "SendMessage", "SubscribeToTask", `{"returnImmediately":true}`, `{"messageId":"c5","role":"ROLE_USER","metadata":{"skill":"chat"},"parts":[{"text":"hi"}]}`},
		{"", "message/send", "tasks/resubscribe", `{"blocking":false}`, `{"kind":"message","messageId":"c6","role":"user","metadata":{"skill":"chat"},"parts":[{"kind":"text","text":"hi"}]}`},
	} {
		t.Run(tt.version+" "+tt.subscribe+" after the client hung up", func(t *testing.T) {
			// The stream of the message is dropped after the first chunk;
			// the task goes on, and a subscriber sees the rest.
			resp := a.post(tt.version, fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":%q,"params":{"message":%s,"configuration":%s}}`,
				map[string]string{"1.0": "SendStreamingMessage", "": "message/stream"}[tt.version], tt.message, tt.config))
			release := released()
			var taskID string
			_ = readSSE(resp.Body, func(data []byte) bool {
				var ev struct {
					Result struct {
						ID   string `json:"id"` // 0.3 task
						Task struct {
							ID string `json:"id"`
						} `json:"task"`
					} `json:"result"`
				}
				_ = json.Unmarshal(data, &ev)
				taskID = ev.Result.ID + ev.Result.Task.ID
				return false
			})
			resp.Body.Close()
			events := a.events(tt.version, fmt.Sprintf(`{"jsonrpc":"2.0","id":6,"method":%q,"params":{"id":%q}}`, tt.subscribe, taskID))
			until(t, events, `"Hel"`) // the task, with the first chunk stored, or the chunk itself
			close(release)
			until(t, events, `"append":true`, `"text":"lo"`)
			until(t, events, map[string]string{"1.0": "TASK_STATE_COMPLETED", "": `"completed"`}[tt.version])
		})
	}
}
