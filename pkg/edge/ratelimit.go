package edge

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/edge/fastpath"
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

// refusal is d as the gate's refusal.
func (m *limits) refusal(d ratelimit.Decision) *admission.Refusal {
	m.limited.WithLabelValues(d.Reason).Inc()
	return &admission.Refusal{Status: http.StatusTooManyRequests, Reason: "rate_" + d.Reason, RetryAfter: d.RetryAfter,
		Err: fmt.Errorf("%w: rate limit (%s)", admission.ErrLimited, d.Rule)}
}

// noRelease is the release of a request that holds no call slot.
func noRelease() {}

// limitRequest applies the per-identity request rate, and for a tools/call
// (body: the request's, read whole) the tool's budget and a concurrent
// call slot, to request r. release gives the slot back once the response
// is written; it is to be called exactly once, also on refusal (a no-op).
func (e *Edge) limitRequest(r *http.Request, body []byte) (release func(), f *admission.Refusal) {
	ident, _ := e.identity(r)
	now := time.Now()
	if d := e.limits.l.Request(now, ident); !d.Allowed {
		return noRelease, e.limits.refusal(d)
	}
	name, ok := toolCallName(r, body, e.opts.Mode == ModeOptimizer)
	if !ok {
		return noRelease, nil
	}
	d, release := e.limits.l.Call(now, ident, name)
	if !d.Allowed {
		release()
		return noRelease, e.limits.refusal(d)
	}
	return release, nil
}

// toolCallName is the tool a POST body calls: read by the fast path's
// strict parser, else by encoding/json (whatever form the go-sdk would
// take, a limit applies to it); of an optimizer's call_tool, the tool it
// names. ok is false for any other request.
func toolCallName(r *http.Request, body []byte, optimizer bool) (string, bool) {
	if r.Method != http.MethodPost || len(body) == 0 {
		return "", false
	}
	var name string
	var args json.RawMessage
	if m, ok := fastpath.ParseMessage(body); ok {
		if m.Method != "tools/call" {
			return "", false
		}
		name, args = m.Name, m.Args
	} else {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &m) != nil || m.Method != "tools/call" {
			return "", false
		}
		name, args = m.Params.Name, m.Params.Arguments
	}
	if optimizer && name == CallToolName {
		var in struct {
			ToolName string `json:"tool_name"`
		}
		if json.Unmarshal(args, &in) == nil && in.ToolName != "" {
			name = in.ToolName
		}
	}
	return name, true
}
