package taskstest

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// startResent starts msg and requires it to be found as sent before, in
// task taskID; it returns the run.
func startResent(t testing.TB, m *tasks.Manager, owner string, msg a2a.Message, opts tasks.StartOptions, taskID string) *tasks.Run {
	t.Helper()
	run, err := m.Start(owner, msg, opts)
	if err != nil {
		t.Fatalf("Start of a message sent again: %v", err)
	}
	if !run.Resent || run.Task.ID != taskID {
		t.Fatalf("Start of a message sent again: resent %v, task %s; want resent, task %s", run.Resent, run.Task.ID, taskID)
	}
	return run
}

func (s *suite) TestResentNewTask(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{})
	msg := userMsg("place an order")
	run := mustStart(t, m, "alice", msg)

	// While the first run works, the message sent again follows its task.
	again := startResent(t, m, "alice", msg, tasks.StartOptions{}, run.Task.ID)
	if again.Subscription == nil {
		t.Fatal("a resent message of a working task has no subscription to wait on")
	}
	if again.Task.Status.State != a2a.TaskStateWorking || len(again.Task.History) != 1 {
		t.Errorf("resent task: state %s, %d messages; want working with the one message", again.Task.Status.State, len(again.Task.History))
	}
	if _, err := run.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted, Message: agentMsg("ordered")}, nil); err != nil {
		t.Fatal(err)
	}
	if ev := recv(t, again.Subscription); ev.StatusUpdate == nil || !ev.StatusUpdate.Final {
		t.Errorf("the resent message's subscription got %+v, want the final status", ev)
	}
	again.Subscription.Close()

	// Once the task ended, the message sent again answers it as it is.
	ended := startResent(t, m, "alice", msg, tasks.StartOptions{Subscribe: true}, run.Task.ID)
	if ended.Subscription != nil {
		t.Error("a resent message of an ended task has a subscription")
	}
	if ended.Task.Status.State != a2a.TaskStateCompleted {
		t.Errorf("resent task: state %s, want completed", ended.Task.Status.State)
	}
	// The context the agent chose, given back, is the same message.
	withContext := msg
	withContext.ContextID = run.Task.ContextID
	startResent(t, m, "alice", withContext, tasks.StartOptions{}, run.Task.ID)
	if list, err := m.List("alice", &a2a.ListTasksRequest{}); err != nil || len(list.Tasks) != 1 {
		t.Errorf("alice's tasks: %v (err %v), want the one", list, err)
	}
}

func (s *suite) TestResentOtherContent(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{})
	msg := userMsg("place an order")
	msg.Metadata = map[string]any{"skill": "order"}
	run := mustStart(t, m, "alice", msg)

	otherText := msg
	otherText.Parts = []a2a.Part{a2a.TextPart("place two orders")}
	otherMetadata := msg
	otherMetadata.Metadata = map[string]any{"skill": "refund"}
	otherContext := msg
	otherContext.ContextID = "another-context"
	// Sent as a follow-up of the task it made, it is another message.
	toItsTask := msg
	toItsTask.TaskID = run.Task.ID
	for name, resent := range map[string]a2a.Message{"text": otherText, "metadata": otherMetadata, "context": otherContext, "taskId": toItsTask} {
		_, err := m.Start("alice", resent, tasks.StartOptions{})
		var e *a2a.Error
		if !errors.As(err, &e) || e.Code != a2a.CodeInvalidParams || e.Field != "params.message.messageId" {
			t.Errorf("the same messageId with another %s: err = %v, want InvalidParams on params.message.messageId", name, err)
		}
	}
	if got := mustGet(t, m, "alice", run.Task.ID); len(got.History) != 1 || got.Status.State != a2a.TaskStateWorking {
		t.Errorf("the first task changed: %+v", got)
	}
}

