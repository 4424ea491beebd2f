package mcp_test

import (
	"bufio"
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/server/servertest"
)

// An MCP stream gets an SSE comment every heartbeat interval, as A2A's
// do, so that proxies keep an idle one open: a session's standalone
// stream, and a call's while the skill runs; clients read past them.
func TestMCPStreamsHeartbeat(t *testing.T) {
	a := servertest.NewAgent(t, func(cfg *server.Config) {
		withMCP(cfg)
		cfg.HeartbeatInterval = 10 * time.Millisecond
	})
	a.CancelOnCleanup()
	cs, err := connectSession(t, a)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp := openStream(t, ctx, a, cs)
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	beats := 0
	for beats < 2 && lines.Scan() {
		if lines.Text() == ": keep-alive" {
			beats++
		}
	}
	if beats < 2 {
		t.Fatalf("the standalone stream ended (%v) after %d heartbeats", lines.Err(), beats)
	}
	// A call whose answer comes as a stream, over many heartbeats.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 0.2}})
	if err != nil || res.IsError {
		t.Fatalf("a call with heartbeats on its stream: %v %+v", err, res)
	}
}
