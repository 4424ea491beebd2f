package server_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// urlPolicy refuses the URLs that contain "refused", and the configs
// whose token does.
type urlPolicy struct{}

func (urlPolicy) CheckURL(raw string) error {
	if strings.Contains(raw, "refused") {
		return errors.New("not this one")
	}
	return nil
}

func (urlPolicy) CheckHeaders(c *tasks.PushConfig) error {
	if strings.Contains(c.Token, "refused") {
		return errors.New("not this token")
	}
	return nil
}

// Push configs are their task's owner's: another caller's task answers
// every push method exactly as an unknown task does, and a config read
// back never shows its credentials.
func TestPushConfigsBelongToTheirOwner(t *testing.T) {
	a := newAuthAgent(t, nil, func(c *server.Config) { c.Push = urlPolicy{} })
	id := a.Task(aliceKey, "ask", map[string]any{})["id"].(string)
	const unknownID = "00000000-0000-4000-8000-000000000000"

	created := a.As(aliceKey, "CreateTaskPushNotificationConfig", map[string]any{"taskId": id, "id": "c1",
		"url": "https://hook.test/a", "authentication": map[string]any{"scheme": "Bearer", "credentials": "s3cret"}})
	if created.Error != nil || created.Result["id"] != "c1" || created.Result["taskId"] != id || strings.Contains(created.Raw, "s3cret") {
		t.Fatalf("create: %s", created.Raw)
	}
	if refused := a.As(aliceKey, "CreateTaskPushNotificationConfig", map[string]any{"taskId": id, "url": "https://refused.test/"}); refused.Error == nil ||
		refused.Error.Code != a2a.CodeInvalidParams {
		t.Errorf("a refused URL: %s", refused.Raw)
	}
	if refused := a.As(aliceKey, "CreateTaskPushNotificationConfig", map[string]any{"taskId": id, "url": "https://hook.test/c", "token": "refused"}); refused.Error == nil ||
		refused.Error.Code != a2a.CodeInvalidParams || !strings.Contains(refused.Error.Message, "config is refused: not this token") {
		t.Errorf("a config the checker refuses: %s", refused.Raw)
	}
	for _, m := range []struct {
		method string
		params func(id string) any
	}{
		{"CreateTaskPushNotificationConfig", func(id string) any { return map[string]any{"taskId": id, "url": "https://hook.test/b"} }},
		{"GetTaskPushNotificationConfig", func(id string) any { return map[string]any{"taskId": id, "id": "c1"} }},
		{"ListTaskPushNotificationConfigs", func(id string) any { return map[string]any{"taskId": id} }},
		{"DeleteTaskPushNotificationConfig", func(id string) any { return map[string]any{"taskId": id, "id": "c1"} }},
	} {
		theirs, unknown := a.As(bobKey, m.method, m.params(id)), a.As(bobKey, m.method, m.params(unknownID))
		if theirs.Status != http.StatusOK || theirs.Error == nil || theirs.Error.Code != a2a.CodeTaskNotFound {
			t.Errorf("%s of alice's task as bob: %s; want TaskNotFound", m.method, theirs.Raw)
		}
		if got, want := strings.ReplaceAll(theirs.Raw, id, "ID"), strings.ReplaceAll(unknown.Raw, unknownID, "ID"); got != want {
			t.Errorf("%s: alice's task answers bob\n%s\nan unknown task\n%s", m.method, got, want)
		}
	}
	list := a.As(aliceKey, "ListTaskPushNotificationConfigs", map[string]any{"taskId": id})
	configs, _ := list.Result["configs"].([]any)
	if list.Error != nil || len(configs) != 1 || strings.Contains(list.Raw, "s3cret") || !strings.Contains(list.Raw, `"scheme":"Bearer"`) {
		t.Errorf("alice's list after bob tried: %s", list.Raw)
	}
}
