package tokenexchange

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/fleetgate/fleetgate/pkg/credential"
)

// ErrNoSubject: a call to a token-exchange backend carried no verified
// access token to exchange (the edge authenticates its callers by a
// trusted header, or not at all).
var ErrNoSubject = errors.New("no verified access token of the caller to exchange (token exchange needs --auth-issuer)")

// Subject is the caller whose token is exchanged.
type Subject struct {
	// Identity names the caller (iss and sub): the cache key.
	Identity string
	// Token is the caller's verified access token.
	Token credential.Secret
	// Expiry is the token's exp: no token obtained with it is used later.
	Expiry time.Time
}

// SourceOptions configure a Source; nil or zero fields take the defaults.
type SourceOptions struct {
	Client *Options
	// MaxEntries bounds the cache (DefaultMaxEntries).
	MaxEntries int
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Source hands out the token of a caller for a backend: from its cache,
// or exchanged at the backend's token endpoint (one exchange per key at a
// time; concurrent callers wait for it). It is safe for concurrent use.
type Source struct {
	client *Client
	now    func() time.Time
	flight singleflight.Group

	mu        sync.Mutex
	cache     *Cache
	exchanges int // made (Stats)
	hits      int
}

// NewSource returns a Source with options o (nil: the defaults).
func NewSource(o *SourceOptions) *Source {
	if o == nil {
		o = &SourceOptions{}
	}
	s := &Source{client: NewClient(o.Client), now: o.Now, cache: NewCache(o.MaxEntries)}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Client is the source's client (the controller's probes use it too).
func (s *Source) Client() *Client { return s.client }

// Token returns the token subject's calls to backend (configured cfg)
// carry. The exchange runs under ctx's values and a deadline of its own
// (a caller giving up does not fail the others waiting for it).
func (s *Source) Token(ctx context.Context, subject Subject, backend string, cfg Config) (Token, error) {
	if subject.Token.Reveal() == "" || subject.Identity == "" {
		return Token{}, ErrNoSubject
	}
	k := Key{Identity: subject.Identity, Backend: backend, Config: cfg.fingerprint()}
	s.mu.Lock()
	t, ok := s.cache.Get(k, s.now())
	if ok {
		s.hits++
	}
	s.mu.Unlock()
	if ok {
		return t, nil
	}
	v, err, _ := s.flight.Do(k.Identity+"\x00"+k.Backend+"\x00"+k.Config, func() (any, error) {
		s.mu.Lock()
		t, ok := s.cache.Get(k, s.now())
		s.mu.Unlock()
		if ok { // another flight just ended
			return t, nil
		}
		start := s.now()
		t, err := s.client.Exchange(context.WithoutCancel(ctx), cfg, subject.Token)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.exchanges++
		if err != nil {
			s.cache.Forget(k)
			return Token{}, err
		}
		s.cache.Put(k, t, start, subject.Expiry)
		return t, nil
	})
	if err != nil {
		return Token{}, err
	}
	return v.(Token), nil
}

// Forget drops the token of subject's identity for backend (every
// configuration): a backend that refused it (401) gets a new one on the
// next call.
func (s *Source) Forget(identity, backend string, cfg Config) {
	s.mu.Lock()
	s.cache.Forget(Key{Identity: identity, Backend: backend, Config: cfg.fingerprint()})
	s.mu.Unlock()
}

// Stats are the exchanges made, the calls answered from the cache, and
// the tokens cached.
func (s *Source) Stats() (exchanges, hits, cached int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exchanges, s.hits, s.cache.Len()
}
