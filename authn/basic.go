package authn

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/crypto/bcrypt"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// basicKind checks a user name and password (HTTP Basic).
func init() { registerKind(&basicKind) }

var basicKind = kind{typ: TypeHTTP, httpScheme: "basic", card: a2a.SchemeHTTPAuth, priority: priorityBasic,
	validate: validateBasic, build: (*builder).basic, cardFields: httpCard}

// validateBasic checks the users.
func validateBasic(s *Scheme) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(s.Users) == 0 {
		add("users: at least one user is required")
	}
	seen := map[string]bool{}
	for i, u := range s.Users {
		if u.Username == "" || strings.Contains(u.Username, ":") {
			add("users[%d].username: required, without ':'", i)
		}
		if seen[u.Username] {
			add("users[%d].username: %q appears twice", i, u.Username)
		}
		seen[u.Username] = true
		if u.Password == "" {
			add("users[%d].password: a bcrypt hash is required", i)
		}
	}
	return errs
}

// weakBcryptCost is the cost below which a hash is logged as weak.
const weakBcryptCost = 10

// bcryptMaxPassword is the longest password bcrypt hashes; it ignores the
// rest, so a longer one is refused rather than half-checked.
const bcryptMaxPassword = 72

// failedLoginTTL is how long wrong basic credentials are remembered as
// wrong: sent again meanwhile, they are refused without a hash comparison.
const failedLoginTTL = time.Minute

// failedLogin is what the cache holds for credentials that failed.
var failedLogin = new(Identity)

// compareHash compares a password with its bcrypt hash (a variable so that
// tests can watch the comparisons).
var compareHash = bcrypt.CompareHashAndPassword

// basic checks HTTP Basic credentials against bcrypt hashes.
//
// A check is cached (keyed by a SHA-256 of user and password): a client
// that sends the same credentials on every request pays bcrypt once per
// TTL, and one that repeats wrong ones pays it once per failedLoginTTL.
//
// At most half the CPUs compare hashes at once, so that failed logins,
// which no cache spares, cannot take the CPU from every other request;
// further checks wait for a turn, which goes round-robin between the
// configured users (see turns): a login waits behind the attempts for its
// own user, not behind those for other users. One client address holds
// as many places in that order as comparisons may run at once, and its
// further checks wait behind its own, so that an address that tries many
// users delays the others' logins no more than one that tries one user.
//
// An unknown user takes its place in that order like a user with nothing
// waiting, and is then refused after as long as one of the recent
// comparisons against the scheme's most expensive hash took, without
// comparing: it takes as long as a wrong password, so the time taken does
// not tell which users exist, yet it delays no one. While no such
// comparison is recent, unknown users are compared against that hash, in
// one queue of their own.
func (b *builder) basic(s *scheme, sc *Scheme) error {
	s.challenge = fmt.Sprintf(`Basic realm=%s, charset="UTF-8"`, quote(b.a.realm))
	type user struct {
		hash []byte
		cost int
		id   *Identity
		turn queue
	}
	users := make(map[string]*user, len(sc.Users))
	granted := map[string]bool{}
	var dummy []byte
	dummyCost := -1
	for i, u := range sc.Users {
		field := fmt.Sprintf("users[%d].password", i)
		pw, err := b.env.expand(field, u.Password)
		if err != nil {
			return err
		}
		hash := []byte(pw)
		if !strings.HasPrefix(pw, "$") {
			if hash, err = base64.StdEncoding.DecodeString(pw); err != nil {
				return fmt.Errorf("%s: neither a bcrypt hash nor a base64-encoded one", field)
			}
		}
		cost, err := bcrypt.Cost(hash)
		if err != nil {
			return fmt.Errorf("%s: not a bcrypt hash", field)
		}
		if cost < weakBcryptCost {
			b.a.log.Warn("weak bcrypt cost; use caddy hash-password",
				zap.String("scheme", s.name), zap.String("user", u.Username), zap.Int("cost", cost))
		}
		if cost > dummyCost {
			dummy, dummyCost = hash, cost
		}
		for _, sc := range u.Scopes {
			granted[sc] = true
		}
		users[u.Username] = &user{hash: hash, cost: cost, id: single(&Credential{
			Scheme:  s.name,
			Type:    a2a.SchemeHTTPAuth,
			Subject: u.Username,
			Scopes:  slices.Clone(u.Scopes),
			Claims:  map[string]any{"username": u.Username},
		})}
	}
	s.checkScopes = grantedBy(granted, "user")

	a := b.a
	if a.turns == nil {
		a.turns = newTurns(max(1, runtime.GOMAXPROCS(0)/2))
	}
	var (
		times     comparisonTimes // against hashes of dummyCost
		strangers queue           // unknown users compared against dummy
	)
	// compare waits for q's turn and compares; ended when the request
	// ended first.
	compare := func(ctx context.Context, q *queue, client string, hash, password []byte, cost int) (matched, ended bool) {
		turn := a.turns.wait(ctx, q, client)
		if turn == nil {
			return false, true
		}
		start := time.Now()
		err := compareHash(hash, password)
		if cost == dummyCost {
			times.add(time.Since(start), start)
		}
		a.turns.done(turn)
		return err == nil, false
	}
	s.check = func(r *http.Request) outcome {
		v, o := authorization(r, "Basic ", MaxBasicBytes)
		if o.state != valid {
			return o
		}
		raw, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return refused("malformed basic credentials", "basic credentials are not base64")
		}
		name, password, found := bytes.Cut(raw, []byte{':'})
		if !found {
			return refused("malformed basic credentials", "basic credentials without ':'")
		}
		now := a.now()
		key := cacheKey(s.index, name, password)
		switch id := a.cache.get(key, now); id {
		case nil:
		case failedLogin:
			return refused("invalid username or password", "invalid username or password (remembered)")
		default:
			return accepted(id)
		}
		ctx, client := r.Context(), ClientAddress(r, a.clientAddress)
		var matched, ended bool
		u, known := users[string(name)]
		if known {
			matched, ended = compare(ctx, &u.turn, client, u.hash, password, u.cost)
		} else if d, recent := times.pick(time.Now()); recent {
			ended = !standIn(ctx, a.turns, client, d)
		} else {
			_, ended = compare(ctx, &strangers, client, dummy, password, dummyCost)
		}
		if ended {
			return refused("the request ended", "the request ended while waiting to check a password")
		}
		if !matched || len(password) > bcryptMaxPassword {
			a.cache.put(key, s.index, failedLogin, now.Add(failedLoginTTL), now)
			return refused("invalid username or password", "invalid username or password")
		}
		a.cache.put(key, s.index, u.id, time.Time{}, now)
		return accepted(u.id)
	}
	return nil
}

