package ratelimit

import (
	"fmt"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// maxMatchCache bounds the cache of tool name -> rule of one policy; a
// full cache is emptied. Names longer than MaxGlobBytes are not cached.
const maxMatchCache = 4096

// Options configure a Limiter; nil or zero fields mean the defaults.
type Options struct {
	// MaxKeys bounds each keyed map (identities, per-identity tool
	// budgets, client addresses); 0 means DefaultMaxKeys.
	MaxKeys int
}

// Limiter enforces Limits. It holds no clock: every method takes the
// time of the request. It is safe for concurrent use. A nil *Limiter
// allows everything.
type Limiter struct {
	mu sync.Mutex
	// p is read without mu to skip the lock when nothing applies; it is
	// stored under mu, and read again under mu by whoever goes on.
	p       atomic.Pointer[policy]
	ids     *lru[string, idState]
	toolIDs *lru[toolKey, keyed]
	addrs   *lru[string, keyed]
}

// rateRule is one configured rate; entries built for a rule compare its
// pointer with the policy's to know whether they are current.
type rateRule struct {
	limit rate.Limit
	burst int
}

func (r *rateRule) newLimiter() *rate.Limiter { return rate.NewLimiter(r.limit, r.burst) }

type toolRule struct {
	rateRule
	label       string
	globs       []string
	perIdentity bool
	shared      *rate.Limiter // when !perIdentity
}

func (r *toolRule) sameAs(o *toolRule) bool {
	return r.rateRule == o.rateRule && r.perIdentity == o.perIdentity && slices.Equal(r.globs, o.globs)
}

func (r *toolRule) matches(tool string) bool {
	for _, g := range r.globs {
		if ok, _ := path.Match(g, tool); ok {
			return true
		}
	}
	return false
}

// policy is the compiled form of one Limits.
type policy struct {
	limits     Limits
	idRate     *rateRule // nil: unlimited
	concurrent int       // 0: unlimited
	tools      []*toolRule
	failed     *rateRule // nil: not slowed
	match      map[string]*toolRule
}

type idState struct {
	req  *rate.Limiter
	rule *rateRule
}

type keyed struct {
	lim  *rate.Limiter
	rule *rateRule
}

type toolKey struct {
	id   string
	rule *toolRule
}

// New returns a Limiter enforcing l (validated first).
func New(l Limits, o *Options) (*Limiter, error) {
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("new rate limiter: %w", err)
	}
	maxKeys := DefaultMaxKeys
	if o != nil && o.MaxKeys > 0 {
		maxKeys = o.MaxKeys
	}
	lim := &Limiter{
		ids:     newLRU[string, idState](maxKeys),
		toolIDs: newLRU[toolKey, keyed](maxKeys),
		addrs:   newLRU[string, keyed](maxKeys),
	}
	lim.p.Store(compile(l, nil))
	return lim, nil
}

// compile builds l's policy, taking over from old every rule that did
// not change, so that the state kept for it carries on.
func compile(l Limits, old *policy) *policy {
	p := &policy{limits: cloneLimits(l), match: map[string]*toolRule{}}
	if id := l.Identity; id != nil {
		if id.RequestsPerSecond > 0 {
			p.idRate = &rateRule{rate.Limit(id.RequestsPerSecond), burstOf(id.Burst, id.RequestsPerSecond)}
		}
		p.concurrent = id.ConcurrentCalls
	}
	if fa := l.FailedAuth; fa != nil {
		b := fa.Burst
		if b == 0 {
			b = fa.PerAddressPerMinute
		}
		p.failed = &rateRule{rate.Limit(float64(fa.PerAddressPerMinute) / 60), b}
	}
	for i, tr := range l.Tools {
		r := &toolRule{
			rateRule:    rateRule{rate.Limit(tr.RequestsPerSecond), burstOf(tr.Burst, tr.RequestsPerSecond)},
			label:       tr.Name,
			globs:       slices.Clone(tr.Tools),
			perIdentity: tr.PerIdentity,
		}
		if r.label == "" {
			r.label = fmt.Sprintf("tools[%d]", i)
		}
		if !r.perIdentity {
			r.shared = r.newLimiter()
		}
		p.tools = append(p.tools, r)
	}
	if old == nil {
		return p
	}
	if old.idRate != nil && p.idRate != nil && *old.idRate == *p.idRate {
		p.idRate = old.idRate
	}
	if old.failed != nil && p.failed != nil && *old.failed == *p.failed {
		p.failed = old.failed
	}
	taken := make([]bool, len(old.tools))
	for i, r := range p.tools {
		for j, o := range old.tools {
			if !taken[j] && r.sameAs(o) {
				taken[j] = true
				o.label = r.label // the guarded label may move; the state stays
				p.tools[i] = o
				break
			}
		}
	}
	return p
}

func cloneLimits(l Limits) Limits {
	c := Limits{}
	if l.Identity != nil {
		v := *l.Identity
		c.Identity = &v
	}
	if l.FailedAuth != nil {
		v := *l.FailedAuth
		c.FailedAuth = &v
	}
	for _, r := range l.Tools {
		r.Tools = slices.Clone(r.Tools)
		c.Tools = append(c.Tools, r)
	}
	return c
}

