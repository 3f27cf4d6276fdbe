package policy

import (
	"container/list"
	"sync"
	"sync/atomic"
)

// DefaultCacheEntries bounds a Cache whose options leave it zero.
const DefaultCacheEntries = 4096

// CacheOptions configure a Cache; nil or zero fields mean the defaults.
type CacheOptions struct {
	// MaxEntries bounds the cached visible sets (least recently used
	// first out); default DefaultCacheEntries.
	MaxEntries int
}

// Cache holds visible sets keyed by (subject key, item set, policy), so
// that a cached caller's list or call runs no CEL. The subject key covers
// the issuer, identity, group and every claim (see TokenSubject). The
// item set and the policy are keyed by a stamp unique in the process that
// each gets when it is made, not by their generations: an edge that
// merges several regions' logs holds policies and views of different
// logs whose generations can be equal (a policy of region a at 17 and one
// of region b at 17), and a key by generation would serve one region's
// visible set for another's. Safe for concurrent use.
type Cache struct {
	max          int
	mu           sync.Mutex
	lru          *list.List // of *cacheEntry, most recent first
	byKey        map[cacheKey]*list.Element
	hits, misses atomic.Uint64
}

type cacheKey struct {
	subject      [32]byte
	items, rules uint64 // the stamps of the item set and the policy
}

// stamps numbers the policies and item sets made in the process.
var stamps atomic.Uint64

// nextStamp is a stamp no policy or item set had before.
func nextStamp() uint64 { return stamps.Add(1) }

type cacheEntry struct {
	key cacheKey
	vis *Visibility
}

// NewCache returns an empty cache.
func NewCache(o *CacheOptions) *Cache {
	n := DefaultCacheEntries
	if o != nil && o.MaxEntries > 0 {
		n = o.MaxEntries
	}
	return &Cache{max: n, lru: list.New(), byKey: map[cacheKey]*list.Element{}}
}

// Visible returns the subject's visible set of items under p, computing
// it on a miss. Two callers that miss at once both compute; the result is
// the same.
func (c *Cache) Visible(p *Policy, s Subject, items *ItemSet) *Visibility {
	k := cacheKey{subject: s.key, items: items.stampOf(), rules: p.stampOf()}
	c.mu.Lock()
	if el, ok := c.byKey[k]; ok {
		c.lru.MoveToFront(el)
		v := el.Value.(*cacheEntry).vis
		c.mu.Unlock()
		c.hits.Add(1)
		return v
	}
	c.mu.Unlock()
	c.misses.Add(1)
	v := p.Visible(s, items)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[k]; ok { // computed meanwhile
		c.lru.MoveToFront(el)
		return el.Value.(*cacheEntry).vis
	}
	c.byKey[k] = c.lru.PushFront(&cacheEntry{key: k, vis: v})
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.byKey, old.Value.(*cacheEntry).key)
	}
	return v
}

// Len is the number of cached visible sets.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// Stats returns the hits and misses so far.
func (c *Cache) Stats() (hits, misses uint64) { return c.hits.Load(), c.misses.Load() }

// stampOf is the set's stamp; 0 for a nil set.
func (s *ItemSet) stampOf() uint64 {
	if s == nil {
		return 0
	}
	return s.stamp
}

// stampOf is the policy's stamp; 0 for nil (allow-all).
func (p *Policy) stampOf() uint64 {
	if p == nil {
		return 0
	}
	return p.stamp
}
