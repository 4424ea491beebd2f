package mapping

// Streamed answers: a body of server-sent events, JSON lines or pieces
// split at a separator, read as it comes, each event mapped to a chunk of
// one artifact that the run reports at once.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/expr-lang/expr/vm"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// accepts says whether an answer is read as a stream. An answer it
// accepts is bound (its status and headers) as response, once for when and
// the whole stream.
func (s *streamRule) accepts(sk *Skill, m *vm.VM, vars *exprVars, resp *http.Response) (bool, error) {
	if s.when == nil {
		_, known := streamMediaTypes[mediaTypeOf(resp.Header.Get("Content-Type"))]
		ok := resp.StatusCode >= 200 && resp.StatusCode <= 299 && (known || s.format != streamAuto)
		if ok {
			sk.bindAnswer(vars, resp, nil)
		}
		return ok, nil
	}
	sk.bindAnswer(vars, resp, nil)
	v, err := m.Run(s.when, vars)
	if err != nil {
		return false, fmt.Errorf("stream.when: %w", err)
	}
	ok, _ := v.(bool)
	return ok, nil
}

// streamOutcome reads a streamed answer to its end, or until done holds,
// reporting each event's chunk through progress as it comes. Without
// progress (a skill that answers with a message) the chunks are gathered
// into the outcome's artifact. The answer is bound as response (accepts
// bound it).
func (sk *Skill) streamOutcome(ctx, callCtx context.Context, m *vm.VM, vars *exprVars, call *Call, resp *http.Response, progress Progress) Outcome {
	defer resp.Body.Close()
	s := sk.stream
	events := s.reader(resp.Body, mediaTypeOf(resp.Header.Get("Content-Type")))
	out := streamed{sk: sk, progress: progress}
	for n := 0; ; n++ {
		ev, err := events.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return out.fail(ctx, call, sk.streamFailure(ctx, callCtx, err))
		}
		if n == s.maxChunks {
			return out.fail(ctx, call, failure{state: a2a.TaskStateFailed, stage: "upstream",
				public: fmt.Sprintf("failed: the service's stream has more than %d chunks, the limit.", s.maxChunks),
				err:    fmt.Errorf("stream: over %d chunks", s.maxChunks)})
		}
		ev.Index = n
		vars.Event = ev
		if sk.needs&useEventData != 0 || (s.text == nil && s.data == nil) {
			if text := []byte(ev.Text); jsonx.Valid(text) {
				_ = jsonx.UnmarshalKeepingIntegers(text, &vars.Event.Data) // valid: cannot fail
			}
		}
		parts, err := s.parts(m, vars)
		if err != nil {
			return out.fail(ctx, call, responseFailure(err))
		}
		done := false
		if s.done != nil {
			v, err := m.Run(s.done, vars)
			if err != nil {
				return out.fail(ctx, call, responseFailure(fmt.Errorf("stream.done: %w", err)))
			}
			done, _ = v.(bool)
		}
		if len(parts) > 0 {
			if f := out.add(ctx, parts, done); f != nil {
				return sk.fail(call, *f)
			}
		}
		if done {
			break
		}
	}
	if f := out.end(ctx, true); f != nil {
		return sk.fail(call, *f)
	}
	return sk.finish(call, a2a.TaskStateCompleted, "", out.gathered)
}

// parts makes an event's parts.
func (s *streamRule) parts(m *vm.VM, vars *exprVars) ([]a2a.Part, error) {
	ev := &vars.Event
	if s.text == nil && s.data == nil {
		if ev.Data != nil {
			return []a2a.Part{a2a.DataPart(json.RawMessage(ev.Text))}, nil
		}
		if ev.Text == "" {
			return nil, nil
		}
		return []a2a.Part{a2a.TextPart(ev.Text)}, nil
	}
	var parts []a2a.Part
	if s.text != nil {
		text, err := s.text.text(m, vars)
		if err != nil {
			return nil, fmt.Errorf("stream.artifact.text: %w", err)
		}
		if text != "" {
			parts = append(parts, a2a.TextPart(text))
		}
	}
	if s.data != nil {
		v, err := m.Run(s.data, vars)
		if err != nil {
			return nil, fmt.Errorf("stream.artifact.data: %w", err)
		}
		if v != nil {
			if pairs, ok := v.(map[any]any); ok {
				if v, err = stringKeyed(pairs); err != nil {
					return nil, fmt.Errorf("stream.artifact.data: %w", err)
				}
			}
			raw, err := jsonx.AppendValue(nil, v)
			if err != nil {
				return nil, fmt.Errorf("stream.artifact.data: the value cannot be written as JSON: %w", err)
			}
			parts = append(parts, a2a.DataPart(json.RawMessage(raw)))
		}
	}
	return parts, nil
}

