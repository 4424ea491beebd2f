package mapping

// What operator tools (the dry run) show about a choice or a run, computed
// by the code the server runs: the match predicates tried, the arguments
// gathered, the headers that carry credentials.

import (
	"slices"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// PredicateResult is one match predicate tried on a message.
type PredicateResult struct {
	Skill  string
	Source string // the predicate as written
	Holds  bool
	Err    error // it failed at run time (and so does not hold)
}

// TryPredicates runs every match predicate on msg, in file order, and says
// which hold; Select chooses the first that does.
func (s *Skills) TryPredicates(msg *a2a.Message) []PredicateResult {
	if len(s.matching) == 0 {
		return nil
	}
	m := s.getVM()
	defer s.vms.Put(m)
	vars := &exprVars{}
	bindMessage(vars, msg, s.matchNeeds)
	out := make([]PredicateResult, len(s.matching))
	for i, sk := range s.matching {
		vars.Config = sk.config
		v, err := m.Run(sk.match, vars)
		out[i] = PredicateResult{Skill: sk.ID, Source: sk.MatchSource(), Holds: err == nil && v == true, Err: err}
	}
	return out
}

// MatchSource is the skill's match predicate as written; "" when it has
// none.
func (sk *Skill) MatchSource() string {
	if sk.match == nil {
		return ""
	}
	return strings.TrimSpace(sk.match.Source().String())
}

// ArgumentProblem is an argument a call cannot go on without.
type ArgumentProblem struct {
	Name string
	// Why is "" for a missing argument, else what is wrong with its value.
	Why string
}

// GatherArguments gathers the arguments as Run does for call: the values
// it would read, and the arguments missing or unusable, in declared order
// (then Run asks for them and calls nothing).
func (sk *Skill) GatherArguments(call Call) (map[string]any, []ArgumentProblem) {
	vars := &exprVars{}
	sk.bindRequest(vars, &call)
	values, problems := sk.gatherArgs(&call, vars)
	var out []ArgumentProblem
	for _, p := range problems {
		out = append(out, ArgumentProblem{Name: p.arg.name, Why: p.why})
	}
	return values, out
}

// DeclaredArguments names the skill's declared arguments in file order;
// nil when it declares none (then its arguments are the data parts').
func (sk *Skill) DeclaredArguments() []string {
	if sk.schema == nil || !sk.schema.declared {
		return nil
	}
	names := make([]string, len(sk.schema.args))
	for i := range sk.schema.args {
		names[i] = sk.schema.args[i].name
	}
	return names
}

// CredentialHeaders names the headers whose values a tool must not show:
// the skill's credentials (upstream.headers and the skill's headers that
// replace them), and those that carry a caller's identity.
func (sk *Skill) CredentialHeaders() []string {
	names := []string{"Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie"}
	for i := range sk.steps {
		for _, h := range sk.steps[i].request.credentials {
			if !slices.Contains(names, h) {
				names = append(names, h)
			}
		}
	}
	return names
}
