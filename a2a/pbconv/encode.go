package pbconv

import (
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
)

// The answers are converted field by field rather than through JSON: they
// are on every call's path (a task, each event of a stream), and the
// ProtoJSON round trip cost a third of a gRPC SendMessage's CPU. TestAnswers
// holds this conversion to the JSON codec's output, so the two cannot drift.
// The model's enums have the proto's numbers (a2a.TaskState, a2a.Role).

// SendMessageResponse converts the answer of SendMessage (a task or a
// message).
func SendMessageResponse(r *a2a.StreamResponse) (*a2apb.SendMessageResponse, error) {
	out := new(a2apb.SendMessageResponse)
	switch {
	case r.Task != nil:
		t, err := Task(r.Task)
		if err != nil {
			return nil, err
		}
		out.Payload = &a2apb.SendMessageResponse_Task{Task: t}
	case r.Message != nil:
		m, err := message(r.Message)
		if err != nil {
			return nil, err
		}
		out.Payload = &a2apb.SendMessageResponse_Message{Message: m}
	default:
		return nil, fmt.Errorf("pbconv: a SendMessage answer holds neither a task nor a message")
	}
	return out, nil
}

// StreamResponse converts one event of a stream.
func StreamResponse(r *a2a.StreamResponse) (*a2apb.StreamResponse, error) {
	out := new(a2apb.StreamResponse)
	switch {
	case r.Task != nil:
		t, err := Task(r.Task)
		if err != nil {
			return nil, err
		}
		out.Payload = &a2apb.StreamResponse_Task{Task: t}
	case r.Message != nil:
		m, err := message(r.Message)
		if err != nil {
			return nil, err
		}
		out.Payload = &a2apb.StreamResponse_Message{Message: m}
	case r.StatusUpdate != nil:
		e := r.StatusUpdate
		ev := &a2apb.TaskStatusUpdateEvent{TaskId: e.TaskID, ContextId: e.ContextID}
		var err error
		if ev.Status, err = taskStatus(&e.Status); err != nil {
			return nil, err
		}
		if ev.Metadata, err = structOf(e.Metadata); err != nil {
			return nil, err
		}
		out.Payload = &a2apb.StreamResponse_StatusUpdate{StatusUpdate: ev}
	case r.ArtifactUpdate != nil:
		e := r.ArtifactUpdate
		ev := &a2apb.TaskArtifactUpdateEvent{TaskId: e.TaskID, ContextId: e.ContextID, Append: e.Append, LastChunk: e.LastChunk}
		var err error
		if ev.Artifact, err = artifact(&e.Artifact); err != nil {
			return nil, err
		}
		if ev.Metadata, err = structOf(e.Metadata); err != nil {
			return nil, err
		}
		out.Payload = &a2apb.StreamResponse_ArtifactUpdate{ArtifactUpdate: ev}
	default:
		return nil, fmt.Errorf("pbconv: an empty stream event")
	}
	return out, nil
}

// Task converts a task.
func Task(t *a2a.Task) (*a2apb.Task, error) {
	out := &a2apb.Task{Id: t.ID, ContextId: t.ContextID}
	var err error
	if out.Status, err = taskStatus(&t.Status); err != nil {
		return nil, err
	}
	if len(t.Artifacts) > 0 {
		out.Artifacts = make([]*a2apb.Artifact, len(t.Artifacts))
		for i := range t.Artifacts {
			if out.Artifacts[i], err = artifact(&t.Artifacts[i]); err != nil {
				return nil, fmt.Errorf("artifacts[%d]: %w", i, err)
			}
		}
	}
	if len(t.History) > 0 {
		out.History = make([]*a2apb.Message, len(t.History))
		for i := range t.History {
			if out.History[i], err = message(&t.History[i]); err != nil {
				return nil, fmt.Errorf("history[%d]: %w", i, err)
			}
		}
	}
	if out.Metadata, err = structOf(t.Metadata); err != nil {
		return nil, err
	}
	return out, nil
}

// ListTasksResponse converts the answer of ListTasks.
func ListTasksResponse(r *a2a.ListTasksResponse) (*a2apb.ListTasksResponse, error) {
	out := &a2apb.ListTasksResponse{NextPageToken: r.NextPageToken, PageSize: r.PageSize, TotalSize: r.TotalSize,
		Tasks: make([]*a2apb.Task, len(r.Tasks))}
	for i := range r.Tasks {
		t, err := Task(&r.Tasks[i])
		if err != nil {
			return nil, fmt.Errorf("tasks[%d]: %w", i, err)
		}
		out.Tasks[i] = t
	}
	return out, nil
}

