package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/fleetgate/fleetgate/pkg/config"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/health"
	"github.com/fleetgate/fleetgate/pkg/leader"
	"github.com/fleetgate/fleetgate/pkg/prober"
	"github.com/fleetgate/fleetgate/pkg/region"
	"github.com/fleetgate/fleetgate/pkg/stdio"
	"github.com/fleetgate/fleetgate/pkg/timeline"
)

// Options configure a Controller. Fields marked required must be set.
type Options struct {
	// ID names this controller instance (leader election, event stamps).
	ID string
	// Fleet is the initial config (required).
	Fleet *config.Fleet
	// ConfigPath is re-read by Reload; empty disables reload.
	ConfigPath string
	// RefLimits, when set, bound the files and variables the header
	// references of a config Reload loads may name (the caller checks
	// Fleet itself, config.CheckRefs).
	RefLimits *credential.Limits
	// JetStream connection (required).
	JetStream jetstream.JetStream
	// Log is the event log (required).
	Log *events.Log
	// OutboxDir holds the Pebble outbox (required).
	OutboxDir string
	// Replicas of the leader bucket; default 1.
	Replicas int
	// LeaseTTL of the leader lease; default leader.DefaultTTL.
	LeaseTTL time.Duration
	// Registerer for metrics; nil registers nothing.
	Registerer prometheus.Registerer
	Logger     *zerolog.Logger
	// HTTPClient for probes; nil uses the default transport.
	HTTPClient *http.Client
	// TracerProvider receives the probe and publication spans (package
	// tracing); nil: the global one, a no-op unless tracing is on.
	TracerProvider trace.TracerProvider
	// Regions, in a multi-region fleet, lists every region (this one
	// included): GET /v1/groups/{group}/view then serves the view merged
	// from every region's log in JetStream (this region's own and the
	// local mirrors, docs/regions.md) and names the generation vector it
	// reflects. Fewer than two: the view of Log alone.
	Regions []string
	// Stdio is this host's allow-list of stdio commands and the runner of
	// the probers' instances; nil: a stdio backend is refused (config,
	// reload and admin PUT).
	Stdio *stdio.Host
}

// Controller probes the fleet's backends and publishes every change to the
// event log while it holds the leader lease. Every instance serves the
// admin API; only the leader accepts changes.
type Controller struct {
	opts    Options
	zl      zerolog.Logger
	outbox  *events.Outbox
	reader  *events.Reader
	merged  *region.Follower // nil: one region (Options.Regions)
	elector *leader.Elector
	metrics *Metrics
	evm     *events.Metrics
	pm      *prober.Metrics

	cmds chan command

	mu    sync.Mutex
	fleet *config.Fleet
	// file is the config file as last loaded (Options.Fleet, then each
	// reload's): a reload is rebased on it, and the admin API may pair a
	// credential reference only with the backend and origin it has there;
	// admin the changes the admin API made since, kept across reloads
	// (reload.go).
	file     *config.Fleet
	admin    []adminChange
	leading  bool
	statuses map[BackendKey]liveStatus
	views    map[string]viewCache // by group, see groupView
	// history records every change of statuses (the dashboard's timeline).
	history *timeline.Recorder
}

type liveStatus struct {
	status health.Status
	reason string
}

// New prepares a controller; Run starts it.
func New(o Options) (*Controller, error) {
	if o.Fleet == nil || o.JetStream == nil || o.Log == nil || o.OutboxDir == "" || o.ID == "" {
		return nil, errors.New("controller: ID, Fleet, JetStream, Log and OutboxDir are required")
	}
	if err := checkStdio(o.Stdio, o.Fleet); err != nil {
		return nil, fmt.Errorf("controller %s: %w", o.ID, err)
	}
	c := &Controller{opts: o, zl: zerolog.Nop(), cmds: make(chan command), fleet: o.Fleet.Clone(), file: o.Fleet.Clone(),
		statuses: map[BackendKey]liveStatus{}, history: timeline.NewRecorder(0)}
	if o.Logger != nil {
		c.zl = *o.Logger
	}
	c.metrics = newMetrics(o.Registerer)
	c.evm = events.NewMetrics(o.Registerer)
	c.pm = prober.NewMetrics(o.Registerer)
	ob, err := events.OpenOutbox(o.OutboxDir, nil)
	if err != nil {
		return nil, fmt.Errorf("controller %s: %w", o.ID, err)
	}
	c.outbox = ob
	c.reader = events.NewReader(o.Log, &events.ReaderOptions{Metrics: c.evm, OnError: func(err error) {
		c.zl.Warn().Err(err).Msg("event log reader")
	}})
	if len(o.Regions) > 1 {
		if c.merged, err = region.NewFollower(o.JetStream, o.Regions, &region.FollowerOptions{Reader: &events.ReaderOptions{
			OnError: func(err error) { c.zl.Warn().Err(err).Msg("regional event log reader") }}}); err != nil {
			ob.Close()
			return nil, fmt.Errorf("controller %s: %w", o.ID, err)
		}
	}
	el, err := leader.New(o.JetStream, o.ID, &leader.Options{TTL: o.LeaseTTL, Replicas: o.Replicas})
	if err != nil {
		ob.Close()
		return nil, fmt.Errorf("controller %s: %w", o.ID, err)
	}
	c.elector = el
	return c, nil
}

