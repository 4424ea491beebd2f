package a2a

import (
	"fmt"
	"strconv"
	"strings"
)

// JSON-RPC 2.0 and A2A error codes (spec 1.0 §5.4, §9.5).
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603

	CodeTaskNotFound                   = -32001
	CodeTaskNotCancelable              = -32002
	CodePushNotificationNotSupported   = -32003
	CodeUnsupportedOperation           = -32004
	CodeContentTypeNotSupported        = -32005
	CodeInvalidAgentResponse           = -32006
	CodeExtendedAgentCardNotConfigured = -32007
	CodeExtensionSupportRequired       = -32008
	CodeVersionNotSupported            = -32009

	// Authentication and authorization failures. Spec 1.0 §3.3.2 asks for
	// them ("JSON-RPC custom error") without fixing the codes; these are
	// the ones the official A2A Go SDK maps to ErrUnauthenticated and
	// ErrUnauthorized. They travel with HTTP 401 and 403.
	CodeUnauthenticated = -31401
	CodeUnauthorized    = -31403
)

// Error is a protocol error: a JSON-RPC error object. Details become the
// error's data: in 1.0 an array of typed objects (google.rpc.ErrorInfo,
// google.rpc.BadRequest), in 0.3 a plain object.
type Error struct {
	Code    int
	Message string
	// Reason is an upper-snake machine-readable reason (ErrorInfo.reason).
	Reason string
	// Metadata is ErrorInfo.metadata: context such as the task id.
	Metadata map[string]string
	// Field and Description name the offending parameter of an
	// invalid-params error (BadRequest.fieldViolations).
	Field       string
	Description string
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("a2a error %d: %s: %s: %s", e.Code, e.Message, e.Field, e.Description)
	}
	return fmt.Sprintf("a2a error %d: %s", e.Code, e.Message)
}

// ParseError reports a body that is not JSON.
func ParseError(detail string) *Error {
	return &Error{Code: CodeParseError, Message: "Invalid JSON payload", Reason: "PARSE_ERROR", Description: detail}
}

// InvalidRequest reports a body that is JSON but not a JSON-RPC request.
func InvalidRequest(detail string) *Error {
	return &Error{Code: CodeInvalidRequest, Message: "Request payload validation error", Reason: "INVALID_REQUEST", Description: detail}
}

// MethodNotFound reports an unknown method name.
// MethodNotFound reports a method that version v does not have. When the
// other version has it, the client most likely asked for the wrong
// version, and the error says how to ask for the right one.
func MethodNotFound(v Version, method string) *Error {
	e := &Error{Code: CodeMethodNotFound, Message: "Method not found", Reason: "METHOD_NOT_FOUND",
		Metadata: map[string]string{"method": method, "version": v.String()}}
	switch {
	case v == V03 && LookupMethod(V10, method) != MethodUnknown:
		e.Description = method + " is a 1.0 method, and this request was read as 0.3 (it has no A2A-Version " +
			"header, or A2A-Version: 0.3): send the header A2A-Version: 1.0 to speak 1.0"
	case v == V10 && LookupMethod(V03, method) != MethodUnknown:
		e.Description = method + " is a 0.3 method, and this request asked for 1.0 (A2A-Version: 1.0): call " +
			LookupMethod(V03, method).Name(V10) + ", or leave out A2A-Version to speak 0.3"
	default:
		e.Description = method + " is not an A2A " + v.String() + " method"
	}
	return e
}

// InvalidParams reports a bad parameter, naming it by its JSON path.
func InvalidParams(field, description string) *Error {
	return &Error{Code: CodeInvalidParams, Message: "Invalid parameters", Reason: "INVALID_PARAMS",
		Field: field, Description: description}
}

// InternalError reports a failure of this server; detail must hold nothing
// a caller should not see.
func InternalError(detail string) *Error {
	return &Error{Code: CodeInternalError, Message: "Internal error", Reason: "INTERNAL", Description: detail}
}

// TaskNotFound reports a task that does not exist or is not the caller's.
func TaskNotFound(taskID string) *Error {
	return &Error{Code: CodeTaskNotFound, Message: "Task not found", Reason: "TASK_NOT_FOUND",
		Metadata: map[string]string{"taskId": taskID}}
}

// TaskNotCancelable reports a cancel of a task in a terminal state.
func TaskNotCancelable(taskID string, state TaskState) *Error {
	return &Error{Code: CodeTaskNotCancelable, Message: "Task cannot be canceled", Reason: "TASK_NOT_CANCELABLE",
		Metadata: map[string]string{"taskId": taskID, "state": state.String()}}
}

// PushNotificationNotSupported answers every push notification method.
func PushNotificationNotSupported() *Error {
	return &Error{Code: CodePushNotificationNotSupported, Message: "Push Notification is not supported",
		Reason: "PUSH_NOTIFICATION_NOT_SUPPORTED"}
}

// UnsupportedOperation reports an operation this agent does not do.
func UnsupportedOperation(detail string) *Error {
	return &Error{Code: CodeUnsupportedOperation, Message: "This operation is not supported",
		Reason: "UNSUPPORTED_OPERATION", Description: detail}
}

// ContentTypeNotSupported reports media types the agent cannot handle.
func ContentTypeNotSupported(detail string) *Error {
	return &Error{Code: CodeContentTypeNotSupported, Message: "Incompatible content types",
		Reason: "CONTENT_TYPE_NOT_SUPPORTED", Description: detail}
}

// ExtendedAgentCardNotConfigured answers GetExtendedAgentCard when there is none.
func ExtendedAgentCardNotConfigured() *Error {
	return &Error{Code: CodeExtendedAgentCardNotConfigured, Message: "Extended agent card is not configured",
		Reason: "EXTENDED_AGENT_CARD_NOT_CONFIGURED"}
}

// VersionNotSupported reports an A2A-Version this agent does not speak,
// listing the Versions it does ("0.3, 1.0").
func VersionNotSupported(version string) *Error {
	supported := make([]string, len(Versions))
	for i, v := range Versions {
		supported[i] = v.String()
	}
	list := strings.Join(supported, ", ")
	return &Error{Code: CodeVersionNotSupported, Message: "Protocol version not supported",
		Reason: "VERSION_NOT_SUPPORTED", Metadata: map[string]string{"version": version, "supported": list},
		Description: "A2A-Version " + strconv.Quote(version) + " is not supported; this agent speaks " + list +
			" (no A2A-Version header means 0.3)"}
}
