package mapping_test

import (
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/mapping"
)

// wholeMessageSkills choose by every member of the message that is not its
// content: its id, extensions, referenced tasks, task and context, role
// and a metadata key other than skill.
const wholeMessageSkills = `upstream: {url: "http://ignored"}
skills:
  - id: by_id
    description: chosen by the message id
    match: message.id startsWith "tck-"
    request: {path: /i}
  - id: by_extension
    description: chosen by an extension the message uses
    match: '"https://example.com/ext/priority/v1" in message.extensions'
    request: {path: /e}
  - id: by_reference
    description: chosen by a referenced task
    match: len(message.reference_task_ids) > 0
    request: {path: /r}
  - id: by_task
    description: a follow-up in a known context
    match: message.task_id != "" && message.context_id == "ctx-1"
    request: {path: /t}
  - id: by_metadata
    description: a metadata key other than skill, from a user
    match: message.role == "user" && message.metadata.tenant == "acme"
    request: {path: /m}
`

func TestSelectByTheWholeMessage(t *testing.T) {
	s := load(t, wholeMessageSkills, "http://127.0.0.1:1", mapping.Options{})
	text := []a2a.Part{a2a.TextPart("hello")}
	tests := []struct {
		name string
		msg  a2a.Message
		want string // "" for a SelectionError
	}{
		{"messageId", a2a.Message{MessageID: "tck-42", Role: a2a.RoleUser, Parts: text}, "by_id"},
		{"extensions", a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: text,
			Extensions: []string{"https://example.com/ext/other", "https://example.com/ext/priority/v1"}}, "by_extension"},
		{"referenceTaskIds", a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: text, ReferenceTaskIDs: []string{"t-0"}}, "by_reference"},
		{"taskId and contextId", a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: text, TaskID: "t-1", ContextID: "ctx-1"}, "by_task"},
		{"another context", a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: text, TaskID: "t-1", ContextID: "ctx-2"}, ""},
		{"role and a metadata key", a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: text,
			Metadata: map[string]any{"tenant": "acme"}}, "by_metadata"},
		{"the agent's role", a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: text,
			Metadata: map[string]any{"tenant": "acme"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sk, serr := s.Select(&tt.msg)
			switch {
			case tt.want == "" && serr == nil:
				t.Fatalf("selected %s; want none", sk.ID)
			case tt.want != "" && (serr != nil || sk.ID != tt.want):
				t.Fatalf("got %v, %v; want %s", sk, serr, tt.want)
			}
		})
	}
}

// The message's members are typed: a mistake in their use fails at load.
func TestWholeMessageTyped(t *testing.T) {
	base := "upstream: {url: \"http://ignored\"}\nskills:\n  - id: a\n    description: d\n    request: {path: /a}\n    match: "
	for _, tt := range []struct{ match, want string }{
		{"message.role == 1", `t.yaml:6: skill "a": match: invalid operation: == (mismatched types string and int)`},
		{"message.extensions > 0", `t.yaml:6: skill "a": match: invalid operation: > (mismatched types []string and int)`},
		{"message.messageId == 'x'", `match: type mapping.messageVars has no field messageId`},
	} {
		t.Run(tt.match, func(t *testing.T) {
			_, err := mapping.Parse("t.yaml", []byte(base+"'"+strings.ReplaceAll(tt.match, "'", "''")+"'\n"), mapping.Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v; want %q", err, tt.want)
			}
		})
	}
}

// A response rule reads the message as match does: here the answer's
// length follows an extension the client asked for.
func TestWhenReadsTheWholeMessage(t *testing.T) {
	srv, _ := recorder(t, nil)
	s := load(t, `upstream: {url: "http://ignored"}
skills:
  - id: answer
    description: d
    request: {path: /a}
    response:
      - when: '"urn:example:terse" in message.extensions && message.id != ""'
        state: completed
        message: short
      - state: completed
        message: "the long answer to {message.id}"
`, srv.URL, mapping.Options{})
	for _, tt := range []struct {
		extensions []string
		want       string
	}{
		{[]string{"urn:example:terse"}, "short"},
		{nil, "the long answer to m1"},
	} {
		msg := message("answer", nil, "hi")
		msg.Extensions = tt.extensions
		if out := runSkill(t, s, msg); out.State != a2a.TaskStateCompleted || messageText(out) != tt.want {
			t.Errorf("extensions %v: %v %q, want %q", tt.extensions, out.State, messageText(out), tt.want)
		}
	}
}
