package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// execution is one run of a skill for a task: the task's run (its context
// is detached from the caller's connection: a client that hangs up does not
// kill the task, only CancelTask or the skill's timeout does) and what the
// skill is called with.
type execution struct {
	run *tasks.Run
	// ctx is the run's context, with what the observer keeps of the
	// request's (its trace span).
	ctx       context.Context
	skill     *mapping.Skill // nil when no skill matched
	rejection string         // why no skill matched
	call      mapping.Call
}

// selection is the skill a new message is for, or why none is.
type selection struct {
	skill     *mapping.Skill
	rejection string
}

// selectSkill finds the skill a message is for: the one selected for a new
// message, or its task's for a follow-up. A skill that cannot produce any
// of the caller's accepted output modes is refused before anything runs.
func (h *Handler) selectSkill(caller *authn.Identity, msg *a2a.Message, cfg *a2a.SendMessageConfiguration) (selection, error) {
	owner := caller.Owner()
	if msg.Role != a2a.RoleUser {
		return selection{}, a2a.InvalidParams("params.message.role", "a message sent to an agent must have the user role")
	}
	var sel selection
	if msg.TaskID != "" {
		noHistory := int32(0)
		task, err := h.tasks.Get(owner, msg.TaskID, &noHistory)
		if err != nil {
			return selection{}, err
		}
		if sel.skill = h.skills.ByID(skillOf(task)); sel.skill == nil {
			sel.rejection = fmt.Sprintf("this task's skill %q is no longer offered; start a new task", skillOf(task))
		}
	} else {
		skill, selErr := h.skills.Select(msg)
		if selErr != nil {
			if caller == nil {
				// The skills of the extended card are not listed to those
				// who cannot have it.
				selErr.Skills = slices.DeleteFunc(selErr.Skills, func(id string) bool { return h.skills.ByID(id).Extended })
			}
			return selection{rejection: selErr.Error()}, nil
		}
		sel.skill = skill
	}
	if sel.skill != nil && cfg != nil && !sel.skill.CanProduce(cfg.AcceptedOutputModes) {
		return selection{}, a2a.ContentTypeNotSupported(fmt.Sprintf("skill %q produces %s; the request accepts only %s",
			sel.skill.ID, strings.Join(sel.skill.OutputModes, ", "), strings.Join(cfg.AcceptedOutputModes, ", ")))
	}
	return sel, nil
}

// start creates the task for a new message, or continues the interrupted
// task it names, marks it working and registers the run so CancelTask can
// reach it; subscribe also opens the task's stream.
func (h *Handler) start(r *http.Request, caller *authn.Identity, msg *a2a.Message, sel selection, subscribe bool, push *tasks.PushConfig) (*execution, error) {
	opts := tasks.StartOptions{Metadata: h.taskMetadata[sel.skill], Subscribe: subscribe, Push: push}
	if caller == nil {
		// Anonymous callers share one owner; each client address gets its
		// own share of the store, so that one client cannot fill it for
		// all of them.
		opts.Quota = h.Share(r, nil)
	}
	run, err := h.tasks.Start(caller.Owner(), *msg, opts)
	if err != nil {
		return nil, err
	}
	task := run.Task
	h.annotate(r, skillOf(task), task.ID)
	if run.Resent {
		return &execution{run: run}, nil
	}
	ctx := run.Context()
	if h.obs != nil {
		ctx = h.obs.Detach(r.Context(), ctx)
	}
	return &execution{run: run, ctx: ctx, skill: sel.skill, rejection: sel.rejection,
		call: mapping.Call{Message: msg, History: task.History, TaskID: task.ID, ContextID: task.ContextID,
			Caller: callerOf(caller, r, sel.skill), Headers: forwarded(r, sel.skill)},
	}, nil
}

