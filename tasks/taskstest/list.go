package taskstest

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

func ids(ts []a2a.Task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

func (s *suite) TestListFilters(t *testing.T) {
	m, clk := s.newManager(t, tasks.Options{})
	start := clk.Now()
	// Created a minute apart: t0 (ctx A, completed), t1 (ctx A, working),
	// t2 (ctx B, completed), t3 (ctx B, submitted). t0's completion comes
	// last, so it is the most recent status change.
	var tk [4]*a2a.Task
	for i := range tk {
		msg := userMsg("task")
		if i < 2 {
			msg.ContextID = "ctx-A"
		} else {
			msg.ContextID = "ctx-B"
		}
		tk[i] = mustCreate(t, m, "alice", msg)
		clk.Advance(time.Minute)
	}
	mustCreate(t, m, "bob", userMsg("not alice's"))
	mustSetStatus(t, m, tk[1].ID, a2a.TaskStatus{State: a2a.TaskStateWorking})
	clk.Advance(time.Minute)
	mustSetStatus(t, m, tk[2].ID, a2a.TaskStatus{State: a2a.TaskStateCompleted})
	clk.Advance(time.Minute)
	mustSetStatus(t, m, tk[0].ID, a2a.TaskStatus{State: a2a.TaskStateCompleted})

	tests := []struct {
		name string
		req  *a2a.ListTasksRequest
		want []*a2a.Task
	}{
		{"all, newest status change first", nil, []*a2a.Task{tk[0], tk[2], tk[1], tk[3]}},
		{"context A", &a2a.ListTasksRequest{ContextID: "ctx-A"}, []*a2a.Task{tk[0], tk[1]}},
		{"completed", &a2a.ListTasksRequest{Status: a2a.TaskStateCompleted}, []*a2a.Task{tk[0], tk[2]}},
		{"context B and completed", &a2a.ListTasksRequest{ContextID: "ctx-B", Status: a2a.TaskStateCompleted}, []*a2a.Task{tk[2]}},
		{"status changed at or after t3's creation", &a2a.ListTasksRequest{StatusTimestampAfter: start.Add(3 * time.Minute)},
			[]*a2a.Task{tk[0], tk[2], tk[1], tk[3]}},
		{"status changed after t3's creation", &a2a.ListTasksRequest{StatusTimestampAfter: start.Add(3*time.Minute + 1)},
			[]*a2a.Task{tk[0], tk[2], tk[1]}},
		{"status changed in the last minute", &a2a.ListTasksRequest{StatusTimestampAfter: clk.Now()}, []*a2a.Task{tk[0]}},
		{"unknown context", &a2a.ListTasksRequest{ContextID: "ctx-C"}, nil},
		{"rejected", &a2a.ListTasksRequest{Status: a2a.TaskStateRejected}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := m.List("alice", tt.req)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]string, len(tt.want))
			for i, w := range tt.want {
				want[i] = w.ID
			}
			if got := ids(resp.Tasks); !reflect.DeepEqual(got, want) {
				t.Errorf("tasks = %v, want %v", got, want)
			}
			if resp.TotalSize != int32(len(want)) || resp.PageSize != 50 || resp.NextPageToken != "" {
				t.Errorf("totalSize %d pageSize %d next %q, want %d, 50 (the default), \"\"", resp.TotalSize, resp.PageSize, resp.NextPageToken, len(want))
			}
		})
	}
}

func (s *suite) TestListHistoryAndArtifacts(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{})
	task := mustCreate(t, m, "", userMsg("one"))
	if err := m.AddArtifact(task.ID, a2a.Artifact{ArtifactID: "a"}); err != nil {
		t.Fatal(err)
	}
	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted, Message: agentMsg("two")})

	tests := []struct {
		name          string
		req           *a2a.ListTasksRequest
		wantHistory   int
		wantArtifacts int
	}{
		{"defaults: all history, no artifacts", &a2a.ListTasksRequest{}, 2, 0},
		{"artifacts asked for", &a2a.ListTasksRequest{IncludeArtifacts: ptr(true)}, 2, 1},
		{"artifacts refused", &a2a.ListTasksRequest{IncludeArtifacts: ptr(false)}, 2, 0},
		{"no history", &a2a.ListTasksRequest{HistoryLength: ptr[int32](0)}, 0, 0},
		{"last message", &a2a.ListTasksRequest{HistoryLength: ptr[int32](1), IncludeArtifacts: ptr(true)}, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := m.List("", tt.req)
			if err != nil {
				t.Fatal(err)
			}
			got := resp.Tasks[0]
			if len(got.History) != tt.wantHistory || len(got.Artifacts) != tt.wantArtifacts {
				t.Errorf("%d messages, %d artifacts; want %d, %d", len(got.History), len(got.Artifacts), tt.wantHistory, tt.wantArtifacts)
			}
			if tt.wantArtifacts == 0 && got.Artifacts != nil {
				t.Error("artifacts not omitted")
			}
			if tt.wantHistory == 0 && got.History != nil {
				t.Error("history not omitted")
			}
		})
	}
}

// listAll pages through the caller's tasks and returns the ids in order.
func listAll(t *testing.T, m *tasks.Manager, req a2a.ListTasksRequest) (pages [][]string) {
	t.Helper()
	for {
		resp, err := m.List("", &req)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, ids(resp.Tasks))
		if resp.NextPageToken == "" {
			return pages
		}
		req.PageToken = resp.NextPageToken
	}
}

