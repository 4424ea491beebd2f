package mapping_test

import (
	"errors"
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
		{"over the default budget", mapping.Options{}, "request", 2_000_000, a2a.TaskStateFailed, "request", `Skill "request" could not build its request.`},
		{"over a small budget", mapping.Options{MaxExpressionMemory: 500}, "request", 1000, a2a.TaskStateFailed, "request", `Skill "request" could not build its request.`},
		{"a string over the budget, in the response", mapping.Options{MaxExpressionMemory: 500}, "response", 1000, a2a.TaskStateFailed, "response",
			`Skill "response" could not read the service's answer.`},
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
