package pbconv

import (
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// errorDomain is ErrorInfo.domain of every A2A error (spec 1.0 §10.6).
const errorDomain = "a2a-protocol.org"

// Code is the gRPC status code of a protocol error: the table of spec 1.0
// §5.4 for A2A's errors, and for JSON-RPC's own and the authentication
// errors the codes the official SDKs map them to. An internal error whose
// reason is UNAVAILABLE (a draining agent, a store that cannot be reached)
// is UNAVAILABLE, which gRPC clients know to retry.
func Code(e *a2a.Error) codes.Code {
	switch e.Code {
	case a2a.CodeTaskNotFound:
		return codes.NotFound
	case a2a.CodeTaskNotCancelable, a2a.CodePushNotificationNotSupported, a2a.CodeUnsupportedOperation,
		a2a.CodeExtendedAgentCardNotConfigured, a2a.CodeExtensionSupportRequired, a2a.CodeVersionNotSupported:
		return codes.FailedPrecondition
	case a2a.CodeContentTypeNotSupported, a2a.CodeInvalidParams, a2a.CodeInvalidRequest, a2a.CodeParseError:
		return codes.InvalidArgument
	case a2a.CodeMethodNotFound:
		return codes.Unimplemented
	case a2a.CodeUnauthenticated:
		return codes.Unauthenticated
	case a2a.CodeUnauthorized:
		return codes.PermissionDenied
	case a2a.CodeInternalError:
		if e.Reason == "UNAVAILABLE" {
			return codes.Unavailable
		}
	}
	return codes.Internal
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
