package redisstore_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

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

// On Redis Cluster the same: every key of a store shares one hash tag, so
// each script runs on one node, and Pub/Sub reaches every node.
func TestConformanceOnCluster(t *testing.T) {
	addrs := redistest.StartCluster(t, 3)
	client := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs})
	t.Cleanup(func() { client.Close() })
	var n atomic.Int64
	taskstest.Run(t, func(t testing.TB, limits tasks.Limits) tasks.Store {
		store, err := redisstore.New(redisstore.Options{Client: client, Prefix: fmt.Sprint("cluster", n.Add(1)), Limits: limits})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(store.Close)
		return store
	})
}

// Through Redis Sentinel the same: the client asks the Sentinel for the
// master.
func TestConformanceThroughSentinel(t *testing.T) {
	master := redistest.Start(t)
	sentinel := redistest.StartSentinel(t, master)
	client := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{sentinel}, MasterName: "mymaster"})
	t.Cleanup(func() { client.Close() })
	var n atomic.Int64
	taskstest.Run(t, func(t testing.TB, limits tasks.Limits) tasks.Store {
		store, err := redisstore.New(redisstore.Options{Client: client, Prefix: fmt.Sprint("sentinel", n.Add(1)), Limits: limits})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(store.Close)
		return store
	})
}
