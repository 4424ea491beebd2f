package authn

import (
	"crypto/sha256"
	"sync"
	"time"
)

// cache remembers verified credentials, keyed by a SHA-256 of the scheme
// and the credential (never the credential itself), until the credential
// expires or the TTL passes, whichever is first. It holds at most max
// entries: when full, expired entries go first, then arbitrary ones. A nil
// cache remembers nothing.
type cache struct {
	max int
	ttl time.Duration

	mu sync.RWMutex
	m  map[[sha256.Size]byte]cacheEntry
}

type cacheEntry struct {
	id      *Identity
	expires int64 // unix nanoseconds
	scheme  int
}

func newCache(max int, ttl time.Duration) *cache {
	return &cache{max: max, ttl: ttl, m: make(map[[sha256.Size]byte]cacheEntry)}
}

// keyBufs holds the buffers the key is hashed from, so a lookup does not
// allocate.
var keyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// key hashes the scheme index and the credential's parts; parts are
// length-prefixed so that ("ab", "c") and ("a", "bc") differ.
func cacheKey(scheme int, parts ...[]byte) [sha256.Size]byte {
	bp := keyBufs.Get().(*[]byte)
	b := append((*bp)[:0], byte(scheme), byte(scheme>>8))
	for _, p := range parts {
		n := len(p)
		b = append(b, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
		b = append(b, p...)
	}
	k := sha256.Sum256(b)
	clear(b)
	if cap(b) <= 64<<10 {
		*bp = b
		keyBufs.Put(bp)
	}
	return k
}

// stringKey is cacheKey for one string credential.
func stringKey(scheme int, s string) [sha256.Size]byte {
	bp := keyBufs.Get().(*[]byte)
	b := append((*bp)[:0], byte(scheme), byte(scheme>>8))
	b = append(b, s...)
	k := sha256.Sum256(b)
	clear(b)
	if cap(b) <= 64<<10 {
		*bp = b
		keyBufs.Put(bp)
	}
	return k
}

func (c *cache) get(k [sha256.Size]byte, now time.Time) *Identity {
	if c == nil {
		return nil
	}
	c.mu.RLock()
	e, ok := c.m[k]
	c.mu.RUnlock()
	if !ok || now.UnixNano() >= e.expires {
		return nil
	}
	return e.id
}

// put remembers id until expires (zero: no expiry of its own) or the TTL.
func (c *cache) put(k [sha256.Size]byte, scheme int, id *Identity, expires, now time.Time) {
	if c == nil {
		return
	}
	until := now.Add(c.ttl)
	if !expires.IsZero() && expires.Before(until) {
		until = expires
	}
	if !until.After(now) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		c.evict(now.UnixNano())
	}
	c.m[k] = cacheEntry{id: id, expires: until.UnixNano(), scheme: scheme}
}

// evict drops expired entries and, if that is not enough, arbitrary ones
// (map order is random) down to 7/8 of max, so a full cache is swept once
// per max/8 insertions rather than on each.
func (c *cache) evict(now int64) {
	for k, e := range c.m {
		if now >= e.expires {
			delete(c.m, k)
		}
	}
	for k := range c.m {
		if len(c.m) <= c.max-c.max/8-1 {
			break
		}
		delete(c.m, k)
	}
}

// purge forgets every credential of one scheme (its keys changed).
func (c *cache) purge(scheme int) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.m {
		if e.scheme == scheme {
			delete(c.m, k)
		}
	}
}
