// Package pbconv is the gRPC binding's codec: it converts the messages of
// the A2A 1.0 proto (a2a/a2apb) to and from the internal model, and
// protocol errors to gRPC statuses (spec 1.0 §10.6).
//
// A2A 1.0's JSON is by definition the ProtoJSON form of the same proto
// messages, so the conversions go through it: a request is written as
// ProtoJSON and decoded by the 1.0 JSON codec, and an answer encoded by
// that codec is read back as ProtoJSON. Every request therefore passes the
// very checks a JSON-RPC request passes (required members, part counts,
// nesting depth, exact integers, push URLs), and no second mapping of the
// model's fields exists to drift from the first. The price is one extra
// JSON encoding per message, small beside the upstream call a request
// makes.
package pbconv

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
)

var (
	requestJSON = protojson.MarshalOptions{}
	// Answers are the agent's own 1.0 JSON; a member the proto does not
	// know (a future field of the model) is left out rather than failing
	// the call.
	answerJSON = protojson.UnmarshalOptions{DiscardUnknown: true}
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

// resultPrefix starts every answer a2a.AppendResult writes for a request
// without an id.
var resultPrefix = []byte(`{"jsonrpc":"2.0","id":null,"result":`)

// EncodeResult converts result (what a2a.AppendResult takes: *a2a.Task,
// *a2a.StreamResponse, *a2a.ListTasksResponse, ...) into out, the proto
// message of the same shape.
func EncodeResult(out proto.Message, result any) error {
	doc, err := a2a.AppendResult(nil, a2a.V10, nil, result)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(doc, resultPrefix) || !bytes.HasSuffix(doc, []byte("}")) {
		return errors.New("pbconv: unexpected JSON-RPC envelope")
	}
	return DecodeJSON(out, doc[len(resultPrefix):len(doc)-1])
}

// DecodeJSON reads 1.0 JSON the agent made (such as its card) into out.
func DecodeJSON(out proto.Message, doc []byte) error {
	if err := answerJSON.Unmarshal(doc, out); err != nil {
		return fmt.Errorf("pbconv: reading %T: %w", out, err)
	}
	return nil
}

// SendMessageResponse converts the answer of SendMessage (a task or a
// message).
func SendMessageResponse(r *a2a.StreamResponse) (*a2apb.SendMessageResponse, error) {
	out := new(a2apb.SendMessageResponse)
	return out, EncodeResult(out, r)
}

// StreamResponse converts one event of a stream.
func StreamResponse(r *a2a.StreamResponse) (*a2apb.StreamResponse, error) {
	out := new(a2apb.StreamResponse)
	return out, EncodeResult(out, r)
}
