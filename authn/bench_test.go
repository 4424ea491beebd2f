package authn_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/crypto/bcrypt"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/confval"
)

// benchBearer authenticates one token per iteration against keys fetched
// from a JWKS at start. cacheSize -1 verifies the signature every time;
// 0 (the default cache) verifies it once and then serves the cache.
func benchBearer(b *testing.B, method jwt.SigningMethod, key any, pub any, cacheSize int) {
	p := newIDP(b, jwk("k1", method.Alg(), pub))
	a := newAuth(b, authn.Config{CacheSize: cacheSize, Schemes: map[string]*authn.Scheme{
		"jwt": {Type: "http", HTTPScheme: "bearer", JWT: &authn.JWTConfig{
			Issuer: "https://issuer.example", Audiences: []string{"a2a-agent"}, JWKSURL: p.URL + "/jwks",
			RefreshInterval: confval.Duration(time.Hour)}},
	}}, authn.Options{})
	tok := mint(b, method, key, "k1", claimsAt(time.Now(), jwt.MapClaims{"scope": "orders:read orders:write"}))
	r := bearer(tok)
	if _, f := a.Authenticate(r); f != nil {
		b.Fatal(f)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, f := a.Authenticate(r); f != nil {
			b.Fatal(f)
		}
	}
}

func BenchmarkBearerRS256(b *testing.B) {
	benchBearer(b, jwt.SigningMethodRS256, rsaKey(), &rsaKey().PublicKey, -1)
}

func BenchmarkBearerES256(b *testing.B) {
	benchBearer(b, jwt.SigningMethodES256, ecKey(), &ecKey().PublicKey, -1)
}

func BenchmarkBearerRS256Cached(b *testing.B) {
	benchBearer(b, jwt.SigningMethodRS256, rsaKey(), &rsaKey().PublicKey, 0)
}

func BenchmarkBearerES256Cached(b *testing.B) {
	benchBearer(b, jwt.SigningMethodES256, ecKey(), &ecKey().PublicKey, 0)
}

func BenchmarkAPIKey(b *testing.B) {
	keys := make([]authn.APIKey, 10)
	for i := range keys {
		keys[i] = authn.APIKey{Key: ciKey + string(rune('a'+i)), Subject: "ci", Scopes: []string{"tasks:read"}}
	}
	a := newAuth(b, authn.Config{Schemes: map[string]*authn.Scheme{
		"key": {Type: "apiKey", In: "header", Name: "X-API-Key", Keys: keys},
	}}, authn.Options{})
	r := request("X-API-Key", ciKey+"j")
	b.ReportAllocs()
	for b.Loop() {
		if _, f := a.Authenticate(r); f != nil {
			b.Fatal(f)
		}
	}
}

func BenchmarkBasicCached(b *testing.B) {
	hash := string(must(bcrypt.GenerateFromPassword([]byte("correct horse"), bcrypt.DefaultCost)))
	a := newAuth(b, authn.Config{Schemes: map[string]*authn.Scheme{
		"basic": {Type: "http", HTTPScheme: "basic", Users: []authn.User{{Username: "bob", Password: hash}}},
	}}, authn.Options{})
	r := request("Authorization", basicHeader("bob", "correct horse"))
	if _, f := a.Authenticate(r); f != nil {
		b.Fatal(f)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, f := a.Authenticate(r); f != nil {
			b.Fatal(f)
		}
	}
}

// BenchmarkBasicLoginUnderAttack times a valid basic login (bcrypt cost
// 10, no cache, so every login compares) while attackers send wrong
// passwords without pause, each from an address of its own, half of them
// for another user and half for unknown users: the login waits behind the
// other user's next comparison at most, not behind every attempt sent
// before it.
func BenchmarkBasicLoginUnderAttack(b *testing.B) {
	for _, attackers := range []int{0, 16, 64} {
		b.Run(fmt.Sprint("attackers=", attackers), func(b *testing.B) {
			hash := func(pw string) string {
				return string(must(bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)))
			}
			a := newAuth(b, authn.Config{CacheSize: -1, Schemes: map[string]*authn.Scheme{
				"basic": {Type: "http", HTTPScheme: "basic", Users: []authn.User{
					{Username: "bob", Password: hash("correct horse")},
					{Username: "carol", Password: hash("battery staple")},
				}},
			}}, authn.Options{})
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for i := range attackers {
				user := "carol"
				if i%2 == 1 {
					user = fmt.Sprint("mallory-", i)
				}
				r := from(fmt.Sprintf("10.0.%d.%d", i/256, i%256), request("Authorization", basicHeader(user, "wrong")))
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
							a.Authenticate(r)
						}
					}
				})
			}
			r := request("Authorization", basicHeader("bob", "correct horse"))
			for b.Loop() {
				if _, f := a.Authenticate(r); f != nil {
					b.Fatal(f)
				}
			}
			close(stop)
			wg.Wait()
		})
	}
}

// BenchmarkAuthorizeRefused refuses an API key that lacks a skill's scope.
// The requirement is compiled once, before the loop, as a server does at
// start: its allocations are those of the 403, none of resolving schemes.
func BenchmarkAuthorizeRefused(b *testing.B) {
	a := newAuth(b, authn.Config{Schemes: map[string]*authn.Scheme{
		"key": {Type: "apiKey", In: "header", Name: "X-API-Key", Keys: []authn.APIKey{{Key: ciKey, Subject: "ci", Scopes: []string{"tasks:read"}}}},
	}}, authn.Options{})
	id, f := a.Authenticate(request("X-API-Key", ciKey))
	if f != nil {
		b.Fatal(f)
	}
	reqs := compile(b, a, []a2a.SecurityRequirement{{"key": {"admin"}}})
	b.ReportAllocs()
	for b.Loop() {
		if f := a.Authorize(id, reqs); f == nil {
			b.Fatal("a caller without the scope was admitted")
		}
	}
}
