// Package a2a is the protocol's data model: one set of Go types shaped after
// the A2A 1.0 proto, with JSON codecs for protocol 1.0 (ProtoJSON) and 0.3
// onto it. Nothing outside this package asks which version a caller speaks,
// with one exception: a push notification config remembers the version of
// the request that registered it, because its notifications are written in
// that version for that client's receiver (1.0: a StreamResponse per event;
// 0.3: the Task after each change; see push.go).
package a2a

import "time"

// Role is who sent a message.
type Role uint8

const (
	RoleUnspecified Role = iota
	RoleUser
	RoleAgent
)

// TaskState is where a task is in its lifecycle.
type TaskState uint8

const (
	TaskStateUnspecified TaskState = iota
	TaskStateSubmitted
	TaskStateWorking
	TaskStateCompleted
	TaskStateFailed
	TaskStateCanceled
	TaskStateInputRequired
	TaskStateRejected
	TaskStateAuthRequired
)

// Terminal reports whether no transition may leave the state.
func (s TaskState) Terminal() bool {
	switch s {
	case TaskStateCompleted, TaskStateFailed, TaskStateCanceled, TaskStateRejected:
		return true
	}
	return false
}

// Interrupted reports whether the task waits for the client (input or auth).
func (s TaskState) Interrupted() bool {
	return s == TaskStateInputRequired || s == TaskStateAuthRequired
}

// PartKind says which of a Part's content fields is set.
type PartKind uint8

const (
	PartText PartKind = iota + 1
	PartRaw           // inline bytes (0.3: a file part with "bytes")
	PartURL           // a file by reference (0.3: a file part with "uri")
	PartData          // any JSON value (0.3: a data part, whose data is an object)
)

// Part is one piece of a message or artifact. Exactly one content field,
// named by Kind, is meaningful.
type Part struct {
	Kind PartKind
	Text string
	Raw  []byte
	URL  string
	// Data is a decoded JSON value (map[string]any, []any, string, float64,
	// bool, nil) or a json.RawMessage holding already-encoded JSON.
	Data      any
	Metadata  map[string]any
	Filename  string
	MediaType string
}

// TextPart returns a text part.
func TextPart(text string) Part { return Part{Kind: PartText, Text: text} }

// DataPart returns a structured data part.
func DataPart(data any) Part { return Part{Kind: PartData, Data: data} }

// Message is one turn of communication between a client and an agent.
type Message struct {
	MessageID        string
	ContextID        string
	TaskID           string
	Role             Role
	Parts            []Part
	Metadata         map[string]any
	Extensions       []string
	ReferenceTaskIDs []string
}

// TaskStatus is a task's current state, with an optional agent message.
type TaskStatus struct {
	State     TaskState
	Message   *Message
	Timestamp time.Time // zero when unset
}

// Artifact is an output of a task.
type Artifact struct {
	ArtifactID  string
	Name        string
	Description string
	Parts       []Part
	Metadata    map[string]any
	Extensions  []string
}

// Task is the unit of work an agent does for a client.
type Task struct {
	ID        string
	ContextID string
	Status    TaskStatus
	Artifacts []Artifact
	History   []Message
	Metadata  map[string]any
}

// TaskStatusUpdateEvent tells a stream that a task's status changed.
type TaskStatusUpdateEvent struct {
	TaskID    string
	ContextID string
	Status    TaskStatus
	// Final marks the last event of a stream. Only 0.3 puts it on the wire;
	// 1.0 clients see the stream end instead.
	Final    bool
	Metadata map[string]any
}

// TaskArtifactUpdateEvent tells a stream that an artifact was produced.
type TaskArtifactUpdateEvent struct {
	TaskID    string
	ContextID string
	Artifact  Artifact
	Append    bool
	LastChunk bool
	Metadata  map[string]any
}

// StreamResponse is one event of a stream, and also the answer to
// SendMessage (where only Task or Message is set). Exactly one field is set.
type StreamResponse struct {
	Task           *Task
	Message        *Message
	StatusUpdate   *TaskStatusUpdateEvent
	ArtifactUpdate *TaskArtifactUpdateEvent
}

// SendMessageConfiguration tunes one SendMessage call.
type SendMessageConfiguration struct {
	AcceptedOutputModes []string
	HistoryLength       *int32
	// ReturnImmediately asks for a non-blocking answer (0.3: blocking=false).
	ReturnImmediately bool
	// PushNotification registers a push notification config on the task
	// the message starts or continues.
	PushNotification *TaskPushNotificationConfig
}

// SendMessageRequest is the parameter of SendMessage and SendStreamingMessage.
type SendMessageRequest struct {
	Tenant        string
	Message       Message
	Configuration *SendMessageConfiguration
	Metadata      map[string]any
}

// GetTaskRequest is the parameter of GetTask.
type GetTaskRequest struct {
	Tenant        string
	ID            string
	HistoryLength *int32
}

// ListTasksRequest is the parameter of ListTasks. Zero values mean "no filter".
type ListTasksRequest struct {
	Tenant               string
	ContextID            string
	Status               TaskState
	PageSize             *int32
	PageToken            string
	HistoryLength        *int32
	StatusTimestampAfter time.Time
	IncludeArtifacts     *bool
}

// ListTasksResponse is the result of ListTasks.
type ListTasksResponse struct {
	Tasks         []Task
	NextPageToken string
	PageSize      int32
	TotalSize     int32
}

// TaskIDRequest is the parameter of CancelTask and SubscribeToTask.
type TaskIDRequest struct {
	Tenant   string
	ID       string
	Metadata map[string]any
}

// TaskPushNotificationConfig is a push notification target of a task: the
// parameter of CreateTaskPushNotificationConfig (Get, List and Delete carry
// only TaskID and ID) and the result of Create and Get.
type TaskPushNotificationConfig struct {
	Tenant         string
	ID             string
	TaskID         string
	URL            string
	Token          string
	Authentication *AuthenticationInfo
}

// AuthenticationInfo is how a push notification authenticates.
type AuthenticationInfo struct {
	Scheme      string
	Credentials string
}

// ListTaskPushNotificationConfigsResponse is the result of
// ListTaskPushNotificationConfigs (0.3: an array of the configs).
type ListTaskPushNotificationConfigsResponse struct {
	Configs       []TaskPushNotificationConfig
	NextPageToken string
}

// Empty is the result of a method that returns nothing
// (DeleteTaskPushNotificationConfig): {} in 1.0 (google.protobuf.Empty),
// null in 0.3.
type Empty struct{}

// String is the state's name as 0.3 writes it (and as logs show it).
func (s TaskState) String() string {
	if int(s) < len(stateNames[V03]) {
		return stateNames[V03][s]
	}
	return "unknown"
}
