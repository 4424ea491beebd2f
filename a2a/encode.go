package a2a

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// Encoders of the model, in each form. Field order follows the proto.
// REQUIRED members are always written; optional ones only when set. In 0.3
// every object carries its "kind", contextId is always written (0.3
// requires it), and parts take the 0.3 text/file/data shapes.

// form is how the encoders write the model: the JSON of one protocol
// version, or formProto03, the ProtoJSON of the 0.3 proto that the 0.3
// specification's HTTP+JSON binding speaks (rest03.go): 1.0's shapes
// (results wrapped, enum names, no "kind") with the 0.3 proto's members.
type form uint8

const (
	form03           = form(V03)
	form10           = form(V10)
	formProto03 form = 2
)

func (f form) String() string {
	if f == formProto03 {
		return "0.3 ProtoJSON"
	}
	return Version(f).String()
}

func appendStreamResponse(dst []byte, f form, r *StreamResponse) ([]byte, error) {
	if r == nil {
		return dst, errors.New("nil stream response")
	}
	var err error
	switch {
	case r.Task != nil:
		dst, err = appendTask(openWrap(dst, f, "task"), f, r.Task)
	case r.Message != nil:
		dst, err = appendMessage(openWrap(dst, f, "message"), f, r.Message)
	case r.StatusUpdate != nil:
		dst, err = appendStatusUpdate(openWrap(dst, f, "statusUpdate"), f, r.StatusUpdate)
	case r.ArtifactUpdate != nil:
		dst, err = appendArtifactUpdate(openWrap(dst, f, "artifactUpdate"), f, r.ArtifactUpdate)
	default:
		return dst, errors.New("empty stream response")
	}
	if err != nil || f == form03 {
		return dst, err
	}
	return append(dst, '}'), nil
}

// openWrap opens the StreamResponse wrapper ({"task": ...); 0.3 writes
// the object itself.
func openWrap(dst []byte, f form, member string) []byte {
	if f == form03 {
		return dst
	}
	dst = append(dst, `{"`...)
	dst = append(dst, member...)
	return append(dst, `":`...)
}

func appendTask(dst []byte, f form, t *Task) ([]byte, error) {
	dst = append(dst, `{"id":`...)
	dst = jsonx.AppendString(dst, t.ID)
	var err error
	if t.ContextID != "" || f == form03 {
		dst = appendStringField(dst, "contextId", t.ContextID)
	}
	if dst, err = appendStatus(jsonx.AppendKey(dst, "status"), f, &t.Status); err != nil {
		return dst, fmt.Errorf("task %s: status: %w", t.ID, err)
	}
	if len(t.Artifacts) > 0 {
		dst = jsonx.AppendKey(dst, "artifacts")
		dst = append(dst, '[')
		for i := range t.Artifacts {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendArtifact(dst, f, &t.Artifacts[i]); err != nil {
				return dst, fmt.Errorf("task %s: artifacts[%d]: %w", t.ID, i, err)
			}
		}
		dst = append(dst, ']')
	}
	if len(t.History) > 0 {
		dst = jsonx.AppendKey(dst, "history")
		dst = append(dst, '[')
		for i := range t.History {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendMessage(dst, f, &t.History[i]); err != nil {
				return dst, fmt.Errorf("task %s: history[%d]: %w", t.ID, i, err)
			}
		}
		dst = append(dst, ']')
	}
	if dst, err = appendMetadata(dst, t.Metadata); err != nil {
		return dst, fmt.Errorf("task %s: %w", t.ID, err)
	}
	if f == form03 {
		dst = append(dst, `,"kind":"task"`...)
	}
	return append(dst, '}'), nil
}

func appendStatus(dst []byte, f form, s *TaskStatus) ([]byte, error) {
	if int(s.State) >= len(stateNames[f]) {
		return dst, fmt.Errorf("unknown task state %d", s.State)
	}
	dst = append(dst, `{"state":`...)
	dst = jsonx.AppendString(dst, stateNames[f][s.State])
	if s.Message != nil {
		var err error
		if dst, err = appendMessage(jsonx.AppendKey(dst, "message"), f, s.Message); err != nil {
			return dst, fmt.Errorf("message: %w", err)
		}
	}
	if !s.Timestamp.IsZero() {
		dst = appendTime(jsonx.AppendKey(dst, "timestamp"), s.Timestamp)
	}
	return append(dst, '}'), nil
}