// Run campaigns for leadership and, while leading, probes and publishes.
// It returns when ctx ends, after every goroutine it started has ended.
func (c *Controller) Run(ctx context.Context) error {
	defer c.outbox.Close()
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return c.reader.Run(ctx) })
	if c.merged != nil {
		g.Go(func() error { return c.merged.Run(ctx) })
	}
	g.Go(func() error { return c.elector.Run(ctx) })
	g.Go(func() error { return c.logCollisions(ctx) })
	g.Go(func() error {
		for {
			lead, term, err := c.elector.Await(ctx)
			if err != nil {
				return nil // ctx ended
			}
			c.zl.Info().Uint64("term", term).Msg("leading")
			c.setLeading(true)
			err = c.lead(lead)
			c.setLeading(false)
			if err != nil && ctx.Err() == nil {
				c.zl.Error().Err(err).Uint64("term", term).Msg("term ended with an error")
			} else {
				c.zl.Info().Uint64("term", term).Msg("no longer leading")
			}
			if errors.Is(err, events.ErrFenced) {
				// Another writer moved the log: give the lease up and
				// campaign again after a pause.
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(c.leaseTTL()):
				}
			}
		}
	})
	return g.Wait()
}

func (c *Controller) leaseTTL() time.Duration {
	if c.opts.LeaseTTL > 0 {
		return c.opts.LeaseTTL
	}
	return leader.DefaultTTL
}

func (c *Controller) setLeading(on bool) {
	c.mu.Lock()
	c.leading = on
	if !on {
		c.statuses = map[BackendKey]liveStatus{}
	}
	c.mu.Unlock()
	c.metrics.leader(on)
}

// Leading reports whether this instance currently leads.
func (c *Controller) Leading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leading
}

// StatusHistory is the record of every change of a backend's status this
// controller reported while leading (GET /v1/state's live status): the
// changes the event log does not carry (package timeline).
func (c *Controller) StatusHistory() *timeline.Recorder { return c.history }

// Reader exposes the controller's follower of the event log.
func (c *Controller) Reader() *events.Reader { return c.reader }

// Fleet returns a copy of the current config.
func (c *Controller) Fleet() *config.Fleet {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fleet.Clone()
}

func desiredOf(f *config.Fleet) map[BackendKey]events.BackendConfig {
	out := map[BackendKey]events.BackendConfig{}
	for _, g := range f.Groups {
		for _, b := range g.Backends {
			out[BackendKey{g.Name, b.Name}] = backendConfig(b)
		}
	}
	return out
}

// backendConfig is the event log's config of b.
func backendConfig(b config.Backend) events.BackendConfig {
	return events.BackendConfig{URL: b.URL, Transport: b.Transport,
		Headers: b.Headers.Clone(), AllowLinkLocal: b.AllowLinkLocal,
		Command: b.Command, Args: slices.Clone(b.Args), Env: maps.Clone(b.Env), Auth: b.Auth.Clone()}
}

// checkStdio refuses a stdio backend of f whose command is not in this
// host's allow-list (h nil: none is), naming it.
func checkStdio(h *stdio.Host, f *config.Fleet) error {
	for _, g := range f.Groups {
		for _, b := range g.Backends {
			if err := checkStdioBackend(h, g.Name, b); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkStdioBackend(h *stdio.Host, group string, b config.Backend) error {
	if b.Transport != config.TransportStdio {
		return nil
	}
	if h == nil {
		return &config.FieldError{Field: "command", Msg: fmt.Sprintf("backend %s/%s: command %q: %v (this controller has no --stdio-commands)",
			group, b.Name, b.Command, stdio.ErrNotAllowed)}
	}
	if err := h.Check(stdio.Spec{Backend: b.Name, Command: b.Command, Args: b.Args, Env: b.Env}); err != nil {
		return &config.FieldError{Field: "command", Msg: fmt.Sprintf("backend %s/%s: %v", group, b.Name, err), Err: err}
	}
	return nil
}
