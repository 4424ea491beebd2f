package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
	"github.com/caddy-a2a/caddy-a2a/internal/redistest"
)

// replicaSite is the Caddyfile site of one replica on port, its url
// ending in /name, keeping its tasks in the Redis at redisAddr under
// prefix; more goes into its a2a block.
func replicaSite(port int, name, skills, upstream, redisAddr, prefix, more string) string {
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
				key_prefix %s
			}
		}
		%s
	}
}
`, port, skills, upstream, port, name, name, redisAddr, prefix, more)
}

// Two agents (two sites of one Caddy, each its own task manager, as two
// replicas are) on one Redis act as one: a task sent to A is read, listed,
// continued and canceled on B.
func TestIntegrationRedisReplicas(t *testing.T) {
	srv := redistest.Start(t)
	a := startAgent(t)
	portB := freePort(t)
	site := func(port int, name string) string {
		return replicaSite(port, name, a.skills, a.upstream, srv.Addr(), "replicas", "")
	}
	initServer(t, a.tester, fmt.Sprintf("{\n\tadmin localhost:%d\n\tpersist_config off\n}\n", adminPort)+site(a.port, "a")+site(portB, "b"))

	call := func(port int, body string) rpcResponse {
		t.Helper()
		r := a.postTo(port, body)
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

	// A slow task runs on A; B streams it and cancels it: the upstream call
	// on A is aborted, and B's stream ends with the cancel.
	slow := `{"jsonrpc":"2.0","id":6,"method":"SendMessage","params":{"message":{"messageId":"m3","role":"ROLE_USER","metadata":{"skill":"slow"},` +
		`"parts":[{"data":{"seconds":30}}]},"configuration":{"returnImmediately":true}}}`
	running := decodeTask10(t, call(a.port, slow).Result)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := a.demo.WaitStats(ctx, func(s demoapi.Stats) bool { return s.SlowStarted > 0 }); err != nil {
		t.Fatalf("the slow call did not start: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/", portB),
		strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"SubscribeToTask","params":{"id":"`+running.ID+`"}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	stream, err := a.tester.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	events := make(chan string, 16)
	go func() {
		defer close(events)
		_ = readSSE(stream.Body, func(data []byte) bool { events <- string(data); return true })
	}()
	if first := <-events; !strings.Contains(first, `"task"`) {
		t.Fatalf("B's stream starts with %s, want the task", first)
	}
	call(portB, `{"jsonrpc":"2.0","id":8,"method":"CancelTask","params":{"id":"`+running.ID+`"}}`)
	if _, err := a.demo.WaitStats(ctx, func(s demoapi.Stats) bool { return s.SlowCanceled > 0 }); err != nil {
		t.Fatalf("a cancel on B did not abort the upstream call on A: %v", err)
	}
	var last string
	for ev := range events {
		last = ev
	}
	if !strings.Contains(last, "TASK_STATE_CANCELED") {
		t.Errorf("B's stream ended with %s, want the canceled status", last)
	}

	// Both replicas stop and start again: the tasks are still there.
	initServer(t, a.tester, fmt.Sprintf("{\n\tadmin localhost:%d\n\tpersist_config off\n}\n", adminPort))
	initServer(t, a.tester, fmt.Sprintf("{\n\tadmin localhost:%d\n\tpersist_config off\n}\n", adminPort)+site(a.port, "a")+site(portB, "b"))
	if kept := decodeTask(t, call(portB, `{"jsonrpc":"2.0","id":9,"method":"GetTask","params":{"id":"`+sent.ID+`"}}`).Result); kept.Status.State != "TASK_STATE_COMPLETED" {
		t.Errorf("after a restart of both: %s", kept.Status.State)
	}
}

// Redis stopped and started again while callers keep sending: while it is
// down each call answers at once with -32603 UNAVAILABLE (never a hang) and
// the card is still served; once it is back the agent works again without
// a restart.
func TestIntegrationRedisDownUnderLoad(t *testing.T) {
	srv := redistest.Start(t)
	a := startAgent(t)
	initServer(t, a.tester, fmt.Sprintf(`{
	admin localhost:%d
	persist_config off
}

:%d {
	bind 127.0.0.1
	a2a {
		skills "%s"
		upstream %s
		url http://127.0.0.1:%d/faults
		name "Faults"
		description "Redis goes away"
		tasks {
			redis {
				address %s
				key_prefix faults
				timeout 1s
			}
		}
	}
}
`, adminPort, a.port, a.skills, a.upstream, a.port, srv.Addr()))
	send := func() (*rpcResponse, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second) // a guard: answers come far sooner
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/", a.port),
			strings.NewReader(sendMessage("weather", `{"city":"Paris"}`)))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		resp, err := a.tester.Client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var r rpcResponse
		return &r, json.NewDecoder(resp.Body).Decode(&r)
	}
	const callers, rounds = 4, 10
	load := func(check func(*rpcResponse, error)) {
		done := make(chan struct{})
		for range callers {
			go func() {
				defer func() { done <- struct{}{} }()
				for range rounds {
					check(send())
				}
			}()
		}
		for range callers {
			<-done
		}
	}
	load(func(r *rpcResponse, err error) {
		if err != nil || r.Error != nil {
			t.Errorf("with Redis up: %+v, %v", r, err)
		}
	})

	srv.Stop(t)
	load(func(r *rpcResponse, err error) {
		if err != nil || r.Error == nil || r.Error.Code != -32603 {
			t.Errorf("with Redis down: %+v, %v; want -32603 at once", r, err)
		}
	})
	if resp, _ := a.get(fmt.Sprintf("http://127.0.0.1:%d/.well-known/agent-card.json", a.port), nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the card while Redis is down: %d", resp.StatusCode)
	}

	srv.Restart(t)
	// The client reconnects on its own, but each connection of its pool
	// learns that Redis went away only when a call meets it, and calls one
	// after the other meet only one of them: the callers send at once, as
	// the load below does, until a whole round of it has succeeded.
	deadline := time.Now().Add(15 * time.Second)
	for recovered := false; !recovered; {
		var failed atomic.Int64
		load(func(r *rpcResponse, err error) {
			if err != nil || r.Error != nil {
				failed.Add(1)
			}
		})
		recovered = failed.Load() == 0
		if !recovered && time.Now().After(deadline) {
			t.Fatal("the agent did not recover once Redis was back")
		}
	}
	load(func(r *rpcResponse, err error) {
		if err != nil || r.Error != nil {
			t.Errorf("with Redis back: %+v, %v", r, err)
		}
	})
}

// The redis block's TLS: a server under a private CA is reached with
// tls_ca, and refused without it (its certificate is checked).
func TestRedisTLS(t *testing.T) {
	srv := redistest.StartTLS(t)
	ping := func(c *RedisConfig) error {
		client, err := c.client()
		if err != nil {
			return err
		}
		defer client.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return client.Ping(ctx).Err()
	}
	if err := ping(&RedisConfig{Addresses: []string{srv.TLSAddr()}, TLSCA: srv.CAFile}); err != nil {
		t.Errorf("with tls_ca: %v", err)
	}
	if err := ping(&RedisConfig{Addresses: []string{srv.TLSAddr()}, TLS: true}); err == nil {
		t.Error("a certificate of an unknown CA was accepted")
	}
	if _, err := (&RedisConfig{Addresses: []string{srv.TLSAddr()}, TLSCA: "/nonexistent.pem"}).client(); err == nil ||
		!strings.Contains(err.Error(), "tls_ca") {
		t.Errorf("a missing tls_ca file: %v", err)
	}
}
