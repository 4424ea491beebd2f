package taskstest

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

func (s *suite) TestStartNewTask(t *testing.T) {
	m, clk := s.newManager(t, tasks.Options{})
	msg := userMsg("hello")
	task := mustCreate(t, m, "alice", msg)

	if task.ID == "" || task.ContextID == "" || task.ID == task.ContextID {
		t.Fatalf("ids: task %q context %q", task.ID, task.ContextID)
	}
	if task.Status.State != a2a.TaskStateWorking || !task.Status.Timestamp.Equal(clk.Now()) || task.Status.Message != nil {
		t.Errorf("status = %+v, want working at %v", task.Status, clk.Now())
	}
	want := msg
	want.TaskID, want.ContextID = task.ID, task.ContextID
	if !reflect.DeepEqual(task.History, []a2a.Message{want}) {
		t.Errorf("history = %+v, want [%+v]", task.History, want)
	}
	if !reflect.DeepEqual(mustGet(t, m, "alice", task.ID), task) {
		t.Error("Get differs from what Start returned")
	}

	// The context is kept across the tasks of a conversation.
	next := userMsg("and then?")
	next.ContextID = task.ContextID
	task2 := mustCreate(t, m, "alice", next)
	if task2.ContextID != task.ContextID || task2.ID == task.ID {
		t.Errorf("second task: id %q context %q, want a new id in context %q", task2.ID, task2.ContextID, task.ContextID)
	}

	// A client-chosen task id does not make a task: it names one to
	// continue.
	withID := userMsg("x")
	withID.TaskID = "client-id"
	if _, err := create(m, "alice", withID); a2aCode(err) != a2a.CodeTaskNotFound {
		t.Errorf("Start with an unknown taskId: err = %v, want TaskNotFound", err)
	}
}

func (s *suite) TestSetStatusTransitions(t *testing.T) {
	tests := []struct {
		name    string
		path    []a2a.TaskState // reached with SetStatus from working, where Start leaves a task
		to      a2a.TaskState
		wantErr error
	}{
		{"working to rejected", nil, a2a.TaskStateRejected, nil},
		{"working to input-required", nil, a2a.TaskStateInputRequired, nil},
		{"working to unspecified", nil, a2a.TaskStateUnspecified, tasks.ErrTransition},
		{"working to working (progress)", []a2a.TaskState{a2a.TaskStateWorking}, a2a.TaskStateWorking, nil},
		{"working to completed", []a2a.TaskState{a2a.TaskStateWorking}, a2a.TaskStateCompleted, nil},
		{"working to failed", []a2a.TaskState{a2a.TaskStateWorking}, a2a.TaskStateFailed, nil},
		{"working to auth-required", []a2a.TaskState{a2a.TaskStateWorking}, a2a.TaskStateAuthRequired, nil},
		{"working to submitted", []a2a.TaskState{a2a.TaskStateWorking}, a2a.TaskStateSubmitted, tasks.ErrTransition},
		{"input-required to working", []a2a.TaskState{a2a.TaskStateInputRequired}, a2a.TaskStateWorking, nil},
		{"input-required to canceled", []a2a.TaskState{a2a.TaskStateInputRequired}, a2a.TaskStateCanceled, nil},
		{"input-required to completed", []a2a.TaskState{a2a.TaskStateInputRequired}, a2a.TaskStateCompleted, tasks.ErrTransition},
		{"auth-required to auth-required", []a2a.TaskState{a2a.TaskStateAuthRequired}, a2a.TaskStateAuthRequired, tasks.ErrTransition},
		{"completed to working", []a2a.TaskState{a2a.TaskStateCompleted}, a2a.TaskStateWorking, tasks.ErrTerminal},
		{"completed to completed", []a2a.TaskState{a2a.TaskStateCompleted}, a2a.TaskStateCompleted, tasks.ErrTerminal},
		{"failed to working", []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateFailed}, a2a.TaskStateWorking, tasks.ErrTerminal},
		{"canceled to completed", []a2a.TaskState{a2a.TaskStateCanceled}, a2a.TaskStateCompleted, tasks.ErrTerminal},
		{"rejected to failed", []a2a.TaskState{a2a.TaskStateRejected}, a2a.TaskStateFailed, tasks.ErrTerminal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := s.newManager(t, tasks.Options{})
			task := mustCreate(t, m, "", userMsg("go"))
			for _, s := range tt.path {
				mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: s})
			}
			before := mustGet(t, m, "", task.ID)
			got, err := m.SetStatus(task.ID, a2a.TaskStatus{State: tt.to, Message: agentMsg("late")})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("SetStatus(%s) err = %v, want %v", tt.to, err, tt.wantErr)
			}
			after := mustGet(t, m, "", task.ID)
			if err != nil {
				if got != nil {
					t.Error("a failed SetStatus returned a task")
				}
				if !reflect.DeepEqual(after, before) {
					t.Errorf("a refused transition changed the task:\n%+v\nwas\n%+v", after, before)
				}
				return
			}
			if got.Status.State != tt.to || after.Status.State != tt.to {
				t.Errorf("state = %s (returned) %s (stored), want %s", got.Status.State, after.Status.State, tt.to)
			}
		})
	}
}

