package caddymodule

import (
	"testing"
)

// A reload shuts the old config's server down, but it is no exit: the task
// manager it hands over does not drain, and the new config takes new tasks
// while one started before the reload still runs.
func TestIntegrationReloadDoesNotDrain(t *testing.T) {
	a := startAgent(t)
	running := decodeTask10(t, a.call("1.0", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{
		"messageId":"m-r1","role":"ROLE_USER","metadata":{"skill":"slow"},"parts":[{"data":{"seconds":30}}]},
		"configuration":{"returnImmediately":true}}}`).Result)

	a.load(a.publicURL(), "After the reload")

	after := a.call("1.0", sendMessage("weather", `{"city":"Paris"}`))
	if after.Error != nil {
		t.Fatalf("SendMessage after the reload: error %d: %s", after.Error.Code, after.Error.Message)
	}
	if task := decodeTask10(t, after.Result); task.Status.State != "TASK_STATE_COMPLETED" {
		t.Errorf("a new task after the reload: %s, want completed", task.Status.State)
	}
	got := decodeTask(t, a.call("1.0", `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"`+running.ID+`"}}`).Result)
	if got.Status.State != "TASK_STATE_WORKING" {
		t.Errorf("the task started before the reload: %s, want still working", got.Status.State)
	}
	for _, p := range agents.probes() {
		if p.manager.Draining() {
			t.Error("an agent drains after a reload")
		}
	}
}
