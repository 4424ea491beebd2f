package mapping

// Compiling expressions against the expression variables: type checks,
// which names each phase may read, and what each expression reads.

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
)

// phase says where an expression sits, and so which names it may read.
type phase uint8

const (
	phaseRequest phase = iota
	phaseResponse
	phaseSelect // a skill's match: only message and config are known
	phaseStream // a skill's stream section: event, and the response's status and headers
)

// compiler compiles expressions against exprVars and gathers their usage.
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
	opts := []expr.Option{expr.Env(exprVars{}), expr.MaxNodes(c.maxNodes), expr.Patch(v), expr.Patch(nilTolerant{})}
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
	case v.idents&identEvent != 0 && ph != phaseStream:
		return nil, errors.New("event is only known in the stream section")
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

// idents are the variables an expression reads.
type idents uint8

const (
	identArgs idents = 1 << iota
	identMessage
	identCaller
	identConfig
	identTask
	identSteps
	identResponse
	identEvent
)

var identBits = map[string]idents{"args": identArgs, "message": identMessage, "caller": identCaller,
	"config": identConfig, "task": identTask, "steps": identSteps, "response": identResponse, "event": identEvent}

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
	eventIdents, eventMembers                      int
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
		case "event":
			v.eventIdents++
		}
	case *ast.MemberNode:
		id, ok := n.Node.(*ast.IdentifierNode)
		if !ok {
			v.nested(n)
			// Reading into null gives null, as if every "." were "?.":
			// upstream JSON is often partial. The variables' own fields
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
		case "event":
			v.eventMembers++
			if prop.Value == "data" {
				v.needs |= useEventData
			}
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
	if v.eventIdents > v.eventMembers { // event used as a whole
		u |= useEventData
	}
	if v.stepsIdents > 0 {
		u |= useSteps
		if v.stepsIdents > v.stepsMembers || v.stepsMembers > v.stepFieldsMembers {
			u |= useResponse // a step's whole answer is read
		}
	}
	return u
}

// nilTolerant makes the common reads of an answer whose shape is not
// declared safe when a member is missing, as a skill's author expects:
// len of nil is 0, and nil is false where a condition is read (the
// condition of ?: and if, the operand of ! and not). It rewrites only
// values of no declared type (a decoded body's members), as x ?? [] or
// x ?? false; a value of the wrong type still fails, with its message.
type nilTolerant struct{}

func (nilTolerant) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BuiltinNode:
		if n.Name == "len" && len(n.Arguments) == 1 && untyped(n.Arguments[0]) {
			n.Arguments[0] = orElse(n.Arguments[0], &ast.ArrayNode{})
		}
	case *ast.ConditionalNode:
		if untyped(n.Cond) {
			n.Cond = orElse(n.Cond, &ast.BoolNode{})
		}
	case *ast.UnaryNode:
		if (n.Operator == "!" || n.Operator == "not") && untyped(n.Node) {
			n.Node = orElse(n.Node, &ast.BoolNode{})
		}
	}
}

func untyped(n ast.Node) bool {
	t := n.Type()
	return t == nil || t.Kind() == reflect.Interface
}

func orElse(n, fallback ast.Node) ast.Node {
	return &ast.BinaryNode{Operator: "??", Left: n, Right: fallback}
}
