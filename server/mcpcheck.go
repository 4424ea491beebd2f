package server

import (
	"encoding/json"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// mcpMembers are the members that the MCP endpoint's readers look up by
// name in a request: the binding's own (mcpEnvelope), and in a tools/call
// the answers to input requests, which the SDK reads with encoding/json,
// ignoring case (mcp.InputResponseMap: "action", "role" or "roots" tells
// which kind of answer it is).
var mcpMembers = a2a.MembersOf[mcpEnvelopeOf[map[string]struct {
	Meta    json.RawMessage `json:"_meta"`
	Action  json.RawMessage `json:"action"`
	Content json.RawMessage `json:"content"`
	Role    json.RawMessage `json:"role"`
	Roots   json.RawMessage `json:"roots"`
}]]()

// checkMCPBody refuses (-32600) a body to the MCP endpoint that the
// readers behind it could read otherwise than a strict one, as the A2A
// bindings refuse theirs: a member named twice at any level, where the
// binding's reader and the SDK's keep the last one; a look-alike of a
// member they read ("NAME" beside "name"), which a reader that ignores
// case takes for it; a string that is not UTF-8. A parser in front of the
// agent that keeps the first "name" would see another tool called than
// the one that runs.
func checkMCPBody(body []byte) *a2a.Error {
	return a2a.CheckMembers(body, mcpMembers)
}
