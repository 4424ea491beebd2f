package push

// HeldBytes is what the queued notifications hold, as counted against
// MaxBytes.
func (s *Sender) HeldBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}