func (s *suite) TestResentFollowUp(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{})
	first := mustStart(t, m, "alice", userMsg("order"))
	if _, err := first.Finish(a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: agentMsg("how many?")}, nil); err != nil {
		t.Fatal(err)
	}
	answer := userMsg("two")
	answer.TaskID = first.Task.ID
	second := mustStart(t, m, "alice", answer)

	again := startResent(t, m, "alice", answer, tasks.StartOptions{}, first.Task.ID)
	if again.Subscription == nil {
		t.Fatal("a resent follow-up of a working task has no subscription")
	}
	again.Subscription.Close()
	other := answer
	other.Parts = []a2a.Part{a2a.TextPart("three")}
	if _, err := m.Start("alice", other, tasks.StartOptions{}); a2aCode(err) != a2a.CodeInvalidParams {
		t.Errorf("the follow-up's id with other content: err = %v, want InvalidParams", err)
	}
	if _, err := second.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted}, nil); err != nil {
		t.Fatal(err)
	}
	// Terminal now: the resend still answers the task, not "terminal".
	startResent(t, m, "alice", answer, tasks.StartOptions{}, first.Task.ID)
	if got := mustGet(t, m, "alice", first.Task.ID); len(got.History) != 3 {
		t.Errorf("history holds %d messages, want 3 (order, question, answer once)", len(got.History))
	}
	// Another caller naming the task learns nothing of it.
	if _, err := m.Start("bob", answer, tasks.StartOptions{}); a2aCode(err) != a2a.CodeTaskNotFound {
		t.Errorf("bob resending alice's follow-up: err = %v, want TaskNotFound", err)
	}
}

// TestResentScopes: a message id belongs to its sender. Another owner, or
// another anonymous client (quota), sending the same id makes a task of
// its own.
func (s *suite) TestResentScopes(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{})
	msg := userMsg("hello")
	start := func(owner, quota string) *tasks.Run {
		t.Helper()
		run, err := m.Start(owner, msg, tasks.StartOptions{Quota: quota})
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	alice := start("alice", "")
	bob := start("bob", "")
	anonA := start("", "client 192.0.2.1")
	anonB := start("", "client 192.0.2.2")
	againA := start("", "client 192.0.2.1")
	seen := map[string]bool{}
	for _, run := range []*tasks.Run{alice, bob, anonA, anonB} {
		if run.Resent || seen[run.Task.ID] {
			t.Errorf("task %s: resent %v, want a task of its own", run.Task.ID, run.Resent)
		}
		seen[run.Task.ID] = true
	}
	if !againA.Resent || againA.Task.ID != anonA.Task.ID {
		t.Errorf("the same anonymous client sending again: resent %v task %s, want task %s", againA.Resent, againA.Task.ID, anonA.Task.ID)
	}
	if againA.Subscription != nil {
		againA.Subscription.Close()
	}
}

// TestResentConcurrently: the same message sent at once, to every replica,
// starts one run; every other call is told of that run's task.
func (s *suite) TestResentConcurrently(t *testing.T) {
	const replicas, callers = 2, 8
	opts := tasks.Options{}
	stores := s.newReplicas(t, opts.StoreLimits(), replicas)
	managers := make([]*tasks.Manager, replicas)
	for i, store := range stores {
		o := opts
		o.Store = store
		managers[i], _ = s.newManager(t, o)
	}
	msg := userMsg("pay")
	runs := make([]*tasks.Run, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { runs[i], errs[i] = managers[i%replicas].Start("alice", msg, tasks.StartOptions{}) })
	}
	wg.Wait()
	var started *tasks.Run
	for i, run := range runs {
		switch {
		case errs[i] != nil:
			t.Fatalf("caller %d: %v", i, errs[i])
		case !run.Resent && started != nil:
			t.Fatalf("two runs started for one message: tasks %s and %s", started.Task.ID, run.Task.ID)
		case !run.Resent:
			started = run
		}
	}
	if started == nil {
		t.Fatal("no run started")
	}
	for i, run := range runs {
		if run.Resent {
			if run.Task.ID != started.Task.ID {
				t.Errorf("caller %d was told of task %s, want %s", i, run.Task.ID, started.Task.ID)
			}
			if run.Subscription != nil {
				run.Subscription.Close()
			}
		}
	}
	if _, err := started.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted}, nil); err != nil {
		t.Fatal(err)
	}
}

// TestResentForgottenWithTask: a message is remembered as long as its
// task is stored; once the task is dropped, the same id makes a new task.
func (s *suite) TestResentForgottenWithTask(t *testing.T) {
	m, clk := s.newManager(t, tasks.Options{MaxAge: time.Hour})
	msg := userMsg("once")
	run := mustStart(t, m, "alice", msg)
	if _, err := run.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted}, nil); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Hour) // the next Start sweeps the ended task away
	next := mustStart(t, m, "alice", msg)
	if next.Resent || next.Task.ID == run.Task.ID {
		t.Errorf("after its task was dropped, the message: resent %v task %s, want a new task", next.Resent, next.Task.ID)
	}
}

