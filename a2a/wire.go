package a2a

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// Decoding goes through encoding/json into wire structs shaped like the
// JSON of one version, then converts them into the model, checking what
// encoding/json cannot: enum names, one content per part, base64, and (for
// requests) the proto's REQUIRED fields. Unknown fields are ignored (spec 1.0
// §5.7). The structs are shared by both versions where the JSON agrees; the
// part type, which does not, is a type parameter.

// decoder converts wire structs of one version into the model.
type decoder struct {
	v Version
	// strict enforces REQUIRED fields: requests are checked, results the
	// tests read back (readback_test.go) are not.
	strict bool
}

type wireMessage[P wirePart] struct {
	Kind             string         `json:"kind"` // 0.3
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId"`
	TaskID           string         `json:"taskId"`
	Role             string         `json:"role"`
	Parts            []P            `json:"parts"`
	Metadata         map[string]any `json:"metadata"`
	Extensions       []string       `json:"extensions"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds"`
}

// wirePart is a part as one form writes it.
type wirePart interface {
	part10 | part03 | partProto03
	model() (Part, *Error)
}

// jsonValue is any JSON value, null included, with its presence recorded.
type jsonValue struct {
	set bool
	v   any
}

func (j *jsonValue) UnmarshalJSON(b []byte) error {
	j.set = true
	return jsonx.UnmarshalKeepingIntegers(b, &j.v)
}

func decodeMessage[P wirePart](d decoder, w *wireMessage[P], m *Message) *Error {
	if d.v == V03 && w.Kind != "" && w.Kind != "message" {
		return InvalidParams("kind", `must be "message"`)
	}
	role, ok := parseRole(d.v, w.Role)
	if !ok {
		return InvalidParams("role", roleChoices[d.v])
	}
	if d.strict {
		switch {
		case w.MessageID == "":
			return InvalidParams("messageId", "is required")
		case role == RoleUnspecified:
			return InvalidParams("role", "is required: "+roleChoices[d.v])
		case len(w.Parts) == 0:
			return InvalidParams("parts", "at least one part is required")
		}
	}
	parts, err := decodeParts(w.Parts)
	if err != nil {
		return err
	}
	*m = Message{
		MessageID:        w.MessageID,
		ContextID:        w.ContextID,
		TaskID:           w.TaskID,
		Role:             role,
		Parts:            parts,
		Metadata:         w.Metadata,
		Extensions:       w.Extensions,
		ReferenceTaskIDs: w.ReferenceTaskIDs,
	}
	return nil
}

func decodeParts[P wirePart](ws []P) ([]Part, *Error) {
	if ws == nil {
		return nil, nil
	}
	if len(ws) > MaxParts {
		return nil, InvalidParams("parts", fmt.Sprintf("holds %d parts; a message may hold %d", len(ws), MaxParts))
	}
	parts := make([]Part, len(ws))
	for i := range ws {
		part, err := ws[i].model()
		if err != nil {
			return nil, withinIndex(err, "parts", i)
		}
		parts[i] = part
	}
	return parts, nil
}

// decodeBase64 accepts what ProtoJSON parsers accept for bytes: standard or
// URL-safe alphabet, with or without padding.
func decodeBase64(s string) ([]byte, error) {
	url := strings.ContainsAny(s, "-_")
	padded := strings.IndexByte(s, '=') >= 0 || len(s)%4 == 0
	enc := base64.StdEncoding
	switch {
	case url && padded:
		enc = base64.URLEncoding
	case url:
		enc = base64.RawURLEncoding
	case !padded:
		enc = base64.RawStdEncoding
	}
	return enc.DecodeString(s)
}

// parseTime reads an ISO 8601 timestamp. A timestamp without a zone, as in
// the 0.3 specification's examples, is taken as UTC.
func parseTime(s string) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), true
	}
	if t, err := time.Parse("2006-01-02T15:04:05.999999999", s); err == nil {
		return t, true
	}
	return time.Time{}, false
}

// Enum names on the wire, by form (a version's, or the 0.3 proto's) and
// the model's value.
var (
	roleNames = [3][3]string{
		V03:         {RoleUnspecified: "", RoleUser: "user", RoleAgent: "agent"},
		V10:         {RoleUnspecified: "ROLE_UNSPECIFIED", RoleUser: "ROLE_USER", RoleAgent: "ROLE_AGENT"},
		formProto03: {RoleUnspecified: "ROLE_UNSPECIFIED", RoleUser: "ROLE_USER", RoleAgent: "ROLE_AGENT"},
	}
	stateNames = [3][9]string{
		V03: {
			TaskStateUnspecified:   "unknown",
			TaskStateSubmitted:     "submitted",
			TaskStateWorking:       "working",
			TaskStateCompleted:     "completed",
			TaskStateFailed:        "failed",
			TaskStateCanceled:      "canceled",
			TaskStateInputRequired: "input-required",
			TaskStateRejected:      "rejected",
			TaskStateAuthRequired:  "auth-required",
		},
		V10: {
			TaskStateUnspecified:   "TASK_STATE_UNSPECIFIED",
			TaskStateSubmitted:     "TASK_STATE_SUBMITTED",
			TaskStateWorking:       "TASK_STATE_WORKING",
			TaskStateCompleted:     "TASK_STATE_COMPLETED",
			TaskStateFailed:        "TASK_STATE_FAILED",
			TaskStateCanceled:      "TASK_STATE_CANCELED",
			TaskStateInputRequired: "TASK_STATE_INPUT_REQUIRED",
			TaskStateRejected:      "TASK_STATE_REJECTED",
			TaskStateAuthRequired:  "TASK_STATE_AUTH_REQUIRED",
		},
		formProto03: { // 1.0's, but for CANCELLED
			TaskStateUnspecified:   "TASK_STATE_UNSPECIFIED",
			TaskStateSubmitted:     "TASK_STATE_SUBMITTED",
			TaskStateWorking:       "TASK_STATE_WORKING",
			TaskStateCompleted:     "TASK_STATE_COMPLETED",
			TaskStateFailed:        "TASK_STATE_FAILED",
			TaskStateCanceled:      "TASK_STATE_CANCELLED",
			TaskStateInputRequired: "TASK_STATE_INPUT_REQUIRED",
			TaskStateRejected:      "TASK_STATE_REJECTED",
			TaskStateAuthRequired:  "TASK_STATE_AUTH_REQUIRED",
		},
	}
	roleChoices = [2]string{
		V03: `must be "user" or "agent"`,
		V10: "must be ROLE_USER or ROLE_AGENT",
	}
	stateChoices = [2]string{
		V03: "must be one of submitted, working, input-required, completed, canceled, failed, rejected, auth-required",
		V10: "must be one of TASK_STATE_SUBMITTED, TASK_STATE_WORKING, TASK_STATE_INPUT_REQUIRED, " +
			"TASK_STATE_COMPLETED, TASK_STATE_CANCELED, TASK_STATE_FAILED, TASK_STATE_REJECTED, TASK_STATE_AUTH_REQUIRED",
	}
)

// parseRole reads a role name; absent means unspecified.
func parseRole(v Version, s string) (Role, bool) {
	if s == "" {
		return RoleUnspecified, true
	}
	for r, name := range roleNames[v] {
		if name == s {
			return Role(r), true
		}
	}
	return RoleUnspecified, false
}

// parseState reads a task state name; absent means unspecified.
func parseState(v Version, s string) (TaskState, bool) {
	if s == "" {
		return TaskStateUnspecified, true
	}
	for st, name := range stateNames[v] {
		if name == s {
			return TaskState(st), true
		}
	}
	return TaskStateUnspecified, false
}
