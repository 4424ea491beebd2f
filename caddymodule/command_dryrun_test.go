package caddymodule

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
)

func TestDryRunCommand(t *testing.T) {
	if _, ok := caddycmd.Commands()[dryRunCommand]; !ok {
		t.Fatalf("%s is not registered", dryRunCommand)
	}
	t.Setenv("DEMO_API_KEY", "demo-secret")
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	skills := filepath.Join("..", "examples", "skills.yaml")
	msg := write("msg.json", `{"kind": "message", "role": "user", "messageId": "m1",
		"parts": [{"kind": "text", "text": "What's the weather in Tokyo?"}]}`)
	resp := write("resp.yaml", "status: 200\nbody: {city: Tokyo, temperatureC: 22.3, conditions: cloudy}\n")

	tests := []struct {
		name   string
		args   dryRunArgs
		stdin  string
		status int
		want   []string // in the output, or in the error
	}{
		{name: "sample response", args: dryRunArgs{skills: skills, message: msg, responses: []string{resp}},
			want: []string{"Skill: weather", "its match predicate holds", "city = \"Tokyo\"",
				"GET http://127.0.0.1:9090/weather/Tokyo", "X-Api-Key: ***", "Outcome: completed",
				"Tokyo: 22.3 °C, cloudy.", `"state": "completed"`}},
		{name: "standard input, another upstream", stdin: `{"role": "ROLE_USER", "messageId": "m2",
			"parts": [{"data": {"id": 2}}], "metadata": {"skill": "user"}}`,
			args: dryRunArgs{skills: skills, message: "-", upstream: "http://users.internal:8080/api"},
			want: []string{"names it in metadata.skill", "id = 2", "GET http://users.internal:8080/api/users/2",
				"the dry run stops here"}},
		{name: "no skills", args: dryRunArgs{message: msg}, status: 2, want: []string{"--skills is required"}},
		{name: "no message", args: dryRunArgs{skills: skills}, status: 2, want: []string{"--message is required"}},
		{name: "live and responses", args: dryRunArgs{skills: skills, message: msg, live: true, responses: []string{resp}},
			status: 2, want: []string{"exclude each other"}},
		{name: "bad message", args: dryRunArgs{skills: skills, message: write("bad.json", `{"role": "user"}`)},
			status: 1, want: []string{"params.message"}},
		{name: "bad response", args: dryRunArgs{skills: skills, message: msg, responses: []string{write("bad.yaml", "stat: 1")}},
			status: 1, want: []string{`unknown key "stat"`}},
		{name: "bad skills", args: dryRunArgs{skills: write("skills.yaml", "skills: []"), message: msg},
			status: 1, want: []string{"skills.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			status, err := runDryRun(context.Background(), strings.NewReader(tt.stdin), &out, tt.args)
			got := out.String()
			if err != nil {
				got += err.Error()
			}
			if status != tt.status {
				t.Fatalf("status %d, want %d; output:\n%s", status, tt.status, got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("the output lacks %q:\n%s", w, got)
				}
			}
			if strings.Contains(got, "demo-secret") {
				t.Errorf("the output shows the API key:\n%s", got)
			}
		})
	}
}
