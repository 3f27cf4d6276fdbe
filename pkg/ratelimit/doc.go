// Package ratelimit is the edge's rate-limit core: per identity (requests
// per second, concurrent tool calls), per tool (a budget shared by every
// caller, or one per identity) and for failed authentications of one
// client address. It is pure: it holds no clock and does no I/O. Every
// method takes the request's time; the caller answers a refusal with 429
// Too Many Requests and a Retry-After header.
//
// The config is Limits, the rate_limits section of the fleet config:
//
//	rate_limits:
//	  identity:                    # absent: no per-identity limit
//	    requests_per_second: 20    # 0 or absent: unlimited
//	    burst: 40                  # 0 or absent: ceil(requests_per_second)
//	    concurrent_calls: 8        # 0 or absent: unlimited
//	  tools:                       # first matching rule applies; none: unlimited
//	    - name: search             # optional, [a-z0-9-]{1,63}; default "tools[i]"
//	      tools: ["search_*"]      # exposed tool names, Go path.Match globs
//	      requests_per_second: 5   # required
//	      burst: 10                # 0 or absent: ceil(requests_per_second)
//	      per_identity: true       # false or absent: one budget for all callers
//	  failed_auth:                 # absent: failures are not slowed
//	    per_address_per_minute: 10 # required in the section
//	    burst: 10                  # 0 or absent: per_address_per_minute
//
// The driving loop of an edge, for each request to /mcp:
//
//	now := time.Now()
//	addr := ratelimit.ClientAddr(r.RemoteAddr)
//	if d := lim.AuthBlocked(now, addr); !d.Allowed {
//		return tooMany(w, d) // before the token is verified
//	}
//	id, err := verify(r)
//	if err != nil {
//		if tokenWasSent {
//			lim.FailedAuth(now, addr)
//		}
//		return unauthorized(w, err) // as the auth contract says
//	}
//	if d := lim.Request(now, id); !d.Allowed {
//		return tooMany(w, d) // 429, Retry-After: d.RetryAfterHeader()
//	}
//	// ... admission, policy; for a tools/call of an existing, visible tool:
//	d, release := lim.Call(now, id, exposedName)
//	if !d.Allowed {
//		return tooMany(w, d)
//	}
//	defer release()
//	forward(...)
//
// Keyed state (identities, per-identity tool budgets, client addresses)
// lives in maps of at most Options.MaxKeys entries each, evicting the
// least recently used. An evicted key starts afresh with a full budget:
// this is fail-open, chosen for memory safety, so hostile churn of
// identities or addresses cannot grow memory beyond the bound. Evicting
// a key whose budget had refilled loses nothing; only churn beyond
// MaxKeys distinct keys in one refill period weakens a limit. An identity
// with calls in flight is never evicted, so its concurrency limit holds;
// when every entry has calls in flight a new identity is served
// untracked (allowed). Keys longer than MaxKeyBytes are kept as their
// digest. The identity "" (an anonymous caller) is one key like any
// other.
//
// Update swaps the limits at a new policy generation: a rule that did not
// change keeps its state, a changed or new rule starts with full budgets.
// A nil *Limiter allows everything.
package ratelimit