func appendMessage(dst []byte, f form, m *Message) ([]byte, error) {
	if int(m.Role) >= len(roleNames[f]) || roleNames[f][m.Role] == "" {
		return dst, fmt.Errorf("message %s: role %d has no %s name", m.MessageID, m.Role, f)
	}
	dst = append(dst, `{"messageId":`...)
	dst = jsonx.AppendString(dst, m.MessageID)
	if m.ContextID != "" {
		dst = appendStringField(dst, "contextId", m.ContextID)
	}
	if m.TaskID != "" {
		dst = appendStringField(dst, "taskId", m.TaskID)
	}
	dst = appendStringField(dst, "role", roleNames[f][m.Role])
	parts := "parts"
	if f == formProto03 {
		parts = "content" // the 0.3 proto's name; it has no referenceTaskIds
	}
	var err error
	if dst, err = appendParts(jsonx.AppendKey(dst, parts), f, m.Parts); err != nil {
		return dst, fmt.Errorf("message %s: %w", m.MessageID, err)
	}
	if dst, err = appendMetadata(dst, m.Metadata); err != nil {
		return dst, fmt.Errorf("message %s: %w", m.MessageID, err)
	}
	if len(m.Extensions) > 0 {
		dst = jsonx.AppendStrings(jsonx.AppendKey(dst, "extensions"), m.Extensions)
	}
	if len(m.ReferenceTaskIDs) > 0 && f != formProto03 {
		dst = jsonx.AppendStrings(jsonx.AppendKey(dst, "referenceTaskIds"), m.ReferenceTaskIDs)
	}
	if f == form03 {
		dst = append(dst, `,"kind":"message"`...)
	}
	return append(dst, '}'), nil
}

func appendArtifact(dst []byte, f form, a *Artifact) ([]byte, error) {
	dst = append(dst, `{"artifactId":`...)
	dst = jsonx.AppendString(dst, a.ArtifactID)
	if a.Name != "" {
		dst = appendStringField(dst, "name", a.Name)
	}
	if a.Description != "" {
		dst = appendStringField(dst, "description", a.Description)
	}
	var err error
	if dst, err = appendParts(jsonx.AppendKey(dst, "parts"), f, a.Parts); err != nil {
		return dst, fmt.Errorf("artifact %s: %w", a.ArtifactID, err)
	}
	if dst, err = appendMetadata(dst, a.Metadata); err != nil {
		return dst, fmt.Errorf("artifact %s: %w", a.ArtifactID, err)
	}
	if len(a.Extensions) > 0 {
		dst = jsonx.AppendStrings(jsonx.AppendKey(dst, "extensions"), a.Extensions)
	}
	return append(dst, '}'), nil
}

func appendParts(dst []byte, f form, parts []Part) ([]byte, error) {
	dst = append(dst, '[')
	for i := range parts {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		switch f {
		case form10:
			dst, err = appendPart10(dst, &parts[i])
		case formProto03:
			dst, err = appendPartProto03(dst, &parts[i])
		default:
			dst, err = appendPart03(dst, &parts[i])
		}
		if err != nil {
			return dst, fmt.Errorf("parts[%d]: %w", i, err)
		}
	}
	return append(dst, ']'), nil
}

func appendPart10(dst []byte, p *Part) ([]byte, error) {
	var err error
	switch p.Kind {
	case PartText:
		dst = jsonx.AppendString(append(dst, `{"text":`...), p.Text)
	case PartRaw:
		dst = jsonx.AppendBase64(append(dst, `{"raw":`...), p.Raw)
	case PartURL:
		dst = jsonx.AppendString(append(dst, `{"url":`...), p.URL)
	case PartData:
		if dst, err = jsonx.AppendValue(append(dst, `{"data":`...), p.Data); err != nil {
			return dst, fmt.Errorf("data: %w", err)
		}
	default:
		return dst, fmt.Errorf("unknown part kind %d", p.Kind)
	}
	if dst, err = appendMetadata(dst, p.Metadata); err != nil {
		return dst, err
	}
	if p.Filename != "" {
		dst = appendStringField(dst, "filename", p.Filename)
	}
	if p.MediaType != "" {
		dst = appendStringField(dst, "mediaType", p.MediaType)
	}
	return append(dst, '}'), nil
}