// TestInsertResent is the contract itself: a record whose first message
// the same owner and quota sent before is not stored, and Insert names
// the task that has it, before any limit is checked.
func (s *suite) TestInsertResent(t *testing.T) {
	limits := smallLimits
	limits.MaxTasks = 1
	store := s.newStore(t, limits)
	at := time.Now()
	first := record("t1", "alice", a2a.TaskStateWorking, at, 10)
	mustInsert(t, store, first)

	again := record("t2", "alice", a2a.TaskStateWorking, at, 10)
	again.Task.History[0].MessageID = first.Task.History[0].MessageID
	var resent *tasks.Resent
	if err := store.Insert(t.Context(), again); !errors.As(err, &resent) || resent.TaskID != "t1" {
		t.Fatalf("Insert of a message sent before: err = %v, want *tasks.Resent naming t1", err)
	}
	if _, err := store.Get(t.Context(), "t2"); a2aCode(err) != a2a.CodeTaskNotFound {
		t.Errorf("the resent record was stored: Get(t2) err = %v", err)
	}
	// Another owner's, or another quota's, is another message: the store
	// is full, and says so.
	other := again
	other.Owner = "bob"
	if err := store.Insert(t.Context(), other); !refused(err, limits, tasks.StoreTasks) {
		t.Errorf("Insert of bob's message with alice's id: err = %v, want the store's refusal", err)
	}
}

