package interop_test

import (
	"cmp"
	"testing"
	"time"
)

// TestMCPTypeScriptSDK runs the @modelcontextprotocol/sdk suite in
// js/mcp.test.js (node --test) against the interop agent's MCP endpoint and
// against a second agent that requires a bearer token (from an
// authorization server on loopback) or one of two API keys: at its site's
// root, and under handle_path, as a site that hosts several agents would,
// where the SDK finds the protected resource metadata below the prefix
// through the 401. It needs Node.js 20+ and `npm ci` in js/.
func TestMCPTypeScriptSDK(t *testing.T) {
	for _, prefix := range []string{"", "/secured"} {
		t.Run("auth agent at "+cmp.Or(prefix, "/"), func(t *testing.T) {
			env := []string{"MCP_URL=" + agent.BaseURL + "/mcp", "DEMO_URL=" + agent.DemoURL}
			if agent.Dir != "" { // an agent of our own: start the one that requires authentication
				nodePackage(t, "js", "@modelcontextprotocol/sdk") // skip before starting it when there is no node
				issuer := newTokenIssuer(t)
				directive := "mcp" // its URL from the agent's
				if prefix != "" {
					directive = "mcp /mcp {$INTEROP_AUTH_URL}/mcp"
				}
				base, _ := startAuthAgent(t, issuer, prefix, directive)
				env = append(env, "MCP_AUTH_URL="+base+"/mcp", "MCP_AUTH_A2A_URL="+base+"/", "MCP_AUTH_ISSUER="+issuer.issuer,
					"MCP_CLIENT_ID="+authClientID, "MCP_CLIENT_SECRET="+authClientSecret,
					"MCP_API_KEY="+authAPIKey, "MCP_OTHER_API_KEY="+authOtherAPIKey)
			} else if prefix != "" {
				t.Skip("INTEROP_AGENT_URL is set: the suite ran once against it")
			}
			out := runNodeTests(t, "js", "@modelcontextprotocol/sdk", "mcp.test.js", 2*time.Minute, env...)
			t.Logf("node --test:\n%s", out)
		})
	}
}