// standIn takes an unknown user's place in the order of turns, then
// waits d, as long as a comparison, holding its client's place as a
// comparison would; false when ctx ended first.
func standIn(ctx context.Context, t *turns, client string, d time.Duration) bool {
	turn := t.wait(ctx, &queue{stand: true}, client)
	if turn == nil {
		return false
	}
	defer t.done(turn)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// comparisonTimesTTL is how long a comparison's time stands for what
// comparisons cost; older times may say too little or too much, as the
// load changes.
const comparisonTimesTTL = time.Minute

// comparisonTimes remembers how long the last comparisons against hashes
// of one cost took.
type comparisonTimes struct {
	mu     sync.Mutex
	recent [8]time.Duration
	n      int // how many of recent hold a time
	next   int // where the next time goes
	newest time.Time
}

func (c *comparisonTimes) add(d time.Duration, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recent[c.next] = d
	c.next = (c.next + 1) % len(c.recent)
	c.n = min(c.n+1, len(c.recent))
	c.newest = at
}

// pick returns one of the recent times at random, so that stand-ins vary
// as comparisons do; false when none is from the last comparisonTimesTTL.
func (c *comparisonTimes) pick(now time.Time) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 || now.Sub(c.newest) > comparisonTimesTTL {
		return 0, false
	}
	return c.recent[rand.IntN(c.n)], true
}

// authorization finds the one Authorization header of the given scheme
// (prefix such as "Bearer ", matched without regard to case) and returns
// its credentials: state absent when there is none, invalid when there are
// several or it is larger than limit, valid with the value otherwise.
func authorization(r *http.Request, prefix string, limit int) (string, outcome) {
	var found string
	n := 0
	for _, v := range r.Header["Authorization"] {
		if len(v) >= len(prefix) && strings.EqualFold(v[:len(prefix)], prefix) {
			found = v
			n++
		}
	}
	switch {
	case n == 0:
		return "", outcome{}
	case n > 1:
		return "", refused("one Authorization header is expected", "more than one Authorization header")
	case len(found) > limit:
		return "", refused("the credentials are too large", fmt.Sprintf("Authorization header over %d bytes", limit))
	}
	v := strings.TrimLeft(found[len(prefix):], " ")
	if v == "" {
		return "", refused("empty credentials", "empty Authorization credentials")
	}
	return v, outcome{state: valid}
}

// BearerToken is the bearer token of a request that id, the identity
// Authenticate gave it, holds a bearer credential of: a token the
// authenticator validated, which an upstream may take in exchange for its
// own (RFC 8693), and when it expires (zero: not known). The token is ""
// for any other identity. Never log it.
func BearerToken(r *http.Request, id *Identity) (token string, expires time.Time) {
	if id == nil {
		return "", time.Time{}
	}
	i := slices.IndexFunc(id.Credentials, func(c *Credential) bool { return c.Bearer })
	if i < 0 {
		return "", time.Time{}
	}
	tok, o := authorization(r, "Bearer ", MaxTokenBytes+len("Bearer "))
	if o.state != valid {
		return "", time.Time{}
	}
	return tok, id.Credentials[i].Expires
}
