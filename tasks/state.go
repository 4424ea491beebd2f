package tasks

import "github.com/caddy-a2a/caddy-a2a/a2a"

// transitions[from] is the set of states a task in state from may move to,
// one bit per a2a.TaskState. A task is created submitted; nothing moves back
// to submitted or unspecified, and nothing leaves a terminal state.
var transitions = [...]uint16{
	a2a.TaskStateSubmitted: bits(a2a.TaskStateWorking, a2a.TaskStateCompleted, a2a.TaskStateFailed,
		a2a.TaskStateCanceled, a2a.TaskStateRejected, a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired),
	// working -> working carries a progress message.
	a2a.TaskStateWorking: bits(a2a.TaskStateWorking, a2a.TaskStateCompleted, a2a.TaskStateFailed,
		a2a.TaskStateCanceled, a2a.TaskStateRejected, a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired),
	// An interrupted task resumes (working) only on a follow-up message; it
	// can also be canceled, or fail or be rejected (e.g. expired).
	a2a.TaskStateInputRequired: bits(a2a.TaskStateWorking, a2a.TaskStateCanceled, a2a.TaskStateFailed,
		a2a.TaskStateRejected),
	a2a.TaskStateAuthRequired: bits(a2a.TaskStateWorking, a2a.TaskStateCanceled, a2a.TaskStateFailed,
		a2a.TaskStateRejected),
}

func bits(states ...a2a.TaskState) uint16 {
	var b uint16
	for _, s := range states {
		b |= 1 << s
	}
	return b
}

// CanTransition reports whether the task lifecycle (spec 1.0 §4.1.3) lets a
// task in state from move to state to.
func CanTransition(from, to a2a.TaskState) bool {
	return int(from) < len(transitions) && to < 16 && transitions[from]&(1<<to) != 0
}
