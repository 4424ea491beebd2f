package redisstore

// KeyPrefix is what every key of a store with the given prefix starts
// with, for tests that look at the keys.
var KeyPrefix = keyPrefix

// OneBatchInFlight makes a new store send one batch at a time, so that a
// test that holds that batch in Redis knows which batch each later change
// goes in: all of them, in order, in the next.
func OneBatchInFlight(s *Store) {
	old := s.scripts
	old.close()
	s.scripts = newPipeline(old.client, old.wait, 1, old.recounted, old.key[0], old.fixed...)
}

// QueuedChanges is how many changes wait for a batch.
func QueuedChanges(s *Store) int { return len(s.scripts.queue) }

// Prelude is the functions every script starts with (ARGV[1] the prefix,
// ARGV[2] the most bytes one task may take).
const Prelude = prelude
