package mapping

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
)

// env is the one environment every expression is compiled against and run
// with. Compiling against the struct type lets expr check names and types at
// load time and read fields by index at run time.
type env struct {
	Args     map[string]any `expr:"args" json:"args"`
	Message  messageEnv     `expr:"message" json:"message"`
	Caller   callerEnv      `expr:"caller" json:"caller"`
	Config   map[string]any `expr:"config" json:"config"`
	Task     taskEnv        `expr:"task" json:"task"`
	Response responseEnv    `expr:"response" json:"response"`
}

type messageEnv struct {
	Text     string         `expr:"text" json:"text"`
	Data     map[string]any `expr:"data" json:"data"`
	Metadata map[string]any `expr:"metadata" json:"metadata"`
	Parts    []partEnv      `expr:"parts" json:"parts"`
}

type partEnv struct {
	Kind      string         `expr:"kind" json:"kind"`
	Text      string         `expr:"text" json:"text"`
	Data      any            `expr:"data" json:"data"`
	URL       string         `expr:"url" json:"url"`
	Raw       []byte         `expr:"raw" json:"raw"`
	MediaType string         `expr:"media_type" json:"media_type"`
	Filename  string         `expr:"filename" json:"filename"`
	Metadata  map[string]any `expr:"metadata" json:"metadata"`
}

type callerEnv struct {
	Subject string         `expr:"subject" json:"subject"`
	Scopes  []string       `expr:"scopes" json:"scopes"`
	Claims  map[string]any `expr:"claims" json:"claims"`
}

type taskEnv struct {
	ID        string `expr:"id" json:"id"`
	ContextID string `expr:"context_id" json:"context_id"`
}

type responseEnv struct {
	Status  int               `expr:"status" json:"status"`
	Headers map[string]string `expr:"headers" json:"headers"`
	Body    any               `expr:"body" json:"body"`
	Text    string            `expr:"text" json:"text"`
}

// usage records which costly parts of the environment a skill's
// expressions read, so that a run builds only those.
type usage uint8

const (
	useParts usage = 1 << iota
	useHeaders
	useBody
	useText
)

var envPool = sync.Pool{New: func() any { return new(env) }}

// phase says where an expression sits: response is unknown before the call.
type phase uint8

const (
	phaseRequest phase = iota
	phaseResponse
)

// compiler compiles expressions against env and gathers their usage.
type compiler struct {
	maxNodes uint
	needs    usage
}

// compile compiles src. asBool asks for a boolean result.
func (c *compiler) compile(src string, ph phase, asBool bool) (*vm.Program, error) {
	v := &usageVisitor{}
	opts := []expr.Option{expr.Env(env{}), expr.MaxNodes(c.maxNodes), expr.Patch(v)}
	if asBool {
		opts = append(opts, expr.AsBool())
	} else {
		opts = append(opts, expr.AsAny())
	}
	prog, err := expr.Compile(src, opts...)
	if err != nil {
		if strings.HasPrefix(err.Error(), "unknown name env") {
			return nil, errors.New("env is not a variable: write an environment placeholder as a whole hole, {env.NAME}")
		}
		return nil, err
	}
	if v.respIdents > 0 && ph == phaseRequest {
		return nil, errors.New("response is only known in the response section")
	}
	c.needs |= v.usage()
	return prog, nil
}

// usageVisitor counts uses of message and response, and which of their
// costly fields are read by name; it also makes member access null-safe.
type usageVisitor struct {
	msgIdents, msgMembers, respIdents, respMembers int
	needs                                          usage
}

func (v *usageVisitor) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		switch n.Value {
		case "message":
			v.msgIdents++
		case "response":
			v.respIdents++
		}
	case *ast.MemberNode:
		id, ok := n.Node.(*ast.IdentifierNode)
		if !ok {
			// Reading into null gives null, as if every "." were "?.":
			// upstream JSON is often partial. The environment's own names
			// (message.text, response.body) are never null and keep the
			// fast field access.
			if !n.Optional && !n.Method {
				n.Optional = true
				ast.Patch(node, &ast.ChainNode{Node: n})
			}
			return
		}
		prop, ok := n.Property.(*ast.StringNode)
		if !ok {
			return
		}
		switch id.Value {
		case "message":
			v.msgMembers++
			if prop.Value == "parts" {
				v.needs |= useParts
			}
		case "response":
			v.respMembers++
			switch prop.Value {
			case "headers":
				v.needs |= useHeaders
			case "body":
				v.needs |= useBody
			case "text":
				v.needs |= useText
			}
		}
	}
}

func (v *usageVisitor) usage() usage {
	u := v.needs
	if v.msgIdents > v.msgMembers { // message used as a whole
		u |= useParts
	}
	if v.respIdents > v.respMembers {
		u |= useHeaders | useBody | useText
	}
	return u
}

// bindRequest fills the request half of e from call.
func (sk *Skill) bindRequest(e *env, call *Call) {
	e.Config = sk.config
	e.Task = taskEnv{ID: call.TaskID, ContextID: call.ContextID}
	e.Caller = callerEnv{Subject: call.Caller.Subject, Scopes: call.Caller.Scopes, Claims: call.Caller.Claims}
	msg := call.Message
	if msg == nil {
		return
	}
	e.Message.Metadata = msg.Metadata
	e.Message.Text = joinText(msg.Parts)
	e.Message.Data = mergeData(msg.Parts)
	// The arguments are the message's data for now; declared schemas and
	// text captures will refine them here.
	e.Args = e.Message.Data
	if sk.needs&useParts != 0 {
		e.Message.Parts = partsEnv(msg.Parts)
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
		var obj map[string]any
		if json.Unmarshal(d, &obj) == nil {
			return obj
		}
	}
	return nil
}

var partKindNames = [...]string{a2a.PartText: "text", a2a.PartRaw: "raw", a2a.PartURL: "url", a2a.PartData: "data"}

func partsEnv(parts []a2a.Part) []partEnv {
	out := make([]partEnv, len(parts))
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
		out[i] = partEnv{Kind: kind, Text: p.Text, Data: data, URL: p.URL, Raw: p.Raw,
			MediaType: p.MediaType, Filename: p.Filename, Metadata: p.Metadata}
	}
	return out
}