func (s *suite) TestSetStatusUnknownTask(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{})
	if _, err := m.SetStatus("nope", a2a.TaskStatus{State: a2a.TaskStateWorking}); a2aCode(err) != a2a.CodeTaskNotFound {
		t.Errorf("err = %v, want TaskNotFound", err)
	}
}

func (s *suite) TestSetStatusMessageAndTimestamp(t *testing.T) {
	m, clk := s.newManager(t, tasks.Options{})
	task := mustCreate(t, m, "", userMsg("question"))

	clk.Advance(time.Second)
	reply := agentMsg("answer")
	got := mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted, Message: reply})

	if !got.Status.Timestamp.Equal(clk.Now()) {
		t.Errorf("timestamp = %v, want %v (stamped)", got.Status.Timestamp, clk.Now())
	}
	if len(got.History) != 2 {
		t.Fatalf("history has %d messages, want 2", len(got.History))
	}
	stored := got.History[1]
	if stored.TaskID != task.ID || stored.ContextID != task.ContextID || stored.MessageID != reply.MessageID {
		t.Errorf("history[1] = %+v, want the reply with the task's ids", stored)
	}
	if !reflect.DeepEqual(*got.Status.Message, stored) {
		t.Errorf("status message %+v differs from history %+v", *got.Status.Message, stored)
	}
	if reply.TaskID != "" {
		t.Error("SetStatus modified the caller's message")
	}

	// A timestamp given by the caller is kept.
	task2 := mustCreate(t, m, "", userMsg("q"))
	at := clk.Now().Add(-time.Minute)
	if got := mustSetStatus(t, m, task2.ID, a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: at}); !got.Status.Timestamp.Equal(at) {
		t.Errorf("timestamp = %v, want the given %v", got.Status.Timestamp, at)
	}
}

