package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/fleetgate/fleetgate/pkg/edge/calls"
	"github.com/fleetgate/fleetgate/pkg/edge/lane"
	"github.com/fleetgate/fleetgate/pkg/edge/records"
	"github.com/fleetgate/fleetgate/pkg/edge/session"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetgate/fleetgate/pkg/adminauth"
	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/stdio"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// Options configure an Edge. A nil *Options means defaults.
type Options struct {
	// paths turns hand-written paths off, so that tests and benchmarks
	// can compare them with the go-sdk's (unexported: not a setting).
	paths pathSwitches
	// ID is the edge instance id (logs, server info); default "edge".
	ID string
	// LogBySequence reads the regional logs of NewRegional by sequence,
	// without consumers (an edge of the edge account: the fleet account
	// offers it reads only). New takes a log attached as it should be.
	LogBySequence bool
	// CredentialLimits bound the files and environment variables the
	// backends' header references (from the event log) may name here: one
	// out of bounds fails its backend's calls, naming the reference (nil:
	// any file, any variable but FLEETGATE_*).
	CredentialLimits *credential.Limits
	// Stdio is this edge's allow-list of stdio commands and the runner of
	// its own instances of the stdio backends it serves (package stdio);
	// nil: a stdio backend's calls are refused, naming why.
	Stdio *stdio.Host
	// Group is the backend group served; default "default".
	Group string
	// Separator joins backend and tool names; default "_". It must match
	// the controller's aggregation.separator.
	Separator string
	// Listen is the MCP address (served at /mcp); default "127.0.0.1:8080".
	// "127.0.0.1:0" picks a free port (see MCPURL).
	Listen string
	// AdminListen is the admin API address; default "127.0.0.1:8082".
	AdminListen string
	// Coalesce is the least time between two resync batches: the first
	// change after a quiet period is applied at once, later ones within the
	// window are applied together at its end. Default 250ms.
	Coalesce time.Duration
	// CallTimeout bounds each request forwarded to a backend; default 60s.
	CallTimeout time.Duration
	// ShutdownTimeout bounds the drain of in-flight calls; default 10s.
	ShutdownTimeout time.Duration
	// SessionTimeout closes sessions idle (no POST) for this long; 0 never.
	SessionTimeout time.Duration
	// BackendHTTPClient talks to backends; default a client without a
	// timeout (a timeout would cut streams; CallTimeout bounds calls) whose
	// transport makes plain-HTTP exchanges on the caller's goroutine
	// (conntransport.go).
	BackendHTTPClient *http.Client
	// Logger receives the edge's logs; default none. Tool arguments are
	// never logged.
	Logger *zerolog.Logger
	// Registry receives the edge's metrics; default a new registry.
	Registry *prometheus.Registry
	// Mode is ModePassthrough (default) or ModeOptimizer: only find_tool,
	// call_tool and the pinned tools are advertised, and find_tool
	// searches an index of the view (see the package doc).
	Mode string
	// PinnedTools are exposed tool names an optimizer edge advertises next
	// to the meta-tools, and notifies changes of (the config's
	// pinned_tools). Ignored in passthrough mode.
	PinnedTools []string
	// IdentityHeader names a request header carrying the caller's identity
	// (set by a trusted proxy), e.g. X-Fleetgate-User; "" means none. A
	// session is bound to the identity that created it (a go-sdk
	// TokenInfo.UserID takes precedence when an auth middleware sets one);
	// with a header configured, a request without it is refused (401).
	IdentityHeader string
	// Auth makes the edge an OAuth 2.1 resource server: every request needs
	// a bearer token (nil: none). It excludes IdentityHeader.
	Auth *AuthOptions
	// AdminToken, when set, is the bearer token every admin request but
	// /healthz and /readyz needs (401 otherwise); AdminAllowedHosts are the
	// Host values the admin API answers besides loopback names with its
	// port (403 otherwise: no DNS rebinding).
	AdminToken        []byte
	AdminAllowedHosts []string
	// Records stores sessions in NATS KV so that they continue on another
	// edge; nil keeps them on this edge only. See recording.go.
	Records *RecordOptions
	// CallTrail receives every tools/call; nil records none. The edge runs
	// it and drains it after its last call.
	CallTrail *calltrail.Trail

	// Limits of the admission gate (package admission; zero fields take
	// its defaults): request body and initialize sizes, sessions per edge
	// and per identity. IdentityHeader above is the gate's too.
	Limits admission.Options
	// SessionIdleTimeout ends a session without a request for this long,
	// with or without Records; default 30m, negative never.
	SessionIdleTimeout time.Duration
	// HeaderTimeout bounds the reading of a request's head (default 10s),
	// BodyTimeout the reading of a POST's body (default 30s), and
	// IdleTimeout a keep-alive connection (call lanes included) waiting
	// for its next request (default 2m).
	HeaderTimeout, BodyTimeout, IdleTimeout time.Duration
	// MaxBackendResponse bounds a backend's response body, or one event of
	// an event stream; default DefaultMaxBackendResponse (16 MiB).
	MaxBackendResponse int64
	// MaxConnections caps the open MCP connections (default 16384): one
	// more is answered 503 and closed at once.
	MaxConnections int
	// WriteTimeout bounds every write to an MCP connection (responses,
	// streams, call lanes), 64 KiB at a time: a client that takes nothing
	// for this long is dropped and counted (default DefaultWriteTimeout;
	// negative: none).
	WriteTimeout time.Duration
	// TracerProvider receives the edge's spans (trace.go); nil: the global
	// one (package tracing installs it), a no-op unless tracing is on.
	TracerProvider trace.TracerProvider
}

