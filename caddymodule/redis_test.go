package caddymodule

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/internal/redistest"
)

// Two agents (two sites of one Caddy, each its own task manager, as two
// replicas are) on one Redis act as one: a task sent to A is read, listed,
// continued and canceled on B.
func TestIntegrationRedisReplicas(t *testing.T) {
	srv := redistest.Start(t)
	a := startAgent(t)
	portB := freePort(t)
	site := func(port int, name string) string {
		return fmt.Sprintf(`
:%d {
	bind 127.0.0.1
	a2a {
		skills "%s"
		upstream %s
		url http://127.0.0.1:%d/%s
		name "Replica %s"
		description "One of two"
		tasks {
			redis {
				address %s
				key_prefix replicas
			}
		}
	}
}
`, port, a.skills, a.upstream, port, name, name, srv.Addr())
	}
	initServer(t, a.tester, fmt.Sprintf("{\n\tadmin localhost:%d\n\tpersist_config off\n}\n", adminPort)+site(a.port, "a")+site(portB, "b"))

	call := func(port int, body string) rpcResponse {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/", port), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		resp, err := a.tester.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r rpcResponse
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatal(err)
		}
		if r.Error != nil {
			t.Fatalf("%.60s on :%d: %+v", body, port, r.Error)
		}
		return r
	}
	// A weather question without a city waits for input.
	sent := decodeTask10(t, call(a.port, sendMessage("weather", `{}`)).Result)
	if sent.Status.State != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("sent on A: %s", sent.Status.State)
	}
	got := decodeTask(t, call(portB, `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"`+sent.ID+`"}}`).Result)
	if got.ID != sent.ID || got.Status.State != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("read on B: %+v", got)
	}
	var list struct {
		Tasks []task `json:"tasks"`
	}
	if err := json.Unmarshal(call(portB, `{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{}}`).Result, &list); err != nil || len(list.Tasks) != 1 {
		t.Fatalf("listed on B: %+v, %v", list, err)
	}
	follow := `{"jsonrpc":"2.0","id":4,"method":"SendMessage","params":{"message":{"messageId":"m2","role":"ROLE_USER","taskId":"` +
		sent.ID + `","parts":[{"data":{"city":"Paris"}}]}}}`
	done := decodeTask10(t, call(portB, follow).Result)
	if done.Status.State != "TASK_STATE_COMPLETED" || done.weatherData("Paris") == "" {
		t.Fatalf("continued on B: %s, %+v", done.Status.State, done.Artifacts)
	}
	again := decodeTask(t, call(a.port, `{"jsonrpc":"2.0","id":5,"method":"GetTask","params":{"id":"`+sent.ID+`"}}`).Result)
	if again.Status.State != "TASK_STATE_COMPLETED" {
		t.Fatalf("read back on A: %s", again.Status.State)
	}
}
