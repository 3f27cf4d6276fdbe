package edge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/signins"

	"github.com/fleetgate/fleetgate/pkg/edge/callslot"

	"github.com/fleetgate/fleetgate/pkg/edge/bearer"
	"github.com/fleetgate/fleetgate/pkg/edge/calls"
	"github.com/fleetgate/fleetgate/pkg/edge/direct"
	"github.com/fleetgate/fleetgate/pkg/edge/heldrelay"
	"github.com/fleetgate/fleetgate/pkg/edge/inputstate"
	"github.com/fleetgate/fleetgate/pkg/edge/lane"
	"github.com/fleetgate/fleetgate/pkg/edge/ledger"
	"github.com/fleetgate/fleetgate/pkg/edge/planner"
	"github.com/fleetgate/fleetgate/pkg/edge/rebuild"
	"github.com/fleetgate/fleetgate/pkg/edge/records"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/edge/sessionserver"
	"github.com/fleetgate/fleetgate/pkg/edge/spans"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/adminauth"
	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/signin"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

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

	recs    *records.Recorder // nil without Options.Records
	posting atomic.Int64      // session POSTs in progress, their responses included
	routes  *routeCounts

	// bearer verifies tokens (nil without Options.Auth); calls routes
	// what clients ask of the backends, under the tool policy of the
	// generation applied (package calls).
	bearer *bearer.Authenticator
	calls  *calls.Plane
	limits *limits // the policy's rate limits
	// ledger keeps the sessions' evidence, servers makes their go-sdk
	// servers, answers answers the requests the edge serves itself,
	// rebuilder rebuilds sessions held elsewhere from their records.
	ledger    *ledger.Ledger
	servers   *sessionserver.Servers
	slots     callslot.Table // of the calls the go-sdk serves
	answers   *direct.Answers
	rebuilder *rebuild.Rebuilder
	// relay forwards retries of held calls to their holders and takes
	// the ones other edges forward here; nil without Options.HeldRelay.
	relay *heldrelay.Relay

	empty    *view.Served
	backends atomic.Pointer[map[string]events.BackendConfig]
	// confirmed is the last state at which the served view was found
	// current (its generation may be newer than the view's own).
	confirmed confirmation
	ready     atomic.Bool
	spans     *spans.Tracer

	adm *admitter // the admission gate (admit.go)

	// reg holds the sessions and the view they are given (package
	// session); shared answers 2026-07-28 requests other than listen.
	reg    *session.Registry
	shared *session.Session

	loop *planner.Loop // the resync loop over reader (resync.go)

	// hj owns what runs off the request goroutines: taken-over streams,
	// call lanes, session closes; Run waits for it last.
	hj *h1.Hijacks

	// lanes serves call lanes (package lane).
	lanes *lane.Server

	// signIns are the sign-ins of user_oauth backends (nil without
	// Options.SignIns; signin.go).
	signIns   *signin.Manager
	signInWeb *signins.Web // its callback and revocation
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
	e.empty = view.Empty()
	if opts.Mode == ModeOptimizer {
		e.opt = newOptimizerMetrics(opts.Registry)
		e.empty.Index = view.NewIndex(e.empty, opts.PinnedTools, nil)
	}
	e.reg = session.NewRegistry(&session.Options{IdleTimeout: opts.SessionIdleTimeout, Observer: sessionObserver{e},
		Metrics: e.m.sessionMetrics(), Hijacks: e.hj, Log: &e.log, Initial: e.empty, NoDigest: opts.Mode == ModeOptimizer})
	e.confirmed = confirmation{e.reg}
	e.backends.Store(&map[string]events.BackendConfig{})
	e.spans = spans.New(opts.TracerProvider, opts.ID)
	e.pool = backend.NewPool(opts.BackendHTTPClient, opts.CallTimeout, opts.MaxBackendResponse, e.m)
	e.pool.SetCallerOptions(backend.CallerOptions{MaxSessions: opts.CallerSessions, Idle: opts.CallerIdle})
	opts.Registry.MustRegister(e.pool.TokenCollectors()...)
	e.pool.SetStdio(opts.Stdio) // nil: every stdio backend refused here
	e.pool.SetCredentialLimits(opts.CredentialLimits)
	e.pool.OnCredentialError(func(err error) { // once per outage: the reference, never a value
		e.log.Warn().Err(err).Msg("backend credential unresolved")
	})
	e.reader = src(e)
	e.loop = e.newPlanner()
	var err error
	if e.mcpLn, err = net.Listen("tcp", opts.Listen); err != nil {
		return nil, fmt.Errorf("edge: listen %s: %w", opts.Listen, err)
	}
	if e.adminLn, err = net.Listen("tcp", opts.AdminListen); err != nil {
		e.mcpLn.Close()
		return nil, fmt.Errorf("edge: admin listen %s: %w", opts.AdminListen, err)
	}
	e.limits = newLimits(opts.Registry)
	if opts.Auth != nil {
		if e.bearer, err = bearer.New(opts.Auth, opts.IdentityHeader, e.mcpLn.Addr().String(),
			bearer.Wiring{Throttle: e.limits, Owners: opts.OwnerKey, Clients: opts.TrustedProxies, Registry: opts.Registry}); err != nil {
			e.mcpLn.Close()
			e.adminLn.Close()
			return nil, err
		}
	}
	if e.recs, err = records.Open(opts.Records, records.Wiring{Edge: opts.ID, Sessions: e.reg, Hijacks: e.hj,
		Log: &e.log, Registry: opts.Registry, Written: e.m.recordsWritten, Stdio: e.pool.StdioStatus}); err != nil {
		e.mcpLn.Close()
		e.adminLn.Close()
		return nil, err
	}
	e.signIns, e.signInWeb = openSignIns(e)
	e.wire()
	return e, nil
}

