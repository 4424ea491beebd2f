package mapping_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
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
	if got := strings.Join(ids, " "); got != "weather user place_order search slow fail echo" {
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
		{"invalid order", message("place_order", map[string]any{"item": "widget", "quantity": 0}, ""), a2a.TaskStateRejected,
			"The order was refused: quantity must be at least 1.", ""},
		{"search by text", message("search", nil, "caddy"), a2a.TaskStateCompleted, `2 result(s) for "caddy".`, ""},
		{"search by argument", message("search", map[string]any{"q": "a2a", "limit": 1}, ""), a2a.TaskStateCompleted,
			`1 result(s) for "a2a".`, `{"query":"a2a","results":[{"title":"Getting started with A2A","url":"https://docs.example.com/a2a/start"}]}`},
		{"search without a query", message("search", nil, ""), a2a.TaskStateRejected, "missing query parameter q", ""},
		{"slow", message("slow", map[string]any{"seconds": 0}, ""), a2a.TaskStateCompleted, "", `{"waited":0}`},
		{"fail", message("fail", nil, ""), a2a.TaskStateFailed,
			`Skill "fail" failed: the service answered HTTP 500 Internal Server Error.`, ""},
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
			} else if out.Message != nil {
				parts = out.Message.Parts
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
	if err == nil || !strings.Contains(err.Error(), "skills.yaml:15: upstream.headers.X-Api-Key: environment variable DEMO_API_KEY is not set") {
		t.Fatalf("err = %v", err)
	}
}
