package redisstore_test

import (
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/internal/redistest"
	"github.com/caddy-a2a/caddy-a2a/tasks"
	"github.com/caddy-a2a/caddy-a2a/tasks/redisstore"
)

// BenchmarkStoredTaskBytes reports what one small completed task takes in
// Redis (MEMORY USAGE of its hash, its index entries aside): the task of
// tasks' own benchmark, a question, a data artifact and the answer.
func BenchmarkStoredTaskBytes(b *testing.B) {
	srv := redistest.Start(b)
	client := srv.Client(b)
	m := replicaFor(b, srv)
	run, err := m.Start("", a2a.Message{MessageID: "0c5b2f4e-8d7a-4c1e-9b3f-2a6d4e8f1c7b", Role: a2a.RoleUser,
		Parts: []a2a.Part{a2a.TextPart("What will the weather be in Paris tomorrow?")}}, tasks.StartOptions{})
	if err != nil {
		b.Fatal(err)
	}
	art := a2a.Artifact{Name: "forecast", Parts: []a2a.Part{a2a.DataPart(map[string]any{
		"city": "Paris", "date": "2026-03-02", "temperature": 21.5, "unit": "C", "sky": "clear"})}}
	reply := &a2a.Message{Parts: []a2a.Part{a2a.TextPart("Tomorrow in Paris: clear, 21.5 °C.")}}
	if _, err := run.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted, Message: reply}, []a2a.Artifact{art}); err != nil {
		b.Fatal(err)
	}
	used, err := client.MemoryUsage(b.Context(), redisstore.KeyPrefix("bench")+":t:"+run.Task.ID, 0).Result() // every field, not a sample
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(used), "bytes/task")
	b.ReportMetric(0, "ns/op") // one measurement, not a rate
}

// BenchmarkTaskLifecycle is the tasks side of a blocking SendMessage on
// Redis: Start and Finish, two round trips, from 32 goroutines at once. It
// also reports what each task cost Redis's processor (redis-µs/task), the
// figure that decides how many answers a machine shared with Redis gives.
func BenchmarkTaskLifecycle(b *testing.B) {
	srv := redistest.Start(b)
	m := replicaFor(b, srv)
	msg := a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("What will the weather be in Paris tomorrow?")}}
	art := a2a.Artifact{Name: "forecast", Parts: []a2a.Part{a2a.DataPart(map[string]any{"city": "Paris", "temperature": 21.5})}}
	b.SetParallelism(16) // 32 on two cores
	b.ReportAllocs()
	cpu := srv.CPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			msg := msg
			msg.MessageID = userMsg("").MessageID // a new message: one sent again starts no run
			run, err := m.Start("", msg, tasks.StartOptions{})
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := run.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted}, []a2a.Artifact{art}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((srv.CPU(b)-cpu).Microseconds())/float64(b.N), "redis-µs/task")
}
