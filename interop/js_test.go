package interop_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestJavaScriptSDK runs the @a2a-js/sdk suite in js/ (node --test) against
// the same agent. It needs Node.js 20+ and `npm ci` in js/.
func TestJavaScriptSDK(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: skipping the @a2a-js/sdk interop suite (install Node.js 20+ and run `npm ci` in interop/js)")
	}
	dir, err := filepath.Abs("js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@a2a-js", "sdk", "package.json")); err != nil {
		t.Fatalf("@a2a-js/sdk is not installed in %s: run `npm ci` there first (%v)", dir, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", "interop.test.js") // signing.test.js runs from signing_test.go, mcp.test.js from mcp_typescript_test.go
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "A2A_URL="+agent.URL, "A2A_AGENT_NAME="+agent.Name, "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test in %s with A2A_URL=%s: %v\n%s", dir, agent.URL, err, out)
	}
	t.Logf("node --test:\n%s", out)
}
