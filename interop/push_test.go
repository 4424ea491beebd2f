package interop_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// TestPushConfigs: the official Go SDK's push config methods, in 1.0 and
// 0.3, against an agent with push enabled; a receiver on loopback gets the
// task's updates.
func TestPushConfigs(t *testing.T) {
	c := startSignedCaddyWith(t, "generate_key", `push {
			allow_insecure
			allow_private
		}`)
	type post struct {
		path, auth, token string
		body              string
	}
	got := make(chan post, 64)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- post{r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-A2A-Notification-Token"), string(body)}
	}))
	t.Cleanup(hook.Close)

	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			client := newClientAt(t, p, c.Base+"/")
			ctx := ctxTimeout(t, 30*time.Second)
			task := sendForTask(t, client, skillMessage("weather", map[string]any{}))
			if task.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("state %s, want input-required", task.Status.State)
			}
			url := hook.URL + "/" + p.name
			created, err := client.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: task.ID, ID: "cfg-" + p.name, URL: url, Token: "tok"})
			if err != nil || created.ID != "cfg-"+p.name || created.URL != url || created.TaskID != task.ID {
				t.Fatalf("CreateTaskPushConfig: %+v, %v", created, err)
			}
			read, err := client.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: task.ID, ID: created.ID})
			if err != nil || read.URL != url || read.Token != "tok" {
				t.Fatalf("GetTaskPushConfig: %+v, %v", read, err)
			}
			if list, err := client.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: task.ID}); err != nil || len(list) != 1 {
				t.Fatalf("ListTaskPushConfigs: %+v, %v", list, err)
			}

			follow := a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewDataPart(map[string]any{"city": "Paris"}))
			if done := sendForTask(t, client, follow); done.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("after the follow-up: %s", done.Status.State)
			}
			for completed := false; !completed; {
				select {
				case n := <-got:
					if n.path != "/"+p.name || n.token != "tok" || !strings.HasPrefix(n.auth, "Bearer ") || !strings.Contains(n.body, string(task.ID)) {
						t.Fatalf("notification %+v", n)
					}
					completed = strings.Contains(n.body, "TASK_STATE_COMPLETED") || strings.Contains(n.body, `"completed"`)
				case <-ctx.Done():
					t.Fatal("the completed task was not notified")
				}
			}

			if err := client.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: task.ID, ID: created.ID}); err != nil {
				t.Fatalf("DeleteTaskPushConfig: %v", err)
			}
			if list, err := client.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: task.ID}); err != nil || len(list) != 0 {
				t.Fatalf("ListTaskPushConfigs after delete: %+v, %v", list, err)
			}
		})
	}
}