// Update enforces l from now on (a new policy generation). What a rule
// that did not change had counted carries on: an identity's, a tool
// rule's (shared or per identity) and a client address's budget. A rule
// that changed, or is new, starts with a full budget. Calls in flight
// keep their slots and count against the new concurrency limit; calls
// started while no concurrency limit was configured are not counted.
func (l *Limiter) Update(lim Limits) error {
	if l == nil {
		return fmt.Errorf("update rate limits: %w: nil limiter", ErrInvalidLimits)
	}
	if err := lim.Validate(); err != nil {
		return fmt.Errorf("update rate limits: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	p := compile(lim, l.p.Load())
	l.p.Store(p)
	// Drop what no rule uses any more; the rest is rebuilt lazily.
	live := map[*toolRule]bool{}
	for _, r := range p.tools {
		live[r] = true
	}
	l.toolIDs.deleteIf(func(k toolKey, _ keyed) bool { return !live[k.rule] })
	if p.idRate == nil && p.concurrent == 0 {
		l.ids.deleteIf(func(string, idState) bool { return true })
	}
	if p.failed == nil {
		l.addrs.deleteIf(func(string, keyed) bool { return true })
	}
	return nil
}

// Limits returns a copy of the limits in force; the zero Limits for a nil
// Limiter.
func (l *Limiter) Limits() Limits {
	if l == nil {
		return Limits{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return cloneLimits(l.p.Load().limits)
}

// Sizes are the entries of a Limiter's keyed maps, each at most
// Options.MaxKeys.
type Sizes struct {
	Identities, IdentityTools, Addresses int
}

// Sizes returns the sizes of l's keyed maps.
func (l *Limiter) Sizes() Sizes {
	if l == nil {
		return Sizes{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return Sizes{l.ids.len(), l.toolIDs.len(), l.addrs.len()}
}

// Request decides one request to /mcp of identity (after
// authentication): identity.requests_per_second.
func (l *Limiter) Request(now time.Time, identity string) Decision {
	if l == nil || l.p.Load().idRate == nil {
		return allow
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.p.Load()
	if p.idRate == nil {
		return allow
	}
	n := l.identity(boundKey(identity))
	if n == nil {
		return allow // every entry holds calls in flight: untracked
	}
	st := &n.val
	if st.rule != p.idRate {
		st.req, st.rule = p.idRate.newLimiter(), p.idRate
	}
	if st.req.AllowN(now, 1) {
		return allow
	}
	return refuse(ReasonIdentityRate, RuleIdentityRate, waitFor(st.req, now))
}

// identity returns k's entry, added if absent; nil when the map is full
// of entries with calls in flight.
func (l *Limiter) identity(k string) *node[string, idState] {
	if n := l.ids.get(k); n != nil {
		return n
	}
	return l.ids.add(k, idState{})
}

// noRelease is the release of a call that holds no slot.
func noRelease() {}

// Call decides one tool call of identity to tool (its exposed name): the
// concurrency slot of identity.concurrent_calls, then the first tool rule
// matching tool. An allowed call holds its slot until release is called,
// which must happen once when the call ends (a second call does nothing).
// A refused call holds nothing; its release does nothing.
func (l *Limiter) Call(now time.Time, identity, tool string) (Decision, func()) {
	if l == nil {
		return allow, noRelease
	}
	if p := l.p.Load(); p.concurrent == 0 && len(p.tools) == 0 {
		return allow, noRelease
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.p.Load()
	var slot *node[string, idState]
	k := boundKey(identity)
	if p.concurrent > 0 {
		slot = l.identity(k)
		if slot != nil && slot.pins >= p.concurrent {
			return refuse(ReasonConcurrency, RuleConcurrency, concurrencyRetry), noRelease
		}
	}
	if r := p.ruleFor(tool); r != nil {
		lim := r.shared
		if r.perIdentity {
			lim = l.identityTool(toolKey{k, r})
		}
		if !lim.AllowN(now, 1) {
			return refuse(ReasonToolRate, r.label, waitFor(lim, now)), noRelease
		}
	}
	if slot == nil {
		return allow, noRelease
	}
	l.ids.pin(slot)
	s := &release{l: l, n: slot}
	return allow, s.release
}

func (l *Limiter) identityTool(k toolKey) *rate.Limiter {
	n := l.toolIDs.get(k)
	if n == nil {
		n = l.toolIDs.add(k, keyed{lim: k.rule.newLimiter()})
	}
	return n.val.lim // toolIDs entries are never pinned: add never fails
}

type release struct {
	l    *Limiter
	n    *node[string, idState]
	done atomic.Bool
}

func (s *release) release() {
	if s.done.Swap(true) {
		return
	}
	s.l.mu.Lock()
	s.l.ids.unpin(s.n)
	s.l.mu.Unlock()
}

// ruleFor is the first rule matching tool, cached; nil when none does.
func (p *policy) ruleFor(tool string) *toolRule {
	if len(p.tools) == 0 {
		return nil
	}
	if r, ok := p.match[tool]; ok {
		return r
	}
	var found *toolRule
	for _, r := range p.tools {
		if r.matches(tool) {
			found = r
			break
		}
	}
	if len(tool) <= MaxGlobBytes {
		if len(p.match) >= maxMatchCache {
			clear(p.match)
		}
		p.match[tool] = found
	}
	return found
}
