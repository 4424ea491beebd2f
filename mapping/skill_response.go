package mapping

// A skill's response section as loading compiles it (load_response.go)
// and running reads it (response.go).

import (
	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/expr-lang/expr/vm"
)

// rule is one case of a skill's response section.
type rule struct {
	when      *vm.Program // nil: always
	state     a2a.TaskState
	message   *template // nil: none
	artifacts []artifactRule
	// ask names the arguments an input-required rule asks for: a list of
	// names, a map of name to problem, or one name.
	ask *vm.Program
}

// artifactRule makes one artifact from data (any JSON value) or text.
type artifactRule struct {
	name, description string
	data              *vm.Program
	text              *template
	file              *fileRule
}

// fileRule makes a file part.
type fileRule struct {
	bytes               *vm.Program // nil (and no url): the answer's body
	url                 *template
	mediaType, filename *template // nil: from the answer's headers
}
