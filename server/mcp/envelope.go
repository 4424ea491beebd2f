package mcp

import (
	"encoding/json"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// members are the members that the MCP endpoint's readers look up by
// name in a request: the binding's own (envelope), and in a tools/call
// the answers to input requests, which the SDK reads with encoding/json,
// ignoring case (sdk.InputResponseMap: "action", "role" or "roots" tells
// which kind of answer it is).
var members = a2a.MembersOf[envelopeOf[map[string]struct {
	Meta    json.RawMessage `json:"_meta"`
	Action  json.RawMessage `json:"action"`
	Content json.RawMessage `json:"content"`
	Role    json.RawMessage `json:"role"`
	Roots   json.RawMessage `json:"roots"`
}]]()

// checkBody refuses (-32600) a body to the MCP endpoint that the
// readers behind it could read otherwise than a strict one, as the A2A
// bindings refuse theirs: a member named twice at any level, where the
// binding's reader and the SDK's keep the last one; a look-alike of a
// member they read ("NAME" beside "name"), which a reader that ignores
// case takes for it; a string that is not UTF-8. A parser in front of the
// agent that keeps the first "name" would see another tool called than
// the one that runs.
func checkBody(body []byte) *a2a.Error {
	return a2a.CheckMembers(body, members)
}

// envelope is a JSON-RPC request to the MCP endpoint, decoded once:
// its method for the observer, and the parameters of a tools/call for the
// direct path.
type envelope = envelopeOf[json.RawMessage]

// envelopeOf is a JSON-RPC request to the MCP endpoint whose tools/call
// answers to input requests (inputResponses) are read as answers.
type envelopeOf[answers any] struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      struct {
			ProtocolVersion    string          `json:"io.modelcontextprotocol/protocolVersion"`
			ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
			ProgressToken      json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
		// What only a call that answers an input request holds.
		InputResponses answers         `json:"inputResponses"`
		RequestState   json.RawMessage `json:"requestState"`
	} `json:"params"`
}

// decodeEnvelope decodes body, a POST's, as the SDK decodes (member
// names matched exactly); ok is false for a body that is not one JSON-RPC
// request object of that shape (a batch, bad JSON, none), which the SDK
// answers.
func decodeEnvelope(body []byte) (env envelope, ok bool) {
	if firstByte(body) != '{' {
		return env, false
	}
	return env, decodeExactly(body, &env)
}
