package mapping

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// benchSkills has a typical skill (a selection predicate, declared
// arguments with a default and an enum, a text pattern, a path hole, a
// credential header, rules that read the decoded body, a message template
// and a data artifact) and a minimal one that relies on the default mapping.
const benchSkills = `upstream:
  url: http://127.0.0.1:9090
  headers:
    X-Api-Key: "{env.KEY}"
skills:
  - id: weather
    description: Weather.
    match: message.text contains "weather"
    arguments:
      city: {type: string, required: true, description: The city.}
      units: {type: string, enum: [metric, imperial], default: metric}
    from_text: 'weather in (?P<city>\pL+)'
    request:
      path: /weather/{args.city}
      query:
        units: "{args.units}"
    response:
      - when: response.status == 200
        state: completed
        message: "{response.body.city}: {response.body.temperatureC} °C, {response.body.conditions}."
        artifacts:
          - name: weather
            data: response.body
      - when: response.status == 404
        state: rejected
        message: I do not know the weather in {args.city}.
  - id: user
    description: User.
    request:
      path: /users/{args.id}
`

const weatherBody = `{"city":"Paris","temperatureC":17,"conditions":"sunny"}`

// memoryRoundTripper answers every request in memory, so that a benchmark
// measures the mapping and not the network.
type memoryRoundTripper struct{ header http.Header }

func (m memoryRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: m.header, ContentLength: int64(len(weatherBody)),
		Body: io.NopCloser(bytes.NewReader([]byte(weatherBody))), Request: req}, nil
}

func benchLoad(b *testing.B, upstreamURL string, transport http.RoundTripper) *Skills {
	b.Helper()
	s, err := Parse("bench.yaml", []byte(benchSkills), Options{UpstreamURL: upstreamURL, Transport: transport,
		LookupEnv: func(string) (string, bool) { return "k3y", true }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return s
}

func benchRun(b *testing.B, s *Skills, msg *a2a.Message) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		sk, serr := s.Select(msg)
		if serr != nil {
			b.Fatal(serr)
		}
		out := sk.Run(ctx, Call{Message: msg, TaskID: "t", ContextID: "c"}, nil)
		if out.State != a2a.TaskStateCompleted {
			b.Fatalf("state %v: %v", out.State, out.Err)
		}
	}
}

// BenchmarkRunInMemory is selection + argument extraction + request
// building + response mapping, with the upstream answered in memory (its
// three allocations included).
func BenchmarkRunInMemory(b *testing.B) {
	for _, tc := range []struct {
		name string
		msg  *a2a.Message
	}{
		{"weather/data", &a2a.Message{MessageID: "m", Role: a2a.RoleUser, Metadata: map[string]any{"skill": "weather"},
			Parts: []a2a.Part{a2a.DataPart(map[string]any{"city": "Paris", "units": "metric"})}}},
		{"weather/text", &a2a.Message{MessageID: "m", Role: a2a.RoleUser,
			Parts: []a2a.Part{a2a.TextPart("What is the weather in Paris?")}}},
		{"user", &a2a.Message{MessageID: "m", Role: a2a.RoleUser, Metadata: map[string]any{"skill": "user"},
			Parts: []a2a.Part{a2a.DataPart(map[string]any{"id": 1.0})}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := benchLoad(b, "", memoryRoundTripper{header: http.Header{"Content-Type": {"application/json"}}})
			benchRun(b, s, tc.msg)
		})
	}
}

// BenchmarkRunLoopback is the same with a real upstream on loopback.
func BenchmarkRunLoopback(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, weatherBody)
	}))
	defer srv.Close()
	s := benchLoad(b, srv.URL, nil)
	msg := &a2a.Message{MessageID: "m", Role: a2a.RoleUser, Metadata: map[string]any{"skill": "weather"},
		Parts: []a2a.Part{a2a.DataPart(map[string]any{"city": "Paris"})}}
	benchRun(b, s, msg)
}

// streamSkills read the same NDJSON answer as a stream, one with a when
// (a constant, which allocates nothing of its own).
const streamSkills = `upstream:
  url: http://127.0.0.1:9090
skills:
  - id: by-format
    description: Stream.
    request: {path: /stream}
    stream:
      format: lines
      artifact: {text: "{response.headers['x-request-id']}: {event.text}"}
  - id: by-when
    description: Stream.
    request: {path: /stream}
    stream:
      when: true
      format: lines
      artifact: {text: "{response.headers['x-request-id']}: {event.text}"}
`

// memoryStream answers every request in memory with a few NDJSON lines
// and a few headers.
type memoryStream struct{}

