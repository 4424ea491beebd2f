package mapping_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/mapping"
)

const multiTurnSkills = `upstream: {url: "http://ignored"}
skills:
  - id: order
    description: d
    arguments:
      item: {type: string, required: true, description: What to order.}
      quantity: {type: integer, required: true}
      note: string
    from_text: '(?i)^order (?P<quantity>\d+) (?P<item>\w+)$'
    request:
      method: POST
      path: /orders
      body: args
  - id: loose
    description: no schema
    request:
      method: POST
      path: /loose
      body: args
`

// conversation keeps a task's history the way the server does: every
// message, the agent's status messages included, the newest last.
type conversation struct {
	t       *testing.T
	s       *mapping.Skills
	skill   string
	history []a2a.Message
	n       int
}

// say sends a user message on the task and records the agent's answer.
func (c *conversation) say(data map[string]any, text string) mapping.Outcome {
	c.t.Helper()
	c.n++
	msg := message(c.skill, data, text)
	msg.MessageID = "user-" + string(rune('0'+c.n))
	c.history = append(c.history, *msg)
	sk := c.s.ByID(c.skill)
	out := sk.Run(c.t.Context(), mapping.Call{Message: msg, History: c.history, TaskID: "t", ContextID: "c"}, nil)
	if out.Message != nil {
		c.history = append(c.history, *out.Message)
	}
	return out
}

func TestMultiTurn(t *testing.T) {
	srv, ch := recorder(t, nil)
	s := load(t, multiTurnSkills, srv.URL, mapping.Options{})
	type turn struct {
		data  map[string]any
		text  string
		state a2a.TaskState
		ask   string // in the agent's message
	}
	tests := []struct {
		name  string
		skill string
		turns []turn
		body  string // what the upstream finally got
	}{
		{"data, then the missing argument as data", "order", []turn{
			{map[string]any{"item": "widget"}, "", a2a.TaskStateInputRequired, "needs the argument quantity (integer)"},
			{map[string]any{"quantity": 3.0}, "", a2a.TaskStateCompleted, ""},
		}, `{"item":"widget","quantity":3}`},
		{"the missing argument as plain text", "order", []turn{
			{map[string]any{"item": "widget"}, "", a2a.TaskStateInputRequired, "quantity"},
			{nil, " 4 ", a2a.TaskStateCompleted, ""},
		}, `{"item":"widget","quantity":4}`},
		{"two missing, answered one at a time in text", "order", []turn{
			{nil, "hello", a2a.TaskStateInputRequired, "needs the arguments item (string): What to order; quantity (integer)"},
			{nil, "gadget", a2a.TaskStateInputRequired, "needs the argument quantity (integer)."},
			{nil, "2", a2a.TaskStateCompleted, ""},
		}, `{"item":"gadget","quantity":2}`},
		{"a text pattern in a follow-up", "order", []turn{
			{map[string]any{"note": "gift"}, "", a2a.TaskStateInputRequired, "item"},
			{nil, "order 5 bolts", a2a.TaskStateCompleted, ""},
		}, `{"item":"bolts","note":"gift","quantity":5}`},
		{"a wrong value, then a good one", "order", []turn{
			{map[string]any{"item": "widget", "quantity": "many"}, "", a2a.TaskStateInputRequired,
				"cannot use the argument quantity: it must be an integer, not a string"},
			{nil, "lots", a2a.TaskStateInputRequired, `cannot use the argument quantity: it must be an integer, not "lots"`},
			{map[string]any{"quantity": 1.0}, "", a2a.TaskStateCompleted, ""},
		}, `{"item":"widget","quantity":1}`},
		{"a later value replaces an earlier one", "order", []turn{
			{map[string]any{"item": "widget"}, "", a2a.TaskStateInputRequired, "quantity"},
			{map[string]any{"item": "gizmo", "quantity": 6.0}, "", a2a.TaskStateCompleted, ""},
		}, `{"item":"gizmo","quantity":6}`},
		{"without a schema, data parts add up over the task", "loose", []turn{
			{map[string]any{"a": 1.0}, "", a2a.TaskStateCompleted, ""},
		}, `{"a":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &conversation{t: t, s: s, skill: tt.skill}
			for i, tn := range tt.turns {
				out := c.say(tn.data, tn.text)
				if out.State != tn.state || !strings.Contains(messageText(out), tn.ask) {
					t.Fatalf("turn %d: state %v, message %q (%v); want %v with %q", i+1, out.State, messageText(out), out.Err, tn.state, tn.ask)
				}
				if tn.state == a2a.TaskStateInputRequired {
					noRequest(t, ch)
				}
			}
			if got := received(t, ch).Body; got != tt.body {
				t.Errorf("upstream got %s, want %s", got, tt.body)
			}
		})
	}
}

// TestHistoryWithoutSchema: arguments add up over the task's user messages
// also when the skill declares none (a rule may have asked for more).
func TestHistoryWithoutSchema(t *testing.T) {
	srv, ch := recorder(t, nil)
	s := load(t, multiTurnSkills, srv.URL, mapping.Options{})
	first, second := message("loose", map[string]any{"a": 1.0, "b": 1.0}, ""), message("loose", map[string]any{"b": 2.0}, "")
	second.MessageID = "m2"
	history := []a2a.Message{*first, {MessageID: "q", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("more?")}}, *second}
	out := s.ByID("loose").Run(t.Context(), mapping.Call{Message: second, History: history}, nil)
	if got := received(t, ch).Body; out.State != a2a.TaskStateCompleted || got != `{"a":1,"b":2}` {
		t.Errorf("state %v, body %s", out.State, got)
	}
}

// TestQuestionFromAStore: a question that went through JSON (a task store
// that encodes its tasks) still says what a plain-text answer is for.
func TestQuestionFromAStore(t *testing.T) {
	srv, ch := recorder(t, nil)
	s := load(t, multiTurnSkills, srv.URL, mapping.Options{})
	first, answer := message("order", map[string]any{"item": "tea"}, ""), message("order", nil, "7")
	answer.MessageID = "m2"
	question := a2a.Message{MessageID: "q", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("How many?"),
		{Kind: a2a.PartData, Data: json.RawMessage(`{"type":"object","required":["quantity"]}`), Metadata: map[string]any{"input_schema": true}}}}
	out := s.ByID("order").Run(t.Context(), mapping.Call{Message: answer, History: []a2a.Message{*first, question, *answer}}, nil)
	if got := received(t, ch).Body; out.State != a2a.TaskStateCompleted || got != `{"item":"tea","quantity":7}` {
		t.Errorf("state %v (%q), body %s", out.State, messageText(out), got)
	}
}
