// Package pbconv is the gRPC binding's codec: it converts the messages of
// the A2A 1.0 proto (a2a/a2apb) to and from the internal model, and
// protocol errors to gRPC statuses (spec 1.0 §10.6).
//
// A2A 1.0's JSON is by definition the ProtoJSON form of the same proto
// messages, so requests are converted through it: written as ProtoJSON and
// decoded by the 1.0 JSON codec, they pass the very checks a JSON-RPC
// request passes (required members, part counts, nesting depth, exact
// integers, push URLs), with no second set of rules to drift from the
// first. A plainly valid SendMessage, on every send's path, is converted
// field by field instead (request.go), held to the JSON route by a fuzz
// test. Answers, on every call's path, are converted field by field
// (encode.go), held to the JSON codec's output by the tests; a part's data
// that is already JSON goes straight into wire form (rawjson.go).
package pbconv

import (
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
)

var (
	requestJSON = protojson.MarshalOptions{}
	// The agent's own 1.0 JSON (its card): a member the proto does not
	// know (a 0.3 member of the union card) is left out.
	agentJSON = protojson.UnmarshalOptions{DiscardUnknown: true}
)

// DecodeRequest checks and converts the request message of method m: the
// same *a2a.Request the JSON-RPC codec makes of a 1.0 request (Params nil
// for GetExtendedAgentCard). Invalid params name the member by its path
// within the request message ("message.parts").
//
// One difference from JSON: a ListTasks page_size of 0 means the default
// page size, as a proto3 zero commonly means "not set" (AIP-158); the
// official Go SDK sends it whenever its caller sets no page size.
func DecodeRequest(m a2a.Method, msg proto.Message) (*a2a.Request, *a2a.Error) {
	if in, ok := msg.(*a2apb.SendMessageRequest); ok && (m == a2a.MethodSendMessage || m == a2a.MethodSendStreamingMessage) {
		if params, ok := plainSendMessage(in); ok {
			return &a2a.Request{ID: requestID, Method: m, Params: params}, nil
		}
	}
	return decodeViaJSON(m, msg)
}

// requestID is the JSON-RPC id of a request made of a message.
var requestID = json.RawMessage("0")

// decodeViaJSON is DecodeRequest through the 1.0 JSON codec.
func decodeViaJSON(m a2a.Method, msg proto.Message) (*a2a.Request, *a2a.Error) {
	if l, ok := msg.(*a2apb.ListTasksRequest); ok && l.GetPageSize() == 0 {
		l.PageSize = nil
	}
	params, err := requestJSON.Marshal(msg)
	if err != nil {
		return nil, a2a.InvalidRequest("the request message cannot be read: " + err.Error())
	}
	body := make([]byte, 0, len(params)+64)
	body = append(body, `{"jsonrpc":"2.0","id":`...)
	body = append(body, requestID...)
	body = append(body, `,"method":"`...)
	body = append(body, m.Name(a2a.V10)...)
	body = append(body, `","params":`...)
	body = append(append(body, params...), '}')
	req, e := a2a.DecodeRequest(a2a.V10, body)
	if e != nil {
		out := *e
		out.Field = strings.TrimPrefix(strings.TrimPrefix(out.Field, "params"), ".")
		return nil, &out
	}
	return req, nil
}

// DecodeJSON reads 1.0 JSON the agent made (such as its card) into out.
func DecodeJSON(out proto.Message, doc []byte) error {
	if err := agentJSON.Unmarshal(doc, out); err != nil {
		return fmt.Errorf("pbconv: reading %T: %w", out, err)
	}
	return nil
}
