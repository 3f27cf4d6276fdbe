package prober

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetgate/fleetgate/pkg/backendnet"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/health"
	"github.com/fleetgate/fleetgate/pkg/stdio"
)

// Transports a Target may name.
const (
	TransportStreamable = "streamable-http"
	TransportSSE        = "sse"
)

// Defaults for zero Options fields.
const (
	DefaultMinBackoff       = 100 * time.Millisecond
	DefaultMaxPages         = 10000
	DefaultDiscoveryTimeout = 30 * time.Second
	// DefaultMaxMessage bounds one message from a backend: an
	// application/json response body, or one event of an event stream
	// (the go-sdk's own bound on an event, mcp.DefaultMaxEventSize).
	DefaultMaxMessage = 16 << 20
)

// defaultTransport is the transport of probers not given one: its dialer
// refuses link-local and metadata addresses unless a request's context
// allows them (backendnet.Scope).
var defaultTransport = backendnet.Transport(false)

// noRedirects is the CheckRedirect of every probe client.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// ErrRunning is returned by Run when the Prober is already running.
var ErrRunning = errors.New("prober: already running")

// Target is the backend a Prober watches.
type Target struct {
	Group, Name string
	// URL is the MCP endpoint, e.g. http://127.0.0.1:9101/mcp.
	URL string
	// Transport is TransportStreamable ("" means it) or TransportSSE.
	Transport string
	// Headers are set on every request to the backend, resolved from
	// their references at every connect (package credential).
	Headers credential.Headers
	// AllowLinkLocal lets the prober connect to link-local and cloud
	// metadata addresses, refused by default (package backendnet).
	AllowLinkLocal bool
	// Command, Args and Env are a stdio target's (Transport
	// TransportStdio): an entry of Options.Stdio's allow-list, extra
	// arguments and variables from references.
	Command string
	Args    []string
	Env     map[string]credential.Ref
	// Auth is the backend's per-caller credentials; the prober, which
	// calls for no user, gets a token of the client itself (probeauth.go).
	Auth *credential.Auth
}

func (t Target) String() string { return t.Group + "/" + t.Name }

// Sink receives what a Prober learns. Both functions are called from the
// Prober's own goroutine, one call at a time, and must not block for long:
// hand the value to the controller's loop and return. Nil functions are
// skipped.
type Sink struct {
	// Observe receives every probe result: pings, failed connects, and a
	// dropped session (reported at once, as a Failure).
	Observe func(t Target, o health.Observation)
	// Catalog receives the backend's catalog after a discovery whose tools
	// digest or resources/prompts differ from the last one delivered.
	Catalog func(t Target, c Catalog)
}

// Options configure a Prober. A nil *Options means all defaults.
type Options struct {
	// Policy gives the ping period (Interval) and deadline (Timeout); zero
	// fields take the health package defaults.
	Policy health.Policy
	// HTTPClient supplies the Transport (default: net/http's default
	// transport dialing through backendnet.Dialer, which refuses
	// link-local and metadata addresses unless Target.AllowLinkLocal)
	// and Jar. A Transport given here refuses those addresses only if it
	// dials through backendnet.Control. Its Timeout is ignored: it would
	// cut the event streams; every request is bounded by a context
	// instead. Its CheckRedirect is ignored too: redirects are never
	// followed (a redirect's response is the probe's answer, a failure).
	HTTPClient *http.Client
	// Logger; nil logs nothing.
	Logger *zerolog.Logger
	// Metrics; nil records nothing.
	Metrics *Metrics
	// MinBackoff is the wait before the first retry after a failed
	// connect (default 100ms); later attempts of the outage fall on its
	// probe schedule, every MaxBackoff from its first failure (default
	// Policy.Interval), so a backend that comes back is reconnected within
	// one interval however long it was down.
	MinBackoff, MaxBackoff time.Duration
	// MaxPages bounds the pages of one list method (default 10,000).
	MaxPages int
	// DiscoveryTimeout bounds one complete listing (default 30s); each
	// page request is also bounded by Policy.Timeout, so that a backend
	// hanging during a listing delays the next ping by at most that.
	DiscoveryTimeout time.Duration
	// MaxMessage bounds one message from the backend, in bytes (default
	// DefaultMaxMessage). A response over it, or nested deeper than
	// mcpwire.MaxDepth, is refused before the SDK decodes it: the session
	// is dropped (a Failure naming the bound) and replaced after a retry delay.
	MaxMessage int64
	// Now stamps observations and catalogs (default time.Now).
	Now func() time.Time
	// TracerProvider receives a span per probe result (trace.go); nil:
	// the global one, a no-op unless tracing is on.
	TracerProvider trace.TracerProvider
	// Stdio runs the instances of stdio targets (its allow-list); nil:
	// a stdio target is refused.
	Stdio *stdio.Host
}

