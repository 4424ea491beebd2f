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

// envelopeReader reads a POST's body into its envelope in one pass that
// is also the strict check: it refuses (-32600) a body that the readers
// behind it could read otherwise than a strict one, as the A2A bindings
// refuse theirs: a member named twice at any level, where the binding's
// reader and the SDK's keep the last one; a look-alike of a member they
// read ("NAME" beside "name"), which a reader that ignores case takes for
// it; a string that is not UTF-8; nesting deeper than a2a.MaxJSONDepth,
// since both the SDK's parser and the binding's recurse once per level
// (tool arguments become a task's data). A parser in front of the agent
// that keeps the first "name" would see another tool called than the one
// that runs. Members are matched by their exact names, as the SDK matches
// them.
var envelopeReader = a2a.NewRequestReader[envelope](members)

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

// readEnvelope reads body, a POST's, into env. refused is the strict
// check's refusal; plain is false for a body that is not one JSON-RPC
// request object of env's shape (a batch, bad JSON, none), which the SDK
// answers.
func readEnvelope(body []byte, env *envelope) (plain bool, refused *a2a.Error) {
	fits, refused := envelopeReader.Read(body, env)
	return fits && firstByte(body) == '{', refused
}
