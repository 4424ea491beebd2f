package dryrun

import "strings"

// String is the report as Write renders it.
func (r *Report) String() string {
	var b strings.Builder
	_ = r.Write(&b)
	return b.String()
}
