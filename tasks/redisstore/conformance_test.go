package redisstore_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/internal/redistest"
	"github.com/caddy-a2a/caddy-a2a/tasks"
	"github.com/caddy-a2a/caddy-a2a/tasks/redisstore"
	"github.com/caddy-a2a/caddy-a2a/tasks/taskstest"
)

// The Redis store keeps the same contract as the memory store: the one
// conformance suite, each test on keys of its own in one Redis.
func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	var n atomic.Int64
	taskstest.Run(t, func(t testing.TB, limits tasks.Limits) tasks.Store {
		store, err := redisstore.New(redisstore.Options{Client: client, Prefix: fmt.Sprint("suite", n.Add(1)), Limits: limits})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(store.Close)
		return store
	})
}
