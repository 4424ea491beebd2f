package caddymodule

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/internal/redistest"
)

// One task record in Redis that the store cannot believe (here a string
// where the task's hash belongs) does not take ListTasks down for its
// owner, nor the replica out of rotation: the other tasks are listed,
// GetTask of that one answers an internal error that says the record is
// corrupt (DATA_LOSS, not UNAVAILABLE: retrying does not help), and the
// readiness probe stays ready.
func TestIntegrationRedisCorruptTask(t *testing.T) {
	srv := redistest.Start(t)
	a := startAgent(t)
	healthPort := freePort(t)
	initServer(t, a.tester, fmt.Sprintf("{\n\tadmin localhost:%d\n\tpersist_config off\n}\n", adminPort)+
		replicaSite(a.port, "corrupt", a.skills, a.upstream, srv.Addr(), "corrupt", "")+
		fmt.Sprintf(":%d {\n\tbind 127.0.0.1\n\ta2a_health /readyz ready\n}\n", healthPort))
	call := func(body string) rpcResponse {
		t.Helper()
		r := a.call("1.0", body)
		if r.Error != nil {
			t.Fatalf("%.60s: %+v", body, r.Error)
		}
		return r
	}
	ids := make([]string, 3)
	for i := range ids {
		ids[i] = decodeTask10(t, call(sendMessage("weather", `{"city":"Paris"}`)).Result).ID
	}
	client := srv.Client(t)
	keys, err := client.Keys(t.Context(), "{corrupt}:*:t:"+ids[1]).Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("the task's key: %v, %v", keys, err)
	}
	if err := client.Del(t.Context(), keys[0]).Err(); err != nil {
		t.Fatal(err)
	}
	if err := client.Set(t.Context(), keys[0], "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}

	var list struct {
		Tasks []task `json:"tasks"`
	}
	if err := json.Unmarshal(call(`{"jsonrpc":"2.0","id":2,"method":"ListTasks","params":{}}`).Result, &list); err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, task := range list.Tasks {
		listed = append(listed, task.ID)
	}
	if len(listed) != 2 || !slices.Contains(listed, ids[0]) || !slices.Contains(listed, ids[2]) {
		t.Errorf("ListTasks answers %v, want the good tasks %s and %s", listed, ids[0], ids[2])
	}

	resp := a.post("1.0", `{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"`+ids[1]+`"}}`)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	var got rpcResponse
	if err != nil || json.Unmarshal(raw, &got) != nil || got.Error == nil || got.Error.Code != -32603 ||
		!strings.Contains(string(raw), "DATA_LOSS") || strings.Contains(string(raw), "UNAVAILABLE") {
		t.Errorf("GetTask of the corrupt task: %s (%v); want -32603 with reason DATA_LOSS", raw, err)
	}

	// Readiness follows the store's subscription, which comes up in the
	// background; a corrupt record is no reason to leave the rotation.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, body := a.get(fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort), nil)
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz with one corrupt task: %d %s, want ready", resp.StatusCode, body)
		}
	}
}
