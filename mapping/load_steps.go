package mapping

// Loading steps: several upstream calls, each able to read the answers of
// the steps before it as steps.<name>.

import (
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"
)

func stepNames(steps []step) []string {
	var names []string
	for i := range steps {
		if steps[i].name != "" {
			names = append(names, steps[i].name)
		}
	}
	return names
}

// steps reads a skill's steps section.
func (l *loader) steps(n *yaml.Node, up upstreamConfig) []step {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		l.errorf(n, "steps", "must be a list of at least one step, not %s", describe(n))
		return nil
	}
	defer func() { l.c.steps = nil }()
	out := make([]step, 0, len(n.Content))
	var names []string
	for i, sn := range n.Content {
		sn = resolve(sn)
		key := fmt.Sprintf("steps[%d]", i)
		var st step
		var reqNode, respNode *yaml.Node
		l.fields(sn, key, []string{"name", "request", "response"}, func(name string, v *yaml.Node) {
			switch name {
			case "name":
				if s, ok := l.scalar(v, key+".name"); ok {
					switch {
					case !argName.MatchString(s):
						l.errorf(v, key+".name", "%q is not a valid step name: use letters, digits and '_', not starting with a digit", s)
					case slices.Contains(names, s):
						l.errorf(v, key+".name", "repeated step name %q", s)
					default:
						st.name = s
					}
				}
			case "request":
				reqNode = v
			case "response":
				respNode = v
			}
		})
		if sn.Kind != yaml.MappingNode {
			continue
		}
		if st.name == "" && !slices.ContainsFunc(sn.Content, func(k *yaml.Node) bool { return k.Value == "name" }) {
			l.errorf(sn, key+".name", "is required: later steps read this step's answer as steps.<name>")
		}
		l.c.steps = names
		if reqNode == nil {
			l.errorf(sn, key+".request", "is required")
		} else {
			st.request = l.request(reqNode, key+".request", up)
		}
		if st.name != "" {
			names = append(names, st.name)
		}
		if respNode != nil {
			if i == len(n.Content)-1 {
				l.errorf(respNode, key+".response", "the last step's answer is mapped by the skill's response rules")
			} else {
				l.c.steps = names
				st.rules = l.rules(respNode, key+".response")
			}
		}
		out = append(out, st)
	}
	return out
}