// streamed is the artifact a stream builds: reported chunk by chunk, or
// gathered when there is no one to report to. A chunk must hold a part (an
// Artifact's parts are REQUIRED, spec 1.0 §4.1.7), so an artifact cannot
// be closed by an empty one: to let the last chunk say it is the last, a
// chunk is held back until the next event with parts comes or the stream
// ends, but never longer than chunkLinger, so that a slow stream's chunks
// are not each held until the next one (its end is then told by the task's
// final status alone).
type streamed struct {
	sk       *Skill
	progress Progress
	gathered []a2a.Artifact

	// mu orders the reports of the reader and of the linger timer.
	mu    sync.Mutex
	id    string     // the artifact's, once its first chunk is recorded
	held  []a2a.Part // the chunk not reported yet
	timer *time.Timer
	// late is the failure of a chunk the timer reported, told by the
	// next add or end.
	late *failure
}

// chunkLinger bounds how long a chunk waits for the next one.
const chunkLinger = 100 * time.Millisecond

// add takes the parts of one event; last says that no chunk follows.
func (s *streamed) add(ctx context.Context, parts []a2a.Part, last bool) *failure {
	if s.progress == nil {
		if s.gathered == nil {
			rule := s.sk.stream
			s.gathered = []a2a.Artifact{{Name: rule.name, Description: rule.description}}
		}
		s.gathered[0].Parts = append(s.gathered[0].Parts, parts...)
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.flush(ctx, false); f != nil {
		return f
	}
	if last {
		return s.report(ctx, parts, true)
	}
	s.held = parts
	if s.timer == nil {
		s.timer = time.AfterFunc(chunkLinger, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if f := s.flush(ctx, false); f != nil && s.late == nil {
				s.late = f
			}
		})
	} else {
		s.timer.Reset(chunkLinger)
	}
	return nil
}

// end reports the chunk held back, if any: as the last one when the stream
// ended as it should.
func (s *streamed) end(ctx context.Context, last bool) *failure {
	if s.progress == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
	}
	return s.flush(ctx, last)
}

// flush reports the chunk held back, if any, or the failure of one the
// timer reported. s.mu is held.
func (s *streamed) flush(ctx context.Context, last bool) *failure {
	if f := s.late; f != nil {
		s.late = nil
		return f
	}
	if s.held == nil {
		return nil
	}
	parts := s.held
	s.held = nil
	return s.report(ctx, parts, last)
}

// fail is the outcome of a stream that failed: what it gave is kept (the
// chunk held back is reported, not as the last), and the task fails with
// f, the first cause, whatever becomes of that report.
func (s *streamed) fail(ctx context.Context, call *Call, f failure) Outcome {
	_ = s.end(ctx, false)
	return s.sk.fail(call, f)
}

// report records one chunk of the artifact.
func (s *streamed) report(ctx context.Context, parts []a2a.Part, last bool) *failure {
	art := a2a.Artifact{ArtifactID: s.id, Parts: parts}
	if s.id == "" {
		art.Name, art.Description = s.sk.stream.name, s.sk.stream.description
	}
	id, err := s.progress.Artifact(art, s.id != "", last)
	if err != nil {
		if ctx.Err() != nil {
			f := s.sk.transportFailure(ctx, ctx, err)
			return &f
		}
		return &failure{state: a2a.TaskStateFailed, stage: "upstream",
			public: "failed: its streamed result could not be kept.", err: fmt.Errorf("stream: recording a chunk: %w", err), agentFault: true}
	}
	s.id = id
	return nil
}