// finished starts msg as owner's (within quota) and completes its task, a
// second after the last one, so that tasks are dropped in the order they
// finished, and the store is swept at each start (a shared store sweeps
// at most once a second).
func finished(t testing.TB, m *tasks.Manager, clk *clock, owner, quota string, msg a2a.Message) *a2a.Task {
	t.Helper()
	clk.Advance(time.Second)
	run, err := m.Start(owner, msg, tasks.StartOptions{Quota: quota})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	task, err := run.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// requireDropped requires err to be the answer to a message sent again
// whose task was dropped: InvalidParams on params.message.messageId, naming
// the message and its task.
func requireDropped(t testing.TB, err error, msg a2a.Message, taskID string) {
	t.Helper()
	var e *a2a.Error
	if !errors.As(err, &e) || e.Code != a2a.CodeInvalidParams || e.Field != "params.message.messageId" ||
		!strings.Contains(e.Description, msg.MessageID) || !strings.Contains(e.Description, "no longer stored") || e.Metadata["taskId"] != taskID {
		t.Fatalf("the message of a dropped task sent again: err = %v, want InvalidParams on params.message.messageId naming %s and its task %s",
			err, msg.MessageID, taskID)
	}
}

// TestResentAfterEviction: a task dropped to make room leaves its message
// remembered for the window, apart from it: sent again, the message is
// refused, saying its task is gone, and nothing runs; once the window
// ended it is a new message.
func (s *suite) TestResentAfterEviction(t *testing.T) {
	m, clk := s.newManager(t, tasks.Options{MaxTasks: 2, MaxAge: time.Hour, ResendWindow: 30 * time.Minute})
	msg := userMsg("order")
	first := finished(t, m, clk, "alice", "", msg)
	for range 2 { // both places taken by newer tasks: the first is dropped
		finished(t, m, clk, "alice", "", userMsg("other"))
	}
	if _, err := m.Get("alice", first.ID, nil); a2aCode(err) != a2a.CodeTaskNotFound {
		t.Fatalf("the first task is still stored (err %v): the test makes no room", err)
	}
	_, err := m.Start("alice", msg, tasks.StartOptions{})
	requireDropped(t, err, msg, first.ID)
	if list, err := m.List("alice", &a2a.ListTasksRequest{}); err != nil || len(list.Tasks) != 2 {
		t.Errorf("alice's tasks after the resend: %v (err %v), want the two newer ones only", list, err)
	}
	// Another caller's message of that id is its own.
	if run, err := m.Start("bob", msg, tasks.StartOptions{}); err != nil || run.Resent {
		t.Errorf("bob's message with alice's id: %+v, %v; want a task of its own", run, err)
	}
	clk.Advance(31 * time.Minute)
	if run, err := m.Start("alice", msg, tasks.StartOptions{}); err != nil || run.Resent {
		t.Errorf("the message sent again after its window: %+v, %v; want a new task", run, err)
	}
}

// TestResentKeysPerCaller: the messages remembered apart from their tasks
// have a budget of their own, and one caller's traffic cannot flush
// another's: past the budget, the caller holding the most loses its
// oldest, and anonymous callers only ever displace anonymous ones.
func (s *suite) TestResentKeysPerCaller(t *testing.T) {
	m, clk := s.newManager(t, tasks.Options{MaxTasks: 2, MaxResendKeys: 4, MaxLiveAnonymous: 1})
	alice := userMsg("alice's order")
	aliceTask := finished(t, m, clk, "alice", "", alice)
	client := userMsg("an anonymous client's order")
	clientTask := finished(t, m, clk, "", "client 192.0.2.1", client)
	// Another address, and another owner, each finish many tasks: every
	// one is dropped to make room for the next, its message remembered.
	var bobs []a2a.Message
	for i := range 12 {
		finished(t, m, clk, "", "client 192.0.2.9", userMsg("flood"))
		bobs = append(bobs, userMsg("bob's"))
		finished(t, m, clk, "bob", "", bobs[i])
	}
	_, err := m.Start("alice", alice, tasks.StartOptions{})
	requireDropped(t, err, alice, aliceTask.ID)
	_, err = m.Start("", client, tasks.StartOptions{Quota: "client 192.0.2.1"})
	requireDropped(t, err, client, clientTask.ID)
	// The flooding owner lost its own oldest messages.
	if run, err := m.Start("bob", bobs[0], tasks.StartOptions{}); err != nil || run.Resent {
		t.Errorf("bob's first message, sent again past his share: %+v, %v; want a new task", run, err)
	}
}

// TestResentWindowSetting: a shorter window forgets the message of an
// ended task sooner, but never that of a live one; resends off, every
// message runs.
func (s *suite) TestResentWindowSetting(t *testing.T) {
	t.Run("shorter", func(t *testing.T) {
		m, clk := s.newManager(t, tasks.Options{ResendWindow: time.Minute})
		live := userMsg("slow")
		running := mustStart(t, m, "alice", live)
		ended := userMsg("fast")
		first := finished(t, m, clk, "alice", "", ended)
		clk.Advance(2 * time.Minute)
		startResent(t, m, "alice", live, tasks.StartOptions{}, running.Task.ID).Subscription.Close()
		if run, err := m.Start("alice", ended, tasks.StartOptions{}); err != nil || run.Resent || run.Task.ID == first.ID {
			t.Errorf("an ended task's message past the window: %+v, %v; want a new task", run, err)
		}
	})
	t.Run("off", func(t *testing.T) {
		m, _ := s.newManager(t, tasks.Options{ResendWindow: -1})
		msg := userMsg("again")
		first := mustStart(t, m, "alice", msg)
		other := msg
		other.Parts = []a2a.Part{a2a.TextPart("other content")}
		for _, again := range []a2a.Message{msg, other} {
			if run, err := m.Start("alice", again, tasks.StartOptions{}); err != nil || run.Resent || run.Task.ID == first.Task.ID {
				t.Errorf("a message sent again with resends off: %+v, %v; want a new task", run, err)
			}
		}
	})
}

// TestInsertResentDropped is the contract: a record whose message made a
// task that was dropped to make room, within the window, is not stored;
// Insert names that task and says it was dropped. Past the window it is
// stored.
func (s *suite) TestInsertResentDropped(t *testing.T) {
	limits := smallLimits
	limits.MaxTasks = 1
	store := s.newStore(t, limits)
	at := time.Now()
	first := record("t1", "alice", a2a.TaskStateCompleted, at, 10)
	mustInsert(t, store, first, record("t2", "alice", a2a.TaskStateCompleted, at.Add(time.Millisecond), 10))
	again := record("t3", "alice", a2a.TaskStateWorking, at.Add(time.Minute), 10)
	again.Task.History[0].MessageID = first.Task.History[0].MessageID
	var resent *tasks.Resent
	if err := store.Insert(t.Context(), again); !errors.As(err, &resent) || resent.TaskID != "t1" || !resent.Dropped {
		t.Fatalf("Insert of the message of a dropped task: err = %v, want *tasks.Resent naming t1, dropped", err)
	}
	later := again
	later.Updated = at.Add(limits.MaxAge + time.Minute)
	mustInsert(t, store, later)
}
