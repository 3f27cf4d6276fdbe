package edge

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/policy"
	"github.com/fleetgate/fleetgate/pkg/ratelimit"
)

// The rate limits of the policy in force (authorization.rate_limits),
// applied in the admission gate: failed authentications per client
// address before a token is verified, then per identity the requests to
// /mcp, and for a tools/call the tool's budget and the identity's
// concurrent calls, held until the call's response is written. A refusal
// is 429 with Retry-After.

// limits is the edge's limiter and its metric.
type limits struct {
	l       *ratelimit.Limiter
	limited *prometheus.CounterVec
}

func newLimits(reg prometheus.Registerer) *limits {
	l, _ := ratelimit.New(ratelimit.Limits{}, nil) // no limits: cannot fail
	m := &limits{l: l, limited: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_edge_rate_limited_total",
		Help: "Requests refused by a rate limit, by reason (identity_rate, tool_rate, concurrency, failed_auth)."}, []string{"reason"})}
	reg.MustRegister(m.limited)
	return m
}

// update makes the rate limits of p those in force.
func (m *limits) update(p *policy.Policy) error {
	var lim ratelimit.Limits
	if s := p.Section(); s != nil && s.RateLimits != nil {
		lim = *s.RateLimits
	}
	return m.l.Update(lim)
}

// refusal is d as the gate's refusal, naming the limit that refused.
func (m *limits) refusal(d ratelimit.Decision) *admission.Refusal {
	m.limited.WithLabelValues(d.Reason).Inc()
	return &admission.Refusal{Status: http.StatusTooManyRequests, Reason: "rate_" + d.Reason, RetryAfter: d.RetryAfter,
		Err: fmt.Errorf("%w: %s (%s)", admission.ErrRateLimited, limitName(d.Reason), d.Rule)}
}

// Blocked is the refusal of a request from addr, which failed
// authentication too often (bearer.Throttle); nil when it may be
// verified.
func (m *limits) Blocked(now time.Time, addr string) *admission.Refusal {
	if d := m.l.AuthBlocked(now, addr); !d.Allowed {
		return m.refusal(d)
	}
	return nil
}

// Failed charges addr with a failed authentication (bearer.Throttle).
func (m *limits) Failed(now time.Time, addr string) { m.l.FailedAuth(now, addr) }

// limitName says which limit a refusal's reason is.
func limitName(reason string) string {
	switch reason {
	case ratelimit.ReasonIdentityRate:
		return "request rate limit of this identity"
	case ratelimit.ReasonToolRate:
		return "call rate limit of this tool"
	case ratelimit.ReasonConcurrency:
		return "concurrent call limit of this identity"
	case ratelimit.ReasonFailedAuth:
		return "failed authentication limit of this address"
	}
	return "rate limit " + reason
}

// noRelease is the release of a request that holds no call slot.
func noRelease() {}

// limitRequest applies, to each message of body (the gate's parse of a
// POST's body; nil for other requests) of identity ident, the identity's
// request rate, and to each tools/call the tool's budget and a concurrent
// call slot. A batch is decided message by message and refused whole when
// one of its messages is. release gives the slots back once the response
// is written; it is to be called exactly once.
func (e *Edge) limitRequest(r *http.Request, ident string, body *admission.Body) (release func(), f *admission.Refusal) {
	now := time.Now()
	n := 1
	if body != nil && len(body.Messages) > 1 {
		n = len(body.Messages)
	}
	for range n {
		if d := e.limits.l.Request(now, ident); !d.Allowed {
			return noRelease, e.limits.refusal(d)
		}
	}
	if body == nil || r.Method != http.MethodPost {
		return noRelease, nil
	}
	// The slots held: the first (a request's usual one) kept apart, so
	// that a single call allocates nothing for them.
	var first func()
	var more []func()
	for i := range body.Messages {
		m := &body.Messages[i]
		if m.Method != "tools/call" || m.ID == nil {
			continue
		}
		name := m.Tool
		if m.MetaTool != "" {
			name = m.MetaTool
		}
		d, rel := e.limits.l.Call(now, ident, name)
		if !d.Allowed {
			rel()
			if first != nil {
				first()
			}
			for _, held := range more {
				held()
			}
			return noRelease, e.limits.refusal(d)
		}
		if first == nil {
			first = rel
		} else {
			more = append(more, rel)
		}
	}
	switch {
	case first == nil:
		return noRelease, nil
	case len(more) == 0:
		return first, nil
	}
	all := append([]func(){first}, more...)
	return func() {
		for _, rel := range all {
			rel()
		}
	}, nil
}