func (s *suite) TestContinue(t *testing.T) {
	tests := []struct {
		name     string
		owner    string
		path     []a2a.TaskState
		taskID   string // "" continues the task itself; "unknown" another id
		msgCtx   string // "task": the task's own context
		msgTask  string // "task": the task's own id, also in the message
		wantCode int    // 0: success
	}{
		{name: "input-required", path: []a2a.TaskState{a2a.TaskStateInputRequired}},
		{name: "auth-required", path: []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateAuthRequired}},
		{name: "with own context and task ids", path: []a2a.TaskState{a2a.TaskStateInputRequired}, msgCtx: "task", msgTask: "task"},
		{name: "context mismatch", path: []a2a.TaskState{a2a.TaskStateInputRequired}, msgCtx: "other", wantCode: a2a.CodeInvalidParams},
		{name: "completed", path: []a2a.TaskState{a2a.TaskStateCompleted}, wantCode: a2a.CodeUnsupportedOperation},
		{name: "canceled", path: []a2a.TaskState{a2a.TaskStateCanceled}, wantCode: a2a.CodeUnsupportedOperation},
		{name: "still working", path: []a2a.TaskState{a2a.TaskStateWorking}, wantCode: a2a.CodeUnsupportedOperation},
		{name: "another owner's", owner: "mallory", path: []a2a.TaskState{a2a.TaskStateInputRequired}, wantCode: a2a.CodeTaskNotFound},
		{name: "unknown", taskID: "unknown", wantCode: a2a.CodeTaskNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, clk := s.newManager(t, tasks.Options{})
			task := mustCreate(t, m, "alice", userMsg("book a table"))
			for _, s := range tt.path {
				mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: s, Message: agentMsg("for how many?")})
			}
			before := mustGet(t, m, "alice", task.ID)
			owner, id := "alice", task.ID
			if tt.owner != "" {
				owner = tt.owner
			}
			if tt.taskID != "" {
				id = tt.taskID
			}
			msg := userMsg("four")
			switch tt.msgCtx {
			case "task":
				msg.ContextID = task.ContextID
			case "other":
				msg.ContextID = "another-context"
			}
			switch tt.msgTask {
			case "task":
				msg.TaskID = task.ID
			}
			clk.Advance(time.Second)

			got, err := followUp(m, owner, id, msg)
			if tt.wantCode != 0 {
				if a2aCode(err) != tt.wantCode {
					t.Fatalf("err = %v, want code %d", err, tt.wantCode)
				}
				if after := mustGet(t, m, "alice", task.ID); !reflect.DeepEqual(after, before) {
					t.Error("a refused follow-up changed the task")
				}
				return
			}
			if err != nil {
				t.Fatalf("follow-up Start: %v", err)
			}
			if got.Status.State != a2a.TaskStateWorking || !got.Status.Timestamp.Equal(clk.Now()) {
				t.Errorf("status = %+v, want working now", got.Status)
			}
			last := got.History[len(got.History)-1]
			if len(got.History) != len(before.History)+1 || last.MessageID != msg.MessageID ||
				last.TaskID != task.ID || last.ContextID != task.ContextID {
				t.Errorf("history = %+v, want the follow-up appended with the task's ids", got.History)
			}
		})
	}
}

func (s *suite) TestHistoryLength(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{})
	task := mustCreate(t, m, "", userMsg("one"))
	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateWorking, Message: agentMsg("two")})
	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted, Message: agentMsg("three")})
	full := mustGet(t, m, "", task.ID)
	if len(full.History) != 3 {
		t.Fatalf("history has %d messages, want 3", len(full.History))
	}

	tests := []struct {
		name     string
		length   *int32
		want     []a2a.Message
		wantCode int
	}{
		{"unset: all", nil, full.History, 0},
		{"zero: omitted", ptr[int32](0), nil, 0},
		{"one: the last", ptr[int32](1), full.History[2:], 0},
		{"two: the last two", ptr[int32](2), full.History[1:], 0},
		{"more than there is: all", ptr[int32](10), full.History, 0},
		{"negative: invalid", ptr[int32](-1), nil, a2a.CodeInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := m.Get("", task.ID, tt.length)
			if a2aCode(err) != tt.wantCode {
				t.Fatalf("err = %v, want code %d", err, tt.wantCode)
			}
			if err != nil {
				return
			}
			if !reflect.DeepEqual(got.History, tt.want) {
				t.Errorf("history = %+v, want %+v", got.History, tt.want)
			}
			if got.Status.Message == nil {
				t.Error("the status message went with the history")
			}
		})
	}
}

// A snapshot is the caller's: later updates do not show through it, and
// appending to it does not reach the store.
func (s *suite) TestSnapshotIsolation(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{})
	task := mustCreate(t, m, "", userMsg("one"))
	if err := m.AddArtifact(task.ID, a2a.Artifact{ArtifactID: "a", Name: "first"}); err != nil {
		t.Fatal(err)
	}
	snap := mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateWorking, Message: agentMsg("two")})

	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateWorking, Message: agentMsg("three")})
	if err := m.AddArtifact(task.ID, a2a.Artifact{ArtifactID: "a", Name: "replaced"}); err != nil {
		t.Fatal(err)
	}
	if len(snap.History) != 2 || snap.Artifacts[0].Name != "first" {
		t.Errorf("snapshot changed: %d messages, artifact %q", len(snap.History), snap.Artifacts[0].Name)
	}

	snap.History = append(snap.History, *agentMsg("injected"))
	snap.Artifacts = append(snap.Artifacts, a2a.Artifact{ArtifactID: "b"})
	now := mustGet(t, m, "", task.ID)
	if len(now.History) != 3 || now.History[2].Parts[0].Text != "three" || len(now.Artifacts) != 1 || now.Artifacts[0].Name != "replaced" {
		t.Errorf("store changed by appending to a snapshot: %+v", now)
	}
}

