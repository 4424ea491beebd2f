package tasks_test

import (
	"context"
	"errors"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// A Manager is as ready as its store says, when the store is a
// ReadyChecker; on any other store (the one in memory) it always is.
func TestManagerReady(t *testing.T) {
	down := errors.New("the store's server does not answer")
	for _, tc := range []struct {
		name  string
		store tasks.Store
		want  error
	}{
		{"in memory", nil, nil},
		{"ready", checkedStore{tasks.NewMemoryStore(tasks.Options{}.StoreLimits()), nil}, nil},
		{"not ready", checkedStore{tasks.NewMemoryStore(tasks.Options{}.StoreLimits()), down}, down},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tasks.NewManager(tasks.Options{Store: tc.store, SweepInterval: -1})
			t.Cleanup(m.Close)
			if err := m.Ready(t.Context()); err != tc.want {
				t.Errorf("Ready = %v, want %v", err, tc.want)
			}
		})
	}
}

// checkedStore is a store whose readiness is err.
type checkedStore struct {
	tasks.Store
	err error
}

func (s checkedStore) Ready(context.Context) error { return s.err }
