package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

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
// Run.Resent), while the message is remembered: as long as its task is
// live, and for the resend window (Limits.Resends) after the task's last
// update. A task dropped to make room before that leaves its message's
// key behind, in a budget of the store's own that other callers cannot
// flush (MaxResendKeys): the message sent again is then refused, saying
// its task is gone, and never runs again.

// Resent is the error Store.Insert returns for a record whose message the
// same caller sent before: it names the task that message made, and says
// whether that task was dropped since (to make room), the message
// remembered without it.
type Resent struct {
	TaskID  string
	Dropped bool
}

func (e *Resent) Error() string {
	if e.Dropped {
		return "tasks: the message was sent before, and made task " + e.TaskID + ", which is no longer stored"
	}
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
// with no first message id, which no later message can repeat, and for
// one whose first message is not the caller's (see NeverStarted).
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
// first message of the caller's with an id.
func sentBy(rec *Record) (sentMessage, bool) {
	if len(rec.Task.History) == 0 || rec.Task.History[0].MessageID == "" || rec.Task.History[0].Role != a2a.RoleUser {
		return sentMessage{}, false
	}
	return sentMessage{rec.Owner, rec.Quota, rec.Task.History[0].MessageID}, true
}

// remembered reports whether the message of a task last updated at
// updated is remembered at now: while the task is live, and for window
// after its last update.
func remembered(live bool, updated, now time.Time, window time.Duration) bool {
	return live || !now.After(updated.Add(window))
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
// stream follow it. The same id with other content, or sent otherwise
// (with a taskId where it made the task, or none where it continued one,
// or another contextId) is InvalidParams: it is another message, and the
// client must give it an id of its own.
func (m *Manager) resend(run *Run, owner string, sent *a2a.Message, taskID string) error {
	rec, sub, err := m.store.Subscribe(context.Background(), taskID)
	if e, ok := errors.AsType[*a2a.Error](err); ok && e.Code == a2a.CodeTaskNotFound {
		return droppedMessage(sent.MessageID, taskID) // dropped between the two steps
	}
	if err != nil {
		return err
	}
	if rec.Owner != owner {
		sub.Close()
		return droppedMessage(sent.MessageID, taskID)
	}
	// A task that no longer holds the message ended as never started
	// between the two steps (NeverStarted), and says so.
	if i := sentIndex(rec.Task.History, sent.MessageID); i >= 0 {
		// The message that made the task named none; a follow-up named it.
		sentTo := ""
		if i > 0 {
			sentTo = taskID
		}
		if stored := &rec.Task.History[i]; !a2a.SameContent(stored, sent) || sent.TaskID != sentTo ||
			(sent.ContextID != "" && sent.ContextID != stored.ContextID) {
			sub.Close()
			return a2a.InvalidParams("params.message.messageId", fmt.Sprintf(
				"message %q was sent before with other content, taskId or contextId (it made or continued task %s); a new message needs a new messageId",
				sent.MessageID, taskID))
		}
	}
	if state := rec.Task.Status.State; state.Terminal() || state.Interrupted() {
		sub.Close()
		sub = nil
	}
	run.Resent, run.Task, run.Subscription = true, snapshot(&rec, -1, true), sub
	run.cancel(errSentBefore)
	return nil
}

// droppedMessage is the answer to a message sent again whose task was
// dropped to make room while the message was still remembered: what the
// task did is gone, and the message is not run again.
func droppedMessage(messageID, taskID string) *a2a.Error {
	e := a2a.InvalidParams("params.message.messageId", fmt.Sprintf(
		"message %q was sent before and made task %s, which is no longer stored (it ended, and was dropped to make room for newer tasks); "+
			"a message is never run twice, so this one is not run again: to run it again, send it with a new messageId",
		messageID, taskID))
	e.Metadata = map[string]string{"taskId": taskID}
	return e
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
	return unknownOutcome(taskID, true, fmt.Sprintf(
		"the task store failed while the outcome of task %s was being stored, so it is not known yet; "+
			"sending the same message again (the same messageId) is safe: it does not run the skill again, "+
			"and answers the task once its outcome is stored", taskID))
}

// insertUnknown is what a caller is told when the store failed while its
// new task was being stored: whether it was stored is not known, but its
// skill has not run. A store that can fail so settles the insert once it
// can (see NeverStarted), so that the message sent again runs the skill,
// or finds the task saying it never started; no message waits for a run
// nobody makes.
func insertUnknown(taskID string) *a2a.Error {
	return unknownOutcome(taskID, false, fmt.Sprintf(
		"the task store failed while task %s was being created, so whether it was stored is not known yet; its skill has not run. "+
			"Sending the same message again (the same messageId) is safe: the skill runs once", taskID))
}

// unfollowed is what a caller is told when the store failed as the
// stream of its new task, or its task's next turn, was opened: the task is
// stored and runs, and the message sent again finds it.
func unfollowed(taskID string) *a2a.Error {
	return unknownOutcome(taskID, true, fmt.Sprintf(
		"the task store failed as the stream of task %s was opened; the task runs all the same: "+
			"follow it with SubscribeToTask, or send the same message again (the same messageId), "+
			"which answers it without running the skill again", taskID))
}

func unknownOutcome(taskID string, ran bool, text string) *a2a.Error {
	e := a2a.InternalError(text)
	e.Reason = "UNAVAILABLE"
	e.Metadata = map[string]string{"taskId": taskID, SkillRan: strconv.FormatBool(ran)}
	return e
}

// SkillRan is the metadata member of an UNAVAILABLE refusal that says
// whether the skill ran ("true": its outcome is what is unknown) or not
// ("false"): what a caller may safely do next depends on it, and a binding
// whose clients cannot send the same message again (MCP, whose calls have
// no messageId) words that advice in its own terms from it.
const SkillRan = "skillRan"

// neverStartedText is the status message of a task whose insert failed
// with its outcome unknown, ended by its store once it could: nothing ran
// it.
const neverStartedText = "This task never started: the task store failed while it was being created, and its skill did not run. " +
	"Send the message again (the same messageId is fine): it runs then."

// NeverStarted is the record that a store whose insert of rec failed with
// its outcome unknown (the Manager answered insertUnknown, and runs
// nothing) puts in its place once it can, whether or not the insert was
// made: the task failed, saying it never started, at now. It holds none of
// the caller's messages, so that nothing remembers the message (sent
// again, it runs), and little else, so that the store keeps it cheaply.
func NeverStarted(rec *Record, now time.Time) Record {
	ended := Record{Owner: rec.Owner, Quota: rec.Quota, Updated: now, Task: a2a.Task{
		ID: rec.Task.ID, ContextID: rec.Task.ContextID, Metadata: rec.Task.Metadata,
		History: []a2a.Message{{MessageID: randomID(MessageID), Role: a2a.RoleAgent, TaskID: rec.Task.ID,
			ContextID: rec.Task.ContextID, Parts: []a2a.Part{a2a.TextPart(neverStartedText)}}},
	}}
	ended.Task.Status = a2a.TaskStatus{State: a2a.TaskStateFailed, Timestamp: now, Message: &ended.Task.History[0]}
	ended.Bytes = sizeOfNewTask(&ended.Task.History[0], ended.Task.Metadata)
	return ended
}