func (s *suite) TestAddArtifact(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{})
	task := mustCreate(t, m, "", userMsg("go"))
	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateWorking})

	for _, a := range []a2a.Artifact{
		{ArtifactID: "a", Name: "one", Parts: []a2a.Part{a2a.TextPart("1")}},
		{ArtifactID: "b", Name: "two"},
		{ArtifactID: "a", Name: "one again"}, // replaces "a" in place
		{Name: "no id"},
	} {
		if err := m.AddArtifact(task.ID, a); err != nil {
			t.Fatalf("AddArtifact(%q): %v", a.Name, err)
		}
	}
	got := mustGet(t, m, "", task.ID).Artifacts
	if len(got) != 3 || got[0].Name != "one again" || got[1].Name != "two" || got[2].Name != "no id" || got[2].ArtifactID == "" {
		t.Fatalf("artifacts = %+v", got)
	}

	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted})
	if err := m.AddArtifact(task.ID, a2a.Artifact{ArtifactID: "c"}); !errors.Is(err, tasks.ErrTerminal) {
		t.Errorf("AddArtifact to a completed task: err = %v, want ErrTerminal", err)
	}
	if err := m.AddArtifact("nope", a2a.Artifact{}); a2aCode(err) != a2a.CodeTaskNotFound {
		t.Errorf("AddArtifact to an unknown task: err = %v, want TaskNotFound", err)
	}
}

// A streamed artifact: subscribers get each chunk as it comes, with append
// and lastChunk, the stored task holds the whole artifact, snapshots taken
// on the way keep what they saw, and the chunks count against the task's
// byte budget.
func (s *suite) TestArtifactChunks(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{MaxTaskBytes: 64 << 10})
	task := mustCreate(t, m, "", userMsg("go"))
	_, sub := subscribe(t, m, "", task.ID)
	id, err := m.AddArtifactChunk(task.ID, a2a.Artifact{Name: "story", Parts: []a2a.Part{a2a.TextPart("once")}}, false, false)
	if err != nil || id == "" {
		t.Fatalf("first chunk: id %q, err %v", id, err)
	}
	early := mustGet(t, m, "", task.ID)
	for i, word := range []string{" upon", " a time"} {
		if _, err := m.AddArtifactChunk(task.ID, a2a.Artifact{ArtifactID: id, Parts: []a2a.Part{a2a.TextPart(word)}}, true, i == 1); err != nil {
			t.Fatalf("chunk %q: %v", word, err)
		}
	}
	final := mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted})

	var texts []string
	for _, p := range final.Artifacts[0].Parts {
		texts = append(texts, p.Text)
	}
	if len(final.Artifacts) != 1 || final.Artifacts[0].Name != "story" || strings.Join(texts, "") != "once upon a time" {
		t.Errorf("stored artifacts %+v, want one artifact with every chunk's parts", final.Artifacts)
	}
	if len(early.Artifacts[0].Parts) != 1 {
		t.Errorf("a snapshot taken after the first chunk has %d parts, want 1", len(early.Artifacts[0].Parts))
	}
	early.Artifacts[0].Parts = append(early.Artifacts[0].Parts, a2a.TextPart("injected"))
	if got := mustGet(t, m, "", task.ID).Artifacts[0].Parts; len(got) != 3 || got[1].Text != " upon" {
		t.Errorf("store changed by appending to a snapshot's parts: %+v", got)
	}

	events, _ := readAll(sub)
	want := []struct {
		text              string
		append, lastChunk bool
	}{{"once", false, false}, {" upon", true, false}, {" a time", true, true}}
	if len(events) != len(want)+1 {
		t.Fatalf("%d events, want %d chunks and the final status", len(events), len(want))
	}
	for i, w := range want {
		ev := events[i].ArtifactUpdate
		if ev == nil || ev.Artifact.ArtifactID != id || len(ev.Artifact.Parts) != 1 || ev.Artifact.Parts[0].Text != w.text ||
			ev.Append != w.append || ev.LastChunk != w.lastChunk {
			t.Errorf("event %d = %+v, want the chunk %q of artifact %s, append %v, lastChunk %v", i, ev, w.text, id, w.append, w.lastChunk)
		}
	}

	other := mustCreate(t, m, "", userMsg("go"))
	if _, err := m.AddArtifactChunk(other.ID, a2a.Artifact{ArtifactID: "none", Parts: []a2a.Part{a2a.TextPart("x")}}, true, false); err == nil {
		t.Error("appending to an artifact the task does not have: no error")
	}
	id, err = m.AddArtifactChunk(other.ID, a2a.Artifact{Parts: []a2a.Part{a2a.TextPart("x")}}, false, false)
	if err != nil {
		t.Fatal(err)
	}
	big := a2a.Artifact{ArtifactID: id, Parts: []a2a.Part{a2a.TextPart(strings.Repeat("x", 16<<10))}}
	for i := 0; ; i++ {
		_, err := m.AddArtifactChunk(other.ID, big, true, false)
		if a2aCode(err) == a2a.CodeInvalidParams {
			break
		}
		if err != nil || i == 4 {
			t.Fatalf("chunk %d of 16 KiB in a task of 64 KiB: %v, want it refused as too large", i+1, err)
		}
	}
	if got := len(mustGet(t, m, "", other.ID).Artifacts[0].Parts); got > 4 {
		t.Errorf("the stored artifact has %d parts: the refused chunk was kept", got)
	}
}

