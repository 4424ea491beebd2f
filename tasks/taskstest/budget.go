package taskstest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// dataMsg is a user message with one data part decoded from src, as the
// codecs would decode it.
func dataMsg(t testing.TB, src string) a2a.Message {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(src), &v); err != nil {
		t.Fatal(err)
	}
	msg := userMsg("")
	msg.Parts = []a2a.Part{a2a.DataPart(v)}
	return msg
}

// emptyObjects is a JSON array of n empty objects: small on the wire,
// large once decoded.
func emptyObjects(n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat("{},", n), ",") + "]"
}

// A message whose stored form would exceed MaxTaskBytes is refused with
// InvalidParams before anything is kept; so is a follow-up that would grow
// its task past it.
func (s *suite) TestTaskBytesLimit(t *testing.T) {
	opts := tasks.Options{MaxTaskBytes: 1 << 20}
	store := s.newStore(t, opts.StoreLimits())
	opts.Store = store
	m, _ := s.newManager(t, opts)
	_, err := create(m, "", dataMsg(t, emptyObjects(20000))) // 60 KB on the wire, over 1 MiB decoded
	if a2aCode(err) != a2a.CodeInvalidParams || !strings.Contains(err.Error(), "bytes") {
		t.Fatalf("err = %v, want InvalidParams naming the byte limit", err)
	}
	if resp, _ := m.List("", nil); resp.TotalSize != 0 || storedBytes(t, store, "") != 0 {
		t.Errorf("a refused message left %d tasks and %d bytes", resp.TotalSize, storedBytes(t, store, ""))
	}

	run := mustStart(t, m, "", userMsg("small"))
	mustSetStatus(t, m, run.Task.ID, a2a.TaskStatus{State: a2a.TaskStateInputRequired})
	big := dataMsg(t, emptyObjects(20000))
	if _, err := followUp(m, "", run.Task.ID, big); a2aCode(err) != a2a.CodeInvalidParams {
		t.Errorf("oversized follow-up: err = %v, want InvalidParams", err)
	}
	if got := mustGet(t, m, "", run.Task.ID); got.Status.State != a2a.TaskStateInputRequired || len(got.History) != 1 {
		t.Errorf("the refused follow-up changed the task: %s, %d messages", got.Status.State, len(got.History))
	}
}

// An outcome that does not fit fails the task instead, without its
// artifacts.
func (s *suite) TestOutcomeTooLarge(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{MaxTaskBytes: 1 << 20})
	run := mustStart(t, m, "", userMsg("give me everything"))
	huge := a2a.Artifact{Parts: []a2a.Part{a2a.TextPart(strings.Repeat("x", 2<<20))}}
	got, err := run.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted}, []a2a.Artifact{huge})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != a2a.TaskStateFailed || len(got.Artifacts) != 0 || got.Status.Message == nil ||
		!strings.Contains(got.Status.Message.Parts[0].Text, "too large") {
		t.Errorf("task = %s with %d artifacts, message %+v; want failed, none, saying it is too large",
			got.Status.State, len(got.Artifacts), got.Status.Message)
	}
}

// The store's byte budget: terminal tasks are evicted, oldest first, to
// make room; when every task is live, a new one is refused with
// RESOURCE_EXHAUSTED. One owner's live tasks hold at most their share.
func (s *suite) TestStoreBytesBudget(t *testing.T) {
	text := func(n int) a2a.Message {
		msg := userMsg("")
		msg.Parts = []a2a.Part{a2a.TextPart(strings.Repeat("x", n))}
		return msg
	}
	const kb = 1 << 10
	m, _ := s.newManager(t, tasks.Options{MaxBytes: 100 * kb, MaxLiveBytesPerOwner: 100 * kb, MaxTaskBytes: 40 * kb})
	done := mustStart(t, m, "alice", text(30*kb))
	if _, err := done.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted}, nil); err != nil {
		t.Fatal(err)
	}
	live := []*a2a.Task{mustCreate(t, m, "alice", text(30*kb)), mustCreate(t, m, "bob", text(30*kb))}
	live = append(live, mustCreate(t, m, "bob", text(30*kb))) // evicts the terminal task
	if _, err := m.Get("alice", done.Task.ID, nil); err == nil {
		t.Error("the terminal task was not evicted to make room")
	}
	owners := []string{"alice", "bob", "bob"}
	for i, task := range live {
		if _, err := m.Get(owners[i], task.ID, nil); err != nil {
			t.Errorf("live task %s was evicted", task.ID)
		}
	}
	_, err := create(m, "carol", text(30*kb))
	if e, ok := err.(*a2a.Error); !ok || e.Reason != "RESOURCE_EXHAUSTED" || !strings.Contains(e.Description, "bytes") {
		t.Errorf("a full store of live tasks: err = %v, want RESOURCE_EXHAUSTED naming bytes", err)
	}

	m, _ = s.newManager(t, tasks.Options{MaxBytes: 1 << 20, MaxLiveBytesPerOwner: 100 * kb, MaxTaskBytes: 40 * kb})
	for range 3 {
		mustCreate(t, m, "mallory", text(30*kb))
	}
	if _, err := create(m, "mallory", text(30*kb)); a2aCode(err) != a2a.CodeInternalError {
		t.Errorf("an owner past its share: err = %v, want RESOURCE_EXHAUSTED", err)
	}
	mustCreate(t, m, "alice", text(30*kb)) // others are unaffected
}

// A page of ListTasks holds at most MaxTaskBytes of tasks (and at least
// one); the next page goes on where it stopped.
func (s *suite) TestListPagesByBytes(t *testing.T) {
	const kb = 1 << 10
	m, clk := s.newManager(t, tasks.Options{MaxTaskBytes: 100 * kb})
	for range 5 {
		msg := userMsg(strings.Repeat("x", 40*kb))
		mustCreate(t, m, "", msg)
		clk.Advance(1)
	}
	seen := 0
	req := &a2a.ListTasksRequest{}
	for pages := 0; ; pages++ {
		resp, err := m.List("", req)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Tasks) == 0 || len(resp.Tasks) > 2 {
			t.Fatalf("page %d holds %d tasks of 40 KiB, want 1 or 2 within 100 KiB", pages, len(resp.Tasks))
		}
		seen += len(resp.Tasks)
		if resp.NextPageToken == "" {
			break
		}
		req.PageToken = resp.NextPageToken
	}
	if seen != 5 {
		t.Errorf("the pages held %d tasks, want all 5", seen)
	}
}
