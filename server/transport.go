package server

// What a binding that lives outside this package (server/mcp) needs of the
// engine, in the manner of a2a-go's a2asrv: authenticate and refuse; begin,
// start and end a call; read a body and write within the deadlines; admit
// and run a message; and what the engine serves with. The A2A bindings
// here use the same steps under their own names.

import (
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// Resources are what the engine serves with, for a binding to read as it
// is made (NewBinding).
type Resources struct {
	Skills *mapping.Skills
	Tasks  *tasks.Manager
	Card   *cardgen.Document
	Logger *zap.Logger
	// MaxRequestBytes caps a request body; HeartbeatInterval is how often
	// an idle stream gets a comment (Config's, their defaults filled).
	MaxRequestBytes   int64
	HeartbeatInterval time.Duration
	// Authenticates: the engine can authenticate callers (Config.Auth);
	// without, every caller is anonymous.
	Authenticates bool
}

// Resources are what h serves with.
func (h *Handler) Resources() Resources {
	return Resources{Skills: h.skills, Tasks: h.tasks, Card: h.card, Logger: h.log,
		MaxRequestBytes: h.maxBody, HeartbeatInterval: h.heartbeat, Authenticates: h.auth != nil}
}

// Begin makes c a call of binding, which speaks another protocol than
// A2A: the engine writes its refusals and errors as JSON-RPC 2.0 errors,
// and the observer is told its Operation, and no A2A version.
func (c *Exchange) Begin(binding string) {
	c.begin(binding, a2a.V10, jsonRPC{}, "application/json")
	c.Operation = UnknownMethod
}

// StartOperation records that c, of a binding Begin began, decoded as its
// binding's method name (a label from a fixed set: metrics count by it),
// and tells the observer; it returns r under the context the observer
// gives back, which the call's runs continue.
func (h *Handler) StartOperation(r *http.Request, c *Exchange, name string) *http.Request {
	c.Operation = name
	return h.observeStart(r, c)
}

// Authenticate identifies the caller of r, before its body is read, as
// for every binding, and records it on c: nil for an anonymous caller.
// false, once the refusal is written (401 or 403, with the challenges),
// when the request goes no further.
func (h *Handler) Authenticate(w http.ResponseWriter, r *http.Request, c *Exchange) (*authn.Identity, bool) {
	caller, failure := h.authenticate(r)
	if failure != nil {
		h.refuse(w, c, failure)
		return nil, false
	}
	c.Caller = caller
	return caller, true
}

// Permits reports whether caller may use skill: its own requirement, and
// for a skill of the extended card, an authenticated caller.
func (h *Handler) Permits(caller *authn.Identity, skill *mapping.Skill) bool {
	return h.authorize(caller, skill) == nil
}

// Share names the share of the task store, and of any other bounded room,
// that r's caller takes: its owner, or for an anonymous caller, its client
// address (Config.ClientAddress), so that one client cannot fill the room
// for all of them.
func (h *Handler) Share(r *http.Request, caller *authn.Identity) string {
	if caller == nil {
		return "client " + h.clientAddress(r)
	}
	return caller.Owner()
}

// ReadBody reads r's body within the read timeout and the size cap, into
// a buffer c holds until it ends; false, once the error is written (413,
// 408 or 400), when it cannot.
func (h *Handler) ReadBody(w http.ResponseWriter, r *http.Request, c *Exchange) ([]byte, bool) {
	if c.body == nil {
		c.body = getBuffer()
	}
	body, status, err := h.readRequestBody(w, r, c.body)
	if err != nil {
		h.writeError(w, status, c, err)
		return nil, false
	}
	return body, true
}

// WriteError answers e, which ends c, with HTTP status status, in c's
// form.
func (h *Handler) WriteError(w http.ResponseWriter, status int, c *Exchange, e *a2a.Error) {
	h.writeError(w, status, c, e)
}

// WriteJSON writes a whole JSON answer within the write timeout.
func (h *Handler) WriteJSON(w http.ResponseWriter, status int, contentType string, body []byte) {
	h.writeJSON(w, status, contentType, body)
}

// WriteWithin runs write (a write or a flush of rc's answer) within the
// write timeout, then clears the deadline (see withWriteDeadline).
func (h *Handler) WriteWithin(rc *http.ResponseController, write func() error) error {
	return h.withWriteDeadline(rc, write)
}

// A Run is a message Send admitted: the reply of a skill that answers with
// a message, or else the task started for it, which Execute runs.
type Run struct {
	// Reply is the message a skill answered with; then there is no task.
	Reply *a2a.Message
	// Task is the task's run: the task as it started, and its stream when
	// Send subscribed.
	Task *tasks.Run
	// Skill is the skill the message is for: nil when none matched (the
	// run rejects the task).
	Skill *mapping.Skill
	h     *Handler
	exec  *execution
}

// Send admits msg from caller, as a SendMessage of 1.0 is admitted: it
// selects the skill, checks the caller against it, and runs a skill that
// answers with a message or starts the task, subscribed to its events when
// subscribe. An *authn.Failure refuses the caller; an *a2a.Error is the
// protocol's; another error is the engine's.
func (h *Handler) Send(r *http.Request, caller *authn.Identity, msg *a2a.Message, subscribe bool) (Run, error) {
	adm, err := h.admit(r, a2a.V10, &a2a.SendMessageRequest{Message: *msg}, caller, subscribe)
	if err != nil || adm.reply != nil {
		return Run{Reply: adm.reply}, err
	}
	return Run{Task: adm.run.run, Skill: adm.run.skill, h: h, exec: adm.run}, nil
}

// Execute runs the skill of the task Send started, and records its
// outcome on the task: the task as it ended, nil when it had moved on
// (was canceled), or an *a2a.Error when the store did not take the
// outcome.
func (r Run) Execute() (*a2a.Task, error) { return r.h.execute(r.exec) }

// SkillOf is the id of the skill a task runs, "" for none.
func SkillOf(task *a2a.Task) string { return skillOf(task) }
