package authn_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
	authn.WatchHashComparisons(t, func([]byte) {
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
		r.Header.Set("Authorization", basicHeader("bob", password))
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

// answer reads a login's answer, failing t if none comes within 10s.
func answer(t *testing.T, login <-chan *authn.Failure, what string) *authn.Failure {
	t.Helper()
	select {
	case f := <-login:
		return f
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no answer after 10s", what)
		return nil
	}
}

// attackGate holds the hash comparisons of passwords that start with
// "attack" until the test lets them end: one per send on release, all once
// the test ends. It records the passwords compared, in the order the
// comparisons start.
type attackGate struct {
	entered chan struct{} // a send as each held comparison starts
	release chan struct{}
	attacks sync.WaitGroup // the logins and attacks under way
	sources atomic.Int32   // client addresses given out by source

	mu      sync.Mutex
	started []string
}

func gateAttacks(t *testing.T) *attackGate {
	g := &attackGate{entered: make(chan struct{}, 1024), release: make(chan struct{})}
	authn.WatchHashComparisons(t, func(password []byte) {
		g.mu.Lock()
		g.started = append(g.started, string(password))
		g.mu.Unlock()
		if strings.HasPrefix(string(password), "attack") {
			g.entered <- struct{}{}
			<-g.release
		}
	})
	t.Cleanup(func() {
		close(g.release)
		g.attacks.Wait()
	})
	return g
}

// login authenticates r in the background; the answer comes on the
// channel.
func (g *attackGate) login(a *authn.Authenticator, r *http.Request) <-chan *authn.Failure {
	done := make(chan *authn.Failure, 1)
	g.attacks.Go(func() {
		_, f := a.Authenticate(r)
		done <- f
	})
	return done
}

// source is a client address no request of the test came from yet.
func (g *attackGate) source() string {
	n := g.sources.Add(1)
	return fmt.Sprintf("10.0.%d.%d", n/256, n%256)
}

// from is r as sent from the client address addr.
func from(addr string, r *http.Request) *http.Request {
	r.RemoteAddr = net.JoinHostPort(addr, "50000")
	return r
}

// attack sends a wrong password for user in the background from the
// client address addr ("": one of its own); its comparison, if any, is
// held.
func (g *attackGate) attack(t *testing.T, a *authn.Authenticator, addr, user string, i int) {
	if addr == "" {
		addr = g.source()
	}
	r := from(addr, request("Authorization", basicHeader(user, fmt.Sprintf("attack-%s-%d", user, i))))
	g.attacks.Go(func() {
		if _, f := a.Authenticate(r); f == nil {
			t.Errorf("a wrong password for %s was accepted", user)
		}
	})
}

// holdEveryTurn starts as many attacks on carol as comparisons may run at
// once, from the client address addr ("": each from one of its own), and
// returns once all of them are held.
func (g *attackGate) holdEveryTurn(t *testing.T, a *authn.Authenticator, addr string) int {
	turns := max(1, runtime.GOMAXPROCS(0)/2)
	for i := range turns {
		g.attack(t, a, addr, "carol", i)
	}
	for range turns {
		<-g.entered
	}
	return turns
}

// releaseUntilThrough ends the held comparisons one at a time until the
// login is through, and fails t if it was refused.
func (g *attackGate) releaseUntilThrough(t *testing.T, login <-chan *authn.Failure) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case g.release <- struct{}{}:
		case <-deadline:
			t.Fatal("no comparison to end, and the login is not through")
		}
		select {
		case f := <-login:
			if f != nil {
				t.Fatalf("the valid login was refused: %v", f)
			}
			return
		case <-g.entered:
		case <-deadline:
			t.Fatal("the login is not through after 10s")
		}
	}
}

func (g *attackGate) order() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.started)
}

// timeAComparison sends a wrong password for a known user, which times a
// comparison: unknown users are then answered after as long, without one.
func timeAComparison(t *testing.T, a *authn.Authenticator) *authn.Failure {
	t.Helper()
	_, f := a.Authenticate(request("Authorization", basicHeader("bob", "wrong")))
	if f == nil {
		t.Fatal("a wrong password was accepted")
	}
	return f
}

// A valid login waits behind the attempts for its own user only: with
// every turn to compare held by wrong passwords for carol, more of them
// waiting, and unknown users waiting too, each from an address of its
// own, bob's login compares as soon as turns free up, after at most one
// more of carol's (her queue was first in the order), and no unknown user
// is compared at all.
func TestBasicLoginDoesNotWaitBehindOtherUsers(t *testing.T) {
	a := basicAuth(t, bcrypt.MinCost)
	timeAComparison(t, a)
	g := gateAttacks(t)
	held := g.holdEveryTurn(t, a, "")
	const unknown = 8
	waiting := 4*held + unknown
	for i := range 4 * held {
		g.attack(t, a, "", "carol", held+i)
	}
	for i := range unknown {
		g.attack(t, a, "", fmt.Sprint("mallory-", i), i)
	}
	authn.WaitForBasicLogins(t, a, waiting)
	login := g.login(a, request("Authorization", basicHeader("bob", "correct horse")))
	authn.WaitForBasicLogins(t, a, waiting+1)
	g.releaseUntilThrough(t, login)

	order := g.order()
	ahead := order[held:slices.Index(order, "correct horse")]
	if len(ahead) > 1 {
		t.Errorf("the login waited for %d comparisons of attempts queued before it, want at most carol's next one: %q", len(ahead), ahead)
	}
	for _, p := range order {
		if strings.HasPrefix(p, "attack-mallory") {
			t.Errorf("an unknown user's password was compared: %q", p)
		}
	}
}

