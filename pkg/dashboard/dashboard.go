package dashboard

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/region"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// Follower is the follower of the event log the dashboard watches for new
// generations; *events.Reader is one.
type Follower interface {
	// Watch signals (coalesced) when the state moved on; stop ends it.
	Watch() (changed <-chan struct{}, stop func())
	// State is the current folded state.
	State() *events.State
}

// Log is the event log the dashboard reads events from; *events.Log is
// one.
type Log interface {
	Bounds(ctx context.Context) (first, last uint64, err error)
	Events(ctx context.Context, from uint64, limit int) ([]events.EventJSON, error)
	// Event reads one event (a direct get: what the stream uses for a
	// few new events, quicker than a scan).
	Event(ctx context.Context, gen uint64) (*eventspb.Event, error)
}

// Defaults of Options.
const (
	DefaultMaxStreams    = 16
	DefaultStreamBuffer  = 256
	DefaultHeartbeat     = 15 * time.Second
	DefaultWriteTimeout  = 10 * time.Second
	DefaultSessionsEvery = time.Second
	DefaultRescan        = time.Minute
	DefaultMaxSessions   = 10000
	DefaultRetryDelay    = time.Second
	DefaultIdleAfter     = 10 * time.Minute
	// MaxCatchUp is the largest run of events the stream sends after a
	// pause of the log; a longer one is a reset (the page reloads).
	MaxCatchUp = 256
)

// Options configure a Dashboard. A nil *Options, and zero fields, mean
// defaults; Reader and Log are required.
type Options struct {
	Reader Follower
	Log    Log
	// Sessions is the session record bucket (sessionstore's); nil shows
	// no sessions.
	Sessions jetstream.KeyValue
	// Edges is the edges' status bucket (edgestatus.Bucket): each edge
	// card shows the edge's stdio instances; nil shows none.
	Edges jetstream.KeyValue
	// MaxStreams caps concurrent event streams; StreamBuffer is the
	// frames queued per stream before its client is dropped.
	MaxStreams   int
	StreamBuffer int
	// Heartbeat is the period of a stream's keep-alive comment.
	Heartbeat time.Duration
	// WriteTimeout bounds one write to a stream.
	WriteTimeout time.Duration
	// SessionsEvery coalesces session record changes into at most one
	// frame per period.
	SessionsEvery time.Duration
	// Rescan is the period of a full scan of the session bucket.
	Rescan time.Duration
	// MaxSessions caps the sessions indexed; more are counted only.
	MaxSessions int
	// RetryDelay is the pause after a failed read of the log or bucket.
	RetryDelay time.Duration
	// OnError receives failures of the log and bucket reads (the
	// dashboard carries on); nil ignores them. It must not block.
	OnError func(error)
	// Registerer receives the dashboard's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Regions reports the regions of a multi-region fleet for GET
	// /v1/regions and the page's Regions panel (region.Statuses of the
	// controller's NATS); nil is a single-region controller: no panel.
	// It must honour ctx.
	Regions func(ctx context.Context) []region.Status
	// Statuses is the controller's record of the changes of the status
	// it reports (Controller.StatusHistory): the timelines show them
	// beside the log's health events, which record only changes of
	// advertisability. nil: the timelines are drawn from the log alone.
	Statuses StatusSource
	// IdleAfter is how long a session may go without a request before
	// the page counts it idle rather than by its verdict (default
	// DefaultIdleAfter). Edges write a session's last-seen time at most
	// once per sessionstore TouchEvery (3m by default): keep it above.
	IdleAfter time.Duration
	// Now is the clock of the timelines and session classes; nil is
	// time.Now.
	Now func() time.Time
}

// Dashboard serves the page and its data; Run follows the log and the
// session bucket.
type Dashboard struct {
	o        Options
	hub      *hub
	sessions *sessionIndex
	// instances are the edges' status records (instances.go).
	instances *edgeStatuses
	history   *history
	metrics   *metrics
}

func (d *Dashboard) now() time.Time { return d.o.Now() }

// ErrOptions is returned by New for options without Reader or Log.
var ErrOptions = errors.New("dashboard: Options.Reader and Options.Log are required")

// New returns a dashboard; Run starts it.
func New(o *Options) (*Dashboard, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Reader == nil || opts.Log == nil {
		return nil, ErrOptions
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(n *int, v int) {
		if *n <= 0 {
			*n = v
		}
	}
	defInt(&opts.MaxStreams, DefaultMaxStreams)
	defInt(&opts.StreamBuffer, DefaultStreamBuffer)
	defInt(&opts.MaxSessions, DefaultMaxSessions)
	def(&opts.Heartbeat, DefaultHeartbeat)
	def(&opts.WriteTimeout, DefaultWriteTimeout)
	def(&opts.SessionsEvery, DefaultSessionsEvery)
	def(&opts.Rescan, DefaultRescan)
	def(&opts.RetryDelay, DefaultRetryDelay)
	def(&opts.IdleAfter, DefaultIdleAfter)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := newMetrics(opts.Registerer)
	return &Dashboard{o: opts, metrics: m, hub: newHub(opts.MaxStreams, opts.StreamBuffer, m),
		sessions: newSessionIndex(opts.MaxSessions), history: newHistory(), instances: newEdgeStatuses(4 * MaxEdges)}, nil
}

// Run follows the event log and the session bucket and feeds the
// streams until ctx ends; it then ends every stream and returns nil,
// after every goroutine it started has ended.
func (d *Dashboard) Run(ctx context.Context) error {
	defer d.hub.close()
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return d.follow(ctx) })
	if d.o.Statuses != nil {
		g.Go(func() error { return d.followStatus(ctx) })
	}
	if d.o.Sessions != nil {
		g.Go(func() error { return d.sessions.run(ctx, d.o.Sessions, d.o.Rescan, d.o.RetryDelay, d.report) })
		g.Go(func() error { return d.pushSessions(ctx) })
	}
	if d.o.Edges != nil {
		g.Go(func() error { return d.followEdges(ctx) })
	}
	return g.Wait()
}

func (d *Dashboard) report(err error) {
	if d.o.OnError != nil {
		d.o.OnError(err)
	}
}

// Handler serves the dashboard's paths and passes every other request to
// api, the controller's admin API. Wrap the result in adminauth.Guard
// with OpenPaths as Options.Open.
func (d *Dashboard) Handler(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	if api != nil {
		mux.Handle("/", api)
	}
	mux.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) {
		secure(w.Header())
		http.Redirect(w, r, "/ui/", http.StatusMovedPermanently)
	})
	mux.HandleFunc("GET /ui/{file...}", serveAsset)
	mux.HandleFunc("GET /v1/stream", d.serveStream)
	mux.HandleFunc("GET /v1/edges", d.serveEdges)
	mux.HandleFunc("GET /v1/events/recent", d.serveRecent)
	mux.HandleFunc("GET /v1/regions", d.serveRegions)
	mux.HandleFunc("GET /v1/timeline", d.serveTimeline)
	return mux
}
