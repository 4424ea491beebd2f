package authn

// WatchHashComparisons makes every password hash comparison call watch
// first, until the test ends.
func WatchHashComparisons(t interface{ Cleanup(func()) }, watch func()) {
	compare := compareHash
	compareHash = func(hash, password []byte) error {
		watch()
		return compare(hash, password)
	}
	t.Cleanup(func() { compareHash = compare })
}

// WaitForFetches waits until no key fetch is under way: after New, until
// the first fetch of every JWKS has ended.
func WaitForFetches(a *Authenticator) {
	for _, k := range a.remotes {
		k.mu.Lock()
		done := k.running
		k.mu.Unlock()
		if done != nil {
			<-done
		}
	}
}
