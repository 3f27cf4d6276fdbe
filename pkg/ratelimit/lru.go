package ratelimit

import (
	"crypto/sha256"
	"strings"
)

// DefaultMaxKeys bounds each keyed map of a Limiter (identities, client
// addresses, per-identity tool budgets) when Options.MaxKeys is 0.
const DefaultMaxKeys = 100_000

// MaxKeyBytes: a longer key (identity, address) is kept as its SHA-256
// digest, so that hostile long keys cost as little memory as short ones.
const MaxKeyBytes = 128

// hashedKeyPrefix starts every digested key. A key that itself starts
// with it is digested too, so a stored digest never equals a key sent
// as such.
const hashedKeyPrefix = "\x00sha256:"

// boundKey returns k, or its digest when k is longer than MaxKeyBytes
// (or starts with hashedKeyPrefix).
func boundKey(k string) string {
	if len(k) <= MaxKeyBytes && !strings.HasPrefix(k, hashedKeyPrefix) {
		return k
	}
	sum := sha256.Sum256([]byte(k))
	return hashedKeyPrefix + string(sum[:])
}

// node is one entry of an lru, linked in its recency list unless pinned.
type node[K comparable, V any] struct {
	key        K
	val        V
	prev, next *node[K, V]
	pins       int // > 0: out of the list, never evicted
}

// lru is a map of at most max entries that evicts the least recently used
// entry that is not pinned. It is not safe for concurrent use: the
// Limiter's mutex guards it. Its list is a ring through root.
type lru[K comparable, V any] struct {
	m    map[K]*node[K, V]
	root node[K, V]
	max  int
}

func newLRU[K comparable, V any](max int) *lru[K, V] {
	c := &lru[K, V]{m: make(map[K]*node[K, V]), max: max}
	c.root.prev, c.root.next = &c.root, &c.root
	return c
}

func (c *lru[K, V]) len() int { return len(c.m) }

// get returns k's entry, marked most recently used.
func (c *lru[K, V]) get(k K) *node[K, V] {
	n := c.m[k]
	if n != nil && n.pins == 0 && c.root.next != n {
		c.unlink(n)
		c.pushFront(n)
	}
	return n
}

// peek returns k's entry without touching its recency.
func (c *lru[K, V]) peek(k K) *node[K, V] { return c.m[k] }

// add inserts k (absent) with v, evicting the least recently used
// unpinned entry when the map is full. It returns nil, inserting nothing,
// when every entry is pinned: the caller then serves k untracked.
func (c *lru[K, V]) add(k K, v V) *node[K, V] {
	if len(c.m) >= c.max {
		victim := c.root.prev
		if victim == &c.root {
			return nil
		}
		c.unlink(victim)
		delete(c.m, victim.key)
	}
	n := &node[K, V]{key: k, val: v}
	c.m[k] = n
	c.pushFront(n)
	return n
}

// pin takes n out of the recency list: it is not evicted until unpinned.
func (c *lru[K, V]) pin(n *node[K, V]) {
	if n.pins == 0 {
		c.unlink(n)
	}
	n.pins++
}

// unpin undoes one pin; the last puts n back as most recently used.
func (c *lru[K, V]) unpin(n *node[K, V]) {
	if n.pins == 0 {
		return
	}
	n.pins--
	if n.pins == 0 {
		c.pushFront(n)
	}
}

// deleteIf removes every unpinned entry for which drop is true.
func (c *lru[K, V]) deleteIf(drop func(K, V) bool) {
	for k, n := range c.m {
		if n.pins == 0 && drop(k, n.val) {
			c.unlink(n)
			delete(c.m, k)
		}
	}
}

func (c *lru[K, V]) unlink(n *node[K, V]) {
	n.prev.next = n.next
	n.next.prev = n.prev
	n.prev, n.next = nil, nil
}

func (c *lru[K, V]) pushFront(n *node[K, V]) {
	n.prev = &c.root
	n.next = c.root.next
	c.root.next.prev = n
	c.root.next = n
}