// PushConfig converts a push notification config.
func PushConfig(c *a2a.TaskPushNotificationConfig) *a2apb.TaskPushNotificationConfig {
	out := &a2apb.TaskPushNotificationConfig{Tenant: c.Tenant, Id: c.ID, TaskId: c.TaskID, Url: c.URL, Token: c.Token}
	if a := c.Authentication; a != nil {
		out.Authentication = &a2apb.AuthenticationInfo{Scheme: a.Scheme, Credentials: a.Credentials}
	}
	return out
}

// PushConfigs converts the answer of ListTaskPushNotificationConfigs.
func PushConfigs(r *a2a.ListTaskPushNotificationConfigsResponse) *a2apb.ListTaskPushNotificationConfigsResponse {
	out := &a2apb.ListTaskPushNotificationConfigsResponse{NextPageToken: r.NextPageToken,
		Configs: make([]*a2apb.TaskPushNotificationConfig, len(r.Configs))}
	for i := range r.Configs {
		out.Configs[i] = PushConfig(&r.Configs[i])
	}
	return out
}

func taskStatus(s *a2a.TaskStatus) (*a2apb.TaskStatus, error) {
	out := &a2apb.TaskStatus{State: a2apb.TaskState(s.State)}
	if !s.Timestamp.IsZero() {
		// Milliseconds, as the JSON codec writes them.
		out.Timestamp = timestamppb.New(s.Timestamp.Truncate(time.Millisecond))
	}
	if s.Message != nil {
		m, err := message(s.Message)
		if err != nil {
			return nil, fmt.Errorf("status.message: %w", err)
		}
		out.Message = m
	}
	return out, nil
}

func message(m *a2a.Message) (*a2apb.Message, error) {
	out := &a2apb.Message{MessageId: m.MessageID, ContextId: m.ContextID, TaskId: m.TaskID, Role: a2apb.Role(m.Role),
		Extensions: m.Extensions, ReferenceTaskIds: m.ReferenceTaskIDs}
	var err error
	if out.Parts, err = parts(m.Parts); err != nil {
		return nil, err
	}
	if out.Metadata, err = structOf(m.Metadata); err != nil {
		return nil, err
	}
	return out, nil
}

func artifact(a *a2a.Artifact) (*a2apb.Artifact, error) {
	out := &a2apb.Artifact{ArtifactId: a.ArtifactID, Name: a.Name, Description: a.Description, Extensions: a.Extensions}
	var err error
	if out.Parts, err = parts(a.Parts); err != nil {
		return nil, err
	}
	if out.Metadata, err = structOf(a.Metadata); err != nil {
		return nil, err
	}
	return out, nil
}

func parts(ps []a2a.Part) ([]*a2apb.Part, error) {
	out := make([]*a2apb.Part, len(ps))
	for i := range ps {
		p := &ps[i]
		q := &a2apb.Part{Filename: p.Filename, MediaType: p.MediaType}
		switch p.Kind {
		case a2a.PartText:
			q.Content = &a2apb.Part_Text{Text: p.Text}
		case a2a.PartRaw:
			q.Content = &a2apb.Part_Raw{Raw: p.Raw}
		case a2a.PartURL:
			q.Content = &a2apb.Part_Url{Url: p.URL}
		case a2a.PartData:
			v, err := value(p.Data)
			if err != nil {
				return nil, fmt.Errorf("parts[%d].data: %w", i, err)
			}
			q.Content = &a2apb.Part_Data{Data: v}
		default:
			return nil, fmt.Errorf("parts[%d]: unknown part kind %d", i, p.Kind)
		}
		var err error
		if q.Metadata, err = structOf(p.Metadata); err != nil {
			return nil, fmt.Errorf("parts[%d]: %w", i, err)
		}
		out[i] = q
	}
	return out, nil
}

func structOf(m map[string]any) (*structpb.Struct, error) {
	if m == nil {
		return nil, nil
	}
	v, err := value(m)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	return v.GetStructValue(), nil
}

// value converts a JSON value of the model: already-encoded JSON straight
// to the Value's wire form (rawValue), a decoded one by structpb, or, if
// structpb does not know a type in it (json.RawMessage, json.Number), as
// the JSON it encodes to.
func value(v any) (*structpb.Value, error) {
	if raw, ok := v.(json.RawMessage); ok {
		return rawValue(raw)
	}
	out, err := structpb.NewValue(v)
	if err == nil {
		return out, nil
	}
	doc, jsonErr := json.Marshal(v)
	if jsonErr != nil {
		return nil, fmt.Errorf("%w (%w)", err, jsonErr)
	}
	return rawValue(doc)
}
