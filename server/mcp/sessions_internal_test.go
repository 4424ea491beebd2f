package mcp

import (
	"slices"
	"testing"
	"time"
)

// The sessions' bounds take their defaults from the server's: a tenth of
// them for one caller, half for the anonymous callers, never less than one
// session may need.
func TestSessionLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		want sessionLimits
	}{
		{"defaults", Config{}, sessionLimits{
			all:       holding{DefaultMaxSessions, DefaultMaxSessionBytes},
			perCaller: holding{DefaultMaxSessions / 10, DefaultMaxSessionBytes / 10},
			anonymous: holding{DefaultMaxSessions / 2, DefaultMaxSessionBytes / 2}}},
		{"small", Config{MaxSessions: 3, MaxSessionBytes: MinSessionBytes}, sessionLimits{
			all:       holding{3, MinSessionBytes},
			perCaller: holding{1, MinSessionBytes},
			anonymous: holding{1, MinSessionBytes}}},
		{"per caller set", Config{MaxSessionsPerCaller: 7, MaxSessionBytesPerCaller: 2 * MinSessionBytes}, sessionLimits{
			all:       holding{DefaultMaxSessions, DefaultMaxSessionBytes},
			perCaller: holding{7, 2 * MinSessionBytes},
			anonymous: holding{DefaultMaxSessions / 2, DefaultMaxSessionBytes / 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := newSessionLimits(&tc.c); got != tc.want {
				t.Errorf("got %+v; want %+v", got, tc.want)
			}
		})
	}
}

// A full server makes room for a caller that holds two sessions fewer
// than the one holding the most, by closing that one's least recently used
// sessions, and for no other.
func TestMakeRoom(t *testing.T) {
	one := holding{1, sessionOverhead}
	at := time.Unix(1000, 0)
	b := &binding{owners: map[string]sessionOpener{
		"a1": {caller: "a", cost: one, used: at.Add(2 * time.Second)},
		"a2": {caller: "a", cost: one, used: at},
		"a3": {caller: "a", cost: one, used: at.Add(time.Second)},
		"b1": {caller: "b", cost: one, used: at},
	}}
	tally := func() *sessionTally {
		t := &sessionTally{by: map[string]holding{}, anonymous: map[string]bool{}}
		for _, o := range b.owners {
			t.add(o.caller, o.anonymous, o.cost)
		}
		return t
	}
	limit := holding{4, 4 * sessionOverhead}
	for _, tc := range []struct {
		caller string
		want   []string
		ok     bool
	}{
		{"c", []string{"a2"}, true}, // a holds 3, c none
		{"b", []string{"a2"}, true}, // a holds 3, b two fewer
		{"a", nil, false},           // a holds the most
	} {
		ids, ok := b.makeRoom(tally(), sessionOpener{caller: tc.caller, cost: one}, limit, false)
		if ok != tc.ok || !slices.Equal(ids, tc.want) {
			t.Errorf("room for %s: %v %t; want %v %t", tc.caller, ids, ok, tc.want, tc.ok)
		}
	}
	// A caller one session short of the most gets no room.
	delete(b.owners, "a1")
	if ids, ok := b.makeRoom(tally(), sessionOpener{caller: "b", cost: one}, holding{3, 3 * sessionOverhead}, false); ok {
		t.Errorf("room for b, one short of a: %v", ids)
	}
	b.owners["a1"] = sessionOpener{caller: "a", cost: one, used: at.Add(2 * time.Second)}
	// Room for two sessions at once: a's two least recently used.
	two := holding{2, 2 * sessionOverhead}
	if ids, ok := b.makeRoom(tally(), sessionOpener{caller: "c", cost: two}, limit, false); !ok || !slices.Equal(ids, []string{"a2", "a3"}) {
		t.Errorf("room for two: %v %t; want [a2 a3]", ids, ok)
	}
}