// execute runs the skill and records its outcome on the task, returning the
// task as it ended (nil when the task had moved on, e.g. was canceled), or
// tasks.OutcomeUnknown when the store failed to take the outcome.
func (h *Handler) execute(e *execution) (*a2a.Task, error) {
	var started time.Time
	if h.obs != nil {
		started = time.Now()
	}
	var out mapping.Outcome
	if e.skill == nil {
		out = mapping.Outcome{State: a2a.TaskStateRejected, Message: agentText(e.rejection)}
	} else {
		out = e.skill.Run(e.ctx, e.call, progress{h: h, run: e.run})
		h.logRunError(e, out.Err)
	}
	task, err := e.run.Finish(a2a.TaskStatus{State: out.State, Message: out.Message}, out.Artifacts)
	if err != nil {
		if protoErr, ok := errors.AsType[*a2a.Error](err); ok {
			h.log.Warn("a task's outcome is not stored yet: the task store failed; it is being retried",
				zap.String("task", e.run.Task.ID))
			return nil, protoErr
		}
		h.logLateUpdate(e.run.Task.ID, err)
	}
	if h.obs != nil && task != nil {
		// As recorded: a result too large to keep fails the task. A task
		// that moved on meanwhile was counted where it did (CancelTask).
		var skill string
		if e.skill != nil {
			skill = e.skill.ID
		}
		h.obs.TaskEnded(skill, task.Status.State)
		h.obs.TaskRun(skill, time.Since(started))
	}
	return task, nil
}

// logRunError logs why a skill's run failed, at a level that fits: a task
// canceled by its client, expired, or stopped by the drain was ended on
// purpose, and said why on the task.
func (h *Handler) logRunError(e *execution, err error) {
	if err == nil {
		return
	}
	fields := []zap.Field{zap.String("skill", e.skill.ID), zap.String("task", e.run.Task.ID)}
	switch cause := context.Cause(e.run.Context()); {
	case errors.Is(cause, tasks.ErrShutdown):
		h.log.Debug("skill run stopped by the drain", fields...)
	case errors.Is(cause, tasks.ErrCanceled), errors.Is(cause, tasks.ErrExpired):
		h.log.Debug("skill run stopped: its task ended", append(fields, zap.NamedError("cause", cause))...)
	default:
		h.log.Warn("skill run failed", append(fields, zap.Error(err))...)
	}
}

// logLateUpdate notes an update refused because the task moved on (most
// often: it was canceled while the upstream call ran).
func (h *Handler) logLateUpdate(taskID string, err error) {
	h.log.Debug("task update refused", zap.String("task", taskID), zap.Error(err))
}

// admission is where a SendMessage or SendStreamingMessage goes: a reply
// from a skill that answers with a message, or a started task run.
type admission struct {
	reply *a2a.Message
	run   *execution
}

// admit selects the skill of a message, checks the caller against it, and
// runs a message-answering skill or starts the task. An error means the
// request goes no further.
func (h *Handler) admit(r *http.Request, v a2a.Version, p *a2a.SendMessageRequest, caller *authn.Identity, subscribe bool) (admission, error) {
	var push *tasks.PushConfig
	if c := p.Configuration; c != nil && c.PushNotification != nil {
		pc, e := h.pushConfig(v, c.PushNotification)
		if e != nil {
			return admission{}, e
		}
		push = &pc
	}
	sel, err := h.selectSkill(caller, &p.Message, p.Configuration)
	if err != nil {
		return admission{}, err
	}
	if f := h.authorize(caller, sel.skill); f != nil {
		return admission{}, f
	}
	if sel.skill != nil && sel.skill.ReturnsMessage {
		h.annotate(r, sel.skill.ID, "")
		reply, e := h.runForMessage(r, caller, sel.skill, &p.Message)
		if e != nil {
			return admission{}, e
		}
		return admission{reply: reply}, nil
	}
	e, err := h.start(r, caller, &p.Message, sel, subscribe, push)
	if err != nil {
		return admission{}, err
	}
	return admission{run: e}, nil
}

