// Package openapi writes a starting skills file for caddy-a2a from an
// OpenAPI 3 document (3.0 or 3.1, YAML or JSON), or a Swagger 2.0 one
// (read as the OpenAPI 3.0 it stands for): one skill per operation
// picked, its arguments from the operation's path, query and header
// parameters and from the properties of its JSON, form or multipart request
// body, with their types (unions among them), enums, defaults,
// descriptions and rules, nested items and properties, and how a query or
// a form body sends an object or a list (style, explode); the request
// (method, path holes, query, headers, body); the output modes from the
// success responses' media types; and the credentials of the document's
// security schemes as {env.NAME} placeholders. The file it writes loads
// without errors (Generate checks it with mapping.Parse) and is meant to be
// reviewed and refined: response rules, text patterns and match predicates
// are the operator's to add.
//
// The document is read with gopkg.in/yaml.v3, already a dependency, rather
// than an OpenAPI library: the generator reads a dozen fields and resolves
// local $refs, which a node walk does in a few functions, while the
// libraries (kin-openapi, libopenapi) would add several modules to every
// Caddy build for a command run once, and decode into maps that lose the
// document's order of paths, operations and properties, which the skills
// file keeps. External $refs (to other files or URLs) are not followed:
// bundle the document first.
package openapi

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/caddy-a2a/caddy-a2a/mapping"
)

// Options says what to generate.
type Options struct {
	// Operations picks the operations, each by its operationId or as
	// "METHOD /path" (e.g. "GET /users/{id}"); empty picks every one.
	Operations []string
	// UpstreamURL is the API's base URL; empty takes the document's first
	// server.
	UpstreamURL string
}

// Result is a generated skills file.
type Result struct {
	// YAML is the skills file.
	YAML []byte
	// Skills are the skills' ids, in order.
	Skills []string
	// Env names the environment variables the file reads when it loads
	// (the credentials of the security schemes).
	Env []string
	// Notes say what could not be carried over; each names its operation.
	// The file carries them as comments too.
	Notes []string
	// LeftOut are the operations picked that the file does not hold, each
	// with why; Notes say them too. The file holds every other one.
	LeftOut []LeftOut
}

// LeftOut is an operation the generated file leaves out.
type LeftOut struct {
	Operation string // its operationId, or "METHOD /path"
	Reason    string // one line, bounded: the first error, and how many more
}

// methods are the operations of a path item that the skills file can call,
// in the order the OpenAPI specification lists them.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch"}

// Generate writes the skills file for the operations opts picks from the
// OpenAPI document src; filename names it in errors and in the file's
// header. An operation that cannot be made a skill that loads is left out
// (Result.LeftOut says why) rather than failing the file; Generate fails
// only when the document cannot be read or no operation is left.
func Generate(filename string, src []byte, opts Options) (*Result, error) {
	g, err := build(filename, src, opts)
	if err != nil {
		return nil, err
	}
	out, err := g.write(filename)
	if err != nil {
		return nil, fmt.Errorf("openapi: %s: %w", filename, err)
	}
	r := &Result{YAML: out, Env: g.envNames(), LeftOut: g.leftOut}
	if note := g.upstreamNotes(); note != "" {
		r.Notes = append(r.Notes, note)
	}
	for _, sk := range g.skills {
		r.Skills = append(r.Skills, sk.id)
		for _, n := range sk.notes {
			r.Notes = append(r.Notes, sk.id+": "+n)
		}
	}
	r.Notes = append(r.Notes, g.securityNotes...)
	r.Notes = append(r.Notes, g.notes...)
	return r, nil
}

// build reads the document and makes a skill of each operation picked
// that it can, leaving the others out.
func build(filename string, src []byte, opts Options) (*generator, error) {
	d, err := parse(filename, src)
	if err != nil {
		return nil, err
	}
	ops, err := d.operations()
	if err != nil {
		return nil, err
	}
	if ops, err = pick(ops, opts.Operations); err != nil {
		return nil, fmt.Errorf("openapi: %s: %w", filename, err)
	}
	g := &generator{doc: d, usedIDs: map[string]bool{}}
	if len(opts.Operations) == 0 {
		for _, op := range d.skipped {
			g.notes = append(g.notes, op+" is not carried over: a skill cannot send TRACE")
		}
	}
	if err := g.upstream(opts.UpstreamURL); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	g.security(ops)
	for _, op := range ops {
		sk, err := g.skill(op)
		if err != nil {
			g.leaveOut(op, err.Error(), 0)
			continue
		}
		g.skills = append(g.skills, sk)
	}
	return g, nil
}