// DefaultWriteTimeout is Options.WriteTimeout's default.
const DefaultWriteTimeout = 30 * time.Second

// DefaultMaxBackendResponse is Options.MaxBackendResponse's default.
const DefaultMaxBackendResponse = backend.DefaultMaxResponse

// pathSwitches turn the edge's own paths off; each exists only so that a
// test or a benchmark can compare that path with what it replaces.
type pathSwitches struct {
	noLanes        bool // call lanes: every request is left to net/http
	noListEvidence bool // the tools/list convergence bookkeeping (its cost)
	goSDKListen    bool // every subscriptions/listen stream to the go-sdk
	goSDKStateless bool // every 2026-07-28 tools/call to the go-sdk
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.ID, "edge")
	def(&c.Group, "default")
	def(&c.Separator, catalog.DefaultSeparator)
	def(&c.Listen, "127.0.0.1:8080")
	def(&c.AdminListen, "127.0.0.1:8082")
	def(&c.Mode, ModePassthrough)
	if c.Coalesce == 0 {
		c.Coalesce = 250 * time.Millisecond
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = 60 * time.Second
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 10 * time.Second
	}
	durDef := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	durDef(&c.SessionIdleTimeout, 30*time.Minute)
	durDef(&c.HeaderTimeout, 10*time.Second)
	durDef(&c.BodyTimeout, 30*time.Second)
	durDef(&c.IdleTimeout, 2*time.Minute)
	durDef(&c.WriteTimeout, DefaultWriteTimeout)
	if c.MaxConnections == 0 {
		c.MaxConnections = 16384
	}
	c.Limits.IdentityHeader = c.IdentityHeader
	if c.Mode == ModeOptimizer { // its call_tool's budget is the tool's it names
		c.Limits.MetaCallTool = CallToolName
	}
	if c.BackendHTTPClient == nil {
		c.BackendHTTPClient = &http.Client{Transport: h1.NewTransport(http.DefaultTransport.(*http.Transport).Clone())}
	}
	if c.Logger == nil {
		nop := zerolog.Nop()
		c.Logger = &nop
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	return c
}

