package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
)

// The stored form of a task: the 1.0 ProtoJSON that GetTask answers with,
// so that a store shared by replicas keeps tasks in the protocol's own
// shape, written and read by the one codec. Decoding checks enum names,
// parts, base64 and timestamps, but not the proto's REQUIRED fields: it
// reads back what an agent wrote. Requests are checked in full by
// DecodeRequest.

type wireStatus[P wirePart] struct {
	State     string          `json:"state"`
	Message   *wireMessage[P] `json:"message"`
	Timestamp string          `json:"timestamp"`
}

type wireArtifact[P wirePart] struct {
	ArtifactID  string         `json:"artifactId"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parts       []P            `json:"parts"`
	Metadata    map[string]any `json:"metadata"`
	Extensions  []string       `json:"extensions"`
}

type wireTask[P wirePart] struct {
	Kind      string            `json:"kind"` // 0.3
	ID        string            `json:"id"`
	ContextID string            `json:"contextId"`
	Status    wireStatus[P]     `json:"status"`
	Artifacts []wireArtifact[P] `json:"artifacts"`
	History   []wireMessage[P]  `json:"history"`
	Metadata  map[string]any    `json:"metadata"`
}

func decodeTask[P wirePart](d decoder, w *wireTask[P], t *Task) *Error {
	if d.v == V03 && w.Kind != "" && w.Kind != "task" {
		return InvalidParams("kind", `must be "task"`)
	}
	*t = Task{ID: w.ID, ContextID: w.ContextID, Metadata: w.Metadata}
	if err := decodeStatus(d, &w.Status, &t.Status); err != nil {
		return within(err, "status")
	}
	if w.Artifacts != nil {
		t.Artifacts = make([]Artifact, len(w.Artifacts))
		for i := range w.Artifacts {
			if err := decodeArtifact(&w.Artifacts[i], &t.Artifacts[i]); err != nil {
				return withinIndex(err, "artifacts", i)
			}
		}
	}
	if w.History != nil {
		t.History = make([]Message, len(w.History))
		for i := range w.History {
			if err := decodeMessage(d, &w.History[i], &t.History[i]); err != nil {
				return withinIndex(err, "history", i)
			}
		}
	}
	return nil
}

func decodeStatus[P wirePart](d decoder, w *wireStatus[P], s *TaskStatus) *Error {
	state, ok := parseState(d.v, w.State)
	if !ok {
		return InvalidParams("state", stateChoices[d.v])
	}
	s.State = state
	if w.Timestamp != "" {
		if s.Timestamp, ok = parseTime(w.Timestamp); !ok {
			return InvalidParams("timestamp", "must be an ISO 8601 timestamp")
		}
	}
	if w.Message != nil {
		s.Message = new(Message)
		return within(decodeMessage(d, w.Message, s.Message), "message")
	}
	return nil
}

func decodeArtifact[P wirePart](w *wireArtifact[P], a *Artifact) *Error {
	parts, err := decodeParts(w.Parts)
	if err != nil {
		return err
	}
	*a = Artifact{
		ArtifactID:  w.ArtifactID,
		Name:        w.Name,
		Description: w.Description,
		Parts:       parts,
		Metadata:    w.Metadata,
		Extensions:  w.Extensions,
	}
	return nil
}

// AppendTask appends t encoded as version v writes it (a shared store's
// form of a task): dst may be a buffer reused from task to task.
func AppendTask(dst []byte, v Version, t *Task) ([]byte, error) {
	if t == nil {
		return dst, fmt.Errorf("a2a: marshal %s task: nil task", v)
	}
	b, err := appendTask(dst, form(v), t)
	if err != nil {
		return dst, fmt.Errorf("a2a: marshal %s task: %w", v, err)
	}
	return b, nil
}

// UnmarshalTask decodes a task written in version v.
func UnmarshalTask(v Version, b []byte) (*Task, error) {
	t := new(Task)
	var err error
	if v == V10 {
		err = unmarshalTask[part10](v, b, t)
	} else {
		err = unmarshalTask[part03](v, b, t)
	}
	if err != nil {
		return nil, fmt.Errorf("a2a: unmarshal %s task: %w", v, err)
	}
	return t, nil
}

func unmarshalTask[P wirePart](v Version, b []byte, t *Task) error {
	var w wireTask[P]
	if err := unmarshalValue(b, &w); err != nil {
		return err
	}
	return asError(decodeTask(decoder{v: v}, &w, t))
}

// unmarshalValue decodes a standalone document: syntax errors stay as
// encoding/json reports them, type errors name the field.
func unmarshalValue(b []byte, v any) error {
	err := json.Unmarshal(b, v)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return typeError(b, te)
	}
	return err
}

// asError returns e as an error, keeping a nil *Error nil.
func asError(e *Error) error {
	if e == nil {
		return nil
	}
	return e
}

// AppendEvent appends a task event (a status or artifact update) in its
// 1.0 StreamResponse form: how a shared store passes events between
// replicas.
func AppendEvent(dst []byte, ev *StreamResponse) ([]byte, error) {
	if ev == nil || (ev.StatusUpdate == nil && ev.ArtifactUpdate == nil) {
		return dst, errors.New("a2a: append event: not a status or artifact update")
	}
	return appendStreamResponse(dst, form10, ev)
}

// UnmarshalEvent decodes what AppendEvent wrote. A status update is final
// when its state is terminal or interrupted, as the 1.0 form does not say.
func UnmarshalEvent(b []byte) (*StreamResponse, error) {
	var w struct {
		StatusUpdate *struct {
			TaskID    string             `json:"taskId"`
			ContextID string             `json:"contextId"`
			Status    wireStatus[part10] `json:"status"`
			Metadata  map[string]any     `json:"metadata"`
		} `json:"statusUpdate"`
		ArtifactUpdate *struct {
			TaskID    string               `json:"taskId"`
			ContextID string               `json:"contextId"`
			Artifact  wireArtifact[part10] `json:"artifact"`
			Append    bool                 `json:"append"`
			LastChunk bool                 `json:"lastChunk"`
			Metadata  map[string]any       `json:"metadata"`
		} `json:"artifactUpdate"`
	}
	if err := unmarshalValue(b, &w); err != nil {
		return nil, fmt.Errorf("a2a: unmarshal event: %w", err)
	}
	ev := new(StreamResponse)
	switch {
	case w.StatusUpdate != nil:
		u := w.StatusUpdate
		ev.StatusUpdate = &TaskStatusUpdateEvent{TaskID: u.TaskID, ContextID: u.ContextID, Metadata: u.Metadata}
		if err := decodeStatus(decoder{v: V10}, &u.Status, &ev.StatusUpdate.Status); err != nil {
			return nil, fmt.Errorf("a2a: unmarshal event: %w", within(err, "statusUpdate.status"))
		}
		state := ev.StatusUpdate.Status.State
		ev.StatusUpdate.Final = state.Terminal() || state.Interrupted()
	case w.ArtifactUpdate != nil:
		u := w.ArtifactUpdate
		ev.ArtifactUpdate = &TaskArtifactUpdateEvent{TaskID: u.TaskID, ContextID: u.ContextID,
			Append: u.Append, LastChunk: u.LastChunk, Metadata: u.Metadata}
		if err := decodeArtifact(&u.Artifact, &ev.ArtifactUpdate.Artifact); err != nil {
			return nil, fmt.Errorf("a2a: unmarshal event: %w", within(err, "artifactUpdate.artifact"))
		}
	default:
		return nil, errors.New("a2a: unmarshal event: neither a status nor an artifact update")
	}
	return ev, nil
}