func (memoryStream) RoundTrip(req *http.Request) (*http.Response, error) {
	header := http.Header{"Content-Type": {"application/x-ndjson"}, "X-Request-Id": {"r1"},
		"Cache-Control": {"no-cache"}, "Date": {"Tue, 24 Nov 2026 02:00:00 GMT"}, "Server": {"api"}}
	const body = "{\"n\": 1}\n{\"n\": 2}\n"
	return &http.Response{StatusCode: 200, Header: header, ContentLength: -1,
		Body: io.NopCloser(bytes.NewReader([]byte(body))), Request: req}, nil
}

func loadStreamSkills(tb testing.TB) *Skills {
	tb.Helper()
	s, err := Parse("bench.yaml", []byte(streamSkills), Options{Transport: memoryStream{}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// A stream's when binds the answer; reading the stream then uses that
// binding rather than making another: a skill with a when allocates no
// more than one without.
func TestStreamBindsTheAnswerOnce(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations vary under the race detector")
	}
	s := loadStreamSkills(t)
	allocs := func(id string) float64 {
		sk := s.ByID(id)
		msg := &a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("go")}}
		return testing.AllocsPerRun(20, func() {
			if out := sk.Run(context.Background(), Call{Message: msg}, nil); out.State != a2a.TaskStateCompleted {
				t.Fatalf("%s: state %v (%v)", id, out.State, out.Err)
			}
		})
	}
	// Binding the answer again costs 7 allocations; a pool emptied by a
	// collection during a count may add one.
	if byFormat, byWhen := allocs("by-format"), allocs("by-when"); byWhen > byFormat+allocSlack {
		t.Errorf("a stream with a when allocates %v times per run, %v more than one without: the answer is bound twice",
			byWhen, byWhen-byFormat)
	}
}

// allocSlack is what a garbage collection during AllocsPerRun may add to
// each of two counts compared: it empties the pools of VMs and variables.
const allocSlack = 2

// BenchmarkStreamInMemory reads a two-event stream answered in memory.
func BenchmarkStreamInMemory(b *testing.B) {
	s := loadStreamSkills(b)
	msg := &a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("go")}}
	for _, id := range []string{"by-format", "by-when"} {
		b.Run(id, func(b *testing.B) {
			sk := s.ByID(id)
			b.ReportAllocs()
			for b.Loop() {
				if out := sk.Run(context.Background(), Call{Message: msg}, nil); out.State != a2a.TaskStateCompleted {
					b.Fatalf("state %v (%v)", out.State, out.Err)
				}
			}
		})
	}
}

// answerSkills read the same answer's status, or its body too, with a
// plain request and with one whose answer could start a job.
const answerSkills = `upstream:
  url: http://127.0.0.1:9090
skills:
  - id: plain-status
    description: d
    request: {method: POST, path: /r}
    response: [{when: response.status == 200, state: completed}]
  - id: plain-body
    description: d
    request: {method: POST, path: /r}
    response: [{when: response.body.ok == true, state: completed}]
  - id: polled-status
    description: d
    request: {method: POST, path: /r, poll: {}}
    response: [{when: response.status == 200, state: completed}]
  - id: polled-body
    description: d
    request: {method: POST, path: /r, poll: {}}
    response: [{when: response.body.ok == true, state: completed}]
`

// An answer that starts no job is bound once, when it is mapped: reading
// its body costs a polled request what it costs a plain one.
func TestPollBindsAnAnswerWithoutAJobOnce(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations vary under the race detector")
	}
	body := `{"ok": true, "a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6", "g": "7", "h": [1, 2, 3]}`
	s, err := Parse("t.yaml", []byte(answerSkills), Options{Transport: memoryAnswer(body)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	msg := &a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("go")}}
	allocs := func(id string) float64 {
		sk := s.ByID(id)
		return testing.AllocsPerRun(20, func() {
			if out := sk.Run(context.Background(), Call{Message: msg}, nil); out.State != a2a.TaskStateCompleted {
				t.Fatalf("%s: state %v (%v)", id, out.State, out.Err)
			}
		})
	}
	plain := allocs("plain-body") - allocs("plain-status")
	polled := allocs("polled-body") - allocs("polled-status")
	if polled > plain+allocSlack {
		t.Errorf("reading the body costs a polled request %v allocations, a plain one %v: the answer is decoded twice", polled, plain)
	}
}

// memoryAnswer answers every request in memory with a JSON body.
type memoryAnswer string

func (body memoryAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		ContentLength: int64(len(body)), Body: io.NopCloser(strings.NewReader(string(body))), Request: req}, nil
}
