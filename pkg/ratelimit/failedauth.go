package ratelimit

import "time"

// AuthBlocked decides, before a token is verified, whether the client
// address addr (see ClientAddr) may try: refused while its failed
// authentications have spent the failed_auth budget. It records nothing.
func (l *Limiter) AuthBlocked(now time.Time, addr string) Decision {
	if l == nil || l.p.Load().failed == nil {
		return allow
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.p.Load()
	if p.failed == nil {
		return allow
	}
	n := l.addrs.get(boundKey(addr))
	if n == nil || n.val.rule != p.failed {
		return allow
	}
	if wait := waitFor(n.val.lim, now); wait > 0 {
		return refuse(ReasonFailedAuth, RuleFailedAuth, wait)
	}
	return allow
}

// FailedAuth records a failed authentication from addr. Allowed false
// means this failure spent the budget: AuthBlocked refuses addr until
// RetryAfter (the failed request itself is answered as its failure says).
func (l *Limiter) FailedAuth(now time.Time, addr string) Decision {
	if l == nil || l.p.Load().failed == nil {
		return allow
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.p.Load()
	if p.failed == nil {
		return allow
	}
	k := boundKey(addr)
	n := l.addrs.get(k)
	if n == nil {
		n = l.addrs.add(k, keyed{}) // never pinned: add never fails
	}
	st := &n.val
	if st.rule != p.failed {
		st.lim, st.rule = p.failed.newLimiter(), p.failed
	}
	st.lim.AllowN(now, 1)
	if wait := waitFor(st.lim, now); wait > 0 {
		return refuse(ReasonFailedAuth, RuleFailedAuth, wait)
	}
	return allow
}
