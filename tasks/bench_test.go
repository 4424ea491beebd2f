package tasks_test

import (
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// typicalTask is what a skill call stores: a user question, working, one
// data artifact from the upstream's JSON answer, completed with a reply.
// Each call builds fresh values, as decoding a request and an upstream
// response would.
type typicalTask struct {
	msg   a2a.Message
	art   a2a.Artifact
	reply a2a.Message
}

func newTypicalTask() *typicalTask {
	return &typicalTask{
		msg: a2a.Message{
			MessageID: uuid.NewString(),
			Role:      a2a.RoleUser,
			Parts:     []a2a.Part{a2a.TextPart("What will the weather be in Paris tomorrow?")},
		},
		art: a2a.Artifact{
			ArtifactID: uuid.NewString(),
			Name:       "forecast",
			Parts: []a2a.Part{a2a.DataPart(map[string]any{
				"city": "Paris", "date": "2026-03-02", "temperature": 21.5, "unit": "C", "sky": "clear",
			})},
		},
		reply: a2a.Message{
			MessageID: uuid.NewString(),
			Role:      a2a.RoleAgent,
			Parts:     []a2a.Part{a2a.TextPart("Tomorrow in Paris: clear, 21.5 °C.")},
		},
	}
}

// messageIDs numbers the benchmarks' messages: each run is a new message,
// since one sent again starts no run.
var messageIDs atomic.Uint64

func (tt *typicalTask) run(tb testing.TB, m *tasks.Manager, owner string) {
	msg := tt.msg
	msg.MessageID = strconv.FormatUint(messageIDs.Add(1), 36)
	run, err := m.Start(owner, msg, tasks.StartOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	reply := tt.reply
	if _, err := run.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted, Message: &reply}, []a2a.Artifact{tt.art}); err != nil {
		tb.Fatal(err)
	}
}

// bytesPerTask stores n typical tasks and returns the heap they hold, per
// task, inputs included.
func bytesPerTask(tb testing.TB, n int) float64 {
	m := tasks.NewManager(tasks.Options{MaxTasks: n, SweepInterval: -1})
	defer m.Close()
	inputs := make([]*typicalTask, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range inputs {
		inputs[i] = newTypicalTask()
		inputs[i].run(tb, m, "")
		inputs[i] = nil // only the store keeps the task
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(m)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

func TestStoredTaskBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap")
	}
	per := bytesPerTask(t, 10000)
	t.Logf("%.0f bytes per stored typical task", per)
	if per > 4096 {
		t.Errorf("a stored typical task costs %.0f bytes, want under 4 KiB", per)
	}
}

func BenchmarkStoredTaskBytes(b *testing.B) {
	b.ReportMetric(bytesPerTask(b, 10000), "bytes/task")
	b.ReportMetric(0, "ns/op") // one measurement, not a rate
}

// BenchmarkTaskLifecycle is the tasks side of a blocking SendMessage with
// no stream listening: Start (working), then Finish with an artifact and
// the completed status.
func BenchmarkTaskLifecycle(b *testing.B) {
	m := tasks.NewManager(tasks.Options{})
	defer m.Close()
	tt := newTypicalTask()
	b.ReportAllocs()
	for b.Loop() {
		tt.run(b, m, "")
	}
}

func BenchmarkTaskLifecycleParallel(b *testing.B) {
	m := tasks.NewManager(tasks.Options{})
	defer m.Close()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		tt := newTypicalTask()
		for pb.Next() {
			tt.run(b, m, "")
		}
	})
}

// BenchmarkList reads the first page of a full store of one owner's tasks.
func BenchmarkList(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			m := tasks.NewManager(tasks.Options{MaxTasks: n})
			defer m.Close()
			tt := newTypicalTask()
			for range n {
				tt.run(b, m, "")
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.List("", nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