// wire makes the parts that serve requests, each given what it uses of
// the others.
func (e *Edge) wire() {
	opts := &e.opts
	e.ledger = ledger.New(&ledger.Options{Edge: opts.ID, Group: opts.Group, Mode: opts.Mode, Optimizer: opts.Mode == ModeOptimizer,
		NoListEvidence: opts.paths.noListEvidence, Records: e.recs, Sessions: e.reg,
		Identity: func(x *mcp.RequestExtra) string { return e.calls.IdentityOf(x) },
		Owners:   opts.OwnerKey, Log: e.log, Registry: opts.Registry})
	var signIns calls.SignIns // the call plane's view of the sign-ins (none: nil)
	if e.signIns != nil {
		e.pool.SetSignIns(e.signIns)
		signIns = e.signIns
	}
	co := calls.Options{SignIns: signIns, Group: opts.Group, Edge: opts.ID, Optimizer: opts.Mode == ModeOptimizer, IdentityHeader: opts.IdentityHeader, InputState: opts.InputState, Pool: e.pool, Owners: opts.OwnerKey,
		View: e.current, Generation: e.ledger.Generation, Trail: opts.CallTrail, Log: e.log, Tracer: e.spans.Calls(), Registry: opts.Registry,
		TasksChanged: e.ledger.TasksChanged, Background: e.hj, SubscriptionsChanged: e.ledger.SubscriptionsChanged,
		HeldWait: opts.HeldWait, PeerWait: opts.CallTimeout,
		Separator: opts.Separator,
		Backend: func(name string) (events.BackendConfig, bool) {
			cfg, ok := (*e.backends.Load())[name]
			return cfg, ok
		}}
	if opts.HeldRelay != nil {
		if co.InputState == nil { // a key of this process alone: for the relay too
			co.InputState = inputstate.NewRandom()
		}
		e.relay = heldrelay.New(heldrelay.Options{Conn: opts.HeldRelay, Edge: opts.ID, Key: co.InputState.RelayKey(), Log: e.log,
			Answer: func(ctx context.Context, r *heldrelay.Retry) *heldrelay.Outcome {
				return e.calls.ContinueForPeer(ctx, r)
			}})
		co.Peers = e.relay
	}
	e.calls = calls.New(co)
	e.pool.OnResourceUpdated(e.calls.ResourceUpdated)
	e.pool.SetStatelessOnly(func(b string) bool { return e.current().StatelessOnly[b] })
	e.lanes = lane.New(lane.Options{Edge: edgeForLanes{e}, Hijacks: e.hj, Addr: e.mcpLn.Addr(), HeaderTimeout: opts.HeaderTimeout,
		BodyTimeout: opts.BodyTimeout, IdleTimeout: opts.IdleTimeout, ShutdownTimeout: opts.ShutdownTimeout,
		Disabled: opts.paths.noLanes, MaxBody: maxBody, Registry: opts.Registry})
	impl := &mcp.Implementation{Name: "fleetgate-edge", Title: "fleetgate " + opts.Group, Version: "0.1.0"}
	// A session a request makes takes the room the gate reserved for it.
	open := func(r *http.Request, s *session.Session) { e.reg.OpenReserved(s, admittedOf(r).reservation()) }
	e.servers = sessionserver.New(sessionserver.Options{Sessions: e.reg, Calls: e.calls, Impl: impl, Logger: e.slog, Open: open, Slots: &e.slots,
		Evidence: e.ledger, Spans: e.spans, Passthrough: opts.Mode == ModePassthrough,
		Caps: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			// Backends' log messages are relayed per client (package
			// calls), and completions routed by their reference.
			Logging:     &mcp.LoggingCapabilities{},
			Completions: &mcp.CompletionCapabilities{},
		}})
	e.shared = e.servers.Shared()
	identity := func(r *http.Request) string { // the gate's
		id, _ := e.adm.gate.Identity(r.Header, tokenUserID(r))
		return id
	}
	e.answers = direct.New(direct.Options{Calls: e.calls, Sessions: e.reg, Hijacks: e.hj, Shared: e.shared, Impl: impl, Open: open,
		Identity: identity, Passthrough: opts.Mode == ModePassthrough, SessionTimeout: opts.SessionTimeout,
		GoSDKStateless: opts.paths.goSDKStateless})
	e.rebuilder = rebuild.New(rebuild.Options{Group: opts.Group, IdentityHeader: opts.IdentityHeader,
		MaxInitializeBytes: e.adm.gate.Options().MaxInitializeBytes, Sessions: e.reg, Records: e.recs, Ledger: e.ledger,
		Identity: identity, Owners: opts.OwnerKey, Refusals: e.m.refusals, Log: e.log, Registry: opts.Registry})
	e.reg.Open(e.shared)
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
	wg.Go(func() { _ = e.loop.Run(ctx) })
	wg.Go(func() { _ = e.reg.Run(ctx, session.SweepEvery) })
	if e.relay != nil {
		wg.Go(func() {
			if err := e.relay.Run(ctx); err != nil {
				e.log.Error().Err(err).Msg("held calls: retries forwarded by other edges not taken")
			}
		})
	}
	// The sign-ins run on a context of their own, ended once the in-flight
	// calls drained: their refreshes may hold rotated refresh tokens until
	// then, which the writer's last round at its end writes.
	signInsCtx, stopSignIns := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSignIns()
	if e.signIns != nil {
		wg.Go(func() {
			if err := e.signIns.Run(signInsCtx); err != nil {
				e.log.Error().Err(err).Msg("sign-ins: bucket not followed")
			}
		})
	}
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
	stopSignIns() // after the calls: the held rotated refresh tokens written last
	sctx, scancel := context.WithTimeout(context.Background(), time.Second)
	_ = adminSrv.Shutdown(sctx)
	scancel()
	_ = adminSrv.Close()
	wg.Wait()
	e.calls.Close() // calls held for their clients' input end now
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

// startRecords starts the record writer and the call trail; the returned
// function, called after the sessions were closed, writes the last
// records and drains the trail.
func (e *Edge) startRecords() (stop func()) {
	e.recs.Start()
	var trail sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	if t := e.opts.CallTrail; t != nil {
		trail.Go(func() {
			if err := t.Run(ctx); err != nil {
				e.log.Warn().Err(err).Msg("call trail")
			}
		})
	}
	return func() {
		e.recs.Stop()
		cancel()
		trail.Wait()
	}
}

// sessionObserver is what the sessions of e tell their evidence and
// records (session.Observer): the ledger, and the call plane of a
// session forgotten (its resource subscriptions end).
type sessionObserver struct{ e *Edge }

func (o sessionObserver) Signalled(s *session.Session)      { o.e.ledger.Signalled(s) }
func (o sessionObserver) StreamAttached(s *session.Session) { o.e.ledger.StreamAttached(s) }
func (o sessionObserver) Forgotten(s *session.Session)      { o.e.calls.Forget(s) }
func (o sessionObserver) IdleEnded(s *session.Session)      { o.e.ledger.IdleEnded(s) }