// sendMessage runs SendMessage: blocking by default, answered at once when
// the caller asks, or with a Message for skills that answer without a task.
func (h *Handler) sendMessage(r *http.Request, v a2a.Version, p *a2a.SendMessageRequest, caller *authn.Identity) outcome {
	in, err := h.admit(r, v, p, caller, false)
	if err != nil {
		return failed(err)
	}
	if in.reply != nil {
		return outcome{result: &a2a.StreamResponse{Message: in.reply}}
	}
	var historyLength *int32
	returnImmediately := false
	if c := p.Configuration; c != nil {
		historyLength, returnImmediately = c.HistoryLength, c.ReturnImmediately
	}
	run := in.run.run
	if run.Resent {
		return h.answerResent(r, caller, run, returnImmediately, historyLength)
	}
	if returnImmediately {
		go h.execute(in.run)
		return outcome{result: &a2a.StreamResponse{Task: withHistory(run.Task, historyLength)}}
	}
	task, err := h.await(r, in.run)
	if err != nil {
		return h.unanswered(r, err)
	}
	if task == nil {
		// The task moved on while the skill ran: answer with where it is.
		if task, err = h.tasks.Get(caller.Owner(), run.Task.ID, nil); err != nil {
			return failed(err)
		}
	}
	return outcome{result: &a2a.StreamResponse{Task: withHistory(task, historyLength)}}
}

// unanswered is the outcome of a blocking call that got no task: the
// request's context ended (nobody is left to answer), or the store failed
// to take the outcome (the caller is told to send the message again).
func (h *Handler) unanswered(r *http.Request, err error) outcome {
	if r.Context().Err() != nil && errors.Is(err, r.Context().Err()) {
		return outcome{ended: err}
	}
	return failed(err)
}

// answerResent answers a SendMessage whose message the caller sent
// before, with the task it made: at once when the caller asks, or else
// once the task settles (ends or asks for input), as the first call would
// have; nothing runs again.
func (h *Handler) answerResent(r *http.Request, caller *authn.Identity, run *tasks.Run, returnImmediately bool, historyLength *int32) outcome {
	if sub := run.Subscription; sub != nil {
		settled := returnImmediately || awaitSettled(r.Context(), sub)
		sub.Close()
		if !settled {
			return h.unanswered(r, r.Context().Err())
		}
		task, err := h.tasks.Get(caller.Owner(), run.Task.ID, nil)
		if err != nil {
			return failed(err)
		}
		run.Task = task
	}
	return outcome{result: &a2a.StreamResponse{Task: withHistory(run.Task, historyLength)}}
}

// awaitSettled waits for the final event of a task's subscription (the
// task ended or asks for input) and reports whether it came before ctx
// ended; a subscription that ends early (the agent stops, the subscriber
// fell behind) counts as settled: the task is read again as it is.
func awaitSettled(ctx context.Context, sub *tasks.Subscription) bool {
	for {
		select {
		case ev, open := <-sub.Events():
			if !open || (ev.StatusUpdate != nil && ev.StatusUpdate.Final) {
				return true
			}
		case <-ctx.Done():
			return false
		}
	}
}

