package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge"
	"github.com/fleetgate/fleetgate/pkg/edge/admission"
)

// limitConfig holds the flags of the edge's limits: sessions, request and
// backend response sizes, connection count and deadlines.
type limitConfig struct {
	maxSessions, maxPerIdentity, maxConnections int
	maxBody, maxInitialize, maxBackendResponse  int64
	headerTimeout, bodyTimeout, idleTimeout     time.Duration
	writeTimeout                                time.Duration
}

func (c *limitConfig) flags(fs *flag.FlagSet) {
	fs.IntVar(&c.maxSessions, "max-sessions", admission.DefaultMaxSessions,
		"sessions this edge holds at most; a new one beyond gets 503 with Retry-After (negative: no cap)")
	fs.IntVar(&c.maxPerIdentity, "max-sessions-per-identity", admission.DefaultMaxSessionsPerIdentity,
		"sessions one identity holds on this edge at most; a new one beyond gets 429 with Retry-After (negative: no cap; anonymous callers are capped by -max-sessions only)")
	fs.IntVar(&c.maxConnections, "max-connections", 16384, "open MCP connections at most; one more is answered 503 and closed (extension)")
	fs.Int64Var(&c.maxBody, "max-request-bytes", admission.DefaultMaxBodyBytes, "largest request body; larger gets 413 (extension)")
	fs.Int64Var(&c.maxInitialize, "max-initialize-bytes", admission.DefaultMaxInitializeBytes,
		"largest body of a request that creates a session (initialize, subscriptions/listen), at most 64 KiB; larger gets 413 (extension)")
	fs.Int64Var(&c.maxBackendResponse, "max-backend-response-bytes", edge.DefaultMaxBackendResponse,
		"largest backend response body (or event of an event stream); larger fails the call with an error naming the backend (extension)")
	fs.DurationVar(&c.headerTimeout, "header-timeout", 10*time.Second, "deadline for reading a request's head (extension)")
	fs.DurationVar(&c.bodyTimeout, "body-timeout", 30*time.Second, "deadline for reading a request's body (extension)")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", 2*time.Minute, "keep-alive connections waiting longer for a request are closed (extension)")
	fs.DurationVar(&c.writeTimeout, "write-timeout", edge.DefaultWriteTimeout,
		"a client that takes no part (64 KiB) of a response or stream write for this long is dropped and counted in fleetgate_edge_slow_clients_dropped_total (extension)")
}

func (c *limitConfig) check() error {
	switch {
	case c.maxInitialize <= 0 || c.maxInitialize > 64<<10:
		return fmt.Errorf("invalid value %d for flag -max-initialize-bytes: want 1 to 65536", c.maxInitialize)
	case c.maxBody <= 0:
		return fmt.Errorf("invalid value %d for flag -max-request-bytes: want a positive size", c.maxBody)
	case c.maxBackendResponse <= 0:
		return fmt.Errorf("invalid value %d for flag -max-backend-response-bytes: want a positive size", c.maxBackendResponse)
	case c.maxSessions == 0 || c.maxPerIdentity == 0:
		return fmt.Errorf("invalid value 0 for flag -max-sessions or -max-sessions-per-identity: want a positive cap or a negative value for none")
	case c.maxConnections <= 0:
		return fmt.Errorf("invalid value %d for flag -max-connections: want a positive count", c.maxConnections)
	case c.headerTimeout <= 0 || c.bodyTimeout <= 0 || c.idleTimeout <= 0 || c.writeTimeout <= 0:
		return fmt.Errorf("invalid duration: -header-timeout, -body-timeout, -idle-timeout and -write-timeout must be positive")
	}
	return nil
}

// apply sets the limits in o.
func (c *limitConfig) apply(o *edge.Options) {
	o.Limits = admission.Options{MaxBodyBytes: c.maxBody, MaxInitializeBytes: c.maxInitialize,
		MaxSessions: c.maxSessions, MaxSessionsPerIdentity: c.maxPerIdentity}
	o.MaxConnections, o.MaxBackendResponse = c.maxConnections, c.maxBackendResponse
	o.HeaderTimeout, o.BodyTimeout, o.IdleTimeout, o.WriteTimeout = c.headerTimeout, c.bodyTimeout, c.idleTimeout, c.writeTimeout
}