// Edge is a passthrough MCP edge: it follows the event log, serves the view
// of its group on /mcp and forwards calls to the backends.
type Edge struct {
	opts   Options
	log    zerolog.Logger
	slog   *slog.Logger
	reader source // the event log, or the merged regional logs (source.go)
	m      *metrics
	opt    *optimizerMetrics
	pool   *backend.Pool

	mcpLn, adminLn net.Listener

	recs    *records.Recorder  // nil without Options.Records
	flights singleflight.Group // rebuilds of sessions from their records, by id and owner
	posting atomic.Int64       // session POSTs in progress, their responses included
	routes  *routeCounts

	// bearer verifies tokens (nil without Options.Auth); calls routes
	// what clients ask of the backends, under the tool policy of the
	// generation applied (package calls).
	bearer  *bearer
	calls   *calls.Plane
	limits  *limits // the policy's rate limits
	rm      *recordMetrics
	digests *digestCache

	// impl and caps are shared by every session server; implJSON is impl
	// encoded.
	impl     *mcp.Implementation
	implJSON []byte
	caps     *mcp.ServerCapabilities

	empty    *view.Served
	backends atomic.Pointer[map[string]events.BackendConfig]
	// confirmed is the last generation at which the served view was found
	// current (it may be newer than the view's own generation).
	confirmed atomic.Uint64
	// confirmedRegions is, on merged regional logs, the vector of the state
	// confirmed names (nil on one log).
	confirmedRegions atomic.Pointer[map[string]uint64]
	ready            atomic.Bool
	tracer           trace.Tracer // trace.go; traced: it records or propagates
	traced           bool

	adm *admitter // the admission gate (admit.go)

	// reg holds the sessions and the view they are given (package
	// session); shared answers 2026-07-28 requests other than listen.
	reg    *session.Registry
	shared *session.Session

	evMu      sync.Mutex
	evTimes   []eventTime  // events of the group not yet in a batch
	evTraces  []eventTrace // their trace contexts, when traced (trace.go)
	lastGroup *events.Group

	// hj owns what runs off the request goroutines: taken-over streams,
	// call lanes, session closes; Run waits for it last.
	hj *h1.Hijacks

	// lanes serves call lanes (package lane).
	lanes *lane.Server
}

type eventTime struct {
	region string // "" on a single log
	gen    uint64
	at     time.Time
}

// New returns an edge reading log. It binds its listeners at once (so that
// MCPURL and AdminURL are known); Run serves them.
func New(log *events.Log, o *Options) (*Edge, error) {
	return newEdge(o, func(e *Edge) source {
		return events.NewReader(log, &events.ReaderOptions{Metrics: e.m.events, OnEvent: func(ev *eventspb.Event, _ *events.State) { e.onEvent("", ev) },
			OnError: func(err error) { e.log.Warn().Err(err).Msg("event log") }})
	})
}

