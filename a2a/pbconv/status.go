package pbconv

import (
	"strings"
	"unicode"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// errorDomain is ErrorInfo.domain of every A2A error (spec 1.0 §10.6).
const errorDomain = "a2a-protocol.org"

// Code is the gRPC status code of a protocol error: the google.rpc code
// that the HTTP+JSON binding gives it too (a2a.RESTStatus: the table of spec
// 1.0 §5.4, the JSON-RPC and authentication errors as the official SDKs
// map them, UNAVAILABLE and RESOURCE_EXHAUSTED for an internal error that
// asks to retry), except that a method gRPC does not serve is
// UNIMPLEMENTED, as gRPC says.
func Code(e *a2a.Error) codes.Code {
	if e.Code == a2a.CodeMethodNotFound {
		return codes.Unimplemented
	}
	_, name := a2a.RESTStatus(e)
	if c, ok := codeByName[name]; ok {
		return c
	}
	return codes.Internal
}

// codeByName are the gRPC codes by their google.rpc.Code names.
var codeByName = func() map[string]codes.Code {
	m := make(map[string]codes.Code)
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		m[strcase(c.String())] = c
	}
	return m
}()

// strcase turns a codes.Code name (InvalidArgument) into its google.rpc
// name (INVALID_ARGUMENT).
func strcase(name string) string {
	var b strings.Builder
	lower := false
	for _, r := range name {
		if lower && unicode.IsUpper(r) {
			b.WriteByte('_')
		}
		lower = unicode.IsLower(r)
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// Status is e as a gRPC status (spec 1.0 §10.6): its code, its message
// with the description, a google.rpc.ErrorInfo with e's reason and
// metadata, and for an invalid field a google.rpc.BadRequest naming it.
func Status(e *a2a.Error) *status.Status {
	msg := e.Message
	if e.Description != "" && e.Field == "" {
		msg += ": " + e.Description
	}
	st := status.New(Code(e), msg)
	details := make([]protoadapt.MessageV1, 0, 2)
	if e.Reason != "" {
		details = append(details, &errdetails.ErrorInfo{Reason: e.Reason, Domain: errorDomain, Metadata: e.Metadata})
	}
	if e.Field != "" {
		details = append(details, &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: e.Field, Description: e.Description},
		}})
	}
	if len(details) == 0 {
		return st
	}
	withDetails, err := st.WithDetails(details...)
	if err != nil {
		return st
	}
	return withDetails
}
