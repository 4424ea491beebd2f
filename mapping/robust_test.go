package mapping_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/mapping"
)

func TestExpressionMemoryBudget(t *testing.T) {
	src := `upstream: {url: "http://ignored"}
skills:
  - id: request
    description: d
    request:
      path: /r
      query:
        n: "{len(map(1..args.n, # * 2))}"
  - id: response
    description: d
    request: {path: /r}
    response:
      - state: completed
        message: "{len(repeat('x', args.n))}"
`
	tests := []struct {
		name   string
		opts   mapping.Options
		skill  string
		n      float64
		state  a2a.TaskState
		stage  string
		expect string
	}{
		{"under the default budget", mapping.Options{}, "request", 1000, a2a.TaskStateCompleted, "", ""},
		{"over the default budget", mapping.Options{}, "request", 2_000_000, a2a.TaskStateFailed, "request",
			`Skill "request" could not build its request: memory budget exceeded (1:10) in len(map(1..args.n, # * 2)).`},
		{"over a small budget", mapping.Options{MaxExpressionMemory: 500}, "request", 1000, a2a.TaskStateFailed, "request",
			`Skill "request" could not build its request: memory budget exceeded (1:10) in len(map(1..args.n, # * 2)).`},
		{"a string over the budget, in the response", mapping.Options{MaxExpressionMemory: 500}, "response", 1000, a2a.TaskStateFailed, "response",
			`Skill "response" could not read the service's answer: response rule 1: message: memory budget exceeded (1:5) in len(repeat('…', args.n)).`},
		{"a string under the budget", mapping.Options{MaxExpressionMemory: 500}, "response", 100, a2a.TaskStateCompleted, "", "100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := recorder(t, nil)
			out := runSkill(t, load(t, src, srv.URL, tt.opts), message(tt.skill, map[string]any{"n": tt.n}, ""))
			if out.State != tt.state || messageText(out) != tt.expect {
				t.Fatalf("state %v, message %q (%v)", out.State, messageText(out), out.Err)
			}
			if tt.stage == "" {
				return
			}
			var re *mapping.RunError
			if !errors.As(out.Err, &re) || re.Stage != tt.stage || !strings.Contains(out.Err.Error(), "memory budget exceeded") {
				t.Errorf("err %v; want a %s RunError over the memory budget", out.Err, tt.stage)
			}
		})
	}
}

// An artifact value JSON cannot hold fails the run where it is made: stored
// on the task, it would break every later answer that carries the task.
func TestArtifactDataJSONCannotHoldFailsTheRun(t *testing.T) {
	src := `upstream: {url: "http://ignored"}
skills:
  - id: average
    description: d
    request: {path: /r}
    response:
      - state: completed
        artifacts:
          - data: "{avg: response.body.total / response.body.count}"
  - id: pairs
    description: d
    request: {path: /r}
    response:
      - state: completed
        artifacts:
          - data: 'fromPairs([["a", 1], ["b", {"c": 2}]])'
`
	srv, _ := recorder(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"total": 10, "count": 0}`)
	})
	skills := load(t, src, srv.URL, mapping.Options{})

	out := runSkill(t, skills, message("average", nil, ""))
	if out.State != a2a.TaskStateFailed || len(out.Artifacts) != 0 || !strings.Contains(fmt.Sprint(out.Err), "cannot be written as JSON") {
		t.Fatalf("10/0 as artifact data: state %v, %d artifacts, err %v; want a failed run", out.State, len(out.Artifacts), out.Err)
	}

	out = runSkill(t, skills, message("pairs", nil, ""))
	if out.State != a2a.TaskStateCompleted || len(out.Artifacts) != 1 {
		t.Fatalf("fromPairs as artifact data: state %v (%v)", out.State, out.Err)
	}
	if got := string(out.Artifacts[0].Parts[0].Data.(json.RawMessage)); got != `{"a":1,"b":{"c":2}}` {
		t.Errorf("data = %s", got)
	}
}

func TestSelectionErrorWithNoSkillsForTheCaller(t *testing.T) {
	err := &mapping.SelectionError{Named: true, Requested: "nope"}
	if got := err.Error(); !strings.Contains(got, "no skill is available") {
		t.Fatalf("Error() = %q", got)
	}
}

// The common reads of an answer whose shape is not what the author
// expected are safe by design: a missing member has length 0 and is false
// in a condition. An expression that still fails tells the caller where
// and why, with values of the answer elided.
func TestMissingMembersAndExpressionErrors(t *testing.T) {
	src := `upstream: {url: "http://ignored"}
skills:
  - id: tolerant
    description: d
    request: {path: /r}
    response:
      - when: "len(response.body.items) == 0 && !response.body.ready"
        state: completed
        message: "{len(response.body.items)} items, {response.body.available ? 'available' : 'not available'}"
  - id: wrong
    description: d
    request: {path: /r}
    response:
      - state: completed
        message: "{int(response.body.code) + len('internal-host.example')}"
`
	srv, _ := recorder(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"code": "secret-account-42"}`)
	})
	skills := load(t, src, srv.URL, mapping.Options{})

	out := runSkill(t, skills, message("tolerant", nil, ""))
	if out.State != a2a.TaskStateCompleted || messageText(out) != "0 items, not available" {
		t.Errorf("missing members: state %v, message %q (%v)", out.State, messageText(out), out.Err)
	}

	out = runSkill(t, skills, message("wrong", nil, ""))
	got := messageText(out)
	if out.State != a2a.TaskStateFailed || !strings.Contains(got, "response rule 1: message:") ||
		!strings.Contains(got, "in int(response.body.code) + len('…')") {
		t.Errorf("failed expression: state %v, message %q; want where and the expression", out.State, got)
	}
	if strings.Contains(got, "secret-account-42") || strings.Contains(got, "internal-host") {
		t.Errorf("the message shows a value of the answer: %q", got)
	}
	if !strings.Contains(fmt.Sprint(out.Err), "secret-account-42") {
		t.Errorf("the log's error lost the detail: %v", out.Err)
	}
}
