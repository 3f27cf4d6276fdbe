package tokenexchange

import (
	"container/list"
	"time"
)

// Cache bounds.
const (
	// DefaultMaxEntries is the most tokens a Cache keeps.
	DefaultMaxEntries = 10000
	// MaxMargin is the most time before its expiry a token is replaced.
	MaxMargin = 30 * time.Second
	// DefaultLifetime is how long a token whose answer had no expires_in
	// is used.
	DefaultLifetime = time.Minute
)

// Key is what a token is cached under: the identity it was issued for
// (iss and sub of the subject token), the backend, and the backend's
// configuration (a changed audience asks anew).
type Key struct {
	Identity, Backend, Config string
}

// Cache keeps issued tokens until shortly before they expire: the least
// recently used goes first when it holds its maximum. It is the pure core
// of a Source: the caller gives the time and holds the lock.
type Cache struct {
	max     int
	entries map[Key]*list.Element
	lru     list.List // of *cached, most recent first
}

type cached struct {
	key   Key
	tok   Token
	until time.Time // used before this instant only
}

// NewCache returns a cache of at most max tokens (<= 0: DefaultMaxEntries).
func NewCache(max int) *Cache {
	if max <= 0 {
		max = DefaultMaxEntries
	}
	return &Cache{max: max, entries: map[Key]*list.Element{}}
}

// Get returns k's token when it is still to be used at now.
func (c *Cache) Get(k Key, now time.Time) (Token, bool) {
	e, ok := c.entries[k]
	if !ok {
		return Token{}, false
	}
	ce := e.Value.(*cached)
	if !now.Before(ce.until) {
		c.lru.Remove(e)
		delete(c.entries, k)
		return Token{}, false
	}
	c.lru.MoveToFront(e)
	return ce.tok, true
}

// Put keeps t under k, obtained at now, to be used until UseUntil(t, now,
// notAfter). A token with no time left is not kept.
func (c *Cache) Put(k Key, t Token, now, notAfter time.Time) {
	until := UseUntil(t, now, notAfter)
	if !now.Before(until) {
		c.Forget(k)
		return
	}
	if e, ok := c.entries[k]; ok {
		e.Value = &cached{key: k, tok: t, until: until}
		c.lru.MoveToFront(e)
		return
	}
	c.entries[k] = c.lru.PushFront(&cached{key: k, tok: t, until: until})
	for len(c.entries) > c.max {
		last := c.lru.Back()
		c.lru.Remove(last)
		delete(c.entries, last.Value.(*cached).key)
	}
}

// Forget drops k's token.
func (c *Cache) Forget(k Key) {
	if e, ok := c.entries[k]; ok {
		c.lru.Remove(e)
		delete(c.entries, k)
	}
}

// Len is the number of tokens kept (expired ones included until looked up).
func (c *Cache) Len() int { return len(c.entries) }

// UseUntil is the instant from which t, obtained at now, is replaced: its
// expiry less a margin of a fifth of its lifetime (at most MaxMargin), and
// never later than notAfter (the subject token's expiry; zero: none). A
// token without expires_in is used for DefaultLifetime.
func UseUntil(t Token, now, notAfter time.Time) time.Time {
	life := t.Lifetime
	if life <= 0 {
		life = DefaultLifetime
	}
	until := now.Add(life - min(life/5, MaxMargin))
	if !notAfter.IsZero() && notAfter.Before(until) {
		until = notAfter
	}
	return until
}