// Another owner's task answers every call exactly like an unknown task.
func (s *suite) TestOwnerIsolation(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{})
	task := mustCreate(t, m, "alice", userMsg("secret"))
	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateInputRequired})
	notFound := a2a.TaskNotFound(task.ID)

	for _, owner := range []string{"bob", "", "Alice", "alice "} {
		calls := map[string]error{}
		_, calls["Get"] = m.Get(owner, task.ID, nil)
		_, calls["Cancel"] = m.Cancel(owner, task.ID)
		_, _, calls["Subscribe"] = m.Subscribe(owner, task.ID)
		_, calls["Continue"] = followUp(m, owner, task.ID, userMsg("let me in"))
		for name, err := range calls {
			if !reflect.DeepEqual(err, error(notFound)) {
				t.Errorf("%s as %q: err = %#v, want %#v", name, owner, err, notFound)
			}
		}
		resp, err := m.List(owner, &a2a.ListTasksRequest{ContextID: task.ContextID})
		if err != nil || len(resp.Tasks) != 0 || resp.TotalSize != 0 {
			t.Errorf("List as %q = %+v, %v; want nothing", owner, resp, err)
		}
	}
	if got := mustGet(t, m, "alice", task.ID); got.Status.State != a2a.TaskStateInputRequired {
		t.Errorf("the owner's task changed: %s", got.Status.State)
	}
	resp, err := m.List("alice", nil)
	if err != nil || resp.TotalSize != 1 || resp.Tasks[0].ID != task.ID {
		t.Errorf("List as the owner = %+v, %v", resp, err)
	}
}