// write emits the file and checks that it loads, leaving out the skills
// the loader refuses (each with its first mistake) until it does.
func (g *generator) write(filename string) ([]byte, error) {
	for {
		if len(g.skills) == 0 {
			first := g.leftOut[0]
			return nil, fmt.Errorf("no operation could be made a skill: %s: %s%s", first.Operation, first.Reason, more(len(g.leftOut)-1, "operation"))
		}
		// The credentials are those of the skills kept: a left-out
		// operation's scheme and scopes would be sent for nothing, or keep
		// another's header out.
		kept := make([]*operation, len(g.skills))
		for i, sk := range g.skills {
			kept[i] = sk.op
		}
		g.security(kept)
		out, err := g.emit(filename)
		if err != nil {
			return nil, fmt.Errorf("writing the skills file: %w", err)
		}
		loaded, err := mapping.Parse("generated.yaml", out, mapping.Options{
			LookupEnv: func(string) (string, bool) { return "value", true },
		})
		if err == nil {
			loaded.Close()
			return out, nil
		}
		bySkill := map[string][]*mapping.ConfigError{}
		for _, e := range unjoin(err) {
			if ce, ok := errors.AsType[*mapping.ConfigError](e); ok && ce.Skill != "" {
				bySkill[ce.Skill] = append(bySkill[ce.Skill], ce)
				continue
			}
			return nil, notLoading(e)
		}
		changed := false
		g.skills = slices.DeleteFunc(g.skills, func(sk *skill) bool {
			errs := bySkill[sk.id]
			if len(errs) == 0 {
				return false
			}
			changed = true
			if sk.mend(errs) {
				return false
			}
			g.leaveOut(sk.op, withoutLines(errs[0]), len(errs)-1)
			return true
		})
		if !changed {
			return nil, notLoading(unjoin(err)[0])
		}
	}
}

// mend changes the skill so that the loader's errs about its arguments
// go, and reports whether it could: a schema past the published bound
// leaves out a little more of its arguments (trimLevel), and an argument
// whose rules contradict themselves (a default or an enum value they
// refuse, a minimum above the maximum) is kept without its rules and
// default.
func (sk *skill) mend(errs []*mapping.ConfigError) bool {
	var broken []*argument
	tooBig := false
	for _, e := range errs {
		name, _, _ := strings.Cut(strings.TrimPrefix(e.Key, "arguments."), ".")
		switch a := sk.arg(name); {
		case e.Key == "arguments" && strings.Contains(e.Msg, "JSON Schema") && sk.trim < trimLevels-1:
			tooBig = true
		case slices.Contains(broken, a):
		case strings.HasPrefix(e.Key, "arguments.") && a != nil && (!reflect.ValueOf(a.rules).IsZero() || a.hasDef):
			sk.note("the rules of the argument %s do not load (%s): they are left out", name, withoutLines(e))
			broken = append(broken, a)
		default:
			return false
		}
	}
	for _, a := range broken {
		a.rules, a.def, a.hasDef = rules{}, nil, false
	}
	if tooBig {
		sk.trim++
		// One kind of note a level: each says what more is left out.
		sk.note("the arguments' JSON Schema is more than the %d bytes a skill may publish: "+trimNotes[sk.trim], mapping.MaxArgumentSchemaBytes)
	}
	return true
}

// notLoading is a load error that is not a skill's: the generator's own.
// The loader's lines are of a file never written, so they are not said.
func notLoading(err error) error {
	return fmt.Errorf("the generated skills file does not load (please report this): %s", bounded(withoutLines(err)))
}

// maxReason bounds the text of an error, and of a left-out operation's
// reason.
const maxReason = 300

// bounded is s on one line, cut at maxReason characters.
func bounded(s string) string {
	s = oneLine(s)
	if r := []rune(s); len(r) > maxReason {
		s = string(r[:maxReason]) + "…"
	}
	return s
}

// leaveOut records that op is left out, for reason and extra more
// mistakes.
func (g *generator) leaveOut(op *operation, reason string, extra int) {
	reason = bounded(reason) + more(extra, "mistake")
	g.leftOut = append(g.leftOut, LeftOut{Operation: op.String(), Reason: reason})
	g.notes = append(g.notes, fmt.Sprintf("%s (%s %s) is left out: %s", op, strings.ToUpper(op.method), op.path, reason))
}

