package tasks

// StoredBytes is what the Manager's memory store counts for its tasks.
func StoredBytes(m *Manager) int64 {
	s := m.store.(*MemoryStore)
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.bytes
}
