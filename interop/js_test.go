package interop_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestJavaScriptSDK runs the @a2a-js/sdk suite in js/ (node --test) against
// the same agent. It needs Node.js 20+ and `npm ci` in js/.
func TestJavaScriptSDK(t *testing.T) {
	// signing.test.js runs from signing_test.go, mcp.test.js from mcp_typescript_test.go.
	out := runNodeTests(t, "js", "@a2a-js/sdk", "interop.test.js", 2*time.Minute,
		"A2A_URL="+agent.URL, "A2A_AGENT_NAME="+agent.Name)
	t.Logf("node --test:\n%s", out)
}

// nodePackage answers the path of node and the absolute path of dir, an npm
// package directory of this module in which pkg must be installed. It
// skips the test when Node.js is not installed, and fails it when pkg is
// not (test.sh runs `npm ci` in each such directory).
func nodePackage(t *testing.T, dir, pkg string) (node, abs string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("node is not installed: skipping what needs %s (install Node.js 20+ and run `npm ci` in interop/%s)", pkg, dir)
	}
	if abs, err = filepath.Abs(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(abs, "node_modules", pkg, "package.json")); err != nil {
		t.Fatalf("%s is not installed in %s: run `npm ci` there first (%v)", pkg, abs, err)
	}
	return node, abs
}

// runNodeTests runs `node --test script` in the npm package directory dir,
// which needs pkg, with env added, within timeout, and answers its output;
// the test fails with that output when a node test fails.
func runNodeTests(t *testing.T, dir, pkg, script string, timeout time.Duration, env ...string) string {
	t.Helper()
	node, abs := nodePackage(t, dir, pkg)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", script)
	cmd.Dir = abs
	cmd.Env = append(append(os.Environ(), "NO_COLOR=1"), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test %s in %s with %s: %v\n%s", script, abs, strings.Join(env, " "), err, out)
	}
	return string(out)
}
