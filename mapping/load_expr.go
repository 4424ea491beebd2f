package mapping

// Loading expressions and templates from YAML scalars, and resolving
// {env.NAME} placeholders once, at load.

import (
	"errors"
	"strings"

	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
	"gopkg.in/yaml.v3"
)

// exprLine is the file line of line ln (1-based) of a scalar's text.
func exprLine(n *yaml.Node, ln int) int {
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return n.Line + ln // a block scalar's text starts below its indicator
	}
	return n.Line + ln - 1
}

// exprError reports an expression that does not compile, at its line.
func (l *loader) exprError(n *yaml.Node, key string, lineInText int, err error) {
	ln := lineInText
	var fe *file.Error
	if errors.As(err, &fe) && fe.Line > 0 {
		ln += fe.Line - 1
	}
	l.errorAt(exprLine(n, ln), key, err.Error())
}

// expression compiles a scalar holding one expression.
func (l *loader) expression(n *yaml.Node, key string, ph phase, asBool bool) *vm.Program {
	src, ok := l.scalar(n, key)
	if !ok {
		return nil
	}
	prog, err := l.c.compile(src, ph, asBool)
	if err != nil {
		l.exprError(n, key, 1, err)
		return nil
	}
	return prog
}

// tplOpts says what a template may hold.
type tplOpts struct {
	env    bool // {env.NAME} placeholders
	phase  phase
	header bool // literal text must be a valid header value
}

// template compiles a scalar holding a template.
func (l *loader) template(n *yaml.Node, key string, o tplOpts) *template {
	src, ok := l.scalar(n, key)
	if !ok {
		return nil
	}
	pieces, off, err := splitTemplate(src)
	if err != nil {
		l.errorAt(exprLine(n, 1+strings.Count(src[:off], "\n")), key, err.Error())
		return nil
	}
	t := &template{}
	bad := false
	for _, p := range pieces {
		if !p.hole {
			t.addLiteral(p.text)
			continue
		}
		holeLine := 1 + strings.Count(src[:p.offset], "\n")
		if name, optional, isEnv := envRef(p.text); isEnv {
			val, ok := l.envValue(n, key, name, optional, o)
			switch {
			case !ok:
				bad = true
			case val == nil:
				t.null = true
			default:
				t.addLiteral(*val)
			}
			continue
		}
		prog, err := l.c.compile(p.text, o.phase, false)
		if err != nil {
			l.exprError(n, key, holeLine, err)
			bad = true
			continue
		}
		t.parts = append(t.parts, tplPart{prog: prog, src: strings.TrimSpace(p.text)})
	}
	if o.header {
		for _, p := range t.parts {
			if p.prog == nil && !validHeaderValue(p.lit) {
				l.errorf(n, key, "holds a line break or a control character")
				bad = true
				break
			}
		}
	}
	if bad {
		return nil
	}
	return t
}

func (t *template) addLiteral(s string) {
	if k := len(t.parts); k > 0 && t.parts[k-1].prog == nil {
		t.parts[k-1].lit += s
		return
	}
	t.parts = append(t.parts, tplPart{lit: s})
}

// envValue resolves a placeholder once, at load: nil for an unset optional
// variable. Messages never show a variable's value.
func (l *loader) envValue(n *yaml.Node, key, name string, optional bool, o tplOpts) (*string, bool) {
	if !o.env {
		l.errorf(n, key, "{env.%s}: environment placeholders are allowed only in upstream.url and in header and query values", name)
		return nil, false
	}
	val, set := l.opts.lookupEnv(name)
	if !set || val == "" {
		if optional {
			return nil, true
		}
		l.errorf(n, key, "environment variable %s is not set (write {env.%s?} if the value may be left out)", name, name)
		return nil, false
	}
	if o.header && !validHeaderValue(val) {
		l.errorf(n, key, "environment variable %s holds a line break or a control character", name)
		return nil, false
	}
	return &val, true
}