// newEdge is New with the event source made by src (given the edge, its
// metrics and logger set).
func newEdge(o *Options, src func(*Edge) source) (*Edge, error) {
	opts := o.withDefaults()
	if opts.Mode != ModePassthrough && opts.Mode != ModeOptimizer {
		return nil, fmt.Errorf("edge: mode %q: want %q or %q", opts.Mode, ModePassthrough, ModeOptimizer)
	}
	e := &Edge{opts: opts, log: opts.Logger.With().Str("edge", opts.ID).Str("group", opts.Group).Logger(),
		slog: slog.New(slog.DiscardHandler), hj: &h1.Hijacks{}}
	e.m = newMetrics(opts.Registry)
	e.adm = newAdmitter(&opts.Limits, opts.Registry)
	e.routes = newRouteCounts(opts.Registry)
	e.impl = &mcp.Implementation{Name: "fleetgate-edge", Title: "fleetgate " + opts.Group, Version: "0.1.0"}
	e.implJSON, _ = json.Marshal(e.impl) // strings only: it encodes
	e.caps = &mcp.ServerCapabilities{
		Tools:     &mcp.ToolCapabilities{ListChanged: true},
		Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
		Prompts:   &mcp.PromptCapabilities{ListChanged: true},
		// Backends' log messages are relayed per client (relay.go), and
		// completions routed by their reference (Edge.complete).
		Logging:     &mcp.LoggingCapabilities{},
		Completions: &mcp.CompletionCapabilities{},
	}
	e.empty = view.Empty()
	if opts.Mode == ModeOptimizer {
		e.opt = newOptimizerMetrics(opts.Registry)
		e.empty.Index = view.NewIndex(e.empty, opts.PinnedTools, nil)
	}
	e.reg = session.NewRegistry(&session.Options{IdleTimeout: opts.SessionIdleTimeout, Observer: sessionObserver{e},
		Metrics: e.m.sessionMetrics(), Hijacks: e.hj, Log: &e.log, Initial: e.empty})
	e.backends.Store(&map[string]events.BackendConfig{})
	e.setTracing(opts.TracerProvider)
	e.pool = backend.NewPool(opts.BackendHTTPClient, opts.CallTimeout, opts.MaxBackendResponse, e.m)
	e.pool.SetStdio(opts.Stdio) // nil: every stdio backend refused here
	e.pool.SetCredentialLimits(opts.CredentialLimits)
	e.pool.OnCredentialError(func(err error) { // once per outage: the reference, never a value
		e.log.Warn().Err(err).Msg("backend credential unresolved")
	})
	e.rm, e.digests = newRecordMetrics(opts.Registry, e), newDigestCache()
	e.reader = src(e)
	var err error
	if e.mcpLn, err = net.Listen("tcp", opts.Listen); err != nil {
		return nil, fmt.Errorf("edge: listen %s: %w", opts.Listen, err)
	}
	if e.adminLn, err = net.Listen("tcp", opts.AdminListen); err != nil {
		e.mcpLn.Close()
		return nil, fmt.Errorf("edge: admin listen %s: %w", opts.AdminListen, err)
	}
	e.limits = newLimits(opts.Registry)
	var tracer trace.Tracer
	if e.traced {
		tracer = e.tracer
	}
	e.calls = calls.New(calls.Options{Group: opts.Group, Edge: opts.ID, Optimizer: opts.Mode == ModeOptimizer, IdentityHeader: opts.IdentityHeader, Pool: e.pool,
		View: e.current, Generation: e.generation, Trail: opts.CallTrail, Log: e.log, Tracer: tracer, Registry: opts.Registry,
		TasksChanged: e.tasksChanged, Background: e.hj,
		SubscriptionsChanged: func(s *session.Session, uris []string) {
			if s.Record().SetSubscriptions(uris) {
				e.recs.Enqueue(s)
			}
		},
		Backend: func(name string) (events.BackendConfig, bool) {
			cfg, ok := (*e.backends.Load())[name]
			return cfg, ok
		}})
	e.pool.OnResourceUpdated(e.calls.ResourceUpdated)
	if opts.Auth != nil {
		if e.bearer, err = newBearer(opts.Auth, opts.IdentityHeader, e.mcpLn.Addr().String(), opts.Registry); err != nil {
			e.mcpLn.Close()
			e.adminLn.Close()
			return nil, err
		}
	}
	if e.recs, err = e.openRecords(); err != nil {
		e.mcpLn.Close()
		e.adminLn.Close()
		return nil, err
	}
	e.lanes = lane.New(lane.Options{Edge: edgeForLanes{e}, Hijacks: e.hj, Addr: e.mcpLn.Addr(), HeaderTimeout: opts.HeaderTimeout,
		BodyTimeout: opts.BodyTimeout, IdleTimeout: opts.IdleTimeout, ShutdownTimeout: opts.ShutdownTimeout,
		Disabled: opts.paths.noLanes, MaxBody: maxBody, Registry: opts.Registry})
	e.shared = e.newSession("", session.KindStateless, newProtocol, "")
	e.reg.Open(e.shared)
	return e, nil
}

// MCPURL is the MCP endpoint, http://ADDR/mcp.
func (e *Edge) MCPURL() string { return "http://" + e.mcpLn.Addr().String() + "/mcp" }

// AdminURL is the admin API's base URL.
func (e *Edge) AdminURL() string { return "http://" + e.adminLn.Addr().String() }

// Ready reports whether the edge has caught up with the event log and
// serves the view of that state.
func (e *Edge) Ready() bool { return e.ready.Load() }

// current is the served view.
func (e *Edge) current() *view.Served { return e.reg.Current() }

