//go:build race

package mcp_test

// raceEnabled: the race detector's bookkeeping of each goroutine and
// synchronization a session holds grows the heap by about half again.
const raceEnabled = true
