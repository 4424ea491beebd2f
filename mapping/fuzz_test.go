package mapping_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/mapping"
)

// FuzzParse: whatever the skills file holds, loading it ends with skills or
// with an error that names the file; never a panic.
func FuzzParse(f *testing.F) {
	example, err := os.ReadFile(filepath.Join("..", "examples", "skills.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(example))
	f.Add(fuzzSkills)
	f.Add("upstream: {url: http://x}\nskills: [{id: a, request: {path: '/{args.a}'}}]\n")
	f.Add("skills:\n  - id: a\n    match: message.text matches '(' \n")
	f.Add("&a [*a, *a]")
	f.Fuzz(func(t *testing.T, src string) {
		skills, err := mapping.Parse("fuzz.yaml", []byte(src), mapping.Options{LookupEnv: func(string) (string, bool) { return "", false }})
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		skills.Close()
	})
}

const fuzzSkills = `
upstream:
  url: http://upstream.invalid
skills:
  - id: weather
    description: Weather for a city.
    match: message.text matches "(?i)weather" || "city" in message.data
    arguments:
      city: {type: string, required: true}
      days: {type: integer, default: 1}
    from_text: '(?i)weather in (?P<city>\pL+)'
    request:
      path: /weather/{args.city}
  - id: files
    description: Files.
    match: any(message.parts, .kind == "file") && message.metadata.kind == "upload"
    request:
      method: POST
      path: /files
  - id: routed
    description: By what the message is, not what it says.
    match: message.id startsWith "tck-" || "urn:x" in message.extensions || len(message.reference_task_ids) > 1 || message.role == "agent" || message.context_id + message.task_id == "ct"
    request:
      path: /routed
`

// FuzzMessageVars builds the expression variables from arbitrary messages,
// as selection and argument gathering do: never a panic, and a message
// either selects a skill or says why none.
func FuzzMessageVars(f *testing.F) {
	skills, err := mapping.Parse("fuzz.yaml", []byte(fuzzSkills), mapping.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(skills.Close)
	for _, seed := range []string{
		`{"messageId":"m","role":"ROLE_USER","parts":[{"text":"weather in Paris"}]}`,
		`{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"city":"Oslo","days":3}}]}`,
		`{"messageId":"m","role":"ROLE_USER","metadata":{"kind":"upload"},"parts":[{"raw":"aGk=","filename":"a.txt","mediaType":"text/plain"}]}`,
		`{"messageId":"m","role":"ROLE_USER","metadata":{"skill":"files"},"parts":[{"url":"https://x/y"},{"data":[1,"a",null]}]}`,
		`{"messageId":"tck-1","role":"ROLE_AGENT","contextId":"c","taskId":"t","extensions":["urn:x"],"referenceTaskIds":["a","b"],"parts":[{"text":"hi"}]}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, message string) {
		body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` + message + `}}`
		req, perr := a2a.DecodeRequest(a2a.V10, []byte(body))
		if perr != nil {
			return
		}
		msg := &req.Params.(*a2a.SendMessageRequest).Message
		skills.TryPredicates(msg)
		sk, selErr := skills.Select(msg)
		if (sk == nil) == (selErr == nil) {
			t.Fatalf("Select gave skill %v and error %v", sk, selErr)
		}
		if sk != nil {
			sk.GatherArguments(mapping.Call{Message: msg, History: []a2a.Message{*msg}})
		}
	})
}

// FuzzStream reads arbitrary upstream bodies as streams of each format:
// the run ends completed or failed, never in a panic (which Run would turn
// into "failed unexpectedly"), every chunk holds a part, and none follows
// one marked the last. (Whether the last is marked depends on timing: a
// chunk waits a moment at most for the next; see streamed.)
func FuzzStream(f *testing.F) {
	var body bodyTransport
	skills, err := mapping.Parse("fuzz.yaml", []byte(`upstream: {url: "http://upstream.invalid"}
skills:
  - {id: sse, description: d, request: {path: /s}, stream: {format: sse, max_chunks: 50, artifact: {text: "{event.type}{event.id}", data: event.data}, done: event.text == "end"}}
  - {id: lines, description: d, request: {path: /l}, stream: {format: lines, max_chunks: 50, max_bytes: 4KiB}}
  - {id: split, description: d, request: {path: /p}, stream: {format: split, separator: "||", max_chunks: 50}}
`), mapping.Options{Transport: &body})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(skills.Close)
	for _, seed := range []string{"data: {\"a\": 1}\n\nid: 7\nevent: x\ndata: end\n\n", "{}\n[1, 2]\nnot json\r\n", "a||b||||c", ": c\ndata\ndata:\n\n\r\n"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, stream string) {
		for _, id := range []string{"sse", "lines", "split"} {
			body.set(stream)
			check := &chunkCheck{t: t}
			out := skills.ByID(id).Run(context.Background(), mapping.Call{Message: message(id, nil, "")}, check)
			if (out.State != a2a.TaskStateCompleted && out.State != a2a.TaskStateFailed) || strings.Contains(messageText(out), "unexpectedly") {
				t.Fatalf("%s: %v %q (%v)", id, out.State, messageText(out), out.Err)
			}
		}
	})
}

// chunkCheck is a Progress that fails the test on a chunk without parts or
// after the last one, and counts them.
type chunkCheck struct {
	t      *testing.T
	chunks int
	last   bool
}

func (*chunkCheck) Working(*a2a.Message) {}

func (c *chunkCheck) Artifact(art a2a.Artifact, appendParts, lastChunk bool) (string, error) {
	if len(art.Parts) == 0 || c.last || appendParts != (c.chunks > 0) {
		c.t.Errorf("chunk %d: %d parts, append %v, after the last %v", c.chunks, len(art.Parts), appendParts, c.last)
	}
	c.chunks++
	c.last = lastChunk
	return "a", nil
}

// bodyTransport answers every request with 200 and its body.
type bodyTransport struct {
	mu   sync.Mutex
	body string
}

func (b *bodyTransport) set(s string) {
	b.mu.Lock()
	b.body = s
	b.mu.Unlock()
}

func (b *bodyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/plain"}},
		Body: io.NopCloser(strings.NewReader(b.body)), ContentLength: -1, Request: req}, nil
}
