package auth

import (
	"crypto/sha256"
	"sync"
	"time"
)

// tokenCache remembers the identities of tokens verified lately, so that
// a client sending the same token on every request pays the signature
// check once per TokenCacheTTL. It is keyed by the token's SHA-256 and
// bounded in entries; an entry lives until the token's exp or the TTL,
// whichever comes first, and every hit checks exp again. Only successes
// are kept: a refused token is refused again from scratch.
type tokenCache struct {
	max int
	ttl time.Duration

	mu      sync.Mutex
	entries map[[sha256.Size]byte]cached
}

type cached struct {
	id    *Identity
	until time.Time
}

func newTokenCache(max int, ttl time.Duration) *tokenCache {
	if max <= 0 {
		return nil
	}
	return &tokenCache{max: max, ttl: ttl, entries: make(map[[sha256.Size]byte]cached)}
}

// get returns the cached identity of the token with hash h, if any and
// still within its lifetime at now.
func (c *tokenCache) get(h [sha256.Size]byte, now time.Time) *Identity {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[h]
	if !ok {
		return nil
	}
	if !now.Before(e.until) {
		delete(c.entries, h)
		return nil
	}
	return e.id
}

// put keeps id until min(now+ttl, expiry); when full it drops expired
// entries, then arbitrary ones.
func (c *tokenCache) put(h [sha256.Size]byte, id *Identity, now, expiry time.Time) {
	if c == nil {
		return
	}
	until := now.Add(c.ttl)
	if expiry.Before(until) {
		until = expiry
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		for k, e := range c.entries {
			if !now.Before(e.until) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries {
			if len(c.entries) < c.max {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[h] = cached{id: id, until: until}
}
