package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// Anonymous callers share one owner, but each client address holds its
// own share of the store: one client that fills its share with tasks
// waiting for input does not lock out the others. IPv6 clients count by
// their /48: one host holds many /64s.
func TestAnonymousShareIsPerClient(t *testing.T) {
	a := newAgent(t, func(cfg *server.Config) {
		cfg.Tasks = tasks.NewManager(tasks.Options{MaxLivePerOwner: 2})
		t.Cleanup(cfg.Tasks.Close)
		cfg.ClientAddress = func(r *http.Request) string { return r.Header.Get("X-Test-Client") }
	})
	// A weather question without a city waits for input: a live task.
	ask := func(client string) rpcAnswer {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, a.URL+"/", strings.NewReader(rpcBody("SendMessage",
			map[string]any{"message": message("1.0", "weather", map[string]any{})})))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		req.Header.Set("X-Test-Client", client)
		resp, err := a.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var ans rpcAnswer
		if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
			t.Fatal(err)
		}
		return ans
	}
	for _, client := range []string{"192.0.2.1", "2001:db8::1"} {
		for range 2 {
			if ans := ask(client); ans.Error != nil || stateOf(taskOf("1.0", ans.Result)) != wireState("1.0", a2a.TaskStateInputRequired) {
				t.Fatalf("client %s: %+v, want an input-required task", client, ans)
			}
		}
	}
	for _, client := range []string{"192.0.2.1", "2001:db8::2", "2001:db8:0:1::1"} { // the same /48 as 2001:db8::1
		if ans := ask(client); ans.Error == nil || ans.Error.Code != a2a.CodeInternalError ||
			!strings.Contains(string(ans.Error.Data), "RESOURCE_EXHAUSTED") {
			t.Errorf("client %s past its share: %+v, want RESOURCE_EXHAUSTED", client, ans)
		}
	}
	for _, client := range []string{"192.0.2.2", "2001:db8:1::1"} {
		if ans := ask(client); ans.Error != nil {
			t.Errorf("another client %s was locked out: %+v", client, ans.Error)
		}
	}
}
