package mapping_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/mapping"
)

// chunk is one artifact chunk a run reported.
type chunk struct {
	id, name          string
	parts             string // each part as text, or its data as JSON, joined by "|"
	append, lastChunk bool
}

// chunkProgress records the chunks of a run, and passes each on to got.
type chunkProgress struct {
	got chan chunk
}

func newChunkProgress() *chunkProgress { return &chunkProgress{got: make(chan chunk, 100)} }

func (p *chunkProgress) Working(*a2a.Message) {}

func (p *chunkProgress) Artifact(art a2a.Artifact, appendParts, lastChunk bool) (string, error) {
	if art.ArtifactID == "" {
		art.ArtifactID = "art-1"
	}
	p.got <- chunk{id: art.ArtifactID, name: art.Name, parts: partsText(art.Parts), append: appendParts, lastChunk: lastChunk}
	return art.ArtifactID, nil
}

// chunks returns the chunks reported so far (the run has returned).
func (p *chunkProgress) chunks() []chunk {
	var out []chunk
	for {
		select {
		case c := <-p.got:
			out = append(out, c)
		default:
			return out
		}
	}
}

func partsText(parts []a2a.Part) string {
	var s []string
	for _, p := range parts {
		if p.Kind == a2a.PartData {
			b, _ := json.Marshal(p.Data)
			s = append(s, string(b))
		} else {
			s = append(s, p.Text)
		}
	}
	return strings.Join(s, "|")
}

