//go:build race

package mapping

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// counts of allocations vary from run to run.
const raceEnabled = true
