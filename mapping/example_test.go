package mapping_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
	"github.com/caddy-a2a/caddy-a2a/mapping"
)

const exampleFile = "../examples/skills.yaml"

// TestExampleSkills keeps examples/skills.yaml loading, and each of its
// skills doing what it says against the demo API.
func TestExampleSkills(t *testing.T) {
	api := demoapi.New(demoapi.Options{})
	srv := httptest.NewServer(api)
	defer srv.Close()
	s, err := mapping.Load(exampleFile, mapping.Options{UpstreamURL: srv.URL,
		LookupEnv: env(map[string]string{"DEMO_API_KEY": demoapi.DefaultAPIKey})})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	var ids []string
	for _, sk := range s.All() {
		ids = append(ids, sk.ID)
	}
	if got := strings.Join(ids, " "); got != "weather user avatar place_order order_for search feedback upload flaky slow report count fail echo" {
		t.Errorf("skills %s", got)
	}

	tests := []struct {
		name  string
		msg   *a2a.Message
		state a2a.TaskState
		text  string // in the message
		data  string // JSON of the first data part, of the message or of the first artifact
	}{
		{"weather", message("weather", map[string]any{"city": "São Paulo"}, ""), a2a.TaskStateCompleted,
			"São Paulo: 26.1 °C, thunderstorms.", `{"city":"São Paulo","conditions":"thunderstorms","temperatureC":26.1}`},
		{"unknown city", message("weather", map[string]any{"city": "Atlantis"}, ""), a2a.TaskStateRejected,
			"I do not know the weather in Atlantis.", ""},
		{"city with a path in it", message("weather", map[string]any{"city": "../users/1"}, ""), a2a.TaskStateRejected,
			"I do not know the weather in ../users/1.", ""},
		{"user", message("user", map[string]any{"id": 2}, ""), a2a.TaskStateCompleted,
			"", `{"id":2,"name":"Alan Turing","email":"alan@example.com"}`},
		{"no such user", message("user", map[string]any{"id": 9}, ""), a2a.TaskStateRejected, "There is no user 9.", ""},
		{"order", message("place_order", map[string]any{"item": "widget", "quantity": 3}, ""), a2a.TaskStateCompleted,
			"Order ord-1 placed for 3 × widget.", `{"id":"ord-1","item":"widget","quantity":3,"status":"placed"}`},
		{"invalid order", message("place_order", map[string]any{"item": "widget", "quantity": 0}, ""), a2a.TaskStateInputRequired,
			"The order was refused: quantity must be at least 1. Please send a new value.", `{"properties":{"quantity":{"description":"How many (at least 1).","type":"integer"}},"required":["quantity"],"type":"object"}`},
		{"order by text", message("place_order", nil, "please order 2 bolts"), a2a.TaskStateCompleted,
			"Order ord-2 placed for 2 × bolts.", ""},
		{"order without a quantity", message("place_order", map[string]any{"item": "widget"}, ""), a2a.TaskStateInputRequired,
			`Skill "place_order" needs the argument quantity (integer): How many (at least 1). Reply on this task with data such as {"quantity": …}, or with the value as text.`, ""},
		{"order for a user", message("order_for", map[string]any{"user": 3, "item": "tea"}, ""), a2a.TaskStateCompleted,
			"Order ord-3 placed for Grace Hopper.", `{"customer":"grace@example.com","id":"ord-3","item":"tea","quantity":1,"status":"placed"}`},
		{"order for nobody", message("order_for", map[string]any{"user": 7, "item": "tea"}, ""), a2a.TaskStateRejected,
			"There is no user 7.", ""},
		{"weather by text", message("", nil, "What's the weather in London?"), a2a.TaskStateCompleted,
			"London: 12.5 °C, drizzle.", ""},
		{"weather without a city", message("", nil, "How is the weather?"), a2a.TaskStateInputRequired,
			`Skill "weather" needs the argument city (string): The city, e.g. London, Paris, Tokyo, New York or São Paulo. Reply on this task with data such as {"city": …}, or with the value as text.`, ""},
		{"user by text", message("", nil, "user 3"), a2a.TaskStateCompleted, "", `{"id":3,"name":"Grace Hopper","email":"grace@example.com"}`},
		{"user by a wrong type", message("user", map[string]any{"id": "two"}, ""), a2a.TaskStateInputRequired,
			`Skill "user" cannot use the argument id: it must be an integer, not a string. Reply on this task with data such as {"id": …}, or with the value as text.`, ""},
		{"feedback as a form", message("feedback", map[string]any{"rating": 5, "comment": "Great"}, ""), a2a.TaskStateCompleted,
			"", `{"id":"fb-1","rating":5,"comment":"Great"}`},
		{"feedback by text", message("feedback", nil, "4 stars: quick answers"), a2a.TaskStateCompleted,
			"", `{"id":"fb-2","rating":4,"comment":"quick answers"}`},
		{"feedback out of range", message("feedback", map[string]any{"rating": 9}, ""), a2a.TaskStateInputRequired,
			`Skill "feedback" needs different input: the service answered HTTP 422 Unprocessable Entity. It said: "validation failed". It cannot use the argument rating: it must be an integer from 1 to 5. Reply on this task with data such as {"rating": …}, or with the value as text.`, ""},
		{"upload", &a2a.Message{MessageID: "m", Role: a2a.RoleUser, Metadata: map[string]any{"skill": "upload"}, Parts: []a2a.Part{
			{Kind: a2a.PartRaw, Raw: []byte("hello"), MediaType: "text/plain", Filename: "notes.txt"}, a2a.DataPart(map[string]any{"title": "Notes"})}},
			a2a.TaskStateCompleted, "Stored notes.txt (5 bytes) as doc-1.", `{"filename":"notes.txt","id":"doc-1","mediaType":"text/plain","size":5,"title":"Notes"}`},
		{"upload by URL only", &a2a.Message{MessageID: "m", Role: a2a.RoleUser, Metadata: map[string]any{"skill": "upload"}, Parts: []a2a.Part{
			{Kind: a2a.PartURL, URL: "https://example.com/notes.txt", MediaType: "text/plain"}}},
			a2a.TaskStateRejected, `Skill "upload" cannot use this input: the file file is given by URL only: a multipart body needs its bytes.`, ""},
		{"flaky is retried", message("flaky", nil, ""), a2a.TaskStateCompleted, "", `{"key":"task-1","attempt":2,"message":"answered on attempt 2"}`},
		{"search by text", message("search", nil, "caddy"), a2a.TaskStateCompleted, `2 result(s) for "caddy".`, ""},
		{"search chosen by its text", message("", nil, "search streaming"), a2a.TaskStateCompleted, `1 result(s) for "streaming".`, ""},
		{"search by argument", message("search", map[string]any{"q": "a2a", "limit": 1}, ""), a2a.TaskStateCompleted,
			`1 result(s) for "a2a".`, `{"query":"a2a","results":[{"title":"Getting started with A2A","url":"https://docs.example.com/a2a/start"}]}`},
		{"search without a query", message("search", nil, ""), a2a.TaskStateRejected, "missing query parameter q", ""},
		{"slow", message("slow", map[string]any{"seconds": 0}, ""), a2a.TaskStateCompleted, "", `{"waited":0}`},
		{"report is a job, polled", message("report", nil, ""), a2a.TaskStateCompleted, "", ""},
		{"count is streamed", message("count", map[string]any{"to": 2}, ""), a2a.TaskStateCompleted, "", `{"n":1}`},
		{"fail", message("fail", nil, ""), a2a.TaskStateFailed,
			`Skill "fail" failed: the service answered HTTP 500 Internal Server Error. It said: "boom".`, ""},
		{"echo", message("echo", map[string]any{"tags": []any{"a", "b"}}, "hi"), a2a.TaskStateCompleted,
			"The service got GET /echo.", `{"method":"GET","path":"/echo","query":{"tag":["a","b"],"text":["hi"]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := runSkill(t, s, tt.msg)
			if out.State != tt.state || messageText(out) != tt.text {
				t.Fatalf("state %v, message %q (%v); want %v, %q", out.State, messageText(out), out.Err, tt.state, tt.text)
			}
			if tt.data == "" {
				return
			}
			var parts []a2a.Part
			if len(out.Artifacts) > 0 {
				parts = out.Artifacts[0].Parts
			}
			if out.Message != nil {
				parts = append(parts, out.Message.Parts...)
			}
			for _, p := range parts {
				if p.Kind == a2a.PartData {
					if got, _ := json.Marshal(p.Data); string(got) != tt.data {
						t.Errorf("data %s\nwant %s", got, tt.data)
					}
					return
				}
			}
			t.Errorf("no data part in %+v", out)
		})
	}

	t.Run("the avatar is a file", func(t *testing.T) {
		out := runSkill(t, s, message("avatar", nil, "avatar of user 2"))
		if out.State != a2a.TaskStateCompleted || len(out.Artifacts) != 1 || messageText(out) != "The avatar of user 2." {
			t.Fatalf("%+v", out)
		}
		p := out.Artifacts[0].Parts[0]
		if p.Kind != a2a.PartRaw || p.MediaType != "image/png" || p.Filename != "user-2.png" || !strings.HasPrefix(string(p.Raw), "\x89PNG") {
			t.Errorf("part %v %q %q %d bytes", p.Kind, p.MediaType, p.Filename, len(p.Raw))
		}
	})
	t.Run("weather over two turns", func(t *testing.T) {
		c := &conversation{t: t, s: s, skill: "weather"}
		if out := c.say(nil, "weather, please"); out.State != a2a.TaskStateInputRequired {
			t.Fatalf("first turn: %v %q", out.State, messageText(out))
		}
		if out := c.say(nil, "Tokyo"); out.State != a2a.TaskStateCompleted || messageText(out) != "Tokyo: 22.3 °C, cloudy." {
			t.Fatalf("second turn: %v %q", out.State, messageText(out))
		}
	})
	t.Run("an order fixed on its second turn", func(t *testing.T) {
		c := &conversation{t: t, s: s, skill: "place_order"}
		if out := c.say(map[string]any{"item": "gizmo", "quantity": 0}, ""); out.State != a2a.TaskStateInputRequired {
			t.Fatalf("first turn: %v %q", out.State, messageText(out))
		}
		out := c.say(nil, "4")
		if out.State != a2a.TaskStateCompleted || !strings.Contains(messageText(out), "placed for 4 × gizmo") {
			t.Fatalf("second turn: %v %q", out.State, messageText(out))
		}
	})
	t.Run("echo answers with a message", func(t *testing.T) {
		out := runSkill(t, s, message("echo", nil, ""))
		if out.Message == nil || len(out.Artifacts) != 0 {
			t.Errorf("%+v", out)
		}
	})
	t.Run("slow shows progress and is canceled", func(t *testing.T) {
		msg := message("slow", map[string]any{"seconds": 30}, "")
		sk, _ := s.Select(msg)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan mapping.Outcome, 1)
		before := api.Stats()
		working := progressFunc(func(m *a2a.Message) {
			if m.Parts[0].Text != "Waiting 30 second(s)…" {
				t.Errorf("working message %q", m.Parts[0].Text)
			}
		})
		go func() { done <- sk.Run(ctx, mapping.Call{Message: msg}, working) }()
		waitStats := func(what string, cond func(demoapi.Stats) bool) {
			t.Helper()
			wctx, stop := context.WithTimeout(t.Context(), 10*time.Second)
			defer stop()
			if st, err := api.WaitStats(wctx, cond); err != nil {
				t.Fatalf("waiting for %s: %v (stats %+v)", what, err, st)
			}
		}
		waitStats("the upstream to start waiting", func(st demoapi.Stats) bool { return st.SlowStarted > before.SlowStarted })
		cancel()
		out := <-done
		if out.State != a2a.TaskStateCanceled {
			t.Errorf("state %v (%v)", out.State, out.Err)
		}
		waitStats("the upstream to see the cancellation", func(st demoapi.Stats) bool { return st.SlowCanceled > before.SlowCanceled })
	})
}

// TestExampleNeedsTheKey checks that the example will not load without its
// credential: a request without it would never be sent.
func TestExampleNeedsTheKey(t *testing.T) {
	_, err := mapping.Load(exampleFile, mapping.Options{LookupEnv: env(nil)})
	if err == nil || !strings.Contains(err.Error(), "skills.yaml:34: upstream.headers.X-Api-Key: environment variable DEMO_API_KEY is not set") {
		t.Fatalf("err = %v", err)
	}
}

// TestReadmeExample keeps the complete example of README.md loading.
func TestReadmeExample(t *testing.T) {
	doc, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "## A complete example\n\n```yaml\n")
	block, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		t.Fatal("README.md has no complete example")
	}
	s, err := mapping.Parse("README.md", []byte(block), mapping.Options{LookupEnv: env(map[string]string{"DEMO_API_KEY": "k"})})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sk, serr := s.Select(message("", nil, "What's the weather in Paris?"))
	if serr != nil || sk.ID != "weather" {
		t.Fatalf("selected %v, %v", sk, serr)
	}
}

// TestReadmeArgumentsExample keeps the arguments example of README.md
// loading, every key in it.
func TestReadmeArgumentsExample(t *testing.T) {
	doc, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "## Arguments\n")
	_, rest, found := strings.Cut(rest, "```yaml\n")
	block, _, closed := strings.Cut(rest, "```")
	if !ok || !found || !closed {
		t.Fatal("README.md has no arguments example")
	}
	src := "upstream: {url: \"http://ignored\"}\nskills:\n  - id: a\n    description: d\n    request: {path: /a, query: {filter: \"{args.filter}\"}}\n" +
		strings.ReplaceAll("\n"+block, "\n", "\n    ")
	if _, err := mapping.Parse("README.md", []byte(src), mapping.Options{}); err != nil {
		t.Fatal(err)
	}
}