// An unknown user takes its place in the order of turns, as a login for
// a user with nothing waiting would, but no turn: one freed turn answers
// every unknown user waiting, each with the refusal a wrong password
// gets, and is still free for the next login.
func TestBasicUnknownUsersTakeNoTurn(t *testing.T) {
	a := basicAuth(t, bcrypt.MinCost)
	wrong := timeAComparison(t, a)
	g := gateAttacks(t)
	g.holdEveryTurn(t, a, "")
	const unknown = 8
	logins := make([]<-chan *authn.Failure, unknown)
	for i := range logins {
		logins[i] = g.login(a, from(g.source(), request("Authorization", basicHeader(fmt.Sprint("mallory-", i), "attack"))))
	}
	authn.WaitForBasicLogins(t, a, unknown)

	g.release <- struct{}{} // one of carol's comparisons ends
	for i, login := range logins {
		if f := answer(t, login, fmt.Sprint("mallory-", i)); !reflect.DeepEqual(f, wrong) {
			t.Errorf("unknown user refused with %+v, a wrong password with %+v", f, wrong)
		}
	}
	if f := answer(t, g.login(a, request("Authorization", basicHeader("bob", "correct horse"))), "bob"); f != nil {
		t.Fatalf("the valid login was refused: %v", f)
	}
	if order := g.order(); slices.ContainsFunc(order, func(p string) bool { return p == "attack" }) {
		t.Errorf("an unknown user's password was compared: %q", order)
	}
}

// Until a comparison has been timed, an unknown user is compared against
// the most expensive hash, as a wrong password would be; after, it is not.
func TestBasicUnknownUserComparedUntilTimed(t *testing.T) {
	a := basicAuth(t, bcrypt.MinCost)
	var compared atomic.Int32
	authn.WatchHashComparisons(t, func([]byte) { compared.Add(1) })
	for i, want := range []int32{1, 1} {
		if _, f := a.Authenticate(request("Authorization", basicHeader("mallory", fmt.Sprint("guess-", i)))); f == nil {
			t.Fatal("an unknown user was accepted")
		}
		if got := compared.Load(); got != want {
			t.Errorf("after %d unknown users: %d comparisons, want %d", i+1, got, want)
		}
	}
}

// A login whose request ends while it waits, for a turn or for its client
// address's place in the order of turns, is refused at once and gives up
// its place: the next freed turn goes to the next login.
func TestBasicWaitEndsWithTheRequest(t *testing.T) {
	const client = "198.51.100.7"
	for _, user := range []string{"bob", "mallory"} {
		for _, held := range []struct {
			name, by string // by: the address holding every turn, "" for one each
		}{{"for a turn", ""}, {"behind its address's attempts", client}} {
			t.Run(user+", "+held.name, func(t *testing.T) {
				a := basicAuth(t, bcrypt.MinCost)
				timeAComparison(t, a)
				g := gateAttacks(t)
				g.holdEveryTurn(t, a, held.by)
				ctx, cancel := context.WithCancel(context.Background())
				login := g.login(a, from(client, request("Authorization", basicHeader(user, "guess")).WithContext(ctx)))
				authn.WaitForBasicLogins(t, a, 1)
				cancel()
				f := answer(t, login, user)
				if f == nil || f.Status != http.StatusUnauthorized || !strings.Contains(f.Detail, "the request ended") {
					t.Fatalf("answer %+v, want a 401 because the request ended", f)
				}
				authn.WaitForBasicLogins(t, a, 0)

				g.release <- struct{}{}
				if f := answer(t, g.login(a, from(client, request("Authorization", basicHeader("bob", "correct horse")))), "bob"); f != nil {
					t.Fatalf("the valid login was refused: %v", f)
				}
			})
		}
	}
}

// An address that tries many users delays another address's login no
// more than one that tries one user: it holds at most as many places in
// the order of turns as comparisons may run at once, and its further
// attempts wait behind its own (an IPv6 address counts by its /48). With
// every turn held by its wrong passwords for carol, and one more waiting
// for each of many other users, sent from other /64s of its /48, bob's
// login from another address is the next compared, however many users
// are tried.
func TestBasicLoginWaitDoesNotGrowWithUsersTried(t *testing.T) {
	held := max(1, runtime.GOMAXPROCS(0)/2)
	tried := 2*held + 6
	hash := string(must(bcrypt.GenerateFromPassword([]byte("correct horse"), bcrypt.MinCost)))
	users := []authn.User{{Username: "bob", Password: hash}, {Username: "carol", Password: hash}}
	for i := range tried {
		users = append(users, authn.User{Username: fmt.Sprint("user-", i), Password: hash})
	}
	a := newAuth(t, authn.Config{Schemes: map[string]*authn.Scheme{
		"basic": {Type: "http", HTTPScheme: "basic", Users: users},
	}}, authn.Options{})
	g := gateAttacks(t)
	g.holdEveryTurn(t, a, "2001:db8:7::1")
	for i := range tried {
		g.attack(t, a, fmt.Sprintf("2001:db8:7:%x::1", i+1), fmt.Sprint("user-", i), i)
	}
	authn.WaitForBasicLogins(t, a, tried)
	login := g.login(a, from("198.51.100.7", request("Authorization", basicHeader("bob", "correct horse"))))
	authn.WaitForBasicLogins(t, a, tried+1)
	g.releaseUntilThrough(t, login)

	order := g.order()
	if ahead := order[held:slices.Index(order, "correct horse")]; len(ahead) > 0 {
		t.Errorf("with %d users tried from one address, another address's login waited for %d comparisons queued before it, want none: %q",
			tried, len(ahead), ahead)
	}
}