// streamFailure is a stream that could not be read to its end.
func (sk *Skill) streamFailure(ctx, callCtx context.Context, err error) failure {
	switch {
	case errors.Is(err, errTooLarge) || errors.Is(err, bufio.ErrTooLong):
		return failure{state: a2a.TaskStateFailed, stage: "upstream",
			public: fmt.Sprintf("failed: the service's stream is larger than the limit of %s.", formatBytes(sk.stream.maxBytes)),
			err:    fmt.Errorf("stream: %w (%d bytes)", err, sk.stream.maxBytes)}
	case ctx.Err() == nil && callCtx.Err() != nil:
		return failure{state: a2a.TaskStateFailed, stage: "upstream",
			public: fmt.Sprintf("timed out: the service's stream did not end within %s.", sk.runLimit.d),
			err:    fmt.Errorf("stream: %w", err)}
	case ctx.Err() == nil:
		return failure{state: a2a.TaskStateFailed, stage: "upstream", public: "failed: the service's stream broke off.",
			err: fmt.Errorf("stream: %w", err)}
	}
	return sk.transportFailure(ctx, callCtx, fmt.Errorf("stream: %w", err))
}

// limitedReader reads at most left bytes, then fails with errTooLarge. It
// keeps how the body ended: io.EOF, or why it was cut short.
type limitedReader struct {
	r    io.Reader
	left int64
	err  error
}

func (l *limitedReader) Read(p []byte) (n int, err error) {
	defer func() {
		if err != nil {
			l.err = err
		}
	}()
	if l.left <= 0 {
		// One byte more tells a body that ends here from a longer one.
		var one [1]byte
		if n, err := l.r.Read(one[:]); n > 0 {
			return 0, errTooLarge
		} else if err != nil {
			return 0, err
		}
		return 0, nil
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err = l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// eventReader cuts a stream into events.
type eventReader struct {
	body limitedReader // what sc reads
	sc   *bufio.Scanner
	sse  bool
}

// reader reads body, at most the rule's max_bytes of it.
func (s *streamRule) reader(body io.Reader, mediaType string) *eventReader {
	r := &eventReader{body: limitedReader{r: body, left: s.maxBytes}}
	sc := bufio.NewScanner(&r.body)
	sc.Buffer(make([]byte, 0, 4096), int(min(s.maxBytes, 1<<30))+1)
	format := s.format
	if format == streamAuto {
		format = streamMediaTypes[mediaType]
	}
	split := bufio.ScanLines
	if format == streamSplit {
		split = splitAt(s.separator)
	}
	sc.Split(endedCleanly(split, &r.body))
	r.sc, r.sse = sc, format == streamSSE
	return r
}

// next returns the next event, or io.EOF at the end of the stream.
func (r *eventReader) next() (eventVars, error) {
	if r.sse {
		return r.nextSSE()
	}
	for r.sc.Scan() {
		if text := r.sc.Text(); strings.TrimSpace(text) != "" {
			return eventVars{Text: text}, nil
		}
	}
	return eventVars{}, r.end()
}

// nextSSE reads one server-sent event (the WHATWG HTML "event stream"
// format): data lines joined by newlines, its type and id; comments and
// events without data are skipped, and an event cut off by the end of the
// stream is dropped.
func (r *eventReader) nextSSE() (eventVars, error) {
	var ev eventVars
	var data strings.Builder
	hasData := false
	for r.sc.Scan() {
		line := r.sc.Text()
		if line == "" {
			if hasData {
				ev.Text = data.String()
				if ev.Type == "" {
					ev.Type = "message"
				}
				return ev, nil
			}
			ev = eventVars{}
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			hasData = true
		case "event":
			ev.Type = value
		case "id":
			ev.ID = value
		}
	}
	return eventVars{}, r.end()
}

func (r *eventReader) end() error {
	if err := r.sc.Err(); err != nil {
		return err
	}
	return io.EOF
}

// endedCleanly lets split take the last, unterminated event only when the
// body ended as it should (io.EOF): an event that the byte limit or a broken
// connection cut short is dropped, as SSE drops an event without its blank
// line, so that none of its bytes reach the caller.
func endedCleanly(split bufio.SplitFunc, body *limitedReader) bufio.SplitFunc {
	return func(data []byte, atEOF bool) (int, []byte, error) {
		return split(data, atEOF && body.err == io.EOF)
	}
}

// splitAt is a bufio.SplitFunc that cuts at sep.
func splitAt(sep []byte) bufio.SplitFunc {
	return func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.Index(data, sep); i >= 0 {
			return i + len(sep), data[:i], nil
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	}
}