// Prober probes one backend over one persistent MCP client session.
type Prober struct {
	target Target
	sink   Sink
	policy health.Policy
	log    zerolog.Logger
	m      *Metrics
	now    func() time.Time
	tracer trace.Tracer // trace.go; traced: it records or propagates
	traced bool

	base http.RoundTripper
	jar  http.CookieJar

	minBackoff, maxBackoff time.Duration
	maxPages               int
	maxMessage             int64
	discoveryTimeout       time.Duration

	client  *mcp.Client
	plain   *mcp.Client   // with no handlers: probes and listings of the stateless generation
	relist  chan struct{} // list_changed seen; capacity 1
	refresh chan struct{} // Refresh asked; capacity 1
	running atomic.Bool
	last    string // fingerprint of the last catalog delivered
	// credFailing: a header reference did not resolve at the last
	// connect (logged once per outage).
	credFailing bool
	// lastRevision is the stateless revision the backend last answered
	// (revision.go); kept across sessions until another answer comes.
	lastRevision string

	// The client credentials token of a target with Auth (probeauth.go).
	probeTok probeToken

	// A stdio target's host, instance and list capture (stdio.go).
	stdioHost  *stdio.Host
	inst       *stdio.Instance
	stdioLists *capture
}

// New returns a Prober for t. Run starts it.
func New(t Target, sink Sink, o *Options) *Prober {
	if o == nil {
		o = &Options{}
	}
	if t.Transport == "" {
		t.Transport = TransportStreamable
	}
	p := &Prober{
		target: t, sink: sink, policy: o.Policy.WithDefaults(), m: o.Metrics, now: o.Now,
		base: defaultTransport, minBackoff: o.MinBackoff, maxBackoff: o.MaxBackoff,
		maxPages: o.MaxPages, discoveryTimeout: o.DiscoveryTimeout, maxMessage: o.MaxMessage,
		relist: make(chan struct{}, 1), refresh: make(chan struct{}, 1), log: zerolog.Nop(),
		stdioHost: o.Stdio,
	}
	if o.Logger != nil {
		p.log = o.Logger.With().Str("group", t.Group).Str("backend", t.Name).Logger()
	}
	if hc := o.HTTPClient; hc != nil {
		if hc.Transport != nil {
			p.base = hc.Transport
		}
		p.jar = hc.Jar
	}
	p.setTracing(o.TracerProvider)
	if p.now == nil {
		p.now = time.Now
	}
	if p.minBackoff <= 0 {
		p.minBackoff = DefaultMinBackoff
	}
	if p.maxBackoff <= 0 {
		p.maxBackoff = p.policy.Interval
	}
	p.maxBackoff = max(p.maxBackoff, p.minBackoff)
	if p.maxPages <= 0 {
		p.maxPages = DefaultMaxPages
	}
	if p.discoveryTimeout <= 0 {
		p.discoveryTimeout = DefaultDiscoveryTimeout
	}
	if p.maxMessage <= 0 {
		p.maxMessage = DefaultMaxMessage
	}
	changed := func() {
		select {
		case p.relist <- struct{}{}:
		default: // a discovery is already due
		}
	}
	p.client = mcp.NewClient(&mcp.Implementation{Name: "fleetgate-prober", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { changed() },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { changed() },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { changed() },
	})
	p.plain = mcp.NewClient(&mcp.Implementation{Name: "fleetgate-prober", Version: "1"}, nil)
	return p
}

// Refresh has the prober probe and rediscover the backend now: on its
// live session at once, or, while it waits to reconnect, by reconnecting
// at once. It does not block; refreshes asked meanwhile merge.
func (p *Prober) Refresh() {
	select {
	case p.refresh <- struct{}{}:
	default:
	}
}

// wait sleeps for d, or less when ctx ends or a refresh is asked; it
// reports false when ctx ended.
func (p *Prober) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-p.refresh:
		return true
	case <-t.C:
		return true
	}
}

// Target returns the backend being probed.
func (p *Prober) Target() Target { return p.target }

