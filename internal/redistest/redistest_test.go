package redistest_test

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/caddy-a2a/caddy-a2a/internal/redistest"
)

func TestServerStopRestart(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	ctx := t.Context()

	if err := c.Set(ctx, "k", "v1", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v1" {
		t.Fatalf("GET = %q, %v; want \"v1\"", got, err)
	}

	addr := s.Addr()
	s.Stop(t)
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING succeeded after Stop")
	}
	s.Stop(t) // stopping a stopped server does nothing

	s.Restart(t)
	if s.Addr() != addr {
		t.Fatalf("Addr after Restart = %s, want %s", s.Addr(), addr)
	}
	if err := c.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after Restart: %v; want redis.Nil (nothing is saved)", err)
	}
	if err := c.Set(ctx, "k", "v2", 0).Err(); err != nil {
		t.Fatalf("SET after Restart: %v", err)
	}
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v2" {
		t.Fatalf("GET after Restart = %q, %v; want \"v2\"", got, err)
	}
}

func TestServersAreSeparate(t *testing.T) {
	a, b := redistest.Start(t), redistest.Start(t)
	if a.Addr() == b.Addr() {
		t.Fatalf("two servers on one address %s", a.Addr())
	}
	ctx := t.Context()
	if err := a.Client(t).Set(ctx, "k", "a", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if err := b.Client(t).Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET on the other server: %v; want redis.Nil", err)
	}
}