// appendPart03 writes a part in 0.3 shape. Raw and URL parts become file
// parts; a media type or filename on a text or data part has no 0.3 field
// and is dropped.
func appendPart03(dst []byte, p *Part) ([]byte, error) {
	meta := p.Metadata
	var err error
	switch p.Kind {
	case PartText:
		dst = jsonx.AppendString(append(dst, `{"kind":"text","text":`...), p.Text)
	case PartRaw, PartURL:
		if p.Kind == PartRaw {
			dst = jsonx.AppendBase64(append(dst, `{"kind":"file","file":{"bytes":`...), p.Raw)
		} else {
			dst = jsonx.AppendString(append(dst, `{"kind":"file","file":{"uri":`...), p.URL)
		}
		if p.MediaType != "" {
			dst = appendStringField(dst, "mimeType", p.MediaType)
		}
		if p.Filename != "" {
			dst = appendStringField(dst, "name", p.Filename)
		}
		dst = append(dst, '}')
	case PartData:
		var wrapped bool
		if dst, wrapped, err = appendDataObject(append(dst, `{"kind":"data","data":`...), p.Data); err != nil {
			return dst, err
		}
		if wrapped {
			meta = maps.Clone(meta)
			if meta == nil {
				meta = make(map[string]any, 1)
			}
			meta[dataPartCompat] = true
		}
	default:
		return dst, fmt.Errorf("unknown part kind %d", p.Kind)
	}
	if dst, err = appendMetadata(dst, meta); err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// appendDataObject appends a data part's value as 0.3 holds it, an
// object: a value that is none is wrapped as {"value": v}, and wrapped
// says so.
func appendDataObject(dst []byte, data any) (out []byte, wrapped bool, err error) {
	mark := len(dst)
	if dst, err = jsonx.AppendValue(dst, data); err != nil {
		return dst, false, fmt.Errorf("data: %w", err)
	}
	if firstByte(dst[mark:]) == '{' {
		return dst, false, nil
	}
	value := slices.Clone(dst[mark:])
	return append(append(append(dst[:mark], `{"value":`...), value...), '}'), true, nil
}

// firstByte returns the first byte of JSON text that is not white space.
func firstByte(b []byte) byte {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c
		}
	}
	return 0
}

func appendStatusUpdate(dst []byte, f form, e *TaskStatusUpdateEvent) ([]byte, error) {
	dst = append(dst, `{"taskId":`...)
	dst = jsonx.AppendString(dst, e.TaskID)
	dst = appendStringField(dst, "contextId", e.ContextID)
	var err error
	if dst, err = appendStatus(jsonx.AppendKey(dst, "status"), f, &e.Status); err != nil {
		return dst, fmt.Errorf("task %s: status: %w", e.TaskID, err)
	}
	if f != form10 {
		dst = strconv.AppendBool(append(dst, `,"final":`...), e.Final)
	}
	if dst, err = appendMetadata(dst, e.Metadata); err != nil {
		return dst, fmt.Errorf("task %s: %w", e.TaskID, err)
	}
	if f == form03 {
		dst = append(dst, `,"kind":"status-update"`...)
	}
	return append(dst, '}'), nil
}

func appendArtifactUpdate(dst []byte, f form, e *TaskArtifactUpdateEvent) ([]byte, error) {
	dst = append(dst, `{"taskId":`...)
	dst = jsonx.AppendString(dst, e.TaskID)
	dst = appendStringField(dst, "contextId", e.ContextID)
	var err error
	if dst, err = appendArtifact(jsonx.AppendKey(dst, "artifact"), f, &e.Artifact); err != nil {
		return dst, fmt.Errorf("task %s: %w", e.TaskID, err)
	}
	if e.Append {
		dst = append(dst, `,"append":true`...)
	}
	if e.LastChunk {
		dst = append(dst, `,"lastChunk":true`...)
	}
	if dst, err = appendMetadata(dst, e.Metadata); err != nil {
		return dst, fmt.Errorf("task %s: %w", e.TaskID, err)
	}
	if f == form03 {
		dst = append(dst, `,"kind":"artifact-update"`...)
	}
	return append(dst, '}'), nil
}

// flushAt is how much of a large answer is encoded before it is written.
const flushAt = 64 << 10

func appendListTasks(dst []byte, f form, r *ListTasksResponse) ([]byte, error) {
	return appendListTasksFlushing(dst, f, r, nil)
}

// appendListTasksFlushing appends a ListTasks answer; with a flush, each
// time dst passes flushAt bytes between two tasks it hands dst to flush and
// goes on with the buffer flush returns, so that a large page never sits
// whole in memory.
func appendListTasksFlushing(dst []byte, f form, r *ListTasksResponse, flush func([]byte) ([]byte, error)) ([]byte, error) {
	if f != form10 {
		return dst, errors.New("ListTasks has no 0.3 form")
	}
	if r == nil {
		return dst, errors.New("nil list")
	}
	dst = append(dst, `{"tasks":[`...)
	for i := range r.Tasks {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendTask(dst, f, &r.Tasks[i]); err != nil {
			return dst, fmt.Errorf("tasks[%d]: %w", i, err)
		}
		if flush != nil && len(dst) >= flushAt {
			if dst, err = flush(dst); err != nil {
				return dst, err
			}
		}
	}
	dst = appendStringField(append(dst, ']'), "nextPageToken", r.NextPageToken)
	dst = strconv.AppendInt(append(dst, `,"pageSize":`...), int64(r.PageSize), 10)
	dst = strconv.AppendInt(append(dst, `,"totalSize":`...), int64(r.TotalSize), 10)
	return append(dst, '}'), nil
}