// streamUpstream answers every request with contentType and the pieces of
// body, each written and flushed on its own.
func streamUpstream(t *testing.T, contentType string, body ...string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		for _, piece := range body {
			io.WriteString(w, piece)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

const streamSkill = `upstream: {url: "http://ignored", timeout: 5s}
skills:
  - id: s
    description: d
    request: {path: /stream}
    stream:
%s
`

func runStream(t *testing.T, srv *httptest.Server, stream string, progress mapping.Progress) mapping.Outcome {
	t.Helper()
	s := load(t, fmt.Sprintf(streamSkill, stream), srv.URL, mapping.Options{})
	return s.ByID("s").Run(context.Background(), mapping.Call{Message: message("s", nil, "go"), TaskID: "t", ContextID: "c"}, progress)
}

func TestStreamFormats(t *testing.T) {
	for _, tt := range []struct {
		name, contentType string
		body              []string
		stream            string
		want              []chunk
	}{
		{"sse with a done event", "text/event-stream; charset=utf-8",
			[]string{": hello\n\n", `data: {"delta": "Hel"}` + "\n\n", "event: ping\ndata: {}\n\n", `data: {"delta": "lo"}` + "\r\n\r\n", "data: [DONE]\n\n", `data: {"delta": "late"}` + "\n\n"},
			`      artifact: {name: answer, text: "{event.data.delta}"}
      done: event.text == "[DONE]"`,
			[]chunk{{id: "art-1", name: "answer", parts: "Hel"}, {id: "art-1", parts: "lo", append: true, lastChunk: true}}},
		{"sse fields", "text/event-stream",
			[]string{"id: 7\nevent: note\ndata: line one\ndata: line two\n\n", "data: cut off at the end"},
			`      artifact: {text: "{event.index} {event.id} {event.type}: {event.text}"}`,
			[]chunk{{id: "art-1", name: "result", parts: "0 7 note: line one\nline two", lastChunk: true}}},
		{"ndjson by media type, default parts", "application/x-ndjson",
			[]string{`{"n": 1}` + "\n", "\n", `{"n": 2}` + "\nnot json\n"},
			`      max_chunks: 3`,
			[]chunk{{id: "art-1", name: "result", parts: `{"n":1}`}, {id: "art-1", parts: `{"n":2}`, append: true},
				{id: "art-1", parts: "not json", append: true, lastChunk: true}}},
		{"lines with data and text, ended by done", "text/plain",
			[]string{`{"word": "a"}` + "\n", `{"word": "b", "end": true}` + "\n", `{"word": "c"}` + "\n"},
			`      format: lines
      artifact: {text: "{event.data.word}", data: '{"n": event.index}'}
      done: event.data.end == true`,
			[]chunk{{id: "art-1", name: "result", parts: `a|{"n":0}`}, {id: "art-1", parts: `b|{"n":1}`, append: true, lastChunk: true}}},
		{"split at a separator", "application/octet-stream",
			[]string{"one||", "|two|||", "|||three"},
			`      format: split
      separator: "|||"`,
			[]chunk{{id: "art-1", name: "result", parts: "one"}, {id: "art-1", parts: "two", append: true},
				{id: "art-1", parts: "three", append: true, lastChunk: true}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			progress := newChunkProgress()
			out := runStream(t, streamUpstream(t, tt.contentType, tt.body...), tt.stream, progress)
			if out.State != a2a.TaskStateCompleted || len(out.Artifacts) != 0 {
				t.Fatalf("outcome %v %q (%v), want completed, the artifact reported", out.State, messageText(out), out.Err)
			}
			got := progress.chunks()
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("chunks\n%v\nwant\n%v", got, tt.want)
			}
		})
	}
}

// Without progress (a skill that answers with a message), the chunks make
// one artifact of the outcome.
func TestStreamGathered(t *testing.T) {
	srv := streamUpstream(t, "application/x-ndjson", `{"n": 1}`+"\n", `{"n": 2}`+"\n")
	out := runStream(t, srv, `      artifact: {name: numbers, data: event.data.n}`, nil)
	if out.State != a2a.TaskStateCompleted || len(out.Artifacts) != 1 || out.Artifacts[0].Name != "numbers" ||
		partsText(out.Artifacts[0].Parts) != "1|2" {
		t.Errorf("outcome %+v, want one artifact with both chunks", out)
	}
}

// A chunk is reported as soon as the upstream sends the next one, while
// the upstream holds the connection; the last is reported, marked as the
// last, when the stream ends, and no empty chunk closes the artifact.
func TestStreamChunksAsTheyCome(t *testing.T) {
	next := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\ndata: two\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-next:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "data: three\n\n")
	}))
	t.Cleanup(srv.Close)
	progress := newChunkProgress()
	done := make(chan mapping.Outcome)
	go func() { done <- runStream(t, srv, `      artifact: {text: "{event.text}"}`, progress) }()
	select {
	case c := <-progress.got:
		if c.parts != "one" || c.lastChunk {
			t.Fatalf("first chunk %+v, want one, not the last", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first chunk was not reported while the upstream held the third")
	}
	close(next)
	if out := <-done; out.State != a2a.TaskStateCompleted {
		t.Fatalf("state %v (%v)", out.State, out.Err)
	}
	if got := progress.chunks(); len(got) != 2 || got[0].parts != "two" || got[0].lastChunk || got[1].parts != "three" || !got[1].lastChunk {
		t.Errorf("later chunks %v, want two, then three as the last", got)
	}
}

// A chunk held back to learn whether it is the last waits no longer than
// a moment: an upstream whose next event is long in coming does not hold
// the caller's copy of the last one until then.
func TestStreamChunkNotHeldUntilTheNext(t *testing.T) {
	next := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-next:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "data: two\n\n")
	}))
	t.Cleanup(srv.Close)
	progress := newChunkProgress()
	done := make(chan mapping.Outcome)
	go func() { done <- runStream(t, srv, `      artifact: {text: "{event.text}"}`, progress) }()
	select {
	case c := <-progress.got:
		if c.parts != "one" || c.lastChunk {
			t.Fatalf("first chunk %+v, want one, not the last", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the only chunk so far was held until the next event")
	}
	close(next)
	if out := <-done; out.State != a2a.TaskStateCompleted {
		t.Fatalf("state %v (%v)", out.State, out.Err)
	}
	if got := progress.chunks(); len(got) != 1 || got[0].parts != "two" || !got[0].lastChunk {
		t.Errorf("later chunks %v, want two, as the last", got)
	}
}

func TestStreamLimits(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(endless.Close)
	many := streamUpstream(t, "application/x-ndjson", strings.Repeat("{}\n", 20))
	big := streamUpstream(t, "application/x-ndjson", "{}\n", strings.Repeat("x", 2000)+"\n")
	for _, tt := range []struct {
		name     string
		srv      *httptest.Server
		stream   string
		want     string
		reported int // every chunk read before the failure
	}{
		{"chunks", many, "      max_chunks: 10", `Skill "s" failed: the service's stream has more than 10 chunks, the limit.`, 10},
		{"bytes", big, "      max_bytes: 1KiB", `Skill "s" failed: the service's stream is larger than the limit of 1 KiB.`, 1},
		{"bytes by max_response_bytes", big, "      format: lines\n    max_response_bytes: 1000", `Skill "s" failed: the service's stream is larger than the limit of 1000 bytes.`, 1},
		{"timeout", endless, "      format: sse\n    timeout: 200ms", `Skill "s" timed out: the service's stream did not end within 200ms.`, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			progress := newChunkProgress()
			out := runStream(t, tt.srv, tt.stream, progress)
			if out.State != a2a.TaskStateFailed || messageText(out) != tt.want {
				t.Errorf("outcome %v %q (%v), want failed %q", out.State, messageText(out), out.Err, tt.want)
			}
			if got := progress.chunks(); len(got) != tt.reported || got[len(got)-1].lastChunk {
				t.Errorf("chunks %v: want the %d read reported, and no last chunk", got, tt.reported)
			}
		})
	}
}

