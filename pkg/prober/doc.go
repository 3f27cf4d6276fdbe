// Package prober is the controller's per-backend MCP probe loop. It does
// the I/O and no health decisions: it reports raw health.Observations and
// backend Catalogs to a Sink, and the controller steps its health.Tracker
// and coalesces.
//
// A Prober holds one persistent go-sdk client session with its backend
// (streamable HTTP or SSE, protocol version 2025-11-25) and:
//
//   - pings every Policy.Interval with a Policy.Timeout deadline, reporting
//     OK with the latency, Failure with a reason ("ping: context deadline
//     exceeded"), or AuthFailure when the backend answered HTTP 401/403;
//   - reports a Failure at once when the session dies (its event stream
//     breaks, or the SDK closes it, e.g. on mcp.ErrSessionMissing), then
//     reconnects at once, then once more after MinBackoff, then on the
//     outage's probe schedule (every interval from its first failure, so a
//     restarted backend is back within one interval), reporting each
//     failed connect;
//     a stream that the backend ends normally is not a failure by itself,
//     the reconnect decides;
//   - keeps a session whose pings time out (a hung backend), so a hung
//     backend yields one Failure per interval;
//   - refuses, before the SDK decodes it, a backend message nested deeper
//     than mcpwire.MaxDepth or over Options.MaxMessage (16 MiB by default):
//     the session is dropped with a Failure naming the bound, and replaced
//     after a retry delay;
//   - lists all tools, resources and prompts, following nextCursor, on
//     every (re)connect and on every list_changed notification, and
//     delivers a Catalog when the tools digest or the resources/prompts
//     changed.
//
// A streamable HTTP backend that answers initialize with a JSON-RPC error
// but server/discover with the stateless generation (2026-07-28) is
// watched in that generation instead (stateless.go): a probe is a
// server/discover, every listing takes a session of its own, and its
// Catalog says StatelessOnly.
//
// Definitions are captured byte for byte from the wire (the SDK's structs
// drop unknown members such as "execution"), validated with the catalog
// filters and canonicalized (RFC 8785).
//
// # Credentials and destinations
//
// A Target's Headers are resolved from their references at every connect
// (package credential) and set on every request of the session; a
// reference that does not resolve is a Failure naming it, and nothing is
// sent. Redirects are never followed. The default transport dials through
// backendnet's guard: a link-local or cloud metadata address (also one a
// name resolves to) is refused unless the Target's AllowLinkLocal.
//
// # Driving
//
//	m := prober.NewMetrics(prometheus.DefaultRegisterer)
//	p := prober.New(prober.Target{Group: "default", Name: "alpha", URL: url}, prober.Sink{
//		Observe: func(t prober.Target, o health.Observation) { inbox <- obsMsg{t, o} },
//		Catalog: func(t prober.Target, c prober.Catalog) { inbox <- catMsg{t, c} },
//	}, &prober.Options{Policy: policy, Metrics: m, Logger: &log})
//	go func() { done <- p.Run(ctx) }() // cancel ctx to stop; Run waits for its goroutines
//
// The Sink's functions run on the Prober's goroutine and must only hand
// the value over.
package prober
