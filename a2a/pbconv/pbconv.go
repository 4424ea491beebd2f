// Package pbconv is the gRPC binding's codec: it converts the messages of
// the A2A 1.0 proto (a2a/a2apb) to and from the internal model, and
// protocol errors to gRPC statuses (spec 1.0 §10.6).
//
// A2A 1.0's JSON is by definition the ProtoJSON form of the same proto
// messages, so requests are converted through it: written as ProtoJSON and
// decoded by the 1.0 JSON codec, they pass the very checks a JSON-RPC
// request passes (required members, part counts, nesting depth, exact
// integers, push URLs), with no second set of rules to drift from the
// first. Answers, on every call's path, are converted field by field
// (encode.go), held to the JSON codec's output by the tests.
package pbconv

import (
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
	if l, ok := msg.(*a2apb.ListTasksRequest); ok && l.GetPageSize() == 0 {
		l.PageSize = nil
	}
	params, err := requestJSON.Marshal(msg)
	if err != nil {
		return nil, a2a.InvalidRequest("the request message cannot be read: " + err.Error())
	}
	body := make([]byte, 0, len(params)+64)
	body = append(body, `{"jsonrpc":"2.0","id":0,"method":"`...)
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
