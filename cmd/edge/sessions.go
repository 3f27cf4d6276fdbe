package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/edge"
	"github.com/fleetgate/fleetgate/pkg/edge/inputstate"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// sessionConfig holds the flags of shared session records, identity
// binding and the call trail.
type sessionConfig struct {
	idleTimeout    time.Duration
	identityHeader string
	local          bool
	auditArguments bool
	noAudit        bool
	inputStateKey  string // a file
}

func (c *sessionConfig) flags(fs *flag.FlagSet) {
	fs.DurationVar(&c.idleTimeout, "session-idle-timeout", sessionstore.DefaultIdleTimeout,
		"a session without a request (and no open stream) for this long ends on every edge, and its shared record expires (at least 1s)")
	fs.StringVar(&c.identityHeader, "identity-header", "",
		"request header carrying the caller's identity, set by a trusted proxy (e.g. X-Fleetgate-User); sessions are bound to it and requests without it refused; empty: no identity (extension)")
	fs.BoolVar(&c.local, "local-sessions", false, "keep sessions on this edge only: no shared session records (extension)")
	fs.BoolVar(&c.auditArguments, "audit-arguments", false, "keep tool-call arguments in the call trail")
	fs.BoolVar(&c.noAudit, "no-call-trail", false, "do not record tool calls in the call trail (extension)")
	fs.StringVar(&c.inputStateKey, "input-state-key-file", "",
		"file holding the key (at least 32 bytes) that seals the requestState of input-required results; every edge of a group must be given the same one, so that a client's retry completes on any of them; empty: a key of this process alone (extension)")
}

// maxInputStateKey bounds the key file read.
const maxInputStateKey = 4096

// sealer is the edge's requestState sealer: from -input-state-key-file,
// or nil (a key of the process alone).
func (c *sessionConfig) sealer() (*inputstate.Sealer, error) {
	if c.inputStateKey == "" {
		return nil, nil
	}
	f, err := os.Open(c.inputStateKey)
	if err != nil {
		return nil, fmt.Errorf("flag -input-state-key-file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxInputStateKey+1))
	if err != nil {
		return nil, fmt.Errorf("flag -input-state-key-file: read %s: %w", c.inputStateKey, err)
	}
	if len(data) > maxInputStateKey {
		return nil, fmt.Errorf("flag -input-state-key-file: %s is over %d bytes", c.inputStateKey, maxInputStateKey)
	}
	s, err := inputstate.New(bytes.TrimSpace(data))
	if err != nil {
		return nil, fmt.Errorf("flag -input-state-key-file: %s: %w", c.inputStateKey, err)
	}
	return s, nil
}

func (c *sessionConfig) check() error {
	switch {
	case c.idleTimeout < time.Second:
		return fmt.Errorf("invalid value %s for flag -session-idle-timeout: want at least 1s", c.idleTimeout)
	case strings.ContainsAny(c.identityHeader, " :\t\r\n"):
		return fmt.Errorf("invalid value %q for flag -identity-header: want a header name", c.identityHeader)
	case c.auditArguments && c.noAudit:
		return errors.New("invalid flags: -audit-arguments with -no-call-trail")
	}
	return nil
}

// records are the edge's RecordOptions; nil with -local-sessions.
func (c *sessionConfig) records(js jetstream.JetStream) *edge.RecordOptions {
	if c.local {
		return nil
	}
	return &edge.RecordOptions{JetStream: js, Store: &sessionstore.Options{IdleTimeout: c.idleTimeout}}
}

// openTrail opens the call trail; nil with -no-call-trail.
func (c *sessionConfig) openTrail(ctx context.Context, js jetstream.JetStream, reg *prometheus.Registry, log *zerolog.Logger) (*calltrail.Trail, error) {
	if c.noAudit {
		return nil, nil
	}
	t, err := calltrail.Open(ctx, js, &calltrail.Options{IncludeArguments: c.auditArguments, Registerer: reg, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("open call trail: %w", err)
	}
	return t, nil
}
