package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/fleetgate/fleetgate/pkg/cmdline"
	"github.com/fleetgate/fleetgate/pkg/edge"
	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/edge/backend"
)

// limitConfig holds the flags of the edge's limits: sessions, request and
// backend response sizes, connection count and deadlines.
type limitConfig struct {
	maxSessions, maxPerIdentity, maxConnections int
	maxBody, maxInitialize, maxBackendResponse  int64
	headerTimeout, bodyTimeout, idleTimeout     time.Duration
	writeTimeout                                time.Duration
	callerSessions                              int
	callerIdle                                  time.Duration
	// memoryBudget is -memory-budget (0: found, see budget.go); budget is
	// the budget in force and notes what the log says of the caps.
	memoryBudget cmdline.ByteSize
	budget       budgetSource
	notes        []string
}

func (c *limitConfig) flags(fs *flag.FlagSet) {
	fs.IntVar(&c.maxSessions, "max-sessions", 0,
		"sessions this edge holds at most; a new one beyond gets 503 with Retry-After (0: as many worst-case sessions as fit in half of -memory-budget, at most 10000; negative: no cap)")
	fs.Var(&c.memoryBudget, "memory-budget",
		"memory this edge may use, e.g. 1GiB (the container's limit); the default session cap is derived from it and an explicit -max-sessions must fit in it (default: GOMEMLIMIT, else the cgroup's memory limit, else none) (extension)")
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
	fs.IntVar(&c.callerSessions, "caller-sessions-max", backend.DefaultMaxCallerSessions,
		"per-caller backend sessions (of token_exchange and user_oauth backends) this edge keeps, all callers and backends together; beyond, the least recently used is closed (extension)")
	fs.DurationVar(&c.callerIdle, "caller-session-idle", backend.DefaultCallerIdle,
		"a per-caller backend session unused this long is closed (extension)")
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
	case c.maxPerIdentity == 0:
		return fmt.Errorf("invalid value 0 for flag -max-sessions-per-identity: want a positive cap or a negative value for none")
	case c.maxConnections <= 0:
		return fmt.Errorf("invalid value %d for flag -max-connections: want a positive count", c.maxConnections)
	case c.callerSessions <= 0 || c.callerIdle <= 0:
		return fmt.Errorf("invalid value for flag -caller-sessions-max (%d) or -caller-session-idle (%v): want positive values", c.callerSessions, c.callerIdle)
	case c.headerTimeout <= 0 || c.bodyTimeout <= 0 || c.idleTimeout <= 0 || c.writeTimeout <= 0:
		return fmt.Errorf("invalid duration: -header-timeout, -body-timeout, -idle-timeout and -write-timeout must be positive")
	}
	return c.checkBudget(detectBudget)
}

// checkBudget finds the memory budget with detect and derives the session
// cap from it, or checks the cap given against it: over a budget given by
// -memory-budget it is an error, over one found a warning (notes).
func (c *limitConfig) checkBudget(detect func(flagged int64) (budgetSource, error)) error {
	var err error
	if c.budget, err = detect(int64(c.memoryBudget)); err != nil {
		return fmt.Errorf("flag -memory-budget: %w", err)
	}
	if c.maxSessions == 0 {
		c.maxSessions = admission.SessionsFor(c.budget.bytes, c.maxInitialize)
		if c.budget.from != "" {
			c.notes = append(c.notes, fmt.Sprintf("session cap %d derived from the memory budget of %d MiB (%s) at up to %d KiB a session",
				c.maxSessions, c.budget.bytes>>20, c.budget.from, admission.SessionCost(c.maxInitialize)>>10))
		}
		return nil
	}
	if err := admission.CheckSessionBudget(c.maxSessions, c.budget.bytes, c.maxInitialize); err != nil {
		if c.budget.from == "flag" {
			return fmt.Errorf("invalid value %d for flag -max-sessions: %w", c.maxSessions, err)
		}
		c.notes = append(c.notes, fmt.Sprintf("-max-sessions %d over the memory budget found in %s: %v", c.maxSessions, c.budget.from, err))
	}
	return nil
}

// apply sets the limits in o.
func (c *limitConfig) apply(o *edge.Options) {
	o.Limits = admission.Options{MaxBodyBytes: c.maxBody, MaxInitializeBytes: c.maxInitialize,
		MaxSessions: c.maxSessions, MaxSessionsPerIdentity: c.maxPerIdentity}
	o.MaxConnections, o.MaxBackendResponse = c.maxConnections, c.maxBackendResponse
	o.HeaderTimeout, o.BodyTimeout, o.IdleTimeout, o.WriteTimeout = c.headerTimeout, c.bodyTimeout, c.idleTimeout, c.writeTimeout
	o.CallerSessions, o.CallerIdle = c.callerSessions, c.callerIdle
}
