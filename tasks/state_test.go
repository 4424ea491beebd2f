package tasks_test

import (
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

func TestCanTransition(t *testing.T) {
	const (
		unspecified = a2a.TaskStateUnspecified
		submitted   = a2a.TaskStateSubmitted
		working     = a2a.TaskStateWorking
		completed   = a2a.TaskStateCompleted
		failed      = a2a.TaskStateFailed
		canceled    = a2a.TaskStateCanceled
		inputReq    = a2a.TaskStateInputRequired
		rejected    = a2a.TaskStateRejected
		authReq     = a2a.TaskStateAuthRequired
		unknown     = a2a.TaskState(9)
	)
	all := []a2a.TaskState{unspecified, submitted, working, completed, failed, canceled, inputReq, rejected, authReq, unknown}
	tests := []struct {
		from    a2a.TaskState
		allowed []a2a.TaskState
	}{
		{unspecified, nil},
		{submitted, []a2a.TaskState{working, completed, failed, canceled, inputReq, rejected, authReq}},
		{working, []a2a.TaskState{working, completed, failed, canceled, inputReq, rejected, authReq}},
		{inputReq, []a2a.TaskState{working, canceled, failed, rejected}},
		{authReq, []a2a.TaskState{working, canceled, failed, rejected}},
		{completed, nil},
		{failed, nil},
		{canceled, nil},
		{rejected, nil},
		{unknown, nil},
	}
	for _, tt := range tests {
		t.Run(tt.from.String(), func(t *testing.T) {
			want := make(map[a2a.TaskState]bool)
			for _, s := range tt.allowed {
				want[s] = true
			}
			for _, to := range all {
				if got := tasks.CanTransition(tt.from, to); got != want[to] {
					t.Errorf("CanTransition(%s, %s) = %v, want %v", tt.from, to, got, want[to])
				}
			}
		})
	}
}
