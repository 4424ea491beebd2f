package dryrun_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/tools/dryrun"
)

// A body built with fromPairs (a map with any keys) is sent like a map
// literal, as JSON or as a form; optional values left out stay out.
func TestBodyFromPairs(t *testing.T) {
	skills := `upstream: {url: "http://api.test"}
skills:
  - id: json
    description: JSON.
    arguments: {a: string, b: string}
    request:
      method: POST
      path: /j
      body: 'fromPairs(filter([["a", args.a], ["b", args.b], ["n", fromPairs([["x", 1]])]], {#[1] != nil}))'
  - id: form
    description: A form.
    request:
      method: POST
      path: /f
      body_format: form
      body: 'fromPairs([["k", "v w"]])'
  - id: bad
    description: A key that is not a string.
    request:
      method: POST
      path: /b
      body: 'fromPairs([[1, "v"]])'
`
	path := filepath.Join(t.TempDir(), "skills.yaml")
	if err := os.WriteFile(path, []byte(skills), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ skill, want string }{
		{"json", `{"a":"1","n":{"x":1}}`},
		{"form", "k=v+w"},
		{"bad", "the body's map has a key that is not a string: 1"},
	}
	for _, tt := range tests {
		t.Run(tt.skill, func(t *testing.T) {
			sample, err := dryrun.ParseSampleMessage([]byte(`{"role": "ROLE_USER", "messageId": "m",
				"parts": [{"data": {"a": "1"}}], "metadata": {"skill": "`+tt.skill+`"}}`), "")
			if err != nil {
				t.Fatal(err)
			}
			rep, err := dryrun.Run(context.Background(), path, mapping.Options{}, dryrun.Input{Sample: sample})
			if err != nil {
				t.Fatal(err)
			}
			if out := rep.String(); !strings.Contains(out, tt.want) {
				t.Errorf("the report lacks %q:\n%s", tt.want, out)
			}
		})
	}
}
