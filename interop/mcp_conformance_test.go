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
	"testing"
	"time"
)

// TestMCPConformance runs the suite's active server scenarios and fails on
// any failure (or warning) not in mcpconformance/expected-failures.yaml, and
// on any scenario listed there that passes.
func TestMCPConformance(t *testing.T) {
	node, dir := nodePackage(t, "mcpconformance", "@modelcontextprotocol/conformance")
	if agent.Dir == "" {
		t.Skip("INTEROP_AGENT_URL is set: no caddy binary was built to start the conformance agent")
	}
	cli := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	base := startConformanceAgent(t)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, cli, "server", "--url", base+"/mcp",
		"--expected-failures", filepath.Join(dir, "expected-failures.yaml"), "--output-dir", t.TempDir())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("conformance server --url %s/mcp: %v\n%s", base, err, out)
	}
	t.Logf("conformance server:\n%s", out)
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