// Run probes until ctx is done, then closes the session and returns nil
// once every goroutine it started has ended. It returns an error at once
// for an unusable Target or policy, or if the Prober is already running.
func (p *Prober) Run(ctx context.Context) error {
	if err := p.policy.Validate(); err != nil {
		return fmt.Errorf("prober %s: %w", p.target, err)
	}
	if p.target.Transport != TransportStreamable && p.target.Transport != TransportSSE && p.target.Transport != TransportStdio {
		return fmt.Errorf("prober %s: unknown transport %q (want %s, %s or %s)", p.target, p.target.Transport, TransportStreamable, TransportSSE, TransportStdio)
	}
	if !p.running.CompareAndSwap(false, true) {
		return fmt.Errorf("prober %s: %w", p.target, ErrRunning)
	}
	defer p.running.Store(false)
	if p.target.Transport == TransportStdio {
		stop, err := p.runStdio(ctx)
		if err != nil {
			return err
		}
		defer stop()
	}

	rt := retry{first: p.minBackoff, period: p.maxBackoff}
	sessions := 0
	for ctx.Err() == nil {
		s, err := p.connect(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			var ce *connectError
			errors.As(err, &ce)
			wait := rt.next(time.Now())
			p.log.Debug().Err(err).Dur("retry_in", wait.Round(time.Millisecond)).Msg("backend connect failed")
			p.report(ce.result, 0, ce.reason)
			if !p.wait(ctx, wait) {
				break
			}
			continue
		}
		if sessions++; sessions > 1 {
			p.m.reconnect(p.target)
		}
		p.log.Info().Str("url", p.target.URL).Msg("backend session established")
		anyOK := p.serve(ctx, s)
		s.close()
		if anyOK && !s.wire.refused.Load() {
			rt.reset() // reconnect at once
			continue
		}
		// Not one ping succeeded, or the backend sent what was refused:
		// retry as after a failed connect.
		if !p.wait(ctx, rt.next(time.Now())) {
			break
		}
	}
	return nil
}

// serve probes over one session until it dies or ctx is done. It reports
// whether any ping succeeded.
func (p *Prober) serve(ctx context.Context, s *session) (anyOK bool) {
	ticker := time.NewTicker(p.policy.Interval)
	defer ticker.Stop()
	needList := true
	ok, dead := p.probe(ctx, s)
	for !dead {
		anyOK = anyOK || ok
		if ok && needList {
			needList = !p.discover(ctx, s)
		}
		select {
		case <-ctx.Done():
			return anyOK
		case <-s.dropped:
			p.log.Warn().Str("reason", s.reason).Msg("backend session lost")
			switch code := s.wire.authStatus(); {
			case s.clean:
			case code != 0: // the backend refused the credentials (a ping's 401): unauthenticated
				p.forgetProbeToken()
				p.report(resultAuthFailure, 0, fmt.Sprintf("HTTP %d: %s", code, s.reason))
			default:
				p.report(resultFailure, 0, s.reason)
			}
			// A stream that ended normally is not a failure by itself: the
			// reconnect that follows decides.
			return anyOK
		case <-ticker.C:
			ok, dead = p.probe(ctx, s)
		case <-p.relist:
			needList = true
		case <-p.refresh:
			needList = true
			ok, dead = p.probe(ctx, s)
		}
	}
	return anyOK
}

// probe pings once and reports the result. dead means the session is
// unusable (or ctx is done) and must be replaced.
func (p *Prober) probe(ctx context.Context, s *session) (ok, dead bool) {
	select {
	case <-s.dropped:
		return false, false // serve reports the drop
	default:
	}
	start := p.now()
	pctx, cancel := context.WithTimeout(s.calls, p.policy.Timeout)
	var err error
	if s.stateless {
		err = p.discoverProbe(pctx, s)
	} else {
		err = s.cs.Ping(pctx, nil)
	}
	cancel()
	if ctx.Err() != nil {
		return false, true
	}
	lat := p.now().Sub(start)
	p.m.pingLatency(p.target, lat)
	if err == nil {
		s.wire.authStatus()
		p.report(resultOK, lat, "")
		return true, false
	}
	select {
	case <-s.dropped:
		return false, false // the drop explains the failure; serve reports it
	default:
	}
	ce := p.classify(fmt.Errorf("ping: %w", err), s.wire)
	p.report(ce.result, 0, ce.reason)
	return false, ce.result == resultAuthFailure || sessionDead(err)
}

func (p *Prober) report(result string, latency time.Duration, reason string) {
	o := health.Observation{At: p.now(), Latency: latency, Reason: reason}
	switch result {
	case resultOK:
		o.Result = health.OK
	case resultAuthFailure:
		o.Result = health.AuthFailure
	default:
		o.Result = health.Failure
	}
	p.m.probe(p.target, result)
	if p.traced {
		o.Traceparent = p.traceResult(result, latency, reason, o.At)
	}
	if p.sink.Observe != nil {
		p.sink.Observe(p.target, o)
	}
}
