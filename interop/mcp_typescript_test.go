package interop_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestMCPTypeScriptSDK runs the @modelcontextprotocol/sdk suite in
// js/mcp.test.js (node --test) against the interop agent's MCP endpoint and
// against a second agent that requires a bearer token (from an
// authorization server on loopback) or one of two API keys. It needs
// Node.js 20+ and `npm ci` in js/.
func TestMCPTypeScriptSDK(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: skipping the @modelcontextprotocol/sdk interop suite (install Node.js 20+ and run `npm ci` in interop/js)")
	}
	dir, err := filepath.Abs("js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("@modelcontextprotocol/sdk is not installed in %s: run `npm ci` there first (%v)", dir, err)
	}
	env := append(os.Environ(), "MCP_URL="+agent.BaseURL+"/mcp", "DEMO_URL="+agent.DemoURL, "NO_COLOR=1")
	if agent.Dir != "" { // an agent of our own: start the one that requires authentication
		issuer := newTokenIssuer(t)
		base := startAuthAgent(t, issuer, "mcp")
		env = append(env, "MCP_AUTH_URL="+base+"/mcp", "MCP_AUTH_A2A_URL="+base+"/", "MCP_AUTH_ISSUER="+issuer.issuer,
			"MCP_CLIENT_ID="+authClientID, "MCP_CLIENT_SECRET="+authClientSecret,
			"MCP_API_KEY="+authAPIKey, "MCP_OTHER_API_KEY="+authOtherAPIKey)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", "mcp.test.js")
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test mcp.test.js in %s against %s/mcp: %v\n%s", dir, agent.BaseURL, err, out)
	}
	t.Logf("node --test:\n%s", out)
}
