package authn

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/crypto/bcrypt"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// weakBcryptCost is the cost below which a hash is logged as weak.
const weakBcryptCost = 10

// bcryptMaxPassword is the longest password bcrypt hashes; it ignores the
// rest, so a longer one is refused rather than half-checked.
const bcryptMaxPassword = 72

// basic checks HTTP Basic credentials against bcrypt hashes. An unknown
// user is compared against the most expensive configured hash all the
// same and then refused, so it costs what a wrong password costs and the
// time taken does not tell which users exist. A successful check is
// cached (keyed by a SHA-256 of user and password) so that a client that
// sends the same credentials on every request pays bcrypt once per TTL.
func (b *builder) basic(s *scheme, sc *Scheme) error {
	type user struct {
		hash []byte
		id   *Identity
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
		users[u.Username] = &user{hash: hash, id: single(&Credential{
			Scheme:  s.name,
			Type:    a2a.SchemeHTTPAuth,
			Subject: u.Username,
			Scopes:  slices.Clone(u.Scopes),
			Claims:  map[string]any{"username": u.Username},
		})}
	}
	s.checkScopes = grantedBy(granted, "user")

	a := b.a
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
		if id := a.cache.get(key, now); id != nil {
			return accepted(id)
		}
		u, known := users[string(name)]
		hash := dummy
		if known {
			hash = u.hash
		}
		err = bcrypt.CompareHashAndPassword(hash, password)
		if !known || err != nil || len(password) > bcryptMaxPassword {
			return refused("invalid username or password", "invalid username or password")
		}
		a.cache.put(key, s.index, u.id, time.Time{}, now)
		return accepted(u.id)
	}
	return nil
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
