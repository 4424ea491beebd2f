package a2a

import (
	"errors"
	"fmt"

	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// Push notifications on the wire: the results of the push config methods,
// and the body POSTed to a receiver.
//
// A notification is written in the version of the request that registered
// its config, because the receiver belongs to that client and reads what
// its version defines: 1.0 POSTs a StreamResponse, one per event (spec 1.0
// §3.1.7, §4.3.3, with Content-Type application/a2a+json), and 0.3 POSTs
// the Task as it stands after the change (0.3 §9.5, application/json).

// Bounds of one push notification config, checked when it is decoded: a
// config is stored with its task and travels with every notification.
const (
	MaxPushURLBytes         = 2048
	MaxPushTokenBytes       = 1024
	MaxPushIDBytes          = 256
	MaxPushCredentialsBytes = 4096
)

// checkPushConfig bounds what a client registers.
func checkPushConfig(c *TaskPushNotificationConfig) *Error {
	for _, f := range [...]struct {
		field string
		value string
		max   int
	}{
		{"url", c.URL, MaxPushURLBytes},
		{"token", c.Token, MaxPushTokenBytes},
		{"id", c.ID, MaxPushIDBytes},
	} {
		if len(f.value) > f.max {
			return InvalidParams(f.field, fmt.Sprintf("is %d bytes long; at most %d are accepted", len(f.value), f.max))
		}
	}
	if a := c.Authentication; a != nil {
		if len(a.Scheme) > MaxPushIDBytes {
			return InvalidParams("authentication", fmt.Sprintf("the scheme may be at most %d bytes long", MaxPushIDBytes))
		}
		if len(a.Credentials) > MaxPushCredentialsBytes {
			return InvalidParams("authentication.credentials", fmt.Sprintf("is %d bytes long; at most %d are accepted",
				len(a.Credentials), MaxPushCredentialsBytes))
		}
	}
	return nil
}

// appendPushConfigResult writes a config as Create and Get answer: 1.0 the
// TaskPushNotificationConfig, 0.3 the config wrapped with its taskId, the
// 0.3 proto the config wrapped with its resource name.
func appendPushConfigResult(dst []byte, f form, c *TaskPushNotificationConfig) []byte {
	switch f {
	case form10:
		return appendPushConfig(dst, V10, c)
	case formProto03:
		dst = jsonx.AppendString(append(dst, `{"name":`...), pushConfigName(c.TaskID, c.ID))
	default:
		dst = jsonx.AppendString(append(dst, `{"taskId":`...), c.TaskID)
	}
	dst = appendPushConfig(jsonx.AppendKey(dst, "pushNotificationConfig"), V03, c)
	return append(dst, '}')
}

func appendPushConfigList(dst []byte, f form, r *ListTaskPushNotificationConfigsResponse) []byte {
	if f != form03 {
		dst = append(dst, `{"configs":`...)
	}
	dst = append(dst, '[')
	for i := range r.Configs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendPushConfigResult(dst, f, &r.Configs[i])
	}
	dst = append(dst, ']')
	if f != form03 {
		if r.NextPageToken != "" {
			dst = appendStringField(dst, "nextPageToken", r.NextPageToken)
		}
		dst = append(dst, '}')
	}
	return dst
}

// PushContentType is the media type of a push notification's body in
// version v.
func PushContentType(v Version) string {
	if v == V10 {
		return "application/a2a+json"
	}
	return "application/json"
}

// AppendPushNotification appends the body of one push notification in
// version v: in 1.0 the event ev as a StreamResponse, in 0.3 the task
// (ev is then not used). See the comment at the top of this file.
func AppendPushNotification(dst []byte, v Version, task *Task, ev *StreamResponse) ([]byte, error) {
	if v == V10 {
		return appendStreamResponse(dst, form(v), ev)
	}
	if task == nil {
		return dst, errors.New("a2a: push notification: nil task")
	}
	return appendTask(dst, form(v), task)
}
