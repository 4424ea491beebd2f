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