func (s *suite) TestListPagination(t *testing.T) {
	m, clk := s.newManager(t, tasks.Options{})
	var want []string // newest first
	for range 7 {
		want = append([]string{mustCreate(t, m, "", userMsg("x")).ID}, want...)
		clk.Advance(time.Second)
	}

	pages := listAll(t, m, a2a.ListTasksRequest{PageSize: ptr[int32](3)})
	if len(pages) != 3 || len(pages[0]) != 3 || len(pages[1]) != 3 || len(pages[2]) != 1 {
		t.Fatalf("pages = %v, want sizes 3, 3, 1", pages)
	}
	if got := append(append(pages[0], pages[1]...), pages[2]...); !reflect.DeepEqual(got, want) {
		t.Errorf("pages joined = %v, want %v", got, want)
	}

	// PageSize is the page size used, as asked (the spec's examples),
	// not how many came back; TotalSize counts every match.
	resp, err := m.List("", &a2a.ListTasksRequest{PageSize: ptr[int32](5)})
	if err != nil {
		t.Fatal(err)
	}
	resp, err = m.List("", &a2a.ListTasksRequest{PageSize: ptr[int32](5), PageToken: resp.NextPageToken})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Tasks) != 2 || resp.PageSize != 5 || resp.TotalSize != 7 || resp.NextPageToken != "" {
		t.Errorf("last page: %d tasks, pageSize %d totalSize %d next %q, want 2, 5, 7, \"\"", len(resp.Tasks), resp.PageSize, resp.TotalSize, resp.NextPageToken)
	}

	// An exact fit ends with an empty token, not an empty page.
	if pages := listAll(t, m, a2a.ListTasksRequest{PageSize: ptr[int32](7)}); len(pages) != 1 {
		t.Errorf("pageSize 7 of 7: %d pages, want 1", len(pages))
	}
	// The default page is 50.
	for range 60 {
		mustCreate(t, m, "", userMsg("more"))
	}
	if resp, err := m.List("", nil); err != nil || len(resp.Tasks) != 50 || resp.TotalSize != 67 || resp.NextPageToken == "" {
		t.Errorf("default page: %d tasks of %d, next %q, err %v", len(resp.Tasks), resp.TotalSize, resp.NextPageToken, err)
	}
}

// Tasks with the same status timestamp page in a stable order too.
func (s *suite) TestListPaginationTies(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{}) // the clock never moves
	seen := map[string]bool{}
	for range 10 {
		seen[mustCreate(t, m, "", userMsg("x")).ID] = false
	}
	for _, page := range listAll(t, m, a2a.ListTasksRequest{PageSize: ptr[int32](3)}) {
		for _, id := range page {
			if seen[id] {
				t.Errorf("task %s listed twice", id)
			}
			seen[id] = true
		}
	}
	for id, ok := range seen {
		if !ok {
			t.Errorf("task %s never listed", id)
		}
	}
}

// A page token survives inserts (and evictions): the next page continues
// right after the last task seen.
func (s *suite) TestListTokenSurvivesInserts(t *testing.T) {
	m, clk := s.newManager(t, tasks.Options{MaxTasks: 8, MaxLivePerOwner: 8, MaxLiveAnonymous: 8, MaxLivePerClient: 8})
	var old []string // newest first
	for range 6 {
		task := mustCreate(t, m, "", userMsg("old"))
		mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted})
		old = append([]string{task.ID}, old...)
		clk.Advance(time.Second)
	}
	first, err := m.List("", &a2a.ListTasksRequest{PageSize: ptr[int32](2)})
	if err != nil {
		t.Fatal(err)
	}
	// Four newer tasks: two fit, two evict the oldest completed ones.
	for range 4 {
		mustCreate(t, m, "", userMsg("new"))
		clk.Advance(time.Second)
	}
	rest := listAll(t, m, a2a.ListTasksRequest{PageSize: ptr[int32](2), PageToken: first.NextPageToken})
	var got []string
	for _, p := range rest {
		got = append(got, p...)
	}
	if want := old[2:4]; !reflect.DeepEqual(got, want) {
		t.Errorf("after inserts the token continued with %v, want %v (the oldest two were evicted)", got, want)
	}
}

func (s *suite) TestListInvalidParams(t *testing.T) {
	m, _ := s.newManager(t, tasks.Options{})
	mustCreate(t, m, "", userMsg("x"))
	b64 := base64.RawURLEncoding.EncodeToString
	tests := []struct {
		name  string
		req   a2a.ListTasksRequest
		field string
	}{
		{"page size 0", a2a.ListTasksRequest{PageSize: ptr[int32](0)}, "params.pageSize"},
		{"page size -1", a2a.ListTasksRequest{PageSize: ptr[int32](-1)}, "params.pageSize"},
		{"page size 101", a2a.ListTasksRequest{PageSize: ptr[int32](101)}, "params.pageSize"},
		{"history length -1", a2a.ListTasksRequest{HistoryLength: ptr[int32](-1)}, "params.historyLength"},
		{"unknown status", a2a.ListTasksRequest{Status: a2a.TaskState(42)}, "params.status"},
		{"token not base64", a2a.ListTasksRequest{PageToken: "invalid-token-xyz!"}, "params.pageToken"},
		{"token too short", a2a.ListTasksRequest{PageToken: b64([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0})}, "params.pageToken"},
		{"token of another version", a2a.ListTasksRequest{PageToken: b64([]byte{2, 0, 0, 0, 0, 0, 0, 0, 0, 'x'})}, "params.pageToken"},
		{"token too long", a2a.ListTasksRequest{PageToken: b64(append([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0}, strings.Repeat("x", 200)...))}, "params.pageToken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.List("", &tt.req)
			e, ok := err.(*a2a.Error)
			if !ok || e.Code != a2a.CodeInvalidParams || e.Field != tt.field {
				t.Errorf("err = %#v, want InvalidParams on %s", err, tt.field)
			}
		})
	}
}
