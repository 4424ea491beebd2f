package mapping_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/mapping"
)

func TestToolHints(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name, skill string
		want        mapping.ToolHints
	}{
		{"GET", "request: {path: /x}", mapping.ToolHints{Title: "A", ReadOnly: true, Idempotent: true}},
		{"POST", "request: {method: POST, path: /x}", mapping.ToolHints{Title: "A"}},
		{"POST idempotent", "request: {method: POST, path: /x, idempotent: true}", mapping.ToolHints{Title: "A", Idempotent: true}},
		{"PUT", "request: {method: PUT, path: /x}", mapping.ToolHints{Title: "A", Idempotent: true}},
		{"DELETE", "request: {method: DELETE, path: /x}", mapping.ToolHints{Title: "A", Idempotent: true, Destructive: true}},
		{"steps", "steps:\n      - {name: a, request: {path: /x}}\n      - {name: b, request: {method: DELETE, path: /y}}",
			mapping.ToolHints{Title: "A", Idempotent: true, Destructive: true}},
		{"overrides", "request: {method: DELETE, path: /x}\n    mcp: {title: Remove, read_only: true, idempotent: false, destructive: false, open_world: true}",
			mapping.ToolHints{Title: "Remove", ReadOnly: true, OpenWorld: &yes}},
		{"closed world", "request: {path: /x}\n    mcp: {open_world: false}",
			mapping.ToolHints{Title: "A", ReadOnly: true, Idempotent: true, OpenWorld: &no}},
		{"output schema", "request: {path: /x}\n    mcp: {output_schema: {type: object, required: [id]}}",
			mapping.ToolHints{Title: "A", ReadOnly: true, Idempotent: true, OutputSchema: map[string]any{"type": "object", "required": []any{"id"}}}},
		{"polled job", "request: {method: POST, path: /x, poll: {}}", mapping.ToolHints{Title: "A", Task: mapping.TaskOptional}},
		{"stream", "request: {path: /x}\n    stream:\n      artifact: {name: a, text: \"{event.text}\"}",
			mapping.ToolHints{Title: "A", ReadOnly: true, Idempotent: true, Task: mapping.TaskOptional}},
		{"task required", "request: {path: /x}\n    mcp: {task: required}",
			mapping.ToolHints{Title: "A", ReadOnly: true, Idempotent: true, Task: mapping.TaskRequired}},
		{"polled job never a task", "request: {method: POST, path: /x, poll: {}}\n    mcp: {task: forbidden}", mapping.ToolHints{Title: "A"}},
		{"asks before its task", "request: {method: POST, path: /x}\n    mcp: {task: required, ask_before_task: true}",
			mapping.ToolHints{Title: "A", Task: mapping.TaskRequired, AskBeforeTask: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "upstream: {url: http://up}\nskills:\n  - id: a\n    name: A\n    description: d\n    " + tc.skill + "\n"
			skills, err := mapping.Parse("t.yaml", []byte(src), mapping.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := skills.ByID("a").ToolHints()
			if tc.want.Task == "" {
				tc.want.Task = mapping.TaskForbidden
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("hints = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestToolHintsErrors(t *testing.T) {
	for _, tc := range []struct{ block, want string }{
		{"mcp: {read_only: maybe}", `skill "a": mcp.read_only: must be true or false`},
		{"mcp: {titel: x}", `skill "a": mcp.titel: unknown key (known keys: title, read_only, idempotent, destructive, open_world, output_schema, task, ask_before_task)`},
		{"mcp: {task: always}", `skill "a": mcp.task: must be forbidden, optional or required, not "always"`},
		{"mcp: {output_schema: {type: array}}", `skill "a": mcp.output_schema: must be the JSON Schema of an object`},
		{"mcp: {output_schema: [1]}", `skill "a": mcp.output_schema`},
	} {
		src := "upstream: {url: http://up}\nskills:\n  - id: a\n    description: d\n    request: {path: /x}\n    " + tc.block + "\n"
		_, err := mapping.Parse("t.yaml", []byte(src), mapping.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.block, err, tc.want)
		}
	}
}