// await runs a blocking SendMessage's skill and waits for the task to end
// or be interrupted. Over HTTP/2 (gRPC, and JSON-RPC or HTTP+JSON over h2
// or h2c) it also stops waiting when the request's context ends (the
// client resets the stream, a gRPC deadline passes), since the request
// holds a stream of a connection that other calls share: it returns the
// context's error and the task runs on, for GetTask to find (spec 1.0
// §3.5.2: a task's lifecycle is independent of any connection's). Over
// HTTP/1.x a connection carries one request at a time, so a caller that
// left holds nothing another could use: the skill runs on the request's
// own goroutine, the hot path's, without a hand-off.
func (h *Handler) await(r *http.Request, e *execution) (*a2a.Task, error) {
	if r.ProtoMajor < 2 {
		return h.execute(e)
	}
	ctx := r.Context()
	type ended struct {
		task *a2a.Task
		err  error
	}
	done := make(chan ended, 1)
	// On a kept goroutine, whose stack the skill's upstream call has
	// grown already (see runWarm).
	runWarm(func() {
		task, err := h.execute(e)
		done <- ended{task, err}
	})
	select {
	case end := <-done:
		return end.task, end.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// sendStreamingMessage runs SendStreamingMessage: a stream of the task
// first, then its updates until it ends or is interrupted. A message sent
// before gets a stream of the task it made, as SubscribeToTask would, or
// of that task alone once it has settled.
func (h *Handler) sendStreamingMessage(r *http.Request, v a2a.Version, p *a2a.SendMessageRequest, caller *authn.Identity) outcome {
	in, err := h.admit(r, v, p, caller, true)
	if err != nil {
		return failed(err)
	}
	if in.reply != nil {
		return outcome{first: &a2a.StreamResponse{Message: in.reply}}
	}
	run := in.run.run
	if !run.Resent {
		go h.execute(in.run)
	}
	if run.Unfollowed != nil {
		return failed(run.Unfollowed)
	}
	var historyLength *int32
	if c := p.Configuration; c != nil {
		historyLength = c.HistoryLength
	}
	return outcome{first: &a2a.StreamResponse{Task: withHistory(run.Task, historyLength)}, sub: run.Subscription}
}

// runForMessage runs a message-answering skill. No task exists whose result
// could be fetched later, so the call ends when the caller hangs up; the
// skill's own timeout bounds it too. A draining agent takes no new call,
// and one under way at the drain's deadline is stopped: either way the
// caller is told to send the message again.
func (h *Handler) runForMessage(r *http.Request, caller *authn.Identity, skill *mapping.Skill, msg *a2a.Message) (*a2a.Message, *a2a.Error) {
	if h.tasks.Draining() {
		return nil, tasks.ShuttingDown("send the message again")
	}
	contextID := msg.ContextID
	if contextID == "" {
		contextID = h.tasks.NewID(tasks.ContextID)
	}
	call := mapping.Call{Message: msg, ContextID: contextID, Caller: callerOf(caller, r, skill), Headers: forwarded(r, skill)}
	// A drain past its deadline stops the call too: no task keeps it.
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	stop := context.AfterFunc(h.tasks.Stopping(), func() { cancel(tasks.ErrShutdown) })
	defer stop()
	out := skill.Run(ctx, call, nil)
	if errors.Is(context.Cause(ctx), tasks.ErrShutdown) {
		return nil, tasks.ShuttingDown("send the message again")
	}
	if out.Err != nil {
		h.log.Warn("skill run failed", zap.String("skill", skill.ID), zap.Error(out.Err))
	}
	reply := out.Message
	if reply == nil {
		reply = &a2a.Message{}
	}
	for _, art := range out.Artifacts {
		reply.Parts = append(reply.Parts, art.Parts...)
	}
	reply.Role, reply.ContextID, reply.TaskID = a2a.RoleAgent, contextID, ""
	if reply.MessageID == "" {
		reply.MessageID = h.tasks.NewID(tasks.MessageID)
	}
	return reply, nil
}

// progress passes a skill's intermediate updates on to its task.
type progress struct {
	h   *Handler
	run *tasks.Run
}

func (p progress) Working(msg *a2a.Message) {
	if err := p.run.Working(msg); err != nil {
		p.h.logLateUpdate(p.run.Task.ID, err)
	}
}

func (p progress) Artifact(art a2a.Artifact, appendParts, lastChunk bool) (string, error) {
	return p.run.Artifact(art, appendParts, lastChunk)
}

func agentText(text string) *a2a.Message {
	return &a2a.Message{Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(text)}}
}

// withHistory trims a snapshot's history as historyLength asks (spec 1.0
// §3.2.4) without touching the stored task.
func withHistory(task *a2a.Task, historyLength *int32) *a2a.Task {
	if historyLength == nil || int(*historyLength) >= len(task.History) {
		return task
	}
	trimmed := *task
	if *historyLength <= 0 {
		trimmed.History = nil
	} else {
		trimmed.History = task.History[len(task.History)-int(*historyLength):]
	}
	return &trimmed
}

// The skill a task runs is kept in its metadata, so a follow-up message
// reaches the same skill (also after a config reload).
const skillMetadataKey = "skill"

func skillMetadata(skill *mapping.Skill) map[string]any {
	return map[string]any{skillMetadataKey: skill.ID}
}

func skillOf(task *a2a.Task) string {
	id, _ := task.Metadata[skillMetadataKey].(string)
	return id
}
