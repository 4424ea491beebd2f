package mapping

// The expression variables: the names every expression reads (args,
// message, caller, config, task, steps, response), and filling message in
// from a message.

import (
	"encoding/json"
	"strings"
	"sync"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// exprVars are the variables every expression is compiled against and run
// with. Compiling against the struct type lets expr check names and types at
// load time and read fields by index at run time.
type exprVars struct {
	Args     map[string]any          `expr:"args" json:"args"`
	Message  messageVars             `expr:"message" json:"message"`
	Caller   callerVars              `expr:"caller" json:"caller"`
	Config   map[string]any          `expr:"config" json:"config"`
	Task     taskVars                `expr:"task" json:"task"`
	Steps    map[string]responseVars `expr:"steps" json:"steps"`
	Response responseVars            `expr:"response" json:"response"`
	Event    eventVars               `expr:"event" json:"event"`
}

// messageVars is the whole message, in one shape for both protocol
// versions, named as the other variables are (snake_case); its slices and
// maps are the message's own, which expressions cannot change.
type messageVars struct {
	ID               string         `expr:"id" json:"id"`
	Role             string         `expr:"role" json:"role"` // "user" or "agent"
	ContextID        string         `expr:"context_id" json:"context_id"`
	TaskID           string         `expr:"task_id" json:"task_id"`
	ReferenceTaskIDs []string       `expr:"reference_task_ids" json:"reference_task_ids"`
	Extensions       []string       `expr:"extensions" json:"extensions"`
	Text             string         `expr:"text" json:"text"`
	Data             map[string]any `expr:"data" json:"data"`
	Metadata         map[string]any `expr:"metadata" json:"metadata"`
	Parts            []partVars     `expr:"parts" json:"parts"`
}

// roleNames are the roles as expressions read them.
var roleNames = [...]string{a2a.RoleUser: "user", a2a.RoleAgent: "agent"}

type partVars struct {
	Kind      string         `expr:"kind" json:"kind"`
	Text      string         `expr:"text" json:"text"`
	Data      any            `expr:"data" json:"data"`
	URL       string         `expr:"url" json:"url"`
	Raw       []byte         `expr:"raw" json:"raw"`
	MediaType string         `expr:"media_type" json:"media_type"`
	Filename  string         `expr:"filename" json:"filename"`
	Metadata  map[string]any `expr:"metadata" json:"metadata"`
}

type callerVars struct {
	Subject string         `expr:"subject" json:"subject"`
	Scopes  []string       `expr:"scopes" json:"scopes"`
	Claims  map[string]any `expr:"claims" json:"claims"`
}

type taskVars struct {
	ID        string `expr:"id" json:"id"`
	ContextID string `expr:"context_id" json:"context_id"`
}

type responseVars struct {
	Status  int               `expr:"status" json:"status"`
	Headers map[string]string `expr:"headers" json:"headers"`
	Body    any               `expr:"body" json:"body"`
	Text    string            `expr:"text" json:"text"`
	Bytes   []byte            `expr:"bytes" json:"bytes"`
}

// eventVars is one event of a streamed answer.
type eventVars struct {
	Text  string `expr:"text" json:"text"`   // the event's data (SSE), the line, or the piece
	Data  any    `expr:"data" json:"data"`   // the text decoded as JSON, or null
	Type  string `expr:"type" json:"type"`   // an SSE event's type ("message" by default)
	ID    string `expr:"id" json:"id"`       // an SSE event's id
	Index int    `expr:"index" json:"index"` // the event's number, from 0
}

// usage records which costly variables a skill's expressions read, so
// that a run builds only those.
type usage uint8

const (
	useParts usage = 1 << iota
	useHeaders
	useBody
	useText
	useBytes
	useSteps     // steps.<name>: every step's response is kept
	useEventData // event.data: each event is decoded as JSON
)

// useResponse is everything a response can be bound with.
const useResponse = useHeaders | useBody | useText | useBytes

var varsPool = sync.Pool{New: func() any { return new(exprVars) }}

// bindMessage fills message from msg.
func bindMessage(vars *exprVars, msg *a2a.Message, needs usage) {
	if msg == nil {
		return
	}
	vars.Message.ID = msg.MessageID
	if int(msg.Role) < len(roleNames) {
		vars.Message.Role = roleNames[msg.Role]
	}
	vars.Message.ContextID, vars.Message.TaskID = msg.ContextID, msg.TaskID
	vars.Message.ReferenceTaskIDs, vars.Message.Extensions = msg.ReferenceTaskIDs, msg.Extensions
	vars.Message.Metadata = msg.Metadata
	vars.Message.Text = joinText(msg.Parts)
	vars.Message.Data = mergeData(msg.Parts)
	if needs&useParts != 0 {
		vars.Message.Parts = partVarsOf(msg.Parts)
	}
}

func joinText(parts []a2a.Part) string {
	var text string
	n := 0
	for i := range parts {
		if parts[i].Kind == a2a.PartText {
			if n == 0 {
				text = parts[i].Text
			}
			n++
		}
	}
	if n < 2 {
		return text
	}
	var b strings.Builder
	for i := range parts {
		if parts[i].Kind == a2a.PartText {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(parts[i].Text)
		}
	}
	return b.String()
}

// mergeData merges the objects of the data parts, later keys winning. A
// single object is used as is: expressions cannot modify it.
func mergeData(parts []a2a.Part) map[string]any {
	var merged map[string]any
	shared := false
	for i := range parts {
		if parts[i].Kind != a2a.PartData {
			continue
		}
		obj := dataObject(parts[i].Data)
		if obj == nil {
			continue
		}
		switch {
		case merged == nil:
			merged, shared = obj, true
		default:
			if shared {
				own := make(map[string]any, len(merged)+len(obj))
				for k, v := range merged {
					own[k] = v
				}
				merged, shared = own, false
			}
			for k, v := range obj {
				merged[k] = v
			}
		}
	}
	return merged
}

func dataObject(d any) map[string]any {
	switch d := d.(type) {
	case map[string]any:
		return d
	case json.RawMessage:
		// Read as the request's data is, keeping integers exact: a tool's
		// arguments come so (MCP).
		var v any
		if jsonx.UnmarshalKeepingIntegers(d, &v) == nil {
			obj, _ := v.(map[string]any)
			return obj
		}
	}
	return nil
}

var partKindNames = [...]string{a2a.PartText: "text", a2a.PartRaw: "raw", a2a.PartURL: "url", a2a.PartData: "data"}

func partVarsOf(parts []a2a.Part) []partVars {
	out := make([]partVars, len(parts))
	for i := range parts {
		p := &parts[i]
		kind := ""
		if int(p.Kind) < len(partKindNames) {
			kind = partKindNames[p.Kind]
		}
		data := p.Data
		if raw, ok := data.(json.RawMessage); ok {
			data = nil
			_ = json.Unmarshal(raw, &data) // an undecodable value reads as null
		}
		out[i] = partVars{Kind: kind, Text: p.Text, Data: data, URL: p.URL, Raw: p.Raw,
			MediaType: p.MediaType, Filename: p.Filename, Metadata: p.Metadata}
	}
	return out
}
