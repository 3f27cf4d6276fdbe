package backend

import "github.com/prometheus/client_golang/prometheus"

// TokenCollectors are the pool's per-caller credential figures
// (TokenStats) as collectors for an edge's /metrics: token exchanges made,
// calls answered from the token cache, tokens cached, per-caller sessions
// open.
func (p *Pool) TokenCollectors() []prometheus.Collector {
	pick := func(i int) func() float64 {
		return func() float64 {
			a, b, c, d := p.TokenStats()
			return float64([4]int{a, b, c, d}[i])
		}
	}
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "fleetgate_edge_token_exchanges_total",
			Help: "Token exchanges (RFC 8693) asked of token endpoints for callers of token_exchange backends, refused ones included."}, pick(0)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "fleetgate_edge_token_cache_hits_total",
			Help: "Calls of token_exchange backends answered with a cached exchanged token."}, pick(1)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "fleetgate_edge_tokens_cached",
			Help: "Exchanged tokens cached (in memory only), by caller and backend."}, pick(2)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "fleetgate_edge_caller_sessions",
			Help: "Backend sessions open per caller (token_exchange and user_oauth backends), all backends together."}, pick(3)),
	}
}