// Run follows the event log and serves until ctx ends, then drains
// in-flight calls (up to ShutdownTimeout), closes sessions and backend
// connections. It returns after all its goroutines have ended: nil after
// ctx ended, or the error that stopped a server.
func (e *Edge) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var failOnce sync.Once
	var failed error
	watch, stop := e.reader.Watch()
	defer stop()
	mcpSrv := &http.Server{Handler: e.lanes.Handler(e.mcpHandler()), ReadHeaderTimeout: e.opts.HeaderTimeout,
		IdleTimeout: e.opts.IdleTimeout, ConnContext: e.lanes.ConnContext}
	adminSrv := &http.Server{Handler: adminauth.Guard(e.adminHandler(), adminauth.Options{Role: "edge", Token: e.opts.AdminToken,
		AllowedHosts: e.opts.AdminAllowedHosts, ListenAddr: e.adminLn.Addr().String()}), ReadHeaderTimeout: 10 * time.Second}
	var wg sync.WaitGroup
	serve := func(srv *http.Server, ln net.Listener, what string) {
		wg.Go(func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				failOnce.Do(func() { failed = fmt.Errorf("edge: serve %s: %w", what, err) })
				cancel()
			}
		})
	}
	wg.Go(func() {
		if err := e.reader.Run(ctx); err != nil {
			e.log.Error().Err(err).Msg("event log: not followed")
		}
	})
	wg.Go(func() { e.follow(ctx, watch) })
	wg.Go(func() { _ = e.reg.Run(ctx, session.SweepEvery) })
	stopRecords := e.startRecords()
	mcpLn := h1.WriteDeadlineListener(e.mcpLn, e.opts.WriteTimeout, e.m.slowDropped.Inc)
	serve(mcpSrv, h1.LimitListener(mcpLn, e.opts.MaxConnections, e.m.connRefused.Inc), "mcp")
	serve(mcpSrv, e.lanes.Listener(), "mcp (call lanes given back)")
	serve(adminSrv, e.adminLn, "admin")
	e.log.Info().Str("mcp", e.MCPURL()).Str("admin", e.AdminURL()).Msg("edge started")

	<-ctx.Done()
	e.ready.Store(false)
	e.shutdown(mcpSrv)
	stopRecords() // final record writes, call trail drained
	sctx, scancel := context.WithTimeout(context.Background(), time.Second)
	_ = adminSrv.Shutdown(sctx)
	scancel()
	_ = adminSrv.Close()
	wg.Wait()
	e.hj.Wait()
	return failed
}

// shutdown stops accepting, waits for in-flight calls up to the deadline,
// then ends every session (and with them the long-lived streams that would
// keep http.Server.Shutdown waiting) and the backend connections.
func (e *Edge) shutdown(srv *http.Server) {
	dctx, dcancel := context.WithTimeout(context.Background(), e.opts.ShutdownTimeout)
	defer dcancel()
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(dctx) }()
	e.lanes.Close(false)
	tick := time.NewTicker(10 * time.Millisecond)
	for e.calls.Inflight()+e.posting.Load() > 0 && dctx.Err() == nil {
		select {
		case <-tick.C:
		case <-dctx.Done():
			e.log.Warn().Int64("calls", e.calls.Inflight()).Msg("shutdown: in-flight calls did not finish before the deadline")
		}
	}
	tick.Stop()
	e.lanes.Close(true) // a lane still writing to a client that does not read
	e.reg.Close()       // before the snapshot: see Session.Attach
	// A session whose client stopped reading cannot finish closing until
	// its connection is cut: close them all concurrently, then cut the
	// connections that are left and wait for the closes to finish.
	var closing sync.WaitGroup
	closed := map[*session.Session]bool{}
	closeNew := func() {
		for _, s := range e.reg.All() {
			if !closed[s] {
				closed[s] = true
				closing.Go(s.Close)
			}
		}
	}
	closeNew()
	if err := <-done; err != nil {
		_ = srv.Close()
	}
	// Requests still running then (a session being rebuilt from its
	// record, say) may have registered sessions since: end those too.
	closeNew()
	closing.Wait()
	e.pool.CloseAll()
}
