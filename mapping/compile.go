package mapping

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
)

// env is the one environment every expression is compiled against and run
// with. Compiling against the struct type lets expr check names and types at
// load time and read fields by index at run time.
type env struct {
	Args     map[string]any         `expr:"args" json:"args"`
	Message  messageEnv             `expr:"message" json:"message"`
	Caller   callerEnv              `expr:"caller" json:"caller"`
	Config   map[string]any         `expr:"config" json:"config"`
	Task     taskEnv                `expr:"task" json:"task"`
	Steps    map[string]responseEnv `expr:"steps" json:"steps"`
	Response responseEnv            `expr:"response" json:"response"`
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
	Bytes   []byte            `expr:"bytes" json:"bytes"`
}

// usage records which costly parts of the environment a skill's
// expressions read, so that a run builds only those.
type usage uint8

const (
	useParts usage = 1 << iota
	useHeaders
	useBody
	useText
	useBytes
	useSteps // steps.<name>: every step's response is kept
)

// useResponse is everything a response can be bound with.
const useResponse = useHeaders | useBody | useText | useBytes

var envPool = sync.Pool{New: func() any { return new(env) }}

// phase says where an expression sits, and so which names it may read.
type phase uint8

const (
	phaseRequest phase = iota
	phaseResponse
	phaseSelect // a skill's match: only message and config are known
)

// compiler compiles expressions against env and gathers their usage.
type compiler struct {
	maxNodes uint
	needs    usage
	// args holds the declared argument names of the skill being read; nil
	// when it declares none (then any args.<name> may be read).
	args map[string]bool
	// steps holds the names of the steps an expression may read:
	// those before it, and its own in its own response rules.
	steps []string
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
	switch {
	case ph == phaseSelect && v.idents&^(identMessage|identConfig) != 0:
		return nil, errors.New("match may read only message and config: the arguments, the caller and the task are known once the skill is chosen")
	case v.idents&identResponse != 0 && ph == phaseRequest:
		return nil, errors.New("response is only known in the response section")
	}
	if c.args != nil {
		for _, r := range v.args {
			if !c.args[r.name] {
				return nil, refError(src, r, fmt.Sprintf("args.%s is not a declared argument (declared: %s)", r.name, sortedKeys(c.args)))
			}
		}
	}
	for _, r := range v.steps {
		if !slices.Contains(c.steps, r.name) {
			known := "none"
			if len(c.steps) > 0 {
				known = strings.Join(c.steps, ", ")
			}
			return nil, refError(src, r, fmt.Sprintf("steps.%s is not a step whose answer is known here (known: %s)", r.name, known))
		}
	}
	if v.idents&identSteps != 0 && len(v.steps) == 0 && len(c.steps) == 0 {
		return nil, errors.New("steps: no step's answer is known here")
	}
	c.needs |= v.usage()
	return prog, nil
}

// refError is a reference to an unknown name, located in src.
func refError(src string, r ref, msg string) error {
	return (&file.Error{Location: r.loc, Message: msg}).Bind(file.NewSource(src))
}

func sortedKeys(m map[string]bool) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ", ")
}

// identifiers of the environment an expression reads.
type idents uint8

const (
	identArgs idents = 1 << iota
	identMessage
	identCaller
	identConfig
	identTask
	identSteps
	identResponse
)

var identBits = map[string]idents{"args": identArgs, "message": identMessage, "caller": identCaller,
	"config": identConfig, "task": identTask, "steps": identSteps, "response": identResponse}

// ref is a name read as args.<name> or steps.<name>.
type ref struct {
	name string
	loc  file.Location
}

// usageVisitor records which names an expression reads, and which costly
// fields of message, response and steps; it also makes member access
// null-safe.
type usageVisitor struct {
	idents                                         idents
	msgIdents, msgMembers, respIdents, respMembers int
	stepsIdents, stepsMembers, stepFieldsMembers   int
	needs                                          usage
	args, steps                                    []ref
}

func (v *usageVisitor) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		v.idents |= identBits[n.Value]
		switch n.Value {
		case "message":
			v.msgIdents++
		case "response":
			v.respIdents++
		case "steps":
			v.stepsIdents++
		}
	case *ast.MemberNode:
		id, ok := n.Node.(*ast.IdentifierNode)
		if !ok {
			v.nested(n)
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
			v.needs |= responseField(prop.Value)
		case "args":
			v.args = append(v.args, ref{name: prop.Value, loc: n.Property.Location()})
		case "steps":
			v.stepsMembers++
			v.steps = append(v.steps, ref{name: prop.Value, loc: n.Property.Location()})
		}
	}
}

// nested looks at steps.<name>.<field>.
func (v *usageVisitor) nested(n *ast.MemberNode) {
	inner, ok := n.Node.(*ast.MemberNode)
	if !ok {
		return
	}
	if id, ok := inner.Node.(*ast.IdentifierNode); !ok || id.Value != "steps" {
		return
	}
	v.stepFieldsMembers++
	if prop, ok := n.Property.(*ast.StringNode); ok {
		v.needs |= responseField(prop.Value)
	} else {
		v.needs |= useResponse
	}
}

func responseField(name string) usage {
	switch name {
	case "headers":
		return useHeaders
	case "body":
		return useBody
	case "text":
		return useText
	case "bytes":
		return useBytes
	}
	return 0
}

func (v *usageVisitor) usage() usage {
	u := v.needs
	if v.msgIdents > v.msgMembers { // message used as a whole
		u |= useParts
	}
	if v.respIdents > v.respMembers {
		u |= useResponse
	}
	if v.stepsIdents > 0 {
		u |= useSteps
		if v.stepsIdents > v.stepsMembers || v.stepsMembers > v.stepFieldsMembers {
			u |= useResponse // a step's whole answer is read
		}
	}
	return u
}

// bindRequest fills the request half of e from call.
func (sk *Skill) bindRequest(e *env, call *Call) {
	e.Config = sk.config
	e.Task = taskEnv{ID: call.TaskID, ContextID: call.ContextID}
	e.Caller = callerEnv{Subject: call.Caller.Subject, Scopes: call.Caller.Scopes, Claims: call.Caller.Claims}
	bindMessage(e, call.Message, sk.needs)
}

// bindMessage fills message from msg.
func bindMessage(e *env, msg *a2a.Message, needs usage) {
	if msg == nil {
		return
	}
	e.Message.Metadata = msg.Metadata
	e.Message.Text = joinText(msg.Parts)
	e.Message.Data = mergeData(msg.Parts)
	if needs&useParts != 0 {
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
