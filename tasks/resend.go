package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// A message sent again never runs twice. A client that times out, or is
// told the store failed, sends the same message again (the same
// messageId); the agent must not call the upstream API a second time for
// it (a second order, a second payment). So every store knows a new
// task's message by its id (MessageKey) and refuses a second task for it
// inside its atomic insert (Insert's *Resent), and a follow-up message
// already in its task's history is found there inside the update: either
// way Start starts nothing and answers the task the message made (see
// Run.Resent), while the message is remembered, that is as long as the
// task is stored.

// Resent is the error Store.Insert returns for a record whose message the
// same caller sent before: it names the task that message made.
type Resent struct {
	TaskID string
}

func (e *Resent) Error() string {
	return "tasks: the message was sent before, and made task " + e.TaskID
}

// errSentBefore stops a follow-up's update that found its message already
// in the task's history.
var errSentBefore = errors.New("tasks: follow-up message sent before")

// MessageKey is what a store knows a new task by, to find it again when
// its message is sent again: the id of the record's first message (the
// one that made the task), as its owner sent it, within its quota. The
// quota scopes an anonymous caller's messages to its client address:
// anonymous callers share one owner, and one of them must not reach
// another's task by a message id, which may well be guessed. The key is a
// hash, of one size whatever the owner and id. ok is false for a record
// with no first message id, which no later message can repeat.
func MessageKey(rec *Record) (key [32]byte, ok bool) {
	sent, ok := sentBy(rec)
	if !ok {
		return key, false
	}
	var buf [256]byte
	b := buf[:0]
	for _, s := range [...]string{sent.owner, sent.quota, sent.id} {
		// Each part with its length, so that no two triples meet.
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return sha256.Sum256(b), true
}

// sentMessage names the message that made a task: the id its owner sent,
// within its quota (what MessageKey hashes).
type sentMessage struct{ owner, quota, id string }

// sentBy is the message that made rec's task; false for a record with no
// first message id.
func sentBy(rec *Record) (sentMessage, bool) {
	if len(rec.Task.History) == 0 || rec.Task.History[0].MessageID == "" {
		return sentMessage{}, false
	}
	return sentMessage{rec.Owner, rec.Quota, rec.Task.History[0].MessageID}, true
}

// sentIndex is the place in history of the user message with id, or -1.
func sentIndex(history []a2a.Message, id string) int {
	for i := range history {
		if history[i].MessageID == id && history[i].Role == a2a.RoleUser {
			return i
		}
	}
	return -1
}

// resend answers sent, a message the caller sent before, which made or
// continued task taskID: run becomes that task as it is now (Run.Resent),
// with a subscription to its events while it has not settled (neither
// terminal nor interrupted), so that a blocking call can wait for it and a
// stream follow it. The same id with other content is InvalidParams: it
// is another message, and the client must give it an id of its own.
func (m *Manager) resend(run *Run, owner string, sent *a2a.Message, taskID string) error {
	rec, sub, err := m.store.Subscribe(context.Background(), taskID)
	if err != nil {
		return err
	}
	i := sentIndex(rec.Task.History, sent.MessageID)
	if rec.Owner != owner || i < 0 {
		// Gone between the two steps (evicted, and its id taken again):
		// the store no longer remembers the message.
		sub.Close()
		return a2a.TaskNotFound(taskID)
	}
	if stored := &rec.Task.History[i]; !a2a.SameContent(stored, sent) ||
		(sent.ContextID != "" && sent.ContextID != stored.ContextID) {
		sub.Close()
		return a2a.InvalidParams("params.message.messageId", fmt.Sprintf(
			"message %q was sent before with other content (it made task %s); a new message needs a new messageId",
			sent.MessageID, taskID))
	}
	if state := rec.Task.Status.State; state.Terminal() || state.Interrupted() {
		sub.Close()
		sub = nil
	}
	run.Resent, run.Task, run.Subscription = true, snapshot(&rec, -1, true), sub
	run.cancel(errSentBefore)
	return nil
}

// storeUnavailable reports whether err is a store's fault that may pass
// (Redis not answering), after which a change may or may not have been
// made.
func storeUnavailable(err error) bool {
	var e *a2a.Error
	return errors.As(err, &e) && e.Reason == "UNAVAILABLE"
}

// OutcomeUnknown is what a caller is told when the store failed while its
// task's outcome was being recorded: the skill ran, and whether its result
// is stored is not known yet. The Manager keeps trying to store it (see
// Run.Finish); sending the same message again is safe, since it finds the
// task instead of running the skill again.
func OutcomeUnknown(taskID string) *a2a.Error {
	e := a2a.InternalError(fmt.Sprintf(
		"the task store failed while the outcome of task %s was being stored, so it is not known yet; "+
			"sending the same message again (the same messageId) is safe: it does not run the skill again, "+
			"and answers the task once its outcome is stored", taskID))
	e.Reason = "UNAVAILABLE"
	e.Metadata = map[string]string{"taskId": taskID}
	return e
}
