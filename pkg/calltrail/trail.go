package calltrail

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// Defaults of Options.
const (
	DefaultStream           = "FLEETGATE_CALLS"
	DefaultSubjectPrefix    = "fleetgate.calls"
	DefaultMaxAge           = 7 * 24 * time.Hour
	DefaultMaxBytes         = 256 << 20
	DefaultQueueSize        = 4096
	DefaultWindow           = 256
	DefaultAckTimeout       = 5 * time.Second
	DefaultDrainTimeout     = 5 * time.Second
	DefaultMaxArgumentBytes = 64 << 10
	DefaultLinger           = 5 * time.Millisecond
)

// ErrRunning is returned by Run while another Run of the same Trail is
// active.
var ErrRunning = errors.New("calltrail: already running")

// ErrDrainIncomplete is returned by Run when the drain deadline passed with
// entries still queued or unacknowledged; they are counted as abandoned.
var ErrDrainIncomplete = errors.New("calltrail: drain incomplete")

// ErrOptions is wrapped by Open's errors for invalid Options.
var ErrOptions = errors.New("calltrail: invalid options")

// Options configure a Trail. A nil *Options means all defaults.
type Options struct {
	// Stream is the JetStream stream; default DefaultStream.
	Stream string
	// SubjectPrefix: entries go to <SubjectPrefix>.<group>; the stream
	// holds <SubjectPrefix>.>. Default DefaultSubjectPrefix.
	SubjectPrefix string
	// Replicas of the stream; default 1 (3 on a cluster).
	Replicas int
	// MaxAge and MaxBytes limit the stream (limits retention, oldest
	// discarded); defaults DefaultMaxAge and DefaultMaxBytes. MaxBytes -1
	// means unlimited.
	MaxAge   time.Duration
	MaxBytes int64
	// QueueSize bounds the entries waiting to be published; when it is
	// full Record drops. Default DefaultQueueSize.
	QueueSize int
	// Window bounds the publishes awaiting their acknowledgement; default
	// DefaultWindow. AckTimeout is how long one may wait before it counts
	// as failed; default DefaultAckTimeout.
	Window     int
	AckTimeout time.Duration
	// DrainTimeout bounds the drain after Run's context is cancelled;
	// default DefaultDrainTimeout.
	DrainTimeout time.Duration
	// Linger is how long Run lets entries gather after it published one
	// before it publishes them together: Record then wakes Run once per
	// Linger rather than once per call, which on a busy edge costs the
	// call path less. Default DefaultLinger; negative publishes each entry
	// at once.
	Linger time.Duration
	// IncludeArguments keeps Entry.Arguments; by default Record drops
	// them. Arguments longer than MaxArgumentBytes (default
	// DefaultMaxArgumentBytes) are dropped and marked ArgumentsOmitted.
	IncludeArguments bool
	MaxArgumentBytes int
	// Registerer receives the metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger for publish failures; nil logs nothing.
	Logger *zerolog.Logger
}

// Trail is the tool-call audit trail of one edge: Record queues, Run
// publishes. Record is safe for concurrent use; Run runs at most once at a
// time.
type Trail struct {
	o       Options
	js      jetstream.JetStream
	log     zerolog.Logger
	queue   chan Entry
	running atomic.Bool
	m       *metrics

	published, dropped, failed, abandoned atomic.Uint64
}

// Stats are the Trail's counters since Open.
type Stats struct {
	// Queued entries wait to be published.
	Queued int `json:"queued"`
	// Published entries were acknowledged by the stream.
	Published uint64 `json:"published"`
	// Dropped entries found the queue full.
	Dropped uint64 `json:"dropped"`
	// Failed entries got a publish error or no acknowledgement in time.
	Failed uint64 `json:"failed"`
	// Abandoned entries were still queued or unacknowledged when the drain
	// deadline passed.
	Abandoned uint64 `json:"abandoned"`
}

// Open returns a Trail publishing to the stream through js: the stream the
// controller provisioned (see Provision), used as it is, or, when there is
// none and the client may create it, a new one. Call Run to start
// publishing.
func Open(ctx context.Context, js jetstream.JetStream, o *Options) (*Trail, error) {
	opts, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg := streamConfig(opts)
	if err := attach(ctx, js, cfg); err != nil {
		return nil, fmt.Errorf("calltrail: open stream %s (subjects %s.>, replicas %d): %w", opts.Stream, opts.SubjectPrefix, opts.Replicas, err)
	}
	t := &Trail{o: opts, js: js, log: zerolog.Nop(), queue: make(chan Entry, opts.QueueSize)}
	if opts.Logger != nil {
		t.log = opts.Logger.With().Str("component", "calltrail").Str("stream", opts.Stream).Logger()
	}
	if t.m, err = newMetrics(opts.Registerer, t); err != nil {
		return nil, err
	}
	return t, nil
}