// An answer that is not a stream is mapped as any answer.
func TestStreamOnlyForStreams(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		jsonAnswer(w, http.StatusServiceUnavailable, `{"error": "busy"}`)
	}))
	t.Cleanup(srv.Close)
	out := runStream(t, srv, "      format: lines", newChunkProgress())
	if want := `Skill "s" failed: the service answered HTTP 503 Service Unavailable.`; out.State != a2a.TaskStateFailed || messageText(out) != want {
		t.Errorf("outcome %v %q, want %q", out.State, messageText(out), want)
	}
	out = runStream(t, streamUpstream(t, "application/json", `{"one": "piece"}`), `      when: response.headers["content-type"] == "text/event-stream"`, newChunkProgress())
	if out.State != a2a.TaskStateCompleted || len(out.Artifacts) != 1 {
		t.Errorf("a JSON answer: %+v, want completed by the default mapping", out)
	}
}

func TestStreamLoadErrors(t *testing.T) {
	for _, tt := range []struct{ stream, want string }{
		{"      format: chunks", `t.yaml:7: skill "s": stream.format: must be sse, lines or split, not "chunks"`},
		{"      format: split", `t.yaml:7: skill "s": stream.separator: is required with format split`},
		{"      separator: ','", `t.yaml:7: skill "s": stream.separator: is only for format split`},
		{"      max_chunks: 0", `t.yaml:7: skill "s": stream.max_chunks: must be a positive integer, not "0"`},
		{"      done: event.nope", `t.yaml:7: skill "s": stream.done: type mapping.eventVars has no field nope`},
		{"      artifact: {text: '{args.x}', file: {}}", `t.yaml:7: skill "s": stream.artifact.file: unknown key (known keys: name, description, text, data)`},
		{"      done: true\n    response:\n      - when: event.index > 1\n        state: completed",
			`t.yaml:9: skill "s": response[0].when: event is only known in the stream section`},
		{"      done: true\n    working_message: '{event.text}'", `t.yaml:8: skill "s": working_message: event is only known in the stream section`},
	} {
		_, err := mapping.Parse("t.yaml", []byte(fmt.Sprintf(streamSkill, tt.stream)), mapping.Options{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("stream %q: error %v, want %q", tt.stream, err, tt.want)
		}
	}
	_, err := mapping.Parse("t.yaml", []byte(fmt.Sprintf(jobSkill, "        interval: 1s")+"    stream: {format: lines}\n"), mapping.Options{})
	if want := `t.yaml:10: skill "job": stream: cannot read the answer of a polled request`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("stream and poll: error %v, want %q", err, want)
	}
}

