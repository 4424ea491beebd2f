package redisstore

// KeyPrefix is what every key of a store with the given prefix starts
// with, for tests that look at the keys.
var KeyPrefix = keyPrefix

// QueuedChanges is how many changes wait for a batch.
func QueuedChanges(s *Store) int { return len(s.scripts.queue) }

// Prelude is the functions every script starts with (ARGV[1] the prefix).
const Prelude = prelude
