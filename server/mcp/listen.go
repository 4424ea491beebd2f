package mcp

// Task status notifications (SEP-2663 on SEP-2575's subscriptions/listen):
// a client that declares the tasks extension names the tasks it follows in
// notifications.taskIds, and the stream answers the acknowledgment, then
// the state of each task at once and at each change of its status, as
// tasks/get would give it, until every task has ended; then the listen's
// own answer closes the stream. The events come from the task store's
// subscriptions, so a task that runs on another replica sharing the store
// is followed too. A listen that names no task is the SDK's (list-changed
// notifications).

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

const methodSubscriptionsListen = "subscriptions/listen"

// Bounds of subscriptions/listen: each task followed holds a
// subscription to the store (a buffer of tasks.stream_buffer events) while
// its listen is open. MaxListenTasks bounds one listen's, and
// MaxListenTasksPerCaller those of all the listens of one caller (an
// anonymous one by its address), so that many listens cannot take what
// one may not.
const (
	MaxListenTasks          = 100
	MaxListenTasksPerCaller = 1000
)

// listen answers a subscriptions/listen that names tasks, and reports
// whether it did: false, and nothing written, for one that names none or
// whose headers do not name the method (which the SDK refuses).
func (b *binding) listen(w http.ResponseWriter, in *inbound, env *envelope, body []byte) bool {
	var req struct {
		Params struct {
			Notifications *struct {
				TaskIDs *[]string `json:"taskIds"`
			} `json:"notifications"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &req) != nil || req.Params.Notifications == nil || req.Params.Notifications.TaskIDs == nil ||
		len(*req.Params.Notifications.TaskIDs) == 0 || in.r.Header.Get(methodHeader) != env.Method {
		return false
	}
	if !declaresTasks(env.Params.Meta.ClientCapabilities) {
		b.writeAnswer(w, in, env.ID, nil, errTasksUndeclared("task notifications on "+methodSubscriptionsListen))
		return true
	}
	ids := *req.Params.Notifications.TaskIDs
	if len(ids) > MaxListenTasks {
		b.writeAnswer(w, in, env.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"%s: notifications.taskIds names %d tasks; one listen follows at most %d", methodSubscriptionsListen, len(ids), MaxListenTasks)})
		return true
	}
	share := b.h.Share(in.r, in.caller)
	if !b.holdListens(share, len(ids)) {
		b.writeAnswer(w, in, env.ID, nil, errorOf(&a2a.Error{Code: a2a.CodeInternalError, Reason: "RESOURCE_EXHAUSTED",
			Message: fmt.Sprintf("%s: this caller's open listens follow as many tasks as they may together (%d): close one, or follow fewer",
				methodSubscriptionsListen, MaxListenTasksPerCaller)}))
		return true
	}
	defer b.holdListens(share, -len(ids))
	l, err := b.follow(in.caller.Owner(), ids)
	if err != nil {
		b.writeAnswer(w, in, env.ID, nil, b.refused("", err))
		return true
	}
	defer l.close()
	b.serveListen(w, in.r.Context(), env.ID, l)
	return true
}

// holdListens counts n more tasks followed by share's listens (fewer, for
// n < 0), and reports whether they stay within MaxListenTasksPerCaller.
func (b *binding) holdListens(share string, n int) bool {
	b.listensMu.Lock()
	defer b.listensMu.Unlock()
	held := b.listens[share] + n
	if n > 0 && held > MaxListenTasksPerCaller {
		return false
	}
	if held <= 0 {
		delete(b.listens, share)
	} else {
		b.listens[share] = held
	}
	return true
}

// listening is what one listen follows: each of the caller's tasks it
// named, with its subscription while the task is live. One goroutine, the
// request's, serves it: a listen holds no goroutine per task.
type listening struct {
	b     *binding
	owner string
	ids   []string // the tasks acknowledged, in the order named
	subs  map[string]*tasks.Subscription
	// changed are the tasks whose state is to be told, each with why its
	// subscription ended, if it did.
	changed map[string]error
}

// follow subscribes to each of owner's tasks among ids. A task that is not
// the caller's, or no longer there, is left out of the acknowledgment, as
// the extension has it; an ended one is told once.
func (b *binding) follow(owner string, ids []string) (*listening, error) {
	l := &listening{b: b, owner: owner, ids: []string{}, subs: map[string]*tasks.Subscription{}, changed: map[string]error{}}
	for _, id := range ids {
		if slices.Contains(l.ids, id) {
			continue
		}
		if err := l.subscribe(id); err != nil {
			if isCode(err, a2a.CodeTaskNotFound) {
				continue
			}
			l.close()
			return nil, err
		}
		l.ids = append(l.ids, id)
	}
	return l, nil
}

// subscribe follows task id from now on, its current state to be told:
// with a subscription while it is live, once when it has ended.
func (l *listening) subscribe(id string) error {
	_, sub, err := l.b.tasks.Subscribe(l.owner, id)
	if isCode(err, a2a.CodeUnsupportedOperation) {
		// The task has ended: its state is what there is to tell.
		noHistory := int32(0)
		_, err = l.b.tasks.Get(l.owner, id, &noHistory)
	}
	if err != nil {
		return err
	}
	l.changed[id] = nil
	if sub != nil {
		l.subs[id] = sub
	}
	return nil
}

// received notes what task id's subscription brought: a status change,
// or its end (open false).
func (l *listening) received(id string, ev a2a.StreamResponse, open bool) {
	switch {
	case !open:
		l.changed[id] = cmp.Or(l.subs[id].Err(), errEnded)
		delete(l.subs, id)
	case ev.StatusUpdate != nil:
		if _, noted := l.changed[id]; !noted {
			l.changed[id] = nil
		}
	}
}

// errEnded is why a subscription closed after its task's final event.
var errEnded = errors.New("the task ended")

// close ends the subscriptions.
func (l *listening) close() {
	for _, sub := range l.subs {
		sub.Close()
	}
}

// The cases of a listen's wait before its subscriptions' (see wait).
const (
	caseHeartbeat = iota
	caseGone
	caseShutdown
	caseStopping
	caseSubscriptions
)

// wait waits for the next of: an event of a subscription (noted, with
// every other one already there), a heartbeat, the client going away, or
// the endpoint or the task manager stopping. It answers which of the
// first four it was, or caseSubscriptions.
func (l *listening) wait(ctx context.Context, heartbeat <-chan time.Time) int {
	cases := []reflect.SelectCase{
		caseHeartbeat: {Dir: reflect.SelectRecv, Chan: reflect.ValueOf(heartbeat)},
		caseGone:      {Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		caseShutdown:  {Dir: reflect.SelectRecv, Chan: reflect.ValueOf(l.b.shutdown.Done())},
		caseStopping:  {Dir: reflect.SelectRecv, Chan: reflect.ValueOf(l.b.tasks.Stopping().Done())},
	}
	ids := make([]string, 0, len(l.subs))
	for id, sub := range l.subs {
		ids = append(ids, id)
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(sub.Events())})
	}
	chosen, v, open := reflect.Select(cases)
	if chosen < caseSubscriptions {
		return chosen
	}
	// Take what the other subscriptions hold already too, so that a burst
	// of changes is told once.
	cases = append(cases[:0], cases[caseSubscriptions:]...)
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectDefault})
	for received := true; received; {
		l.received(ids[chosen-caseSubscriptions], eventOf(v), open)
		if !open { // a closed channel is ready for ever: not asked again
			cases[chosen-caseSubscriptions].Chan = reflect.Value{}
		}
		var c int
		c, v, open = reflect.Select(cases)
		chosen, received = c+caseSubscriptions, c < len(cases)-1
	}
	return caseSubscriptions
}

// eventOf is the event a subscription's channel gave, zero when closed.
func eventOf(v reflect.Value) a2a.StreamResponse {
	ev, _ := v.Interface().(a2a.StreamResponse)
	return ev
}

// serveListen writes the stream of listen id: the acknowledgment, each
// change of a followed task, and, once none is followed any more, or the
// endpoint shuts down, the listen's answer. It returns when the stream
// ends, or the client goes away.
func (b *binding) serveListen(w http.ResponseWriter, ctx context.Context, id json.RawMessage, l *listening) {
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	write := func(p []byte) error {
		return b.h.WriteWithin(rc, func() error {
			if _, err := w.Write(p); err != nil {
				return err
			}
			return rc.Flush()
		})
	}
	send := func(msg []byte) error {
		return write(append(append([]byte("event: message\ndata: "), msg...), '\n', '\n'))
	}
	subscription := subscriptionMeta(id)
	ack, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
		"params": map[string]any{"_meta": subscription, "notifications": map[string]any{"taskIds": l.ids}}})
	if err := send(ack); err != nil {
		return
	}
	// The listen beats itself rather than through deadlineWriter, which
	// tells nobody of a heartbeat that failed: a client that stopped
	// reading must free the listen's subscriptions at once, not when its
	// tasks end.
	heartbeat := time.NewTicker(b.heartbeat)
	defer heartbeat.Stop()
	told := map[string][sha256.Size]byte{} // what each task's last notification said
	noHistory := int32(0)
	// tell writes the state of each changed task, following anew, when
	// resubscribe, a live one whose subscription ended. It reports false
	// when the stream is to end without the listen's answer: a write
	// failed, or the store did, which the client learns from the stream's
	// abrupt end, and listens again.
	tell := func(resubscribe bool) bool {
		changed := l.changed
		l.changed = map[string]error{}
		for _, taskID := range l.ids {
			ended, ok := changed[taskID]
			if !ok {
				continue
			}
			task, err := b.tasks.Get(l.owner, taskID, &noHistory)
			switch {
			case isCode(err, a2a.CodeTaskNotFound):
				continue // it expired: nothing more to tell
			case err != nil:
				b.log.Debug("MCP: a listen ends: the task store failed", zap.String("task", taskID), zap.Error(err))
				return false
			}
			// A subscription ends at a task's final event, which is also
			// where it stops to ask for input, or when the stream fell
			// behind its events, or the store lost them: a live task is
			// followed anew.
			if resubscribe && ended != nil && !errors.Is(ended, tasks.ErrShutdown) && !task.Status.State.Terminal() {
				if err := l.subscribe(taskID); err != nil && !isCode(err, a2a.CodeTaskNotFound) {
					b.log.Debug("MCP: a listen ends: the task store failed", zap.String("task", taskID), zap.Error(err))
					return false
				}
			}
			msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/tasks",
				"params": taskStatusParams{Meta: subscription, wireTask: b.wireTask("", true, task)}})
			if err != nil {
				b.log.Error("MCP: a task notification could not be encoded", zap.Error(err))
				continue
			}
			if sum := sha256.Sum256(msg); sum != told[taskID] {
				if send(msg) != nil {
					return false
				}
				told[taskID] = sum
			}
		}
		return true
	}
	for {
		if !tell(true) {
			return
		}
		if len(l.subs) == 0 && len(l.changed) == 0 {
			break
		}
		if len(l.changed) > 0 {
			continue // a task followed anew: its state now
		}
		switch l.wait(ctx, heartbeat.C) {
		case caseSubscriptions:
			continue
		case caseHeartbeat:
			if write(heartbeatComment) != nil {
				return
			}
			continue
		case caseGone:
			return
		}
		// The endpoint or the task manager stops: each task's state is
		// told as the store has it now, where a drain stored how it ended
		// (its event may not have come yet from another replica).
		for _, taskID := range l.ids {
			l.changed[taskID] = tasks.ErrShutdown
		}
		if !tell(false) {
			return
		}
		break
	}
	// A graceful end: the listen's answer tells the client that nothing
	// more comes on this stream.
	end, _ := json.Marshal(map[string]any{"resultType": "complete", "_meta": subscription})
	_ = send(append(append(append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), `,"result":`...), end...), '}'))
}

// subscriptionMeta is the _meta of every message of listen id's stream.
func subscriptionMeta(id json.RawMessage) map[string]json.RawMessage {
	return map[string]json.RawMessage{sdk.MetaKeySubscriptionID: id}
}

// taskStatusParams are a notifications/tasks' parameters: the task in
// detail, and the subscription's _meta beside its members.
type taskStatusParams struct {
	Meta map[string]json.RawMessage `json:"_meta"`
	*wireTask
}
