package auth

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// keyCache holds the issuer's public keys. It refreshes lazily, on the
// request path, without goroutines of its own:
//
//   - when the keys are older than their lifetime (the JWKS answer's
//     Cache-Control max-age within [minRefresh, maxRefresh], else
//     refresh), the next lookup refetches them; lookups meanwhile go on
//     with the old keys;
//   - a token whose kid is unknown refetches at once, but at most once per
//     minInterval (counted from the last attempt, successful or not), so
//     a flood of tokens with made-up kids costs the issuer one request per
//     interval; lookups that miss while a fetch runs wait for it and share
//     its result;
//   - a failed fetch keeps the old keys.
type keyCache struct {
	f           *fetcher
	now         func() time.Time
	minInterval time.Duration
	refresh     time.Duration
	minRefresh  time.Duration
	maxRefresh  time.Duration

	mu        sync.Mutex
	keys      []jose.JSONWebKey
	jwksURL   string    // configured or discovered; "" until discovered
	expires   time.Time // when the keys are due for a refresh
	attempted time.Time // start of the last fetch
	tried     bool      // a fetch was attempted
	lastErr   error     // of the last fetch
	flight    chan struct{}
}

// candidates are the keys a token with kid and alg may be signed with:
// those of that kid (all keys when the token names none) whose type fits
// the algorithm and whose own alg, if any, is alg.
func candidates(keys []jose.JSONWebKey, kid, alg string) []jose.JSONWebKey {
	fam := algFamily(alg)
	var out []jose.JSONWebKey
	for _, k := range keys {
		if (kid == "" || k.KeyID == kid) && family(k.Key) == fam && (k.Algorithm == "" || k.Algorithm == alg) {
			out = append(out, k)
		}
	}
	if kid == "" && len(out) > 1 {
		return nil // no kid is accepted only when exactly one key could have signed
	}
	return out
}

// lookup returns the keys a token with kid and alg may be verified with.
func (c *keyCache) lookup(ctx context.Context, kid, alg string) ([]jose.JSONWebKey, error) {
	c.mu.Lock()
	ks := candidates(c.keys, kid, alg)
	now := c.now()
	due := c.keys != nil && !now.Before(c.expires) && c.allowed(now)
	if len(ks) > 0 && !(due && c.flight == nil) {
		c.mu.Unlock()
		return ks, nil
	}
	switch {
	case c.flight != nil:
		wait := c.flight
		c.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: waiting for the JWKS: %w", ErrKeysUnavailable, ctx.Err())
		}
		c.mu.Lock()
	case due || c.allowed(now):
		c.fetchLocked(ctx)
	}
	defer c.mu.Unlock()
	if ks := candidates(c.keys, kid, alg); len(ks) > 0 {
		return ks, nil
	}
	if c.keys == nil {
		if c.lastErr != nil {
			return nil, fmt.Errorf("%w: %w", ErrKeysUnavailable, c.lastErr)
		}
		return nil, ErrKeysUnavailable
	}
	return nil, fmt.Errorf("%w: kid %.64q alg %.16q is not in the issuer's JWKS", ErrUnknownKey, kid, alg)
}

// allowed: the rate limit lets a fetch start now.
func (c *keyCache) allowed(now time.Time) bool {
	return !c.tried || now.Sub(c.attempted) >= c.minInterval || now.Before(c.attempted)
}

// fetchLocked runs one fetch with c.mu held on entry and on return (it
// is released while the fetch runs). The fetch is detached from the
// caller's cancellation (other lookups share it) but bounded by the
// fetcher's timeout.
func (c *keyCache) fetchLocked(ctx context.Context) {
	done := make(chan struct{})
	c.flight, c.attempted, c.tried = done, c.now(), true
	jwksURL := c.jwksURL
	c.mu.Unlock()

	keys, ttl, discovered, err := c.fetch(context.WithoutCancel(ctx), jwksURL)

	c.mu.Lock()
	c.flight = nil
	close(done)
	c.lastErr = err
	if err != nil {
		if c.f.jwksFlag == "" {
			c.jwksURL = "" // rediscover next time: the metadata may have moved
		}
		return
	}
	c.jwksURL = discovered
	c.keys = keys
	switch {
	case ttl == 0:
		ttl = c.refresh
	case ttl < c.minRefresh:
		ttl = c.minRefresh
	case ttl > c.maxRefresh:
		ttl = c.maxRefresh
	}
	c.expires = c.now().Add(ttl)
}

func (c *keyCache) fetch(ctx context.Context, jwksURL string) ([]jose.JSONWebKey, time.Duration, string, error) {
	if jwksURL == "" {
		jwksURL = c.f.jwksFlag
	}
	if jwksURL == "" {
		u, err := c.f.discover(ctx)
		if err != nil {
			return nil, 0, "", err
		}
		jwksURL = u
	}
	body, ttl, err := c.f.get(ctx, jwksURL, c.f.maxBody)
	if err != nil {
		return nil, 0, "", fmt.Errorf("JWKS of issuer %s: %w", c.f.issuer, err)
	}
	keys, err := parseJWKS(body, c.f.maxKeys)
	if err != nil {
		return nil, 0, "", fmt.Errorf("%s: %w", jwksURL, err)
	}
	return keys, ttl, jwksURL, nil
}

// prefetch fetches the keys now unless a fetch is running or the keys are
// fresh; it returns the error of the last fetch.
func (c *keyCache) prefetch(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.flight == nil && (c.keys == nil || !c.now().Before(c.expires)) {
		c.fetchLocked(ctx)
	}
	return c.lastErr
}