// Contexts are per owner: another owner's contextId is accepted exactly
// like an unknown one, and the two owners' tasks under it never meet.
func (s *suite) TestContextsPerOwner(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{})
	alices := mustCreate(t, m, "alice", userMsg("secret"))
	mustSetStatus(t, m, alices.ID, a2a.TaskStatus{State: a2a.TaskStateInputRequired})
	shared := alices.ContextID

	for _, contextID := range []string{shared, "never-used"} {
		msg := userMsg("mine")
		msg.ContextID = contextID
		bobs := mustCreate(t, m, "bob", msg)
		if bobs.ContextID != contextID || len(bobs.History) != 1 {
			t.Errorf("bob's task in context %q: context %q, history %d; want the context and only bob's message",
				contextID, bobs.ContextID, len(bobs.History))
		}
		resp, err := m.List("bob", &a2a.ListTasksRequest{ContextID: contextID})
		if err != nil || resp.TotalSize != 1 || resp.Tasks[0].ID != bobs.ID {
			t.Errorf("bob's List of context %q = %+v, %v; want his task alone", contextID, resp, err)
		}
	}
	resp, err := m.List("alice", &a2a.ListTasksRequest{ContextID: shared})
	if err != nil || resp.TotalSize != 1 || resp.Tasks[0].ID != alices.ID {
		t.Errorf("alice's List of her context = %+v, %v; want her task alone", resp, err)
	}

	// Naming alice's task (and its context) to continue it is TaskNotFound,
	// as for a task that never was.
	follow := userMsg("let me in")
	follow.TaskID, follow.ContextID = alices.ID, shared
	if _, err := followUp(m, "bob", alices.ID, follow); !reflect.DeepEqual(err, error(a2a.TaskNotFound(alices.ID))) {
		t.Errorf("bob continuing alice's task: err = %#v, want TaskNotFound", err)
	}
	unknown := follow
	unknown.TaskID = "no-such-task"
	if _, err := followUp(m, "bob", unknown.TaskID, unknown); !reflect.DeepEqual(err, error(a2a.TaskNotFound(unknown.TaskID))) {
		t.Errorf("continuing an unknown task: err = %#v, want TaskNotFound", err)
	}
	if got := mustGet(t, m, "alice", alices.ID); len(got.History) != 1 || got.Status.State != a2a.TaskStateInputRequired {
		t.Errorf("alice's task changed: %d messages, %s", len(got.History), got.Status.State)
	}
}

// A Cancel during a run cancels the tracked context; the worker's late
// updates then fail without changing the task.
func (s *suite) TestCancelDuringRun(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{})
	run := mustStart(t, m, "alice", userMsg("long job"))
	task, ctx := run.Task, run.Context()
	_, sub, err := m.Subscribe("alice", task.ID)
	if err != nil {
		t.Fatal(err)
	}

	started := make(chan struct{})
	workerErrs := make(chan error, 2)
	go func() {
		if err := run.Working(agentMsg("calling the upstream")); err != nil {
			workerErrs <- err
			return
		}
		close(started)
		<-ctx.Done() // the upstream call sees the cancel
		_, err := run.Artifact(a2a.Artifact{ArtifactID: "partial"}, false, true)
		workerErrs <- err
		_, err = run.Finish(a2a.TaskStatus{State: a2a.TaskStateFailed, Message: agentMsg("upstream call canceled")}, nil)
		workerErrs <- err
	}()
	<-started

	canceled, err := m.Cancel("alice", task.ID)
	if err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if canceled.Status.State != a2a.TaskStateCanceled {
		t.Errorf("Cancel returned state %s", canceled.Status.State)
	}
	for range 2 {
		if err := <-workerErrs; !errors.Is(err, tasks.ErrTerminal) {
			t.Errorf("late worker update: err = %v, want ErrTerminal", err)
		}
	}
	if cause := context.Cause(ctx); !errors.Is(cause, tasks.ErrCanceled) {
		t.Errorf("context cause = %v, want ErrCanceled", cause)
	}
	if got := mustGet(t, m, "alice", task.ID); !reflect.DeepEqual(got, canceled) {
		t.Errorf("late updates changed the canceled task:\n%+v\nwant\n%+v", got, canceled)
	}

	if ev := recv(t, sub); ev.StatusUpdate == nil || ev.StatusUpdate.Status.State != a2a.TaskStateWorking {
		t.Errorf("first event = %+v, want working", ev)
	}
	ev := recv(t, sub)
	if ev.StatusUpdate == nil || ev.StatusUpdate.Status.State != a2a.TaskStateCanceled || !ev.StatusUpdate.Final {
		t.Errorf("second event = %+v, want final canceled", ev)
	}
	if n, closed := drain(sub); n != 0 || !closed || sub.Err() != nil {
		t.Errorf("after the final event: %d more events, closed %v, err %v", n, closed, sub.Err())
	}

	if _, err := m.Cancel("alice", task.ID); a2aCode(err) != a2a.CodeTaskNotCancelable {
		t.Errorf("second Cancel: err = %v, want TaskNotCancelable", err)
	}
}

