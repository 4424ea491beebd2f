package a2a

import (
	"errors"
	"fmt"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// Limits every request body is held to before it is decoded, the same in
// every version.
const (
	// MaxJSONDepth bounds how deeply a request's JSON may nest. Go's
	// encoding/json stops at 10,000 and Python's parser at 1,000: an agent
	// that stored deeper values would answer with JSON its clients cannot
	// read back.
	MaxJSONDepth = 64
	// MaxParts bounds the parts of one message.
	MaxParts = 256
)

// checkJSON reads body once, before it is decoded as a JSON-RPC request in
// version v, and refuses what encoding/json would accept but the agent
// must not (jsonx.Check): nesting deeper than MaxJSONDepth, an object that
// names a member twice, a look-alike of a known member, integers beyond
// 2^53 that a float64 would silently round, and strings that are not
// UTF-8. Syntax errors are left to the decoder, which describes them
// better; a body that is not valid JSON yields nil here, and valid false.
// renamed reports a known member given by its proto field name
// (history_length), which protoNames10 renames before decoding; only 1.0
// reads those.
func checkJSON(v Version, body []byte) (renamed, valid bool, err *Error) {
	renamed, valid, violation := jsonx.Check(body, requestMembers[v], jsonx.Rules{MaxDepth: MaxJSONDepth, ProtoNames: v == V10})
	return renamed, valid, refusal(body, violation, inEnvelope)
}

// checkParams is checkJSON for an HTTP+JSON body, whose root has the
// members known (paramsMembers, paramsMembersProto03): every problem is an
// invalid parameter. Every form reads proto field names there (a2av0
// sends 0.3 members in snake_case).
func checkParams(known *Members, body []byte) (renamed, valid bool, err *Error) {
	renamed, valid, violation := jsonx.Check(body, known, jsonx.Rules{MaxDepth: MaxJSONDepth, ProtoNames: true})
	return renamed, valid, refusal(body, violation, inParams)
}

// CheckMembers holds body, a JSON-RPC request of another protocol's
// binding whose objects have the members known, to what every A2A body is
// held to but the bound on integers: no object names a member twice, none
// names a look-alike of a known member, no string is anything but UTF-8,
// nothing nests deeper than MaxJSONDepth. Integers beyond 2^53 pass: such
// a binding's reader keeps them exact (UnmarshalKeepingIntegers); other
// numbers must be within a float64's range, as it reads them so. Every
// problem is InvalidRequest, saying where it lies. A body
// that is not valid JSON passes, unless it nests too deep: its decoder
// describes the error better, and a decoder that recurses once per level
// must not meet the nesting.
func CheckMembers(body []byte, known *Members) *Error {
	_, valid, violation := jsonx.Check(body, known, strictRequest)
	if !valid && !jsonx.NestsWithin(body, MaxJSONDepth) {
		violation = &jsonx.Violation{What: fmt.Sprintf("nests deeper than %d levels", MaxJSONDepth)}
	}
	return refusal(body, violation, inRequest)
}

// strictRequest is what another protocol's request is held to.
var strictRequest = jsonx.Rules{MaxDepth: MaxJSONDepth, ExactIntegers: true}

// RequestReader reads a JSON-RPC request of another protocol's binding
// into T in one pass, which is also CheckMembers' check: T's members are
// matched by their exact names, and the rest is read as encoding/json
// reads it (jsonx.Decoder).
type RequestReader[T any] struct{ decoder *jsonx.Decoder[T] }

// NewRequestReader returns a reader into T, a struct, that holds requests
// to the members known (nil: T's own), as CheckMembers does. known may name
// more than T: a member T keeps as json.RawMessage is still checked member
// by member. Build it once: it reads T's fields by reflection.
func NewRequestReader[T any](known *Members) RequestReader[T] {
	return RequestReader[T]{jsonx.NewDecoder[T](known, strictRequest)}
}

// Read fills v from body. refused is what CheckMembers would answer for
// body (InvalidRequest saying where); fits is false, with refused nil,
// when body is not JSON or a value does not fit its field of T, which
// encoding/json would refuse too; v is then partly filled.
func (r RequestReader[T]) Read(body []byte, v *T) (fits bool, refused *Error) {
	err := r.decoder.Decode(body, v)
	if violation, ok := errors.AsType[*jsonx.Violation](err); ok {
		return false, refusal(body, violation, inRequest)
	}
	return err == nil, nil
}

// Members is what a decoder knows of an object it reads into a wire
// struct (jsonx.Members).
type Members = jsonx.Members

// MembersOf reads the members of wire struct T as encoding/json reads
// them, for CheckMembers.
func MembersOf[T any]() *Members { return jsonx.MembersOf[T]() }

// The members of every request body, by version: a JSON-RPC request, and
// the params an HTTP+JSON body holds.
var (
	requestMembers       = [...]*Members{V03: MembersOf[envelope[params03]](), V10: MembersOf[envelope[params10]]()}
	paramsMembers        = [...]*Members{V03: MembersOf[params03](), V10: MembersOf[params10]()}
	paramsMembersProto03 = MembersOf[paramsProto03]()
)

// scope is what a checked body is, which decides the error that refuses it.
type scope uint8

const (
	inEnvelope scope = iota // a JSON-RPC request: InvalidParams within params
	inParams                // an HTTP+JSON body: InvalidParams
	inRequest               // another protocol's request: InvalidRequest
)

// refusal is the error for v, a rule body (s) breaks, nil for none:
// InvalidParams naming the member within params, InvalidRequest when it
// lies in the envelope or body is another protocol's request.
func refusal(body []byte, v *jsonx.Violation, s scope) *Error {
	if v == nil {
		return nil
	}
	path := jsonx.PathAt(body, v.Offset)
	if s != inRequest && (s == inParams || path == "params" || strings.HasPrefix(path, "params.")) {
		return InvalidParams(path, v.What)
	}
	if path == "" {
		return InvalidRequest("the request " + v.What)
	}
	return InvalidRequest(path + " " + v.What)
}
