package authn_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/caddy-a2a/caddy-a2a/authn"
)

func basicHeader(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

func basicAuth(t *testing.T, cost int) *authn.Authenticator {
	t.Helper()
	bob := must(bcrypt.GenerateFromPassword([]byte("correct horse"), cost))
	carol := must(bcrypt.GenerateFromPassword([]byte("battery staple"), cost))
	return newAuth(t, authn.Config{Realm: "orders", Schemes: map[string]*authn.Scheme{
		"basic": {Type: "http", HTTPScheme: "basic", Users: []authn.User{
			{Username: "bob", Password: string(bob), Scopes: []string{"orders:write"}},
			// Caddy's basic_auth also takes the hash base64-encoded.
			{Username: "carol", Password: base64.StdEncoding.EncodeToString(carol)},
		}},
	}}, authn.Options{})
}

func TestBasic(t *testing.T) {
	a := basicAuth(t, bcrypt.MinCost)
	tests := []struct {
		name    string
		header  []string
		subject string // "" expects a 401
	}{
		{"bob", []string{basicHeader("bob", "correct horse")}, "bob"},
		{"carol, base64 hash", []string{basicHeader("carol", "battery staple")}, "carol"},
		{"scheme in lower case", []string{"basic " + base64.StdEncoding.EncodeToString([]byte("bob:correct horse"))}, "bob"},
		{"password with a colon", []string{basicHeader("bob", "correct horse:")}, ""},

		{"no credentials", nil, ""},
		{"wrong password", []string{basicHeader("bob", "wrong horse")}, ""},
		{"unknown user", []string{basicHeader("mallory", "correct horse")}, ""},
		{"another user's password", []string{basicHeader("carol", "correct horse")}, ""},
		{"empty password", []string{basicHeader("bob", "")}, ""},
		{"malformed base64", []string{"Basic Ym9iOmNvcnJlY3Qg*G9yc2U="}, ""},
		{"no colon", []string{"Basic " + base64.StdEncoding.EncodeToString([]byte("bob"))}, ""},
		{"empty credentials", []string{"Basic "}, ""},
		{"oversized header", []string{basicHeader("bob", strings.Repeat("x", 4<<10))}, ""},
		{"two headers", []string{basicHeader("bob", "correct horse"), basicHeader("bob", "correct horse")}, ""},
		{"password past bcrypt's 72 bytes", []string{basicHeader("bob", "correct horse"+strings.Repeat("x", 80))}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := request()
			for _, h := range tt.header {
				r.Header.Add("Authorization", h)
			}
			id, f := a.Authenticate(r)
			if tt.subject == "" {
				if f == nil || f.Status != http.StatusUnauthorized {
					t.Fatalf("Authenticate = %+v, %+v; want a 401", id, f)
				}
				if !slices.Equal(f.Challenges, []string{`Basic realm="orders", charset="UTF-8"`}) {
					t.Errorf("challenges %q", f.Challenges)
				}
				assertNoSecret(t, failureText(f), "correct horse")
				return
			}
			if f != nil {
				t.Fatalf("refused: %v", f)
			}
			if id.Subject != tt.subject || id.Owner() != "basic:"+tt.subject {
				t.Errorf("identity %+v", id)
			}
		})
	}
	// The password of a cached success still has to match.
	if _, f := a.Authenticate(request("Authorization", basicHeader("bob", "correct horsE"))); f == nil {
		t.Error("a wrong password passed after a cached success")
	}
}

// TestBasicUnknownUserCostsAWrongPassword checks that an unknown user is
// compared against a bcrypt hash too, so timing does not reveal which
// users exist. A missing comparison would be thousands of times faster;
// the bound is loose so a busy machine does not fail it.
func TestBasicUnknownUserCostsAWrongPassword(t *testing.T) {
	a := basicAuth(t, 8)
	fastest := func(user string) time.Duration {
		best := time.Duration(1 << 62)
		for i := range 5 {
			start := time.Now()
			// A new wrong password each time: a repeated one is refused
			// from the cache of failed logins, without bcrypt.
			if _, f := a.Authenticate(request("Authorization", basicHeader(user, fmt.Sprint("wrong-", i)))); f == nil {
				t.Fatal("a wrong password passed")
			}
			best = min(best, time.Since(start))
		}
		return best
	}
	wrong, unknown := fastest("bob"), fastest("mallory")
	if ratio := float64(unknown) / float64(wrong); ratio < 0.3 || ratio > 3 {
		t.Errorf("unknown user took %v, wrong password %v: the times differ", unknown, wrong)
	}
}

// Wrong credentials sent again are refused from the cache, without another
// hash comparison; and at most half the CPUs compare hashes at once, so
// that failed logins cannot take the CPU from every other request.
func TestBasicFailedLoginsBounded(t *testing.T) {
	a := basicAuth(t, bcrypt.MinCost)
	var (
		mu               sync.Mutex
		inFlight, most   int
		comparisons      int
		gated            = true
		entered, release = make(chan struct{}), make(chan struct{})
	)
	authn.WatchHashComparisons(t, func() {
		mu.Lock()
		comparisons++
		inFlight++
		most = max(most, inFlight)
		wait := gated
		mu.Unlock()
		if !wait {
			mu.Lock()
			inFlight--
			mu.Unlock()
			return
		}
		entered <- struct{}{}
		<-release
		mu.Lock()
		inFlight--
		mu.Unlock()
	})
	try := func(password string) {
		r, _ := http.NewRequest(http.MethodPost, "/", nil)
		r.Header.Set("Authorization", basicHeader("alice", password))
		if _, f := a.Authenticate(r); f == nil {
			t.Errorf("password %q was accepted", password)
		}
	}

	const callers = 8
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { try(fmt.Sprint("wrong-", i)) })
	}
	for range callers {
		<-entered
		release <- struct{}{}
	}
	wg.Wait()
	if limit := max(1, runtime.GOMAXPROCS(0)/2); most > limit {
		t.Errorf("%d hash comparisons ran at once, want at most %d", most, limit)
	}

	mu.Lock()
	gated = false
	mu.Unlock()
	for range 5 {
		try("wrong-0") // already failed above
	}
	if comparisons != callers {
		t.Errorf("%d comparisons for %d distinct wrong passwords and 5 repeats, want %d", comparisons, callers, callers)
	}
}