// refusingProgress keeps the first chunk and refuses the rest, as a task
// over its byte budget does.
type refusingProgress struct{ chunkProgress }

func (p *refusingProgress) Artifact(art a2a.Artifact, appendParts, lastChunk bool) (string, error) {
	if appendParts {
		return "", errors.New("the task would hold too much")
	}
	return p.chunkProgress.Artifact(art, appendParts, lastChunk)
}

// Canceling the run stops reading the stream at once; a chunk the task
// cannot keep fails it.
func TestStreamStops(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, "1\n2\n3\n") // the first two are reported while it holds
		w.(http.Flusher).Flush()
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	s := load(t, fmt.Sprintf(streamSkill, "      max_chunks: 5"), srv.URL, mapping.Options{})

	progress := newChunkProgress()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan mapping.Outcome)
	go func() { done <- s.ByID("s").Run(ctx, mapping.Call{Message: message("s", nil, "go")}, progress) }()
	<-progress.got
	<-progress.got
	cancel()
	if out := <-done; out.State != a2a.TaskStateCanceled || messageText(out) != `Skill "s" was canceled.` ||
		!strings.Contains(out.Err.Error(), "upstream: stream: ") {
		t.Errorf("canceled run: %v %q (%v), want canceled, the log saying it was the stream", out.State, messageText(out), out.Err)
	}

	refusing := &refusingProgress{chunkProgress: *newChunkProgress()}
	out := s.ByID("s").Run(context.Background(), mapping.Call{Message: message("s", nil, "go")}, refusing)
	if want := `Skill "s" failed: its streamed result could not be kept.`; out.State != a2a.TaskStateFailed || messageText(out) != want {
		t.Errorf("refused chunk: %v %q, want failed %q", out.State, messageText(out), want)
	}
}

// An event the stream's limit or its breaking off cuts short is dropped, in
// every format, as SSE drops an event without its blank line: its bytes
// reach no chunk, and the task fails saying why.
func TestStreamDropsCutEvent(t *testing.T) {
	cut := strings.Repeat("cut", 1000) // past max_bytes: never complete
	brokenOff := func(contentType, body string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("Content-Length", strconv.Itoa(len(body)+100)) // more than comes
			io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	tooLarge := `Skill "s" failed: the service's stream is larger than the limit of 1 KiB.`
	brokeOff := `Skill "s" failed: the service's stream broke off.`
	for _, tt := range []struct {
		name   string
		srv    *httptest.Server
		stream string
		want   string
	}{
		{"lines over max_bytes", streamUpstream(t, "application/x-ndjson", "{}\n", cut+"\n"), "      max_bytes: 1KiB", tooLarge},
		{"split over max_bytes", streamUpstream(t, "text/plain", "{}||", cut+"||"), "      format: split\n      separator: '||'\n      max_bytes: 1KiB", tooLarge},
		{"sse over max_bytes", streamUpstream(t, "text/event-stream", "data: {}\n\n", "data: "+cut+"\n\n"), "      max_bytes: 1KiB", tooLarge},
		{"lines broken off", brokenOff("application/x-ndjson", "{}\ncutcut"), "      max_chunks: 5", brokeOff},
		{"split broken off", brokenOff("text/plain", "{}||cutcut"), "      format: split\n      separator: '||'", brokeOff},
	} {
		t.Run(tt.name, func(t *testing.T) {
			progress := newChunkProgress()
			out := runStream(t, tt.srv, tt.stream, progress)
			if out.State != a2a.TaskStateFailed || messageText(out) != tt.want {
				t.Errorf("outcome %v %q (%v), want failed %q", out.State, messageText(out), out.Err, tt.want)
			}
			got := progress.chunks()
			if len(got) != 1 || got[0].parts != "{}" {
				t.Errorf("%d chunks, want one: the complete event {}", len(got))
			}
			for _, c := range got {
				if strings.Contains(c.parts, "cut") {
					t.Errorf("a chunk holds the cut event's bytes: %.40q…", c.parts)
				}
			}
		})
	}
}
