package a2a

import "strings"

// Method is a protocol operation, whatever its name in the caller's version.
type Method uint8

const (
	MethodUnknown Method = iota
	MethodSendMessage
	MethodSendStreamingMessage
	MethodGetTask
	MethodListTasks
	MethodCancelTask
	MethodSubscribeToTask
	MethodCreatePushConfig
	MethodGetPushConfig
	MethodListPushConfigs
	MethodDeletePushConfig
	MethodGetExtendedAgentCard
)

// Version is an A2A protocol version spoken on the wire.
type Version uint8

const (
	// V03 is protocol 0.3: what a request without A2A-Version speaks.
	V03 Version = iota
	// V10 is protocol 1.0.
	V10
)

// Versions are the versions this module speaks, oldest first: the one list
// that the A2A-Version parser, the version error and the card's interfaces
// follow.
var Versions = []Version{V03, V10}

func (v Version) String() string {
	if v == V10 {
		return "1.0"
	}
	return "0.3"
}

// ParseVersion reads the A2A-Version service parameter. Empty means 0.3;
// a patch number is ignored (spec 1.0 §3.6: only Major.Minor negotiates).
func ParseVersion(s string) (Version, *Error) {
	if s == "" {
		return V03, nil
	}
	majorMinor := s
	if i := strings.IndexByte(s, '.'); i >= 0 {
		if j := strings.IndexByte(s[i+1:], '.'); j >= 0 {
			majorMinor = s[:i+1+j]
		}
	}
	for _, v := range Versions {
		if v.String() == majorMinor {
			return v, nil
		}
	}
	return V03, VersionNotSupported(s)
}

var methodNames = [...][2]string{ // index: Method; [V03, V10]
	MethodSendMessage:          {"message/send", "SendMessage"},
	MethodSendStreamingMessage: {"message/stream", "SendStreamingMessage"},
	MethodGetTask:              {"tasks/get", "GetTask"},
	MethodListTasks:            {"", "ListTasks"}, // 0.3 has no tasks/list over JSON-RPC
	MethodCancelTask:           {"tasks/cancel", "CancelTask"},
	MethodSubscribeToTask:      {"tasks/resubscribe", "SubscribeToTask"},
	MethodCreatePushConfig:     {"tasks/pushNotificationConfig/set", "CreateTaskPushNotificationConfig"},
	MethodGetPushConfig:        {"tasks/pushNotificationConfig/get", "GetTaskPushNotificationConfig"},
	MethodListPushConfigs:      {"tasks/pushNotificationConfig/list", "ListTaskPushNotificationConfigs"},
	MethodDeletePushConfig:     {"tasks/pushNotificationConfig/delete", "DeleteTaskPushNotificationConfig"},
	MethodGetExtendedAgentCard: {"agent/getAuthenticatedExtendedCard", "GetExtendedAgentCard"},
}

// LookupMethod finds a method by its name in version v.
func LookupMethod(v Version, name string) Method {
	for m, names := range methodNames {
		if names[v] == name && name != "" {
			return Method(m)
		}
	}
	return MethodUnknown
}

// Name is the method's wire name in version v.
func (m Method) Name(v Version) string {
	if int(m) < len(methodNames) {
		return methodNames[m][v]
	}
	return ""
}

// Streaming reports whether the method answers with an SSE stream.
func (m Method) Streaming() bool {
	return m == MethodSendStreamingMessage || m == MethodSubscribeToTask
}
