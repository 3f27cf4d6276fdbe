package ratelimit

import (
	"math"
	"net/netip"
	"strconv"
	"time"

	"golang.org/x/time/rate"
)

// Reasons of refusals, the label of the edge's rate-limited metric.
const (
	ReasonIdentityRate = "identity_rate" // identity.requests_per_second
	ReasonToolRate     = "tool_rate"     // a tools rule
	ReasonConcurrency  = "concurrency"   // identity.concurrent_calls
	ReasonFailedAuth   = "failed_auth"   // failed_auth
)

// Rule values of refusals other than a tool rule's (whose Rule is its
// name, or "tools[i]" when it has none).
const (
	RuleIdentityRate = "identity.requests_per_second"
	RuleConcurrency  = "identity.concurrent_calls"
	RuleFailedAuth   = "failed_auth.per_address_per_minute"
)

// MaxRetryAfter caps Decision.RetryAfter.
const MaxRetryAfter = time.Hour

// concurrencyRetry is the Retry-After of a concurrency refusal: a slot
// frees when a call ends, which no rate predicts.
const concurrencyRetry = time.Second

// Decision is a Limiter's answer. A refusal (Allowed false) is answered
// with 429 Too Many Requests and a Retry-After header of
// RetryAfterSeconds.
type Decision struct {
	Allowed bool
	// RetryAfter is when the refused request may succeed: whole seconds,
	// at least 1s, at most MaxRetryAfter; 0 when allowed.
	RetryAfter time.Duration
	// Reason is one of the Reason* constants; "" when allowed.
	Reason string
	// Rule names the config entry that refused, for the call trail: a tool
	// rule's name or "tools[i]", or one of the Rule* constants.
	Rule string
}

// RetryAfterSeconds is the value of the Retry-After header.
func (d Decision) RetryAfterSeconds() int { return int(d.RetryAfter / time.Second) }

// RetryAfterHeader is RetryAfterSeconds as the header's text; "" when
// allowed.
func (d Decision) RetryAfterHeader() string {
	if d.Allowed {
		return ""
	}
	return strconv.Itoa(d.RetryAfterSeconds())
}

var allow = Decision{Allowed: true}

func refuse(reason, rule string, wait time.Duration) Decision {
	return Decision{Reason: reason, Rule: rule, RetryAfter: roundRetry(wait)}
}

// roundRetry rounds d up to whole seconds, within [1s, MaxRetryAfter].
func roundRetry(d time.Duration) time.Duration {
	if d <= time.Second {
		return time.Second
	}
	if d >= MaxRetryAfter {
		return MaxRetryAfter
	}
	if r := d % time.Second; r != 0 {
		d += time.Second - r
	}
	return d
}

// waitFor is how long from now until lim holds one token.
func waitFor(lim *rate.Limiter, now time.Time) time.Duration {
	missing := 1 - lim.TokensAt(now)
	if missing <= 0 {
		return 0
	}
	secs := missing / float64(lim.Limit())
	if math.IsNaN(secs) || secs > MaxRetryAfter.Seconds() {
		return MaxRetryAfter
	}
	return time.Duration(secs * float64(time.Second))
}

// ClientAddr is the key of a client address for FailedAuth and
// AuthBlocked, from an http.Request's RemoteAddr ("host:port") or a bare
// IP: an IPv4 address as it is (IPv4-mapped IPv6 unmapped), an IPv6
// address as its /64 prefix (one client usually holds a whole /64), and
// anything that does not parse as it is (keys are bounded in length).
func ClientAddr(remoteAddr string) string {
	var a netip.Addr
	if ap, err := netip.ParseAddrPort(remoteAddr); err == nil {
		a = ap.Addr()
	} else if ip, err := netip.ParseAddr(remoteAddr); err == nil {
		a = ip
	} else {
		return remoteAddr
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	p, err := a.Prefix(64)
	if err != nil {
		return a.String()
	}
	return p.String()
}
