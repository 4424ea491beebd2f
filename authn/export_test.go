package authn

import "time"

// WatchHashComparisons makes every password hash comparison call watch
// with the password first, until the test ends.
func WatchHashComparisons(t interface{ Cleanup(func()) }, watch func(password []byte)) {
	compare := compareHash
	compareHash = func(hash, password []byte) error {
		watch(password)
		return compare(hash, password)
	}
	t.Cleanup(func() { compareHash = compare })
}

// WaitForBasicLogins waits until n basic logins wait for their turn to
// compare a password hash, or for their client address's place in the
// order of turns (unknown users' stand-ins included), and fails t if they
// do not within 10 seconds.
func WaitForBasicLogins(t interface {
	Helper()
	Fatalf(string, ...any)
}, a *Authenticator, n int) {
	t.Helper()
	waiting := func() int {
		a.turns.mu.Lock()
		defer a.turns.mu.Unlock()
		w := 0
		for e := a.turns.ring.Front(); e != nil; e = e.Next() {
			w += e.Value.(*queue).waiting.Len()
		}
		for _, c := range a.turns.clients {
			w += c.waiting.Len()
		}
		return w
	}
	deadline := time.Now().Add(10 * time.Second)
	for w := waiting(); w != n; w = waiting() {
		if time.Now().After(deadline) {
			t.Fatalf("%d basic logins waiting after 10s, want %d", w, n)
		}
		time.Sleep(time.Millisecond) // polling: the logins' goroutines say nothing
	}
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