func (s *suite) TestCancelStates(t *testing.T) {
	tests := []struct {
		path     []a2a.TaskState
		wantCode int
	}{
		{nil, 0},
		{[]a2a.TaskState{a2a.TaskStateWorking}, 0},
		{[]a2a.TaskState{a2a.TaskStateInputRequired}, 0},
		{[]a2a.TaskState{a2a.TaskStateAuthRequired}, 0},
		{[]a2a.TaskState{a2a.TaskStateCompleted}, a2a.CodeTaskNotCancelable},
		{[]a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateFailed}, a2a.CodeTaskNotCancelable},
		{[]a2a.TaskState{a2a.TaskStateRejected}, a2a.CodeTaskNotCancelable},
	}
	for _, tt := range tests {
		name := "working"
		if len(tt.path) > 0 {
			name = tt.path[len(tt.path)-1].String()
		}
		t.Run(name, func(t *testing.T) {
			m, _ := s.newManager(t, tasks.Options{})
			task := mustCreate(t, m, "", userMsg("x"))
			for _, s := range tt.path {
				mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: s})
			}
			got, err := m.Cancel("", task.ID)
			if a2aCode(err) != tt.wantCode {
				t.Fatalf("err = %v, want code %d", err, tt.wantCode)
			}
			if err == nil && got.Status.State != a2a.TaskStateCanceled {
				t.Errorf("state = %s, want canceled", got.Status.State)
			}
		})
	}
}

// Finish ends the run: its context is done and it is no longer tracked,
// so that a later Cancel of the task, were it possible, would not reach it.
func (s *suite) TestFinishEndsRun(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{})
	run := mustStart(t, m, "", userMsg("x"))
	got, err := run.Finish(a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: agentMsg("which one?")},
		[]a2a.Artifact{{Name: "draft"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != a2a.TaskStateInputRequired || len(got.Artifacts) != 1 || got.Artifacts[0].ArtifactID == "" ||
		len(got.History) != 2 || got.History[1].Role != a2a.RoleAgent || got.History[1].MessageID == "" {
		t.Errorf("finished task = %+v, want input-required with the artifact and the agent's message, ids filled in", got)
	}
	if run.Context().Err() == nil {
		t.Error("the run's context is not done after Finish")
	}
	if _, err := m.Cancel("", run.Task.ID); err != nil {
		t.Fatal(err)
	}
	if errors.Is(context.Cause(run.Context()), tasks.ErrCanceled) {
		t.Error("a Cancel after Finish reached the finished run")
	}
	if _, err := run.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted}, nil); !errors.Is(err, tasks.ErrTerminal) {
		t.Errorf("Finish of a canceled task: err = %v, want ErrTerminal", err)
	}
}

// The end of an earlier run does not untrack a follow-up's run of the same
// task, which Cancel then reaches.
func (s *suite) TestRunsOfOneTask(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{})
	run1 := mustStart(t, m, "", userMsg("x"))
	mustSetStatus(t, m, run1.Task.ID, a2a.TaskStatus{State: a2a.TaskStateInputRequired})
	follow := userMsg("y")
	follow.TaskID = run1.Task.ID
	run2 := mustStart(t, m, "", follow) // a follow-up's run replaces the first
	run1.Abandon(context.Canceled)
	if _, err := m.Cancel("", run1.Task.ID); err != nil {
		t.Fatal(err)
	}
	if errors.Is(context.Cause(run1.Context()), tasks.ErrCanceled) {
		t.Error("the ended run was canceled by CancelTask")
	}
	if !errors.Is(context.Cause(run2.Context()), tasks.ErrCanceled) {
		t.Errorf("the follow-up's run: cause = %v, want ErrCanceled", context.Cause(run2.Context()))
	}
}
