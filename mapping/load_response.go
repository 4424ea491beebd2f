package mapping

// Loading response rules: when, state, message, artifacts and ask.

import (
	"fmt"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"gopkg.in/yaml.v3"
)

var states = map[string]a2a.TaskState{
	"completed": a2a.TaskStateCompleted, "failed": a2a.TaskStateFailed, "rejected": a2a.TaskStateRejected,
	"input-required": a2a.TaskStateInputRequired, "auth-required": a2a.TaskStateAuthRequired,
}

func (l *loader) rules(n *yaml.Node, rkey string) []rule {
	if n.Kind != yaml.SequenceNode {
		l.errorf(n, rkey, "must be a list of rules, not %s", describe(n))
		return nil
	}
	var out []rule
	catchAll := 0 // the number of the first rule without when
	for i, rn := range n.Content {
		rn = resolve(rn)
		key := fmt.Sprintf("%s[%d]", rkey, i)
		if catchAll > 0 {
			l.errorf(rn, key, "never applies: rule %d before it has no when, so it matches every response", catchAll)
		}
		r := rule{}
		hasState, hasWhen := false, false
		var askNode *yaml.Node
		l.fields(rn, key, []string{"when", "state", "message", "artifacts", "ask"}, func(name string, v *yaml.Node) {
			switch name {
			case "when":
				hasWhen = true
				r.when = l.expression(v, key+".when", phaseResponse, true)
			case "state":
				hasState = true
				if s, ok := l.scalar(v, key+".state"); ok {
					st, known := states[s]
					if !known {
						l.errorf(v, key+".state", "must be completed, failed, rejected, input-required or auth-required, not %q", s)
					}
					r.state = st
				}
			case "message":
				r.message = l.template(v, key+".message", tplOpts{phase: phaseResponse})
			case "artifacts":
				r.artifacts = l.artifacts(v, key+".artifacts")
			case "ask":
				askNode = v
				r.ask = l.expression(v, key+".ask", phaseResponse, false)
			}
		})
		if rn.Kind != yaml.MappingNode {
			continue
		}
		if askNode != nil && hasState && r.state != a2a.TaskStateInputRequired {
			l.errorf(askNode, key+".ask", "is only for rules whose state is input-required")
		}
		if !hasState {
			l.errorf(rn, key+".state", "is required")
		}
		if !hasWhen && catchAll == 0 {
			catchAll = i + 1
		}
		out = append(out, r)
	}
	return out
}

func (l *loader) artifacts(n *yaml.Node, key string) []artifactRule {
	if n.Kind != yaml.SequenceNode {
		l.errorf(n, key, "must be a list of artifacts, not %s", describe(n))
		return nil
	}
	var out []artifactRule
	for i, an := range n.Content {
		an = resolve(an)
		akey := fmt.Sprintf("%s[%d]", key, i)
		var a artifactRule
		contents := 0
		l.fields(an, akey, []string{"name", "description", "data", "text", "file"}, func(name string, v *yaml.Node) {
			switch name {
			case "name":
				a.name, _ = l.scalar(v, akey+".name")
			case "description":
				a.description, _ = l.scalar(v, akey+".description")
			case "data":
				contents++
				a.data = l.expression(v, akey+".data", phaseResponse, false)
			case "text":
				contents++
				a.text = l.template(v, akey+".text", tplOpts{phase: phaseResponse})
			case "file":
				contents++
				a.file = l.fileRule(v, akey+".file")
			}
		})
		if an.Kind == yaml.MappingNode && contents != 1 {
			l.errorf(an, akey, "needs exactly one of data (an expression), text (a template) and file (a mapping)")
		}
		out = append(out, a)
	}
	return out
}

// fileRule reads an artifact's file: its bytes (an expression; the body by
// default) or a URL, its media type and its file name.
func (l *loader) fileRule(n *yaml.Node, key string) *fileRule {
	f := &fileRule{}
	l.fields(n, key, []string{"bytes", "url", "media_type", "filename"}, func(name string, v *yaml.Node) {
		switch name {
		case "bytes":
			f.bytes = l.expression(v, key+".bytes", phaseResponse, false)
		case "url":
			f.url = l.template(v, key+".url", tplOpts{phase: phaseResponse})
		case "media_type":
			f.mediaType = l.template(v, key+".media_type", tplOpts{phase: phaseResponse})
		case "filename":
			f.filename = l.template(v, key+".filename", tplOpts{phase: phaseResponse})
		}
	})
	if f.bytes != nil && f.url != nil {
		l.errorf(n, key, "takes bytes or url, not both")
	}
	// The defaults come from the answer itself.
	l.c.needs |= useBytes | useHeaders
	return f
}
