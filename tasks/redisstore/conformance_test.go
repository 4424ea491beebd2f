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

// runConformance runs the one conformance suite on Redis through client,
// each test on keys of its own (its own hash tag, so on Cluster its own
// node as often as not), each replica of a test a Store of its own on them.
func runConformance(t *testing.T, client redis.UniversalClient, prefix string) {
	var n atomic.Int64
	taskstest.RunShared(t, func(t testing.TB, limits tasks.Limits, replicas int) []tasks.Store {
		keys := fmt.Sprint(prefix, n.Add(1))
		stores := make([]tasks.Store, replicas)
		for i := range stores {
			store, err := redisstore.New(redisstore.Options{Client: client, Prefix: keys, Limits: limits})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(store.Close)
			stores[i] = store
		}
		t.Cleanup(func() { checkBookkeeping(t, client, keys) })
		return stores
	})
}

// The Redis store keeps the same contract as the memory store.
func TestConformance(t *testing.T) {
	runConformance(t, redistest.Start(t).Client(t), "suite")
}

// On Redis Cluster the same: every key of a store shares one hash tag, so
// each script runs on one node, and Pub/Sub reaches every node.
func TestConformanceOnCluster(t *testing.T) {
	client := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: redistest.StartCluster(t, 3)})
	t.Cleanup(func() { client.Close() })
	runConformance(t, client, "cluster")
}

// Through Redis Sentinel the same: the client asks the Sentinel for the
// master.
func TestConformanceThroughSentinel(t *testing.T) {
	sentinel := redistest.StartSentinel(t, redistest.Start(t))
	client := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{sentinel}, MasterName: "mymaster"})
	t.Cleanup(func() { client.Close() })
	runConformance(t, client, "sentinel")
}
