package caddymodule

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	"github.com/caddy-a2a/caddy-a2a/mapping"
)

func TestOpenAPICommand(t *testing.T) {
	if _, ok := caddycmd.Commands()[openAPICommand]; !ok {
		t.Fatalf("%s is not registered", openAPICommand)
	}
	spec := filepath.Join("..", "examples", "demoapi", "openapi.yaml")
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.yaml")
	if err := os.WriteFile(existing, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		args         openAPIArgs
		stdin        string
		status       int
		stdout       []string
		stderr       []string
		outputLoads  string // a file the command wrote, which must load
		unchanged    string // a file the command must not have touched
		errorMention string
	}{
		{name: "picked operations", args: openAPIArgs{spec: spec, operations: "getWeather, POST /orders"},
			stdout: []string{"- id: getWeather", "- id: placeOrder", "X-Api-Key: '{env.DEMO_API_KEY}'"},
			stderr: []string{"DEMO_API_KEY"}},
		{name: "list", args: openAPIArgs{spec: spec, list: true},
			stdout: []string{"getWeather", "GET /weather/{city}", "Current weather", "placeOrder", "POST /orders"}},
		{name: "standard input, another upstream", stdin: "openapi: 3.0.0\npaths: {'/a/{b}': {get: {parameters: [{name: b, in: path, required: true, schema: {type: integer}}]}}}",
			args:   openAPIArgs{spec: "-", upstream: "http://api.internal:8080/x"},
			stdout: []string{"url: http://api.internal:8080/x", "path: /a/{args.b}", "from standard input"}},
		{name: "to a file", args: openAPIArgs{spec: spec, output: filepath.Join(dir, "skills.yaml")},
			outputLoads: filepath.Join(dir, "skills.yaml")},
		{name: "an existing file", args: openAPIArgs{spec: spec, output: existing}, status: 1,
			unchanged: existing, errorMention: "exists"},
		{name: "operations left out", args: openAPIArgs{spec: filepath.Join("..", "tools", "openapi", "testdata", "left-out.yaml"),
			output: filepath.Join(dir, "some.yaml")}, status: 3,
			stderr:       []string{"note: badRef (GET /bad) is left out: parameters: $ref", "note: sameHeaderThrice (GET /headers) is left out"},
			outputLoads:  filepath.Join(dir, "some.yaml"),
			errorMention: "2 of 3 operations are left out (the notes say why): the file holds the other 1; --operations picks"},
		{name: "no spec", args: openAPIArgs{}, status: 2, errorMention: "--spec is required"},
		{name: "unknown operation", args: openAPIArgs{spec: spec, operations: "nope"}, status: 1,
			errorMention: `no operation "nope"`},
		{name: "missing spec", args: openAPIArgs{spec: filepath.Join(dir, "nope.yaml")}, status: 1, errorMention: "nope.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			status, err := runOpenAPI(strings.NewReader(tt.stdin), &stdout, &stderr, tt.args)
			if status != tt.status {
				t.Fatalf("status %d (%v), want %d", status, err, tt.status)
			}
			if tt.errorMention != "" && (err == nil || !strings.Contains(err.Error(), tt.errorMention)) {
				t.Errorf("err = %v, want one that mentions %q", err, tt.errorMention)
			}
			for _, w := range tt.stdout {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("standard output lacks %q:\n%s", w, stdout.String())
				}
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("standard error lacks %q:\n%s", w, stderr.String())
				}
			}
			if tt.outputLoads != "" {
				t.Setenv("DEMO_API_KEY", "k")
				skills, err := mapping.Load(tt.outputLoads, mapping.Options{})
				if err != nil {
					t.Fatalf("the written file does not load: %v", err)
				}
				skills.Close()
			}
			if tt.unchanged != "" {
				if b, _ := os.ReadFile(tt.unchanged); string(b) != "keep" {
					t.Errorf("%s was changed to %q", tt.unchanged, b)
				}
			}
		})
	}
}
