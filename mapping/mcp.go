package mapping

// What an MCP client is told about a skill's effects: hints derived from
// its upstream requests' methods, which the skill's optional mcp block
// overrides.

import (
	"gopkg.in/yaml.v3"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// ToolHints describe a skill as an MCP tool's annotations do: a title,
// and what calling it does to the world. They are hints for the client's
// user interface, never a guarantee.
type ToolHints struct {
	// Title is the tool's display title: mcp.title, else the skill's name.
	Title string
	// ReadOnly: every request is a GET or HEAD.
	ReadOnly bool
	// Idempotent: every request may be sent twice without harm (GET, HEAD,
	// PUT, DELETE, OPTIONS, or idempotent: true).
	Idempotent bool
	// Destructive: a request is a DELETE.
	Destructive bool
	// OpenWorld: the tool reaches beyond a closed set of entities; nil
	// when the skill does not say.
	OpenWorld *bool
	// OutputSchema is the JSON Schema (an object's) of the data the skill
	// answers, as its mcp block declares it; nil when it declares none.
	OutputSchema map[string]any
	// Task says whether a call may run as an MCP task (the tasks
	// extension): TaskOptional for a skill that can run long (a polled
	// job, a streamed answer), TaskForbidden for the others, unless mcp.task
	// says otherwise.
	Task TaskSupport
	// AskBeforeTask: a call from a client that takes tasks, lacking
	// required arguments, asks for them in its own answer first, and its
	// task starts once it has them (mcp.ask_before_task); otherwise the task
	// starts at once and asks for them itself.
	AskBeforeTask bool
}

// TaskSupport is whether a tool's calls run as MCP tasks, as MCP names
// it (taskSupport).
type TaskSupport string

// The values of TaskSupport (mcp.task).
const (
	// TaskForbidden: a call is always answered when its run ends.
	TaskForbidden TaskSupport = "forbidden"
	// TaskOptional: a client that takes tasks gets one; another waits.
	TaskOptional TaskSupport = "optional"
	// TaskRequired: only a client that takes tasks may call the tool.
	TaskRequired TaskSupport = "required"
)

// mcpHints are the skill's mcp block: each field overrides the hint
// derived from its requests, nil when the block does not set it.
type mcpHints struct {
	title                                        string
	readOnly, idempotent, destructive, openWorld *bool
	outputSchema                                 map[string]any
	task                                         TaskSupport
	askBeforeTask                                bool
}

var mcpKeys = []string{"title", "read_only", "idempotent", "destructive", "open_world", "output_schema", "task", "ask_before_task"}

// skillMCP reads a skill's mcp block.
func (l *loader) skillMCP(n *yaml.Node, key string, sk *Skill) {
	flag := func(v *yaml.Node, name string) *bool {
		b := l.boolean(v, join(key, name))
		return &b
	}
	l.fields(n, key, mcpKeys, func(name string, v *yaml.Node) {
		switch name {
		case "title":
			sk.mcp.title, _ = l.scalar(v, join(key, name))
		case "read_only":
			sk.mcp.readOnly = flag(v, name)
		case "idempotent":
			sk.mcp.idempotent = flag(v, name)
		case "destructive":
			sk.mcp.destructive = flag(v, name)
		case "open_world":
			sk.mcp.openWorld = flag(v, name)
		case "output_schema":
			// MCP's structuredContent is an object, so is the schema's type.
			schema := l.constants(v, join(key, name))
			if schema["type"] != "object" {
				l.errorf(v, join(key, name), `must be the JSON Schema of an object ("type": "object"): a tool's structured content is one`)
				return
			}
			sk.mcp.outputSchema = schema
		case "task":
			value, _ := l.scalar(v, join(key, name))
			switch support := TaskSupport(value); support {
			case TaskForbidden, TaskOptional, TaskRequired:
				sk.mcp.task = support
			default:
				l.errorf(v, join(key, name), "must be forbidden, optional or required, not %q", value)
			}
		case "ask_before_task":
			sk.mcp.askBeforeTask = l.boolean(v, join(key, name))
		}
	})
}

// ToolHints are the skill's hints: from its requests' methods, unless its
// mcp block says otherwise.
func (sk *Skill) ToolHints() ToolHints {
	h := ToolHints{Title: sk.Name, ReadOnly: len(sk.steps) > 0, Idempotent: len(sk.steps) > 0,
		OpenWorld: sk.mcp.openWorld, OutputSchema: sk.mcp.outputSchema, Task: TaskForbidden, AskBeforeTask: sk.mcp.askBeforeTask}
	if sk.stream != nil {
		h.Task = TaskOptional
	}
	for i := range sk.steps {
		r := &sk.steps[i].request
		h.ReadOnly = h.ReadOnly && (r.method == "GET" || r.method == "HEAD")
		h.Idempotent = h.Idempotent && r.safeToRepeat()
		h.Destructive = h.Destructive || r.method == "DELETE"
		if r.poll != nil {
			h.Task = TaskOptional
		}
	}
	if sk.mcp.task != "" {
		h.Task = sk.mcp.task
	}
	if sk.mcp.title != "" {
		h.Title = sk.mcp.title
	}
	for _, o := range []struct {
		set *bool
		to  *bool
	}{{sk.mcp.readOnly, &h.ReadOnly}, {sk.mcp.idempotent, &h.Idempotent}, {sk.mcp.destructive, &h.Destructive}} {
		if o.set != nil {
			*o.to = *o.set
		}
	}
	return h
}

// AskedSchema is the JSON Schema of the arguments an input-required
// message asks for (the data part askFor adds), or nil when it names none.
func AskedSchema(msg *a2a.Message) any {
	if msg == nil {
		return nil
	}
	for _, p := range msg.Parts {
		if p.Kind == a2a.PartData && p.Metadata[inputSchemaKey] == true {
			return p.Data
		}
	}
	return nil
}