// more says how many more of what there are: " (and 3 more mistakes)".
func more(n int, what string) string {
	switch n {
	case 0:
		return ""
	case 1:
		return " (and 1 more " + what + ")"
	}
	return fmt.Sprintf(" (and %d more %ss)", n, what)
}

// unjoin is the errors errors.Join joined, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

var firstAtLine = regexp.MustCompile(`\s*\(first at line \d+\)`)

// withoutLines is a load error without the places in the generated file,
// which is not the file written: its key and message.
func withoutLines(err error) string {
	ce, ok := errors.AsType[*mapping.ConfigError](err)
	if !ok {
		return err.Error()
	}
	msg := firstAtLine.ReplaceAllString(ce.Msg, "")
	if ce.Key != "" {
		msg = ce.Key + ": " + msg
	}
	return msg
}

// Operation is an operation of a document, for choosing among them.
type Operation struct {
	// ID is the operationId; "" when the document gives none.
	ID      string
	Method  string // upper case
	Path    string
	Summary string
}

// Operations lists the operations of the OpenAPI document src, in its
// order; filename names it in errors.
func Operations(filename string, src []byte) ([]Operation, error) {
	d, err := parse(filename, src)
	if err != nil {
		return nil, err
	}
	ops, err := d.operations()
	if err != nil {
		return nil, err
	}
	out := make([]Operation, len(ops))
	for i, op := range ops {
		out[i] = Operation{ID: op.id, Method: strings.ToUpper(op.method), Path: op.path,
			Summary: oneLine(scalar(get(op.node, "summary")))}
	}
	return out, nil
}

// document is a parsed OpenAPI document.
type document struct {
	file string
	root *yaml.Node
	// skipped are the operations a skill cannot call (TRACE).
	skipped []string
	// converted are the notes of a Swagger 2.0 operation's rewriting, by
	// the operation it is rewritten as.
	converted map[*yaml.Node][]string
	// goPatterns says of each pattern checked whether Go (RE2) compiles
	// it: a large API repeats a few patterns in many operations.
	goPatterns map[string]bool
}

// isGoPattern reports whether Go (RE2) compiles pattern.
func (d *document) isGoPattern(pattern string) bool {
	ok, seen := d.goPatterns[pattern]
	if !seen {
		_, err := regexp.Compile(pattern)
		ok = err == nil
		if d.goPatterns == nil {
			d.goPatterns = map[string]bool{}
		}
		d.goPatterns[pattern] = ok
	}
	return ok
}

func parse(filename string, src []byte) (*document, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(src, &n); err != nil {
		return nil, fmt.Errorf("openapi: %s: %w", filename, err)
	}
	if n.Kind != yaml.DocumentNode || len(n.Content) == 0 || resolveAlias(n.Content[0]).Kind != yaml.MappingNode {
		return nil, fmt.Errorf("openapi: %s: not an OpenAPI document (a mapping)", filename)
	}
	d := &document{file: filename, root: resolveAlias(n.Content[0]), converted: map[*yaml.Node][]string{}}
	if swagger := get(d.root, "swagger"); swagger != nil {
		if swagger.Value != "2.0" {
			return nil, fmt.Errorf("openapi: %s: want a Swagger 2.0 document (swagger: \"2.0\"), not %q", filename, swagger.Value)
		}
		d.root = d.swagger2()
	}
	if version := scalar(get(d.root, "openapi")); !strings.HasPrefix(version, "3.") {
		return nil, fmt.Errorf("openapi: %s: want an OpenAPI 3 document (openapi: 3.x) or Swagger 2.0, not %q", filename, version)
	}
	return d, nil
}

// operation is one operation of the document.
type operation struct {
	method, path string
	id           string // the operationId, or ""
	node         *yaml.Node
	pathItem     *yaml.Node
}

func (op *operation) String() string {
	if op.id != "" {
		return op.id
	}
	return strings.ToUpper(op.method) + " " + op.path
}