// Provision creates the stream, or updates it to o's limits, with full
// rights: the controller calls it at start, so that edges, which may only
// publish entries, find the stream. Only the stream's options of o are
// used.
func Provision(ctx context.Context, js jetstream.JetStream, o *Options) error {
	opts, err := o.withDefaults()
	if err != nil {
		return err
	}
	cfg := streamConfig(opts)
	if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("calltrail: provision stream %s (max bytes %d): %w", opts.Stream, opts.MaxBytes, err)
	}
	return nil
}

func streamConfig(opts Options) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        opts.Stream,
		Description: "fleetgate tool-call audit trail",
		Subjects:    []string{opts.SubjectPrefix + ".>"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Discard:     jetstream.DiscardOld,
		MaxAge:      opts.MaxAge,
		MaxBytes:    opts.MaxBytes,
		Replicas:    opts.Replicas,
		DenyPurge:   true,
		DenyDelete:  true,
	}
}

// attach finds the stream, or creates it when it does not exist. A client
// that may not create it waits for it until ctx ends.
func attach(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) error {
	for {
		_, err := js.Stream(ctx, cfg.Name)
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrStreamNotFound) {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, cerr := js.CreateStream(cctx, cfg)
		cancel()
		var api *jetstream.APIError
		switch {
		case cerr == nil || errors.Is(cerr, jetstream.ErrStreamNameAlreadyInUse):
			continue
		case errors.As(cerr, &api):
			return cerr
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (waiting for the stream; creating it: %v)", ctx.Err(), cerr)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (o *Options) withDefaults() (Options, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Stream == "" {
		opts.Stream = DefaultStream
	}
	if opts.SubjectPrefix == "" {
		opts.SubjectPrefix = DefaultSubjectPrefix
	}
	if !validPrefix(opts.SubjectPrefix) {
		return opts, fmt.Errorf("%w: subject prefix %q: want literal tokens separated by '.'", ErrOptions, opts.SubjectPrefix)
	}
	if opts.Replicas < 0 {
		return opts, fmt.Errorf("%w: replicas %d: want >= 1", ErrOptions, opts.Replicas)
	}
	opts.Replicas = max(opts.Replicas, 1)
	if opts.MaxAge == 0 {
		opts.MaxAge = DefaultMaxAge
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.AckTimeout <= 0 {
		opts.AckTimeout = DefaultAckTimeout
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = DefaultDrainTimeout
	}
	if opts.Linger == 0 {
		opts.Linger = DefaultLinger
	}
	if opts.MaxArgumentBytes <= 0 {
		opts.MaxArgumentBytes = DefaultMaxArgumentBytes
	}
	return opts, nil
}

// Record queues e for publishing. It never blocks: when the queue is full
// the entry is dropped and counted (fleetgate_calltrail_dropped_total with
// reason "queue_full"). Arguments are dropped unless IncludeArguments; when
// kept, the caller must not modify their bytes afterwards. The session id
// is replaced by its hash (Entry.SessionHash).
func (t *Trail) Record(e Entry) {
	if !t.o.IncludeArguments {
		e.Arguments = nil
	}
	if e.SessionID != "" {
		e.SessionHash, e.SessionID = sessionstore.IDHash(e.SessionID), ""
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	select {
	case t.queue <- e:
	default:
		t.dropped.Add(1)
		t.m.droppedFull.Inc()
	}
}

// Stats returns the Trail's counters.
func (t *Trail) Stats() Stats {
	return Stats{
		Queued:    len(t.queue),
		Published: t.published.Load(),
		Dropped:   t.dropped.Load(),
		Failed:    t.failed.Load(),
		Abandoned: t.abandoned.Load(),
	}
}

// Run publishes queued entries until ctx is cancelled, then drains: it
// publishes what is queued and waits for the acknowledgements, for at most
// DrainTimeout. It returns nil after a complete drain, ErrDrainIncomplete
// (wrapped, with counts) when the deadline cut it short, and ErrRunning if
// another Run is active. Run starts no goroutines.
func (t *Trail) Run(ctx context.Context) error {
	if !t.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer t.running.Store(false)
	p := newPublisher(t)
	defer p.stop()
	p.loop(ctx.Done(), false)

	dctx, cancel := drainContext(t.o.DrainTimeout)
	defer cancel()
	if p.loop(dctx.Done(), true) {
		return nil
	}
	queued := len(t.queue)
	for range queued {
		<-t.queue
	}
	lost := uint64(queued + len(p.window))
	t.abandoned.Add(lost)
	t.m.droppedShutdown.Add(float64(lost))
	t.log.Warn().Int("queued", queued).Int("unacknowledged", len(p.window)).Dur("drain_timeout", t.o.DrainTimeout).Msg("drain deadline passed, entries abandoned")
	return fmt.Errorf("%w: %d queued and %d unacknowledged entries abandoned after %s", ErrDrainIncomplete, queued, len(p.window), t.o.DrainTimeout)
}