// operations lists the document's operations in its order.
func (d *document) operations() ([]*operation, error) {
	paths := get(d.root, "paths")
	if paths == nil || paths.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("openapi: %s: the document has no paths", d.file)
	}
	var ops []*operation
	for i := 0; i+1 < len(paths.Content); i += 2 {
		path := paths.Content[i].Value
		item, err := d.deref(paths.Content[i+1])
		if err != nil {
			return nil, fmt.Errorf("openapi: %s: paths.%s: %w", d.file, path, err)
		}
		if item.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(item.Content); j += 2 {
			method := item.Content[j].Value
			if method == "trace" {
				d.skipped = append(d.skipped, "TRACE "+path)
			}
			if !slices.Contains(methods, method) {
				continue
			}
			node := resolveAlias(item.Content[j+1])
			ops = append(ops, &operation{method: method, path: path, id: scalar(get(node, "operationId")), node: node, pathItem: item})
		}
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("openapi: %s: the document has no operations", d.file)
	}
	return ops, nil
}

// maxListed bounds the operations an error lists.
const maxListed = 10

// pick keeps the operations named, in the document's order.
func pick(ops []*operation, names []string) ([]*operation, error) {
	if len(names) == 0 {
		return ops, nil
	}
	chosen := make([]bool, len(ops))
	var unknown []string
	for _, name := range names {
		name = strings.TrimSpace(name)
		found := false
		for i, op := range ops {
			if op.id != "" && op.id == name || matchesMethodPath(op, name) {
				chosen[i], found = true, true
			}
		}
		if !found && name != "" {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		var known []string
		for _, op := range ops[:min(len(ops), maxListed)] {
			known = append(known, op.String())
		}
		return nil, fmt.Errorf("no operation %s; the operations are: %s%s", strings.Join(quoteAll(unknown), ", "), strings.Join(known, ", "),
			more(len(ops)-len(known), "operation"))
	}
	var out []*operation
	for i, op := range ops {
		if chosen[i] {
			out = append(out, op)
		}
	}
	return out, nil
}

func matchesMethodPath(op *operation, name string) bool {
	method, path, ok := strings.Cut(name, " ")
	return ok && strings.EqualFold(method, op.method) && strings.TrimSpace(path) == op.path
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// get returns the value of key in mapping n, or nil.
func get(n *yaml.Node, key string) *yaml.Node {
	n = resolveAlias(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return resolveAlias(n.Content[i+1])
		}
	}
	return nil
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// scalar is a scalar node's value, or "".
func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// maxRefs bounds a chain of $refs, so a loop ends.
const maxRefs = 32

var errExternalRef = errors.New("only $refs within the document (#/...) are followed: bundle the document first")

// deref follows n's $ref, if any, within the document.
func (d *document) deref(n *yaml.Node) (*yaml.Node, error) {
	n = resolveAlias(n)
	for hops := 0; ; hops++ {
		ref := get(n, "$ref")
		if ref == nil {
			return n, nil
		}
		if hops == maxRefs {
			return nil, fmt.Errorf("$ref %q: too many $refs in a row (a loop?)", ref.Value)
		}
		target, err := d.pointer(ref.Value)
		if err != nil {
			return nil, fmt.Errorf("$ref %q: %w", ref.Value, err)
		}
		n = target
	}
}

// pointer resolves a local JSON pointer reference ("#/components/...").
func (d *document) pointer(ref string) (*yaml.Node, error) {
	if !strings.HasPrefix(ref, "#") {
		return nil, errExternalRef
	}
	n := d.root
	rest := strings.TrimPrefix(ref, "#")
	if rest == "" {
		return n, nil
	}
	if !strings.HasPrefix(rest, "/") {
		return nil, errors.New("not a JSON pointer")
	}
	for _, tok := range strings.Split(rest[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(unescapePercent(tok), "~1", "/"), "~0", "~")
		switch n.Kind {
		case yaml.MappingNode:
			n = get(n, tok)
		case yaml.SequenceNode:
			var i int
			if _, err := fmt.Sscan(tok, &i); err != nil || i < 0 || i >= len(n.Content) {
				return nil, fmt.Errorf("no item %q", tok)
			}
			n = resolveAlias(n.Content[i])
		default:
			n = nil
		}
		if n == nil {
			return nil, fmt.Errorf("nothing at %q", tok)
		}
	}
	return n, nil
}

// unescapePercent decodes %XX escapes of a URI fragment, leaving invalid
// ones as they are.
func unescapePercent(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+3], "%02x", &c); err == nil {
				b.WriteByte(c)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
