package ledger

import (
	"context"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/convergence"
	"github.com/fleetgate/fleetgate/pkg/edge/records"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// Options configure a Ledger. Sessions is required.
type Options struct {
	Edge  string // this edge's id, written in each record
	Group string // the group served
	Mode  string // the edge's mode, written in each record
	// Optimizer: the edge serves another list than its view (no current
	// digest).
	Optimizer bool
	// NoListEvidence turns the tools/list bookkeeping off (a benchmark
	// compares its cost).
	NoListEvidence bool
	Records        *records.Recorder // nil: no store
	// Sessions are the sessions, the view served now and the state at
	// which it was last found current (Registry.Confirm).
	Sessions *session.Registry
	// Identity is the caller's identity of a request inside the go-sdk.
	Identity func(*mcp.RequestExtra) string
	// Owners hashes the identity into a record's owner; nil: unkeyed.
	Owners   *sessionstore.OwnerKey
	Log      zerolog.Logger
	Registry prometheus.Registerer
}

// Ledger keeps the evidence of the sessions of one edge.
type Ledger struct {
	o                 Options
	generationLag     prometheus.Histogram
	signalToConverged prometheus.Histogram
}

// New returns the ledger of o, its collectors registered on o.Registry.
func New(o *Options) *Ledger {
	l := &Ledger{o: *o,
		generationLag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "fleetgate_edge_session_generation_lag",
			Help:    "Per session, when a new view is applied: generations its latest tools/list traversal trails (convergence.GenerationLag).",
			Buckets: []float64{0, 1, 2, 5, 10, 20, 50, 100, 500}}),
		signalToConverged: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "fleetgate_edge_signal_to_converged_seconds",
			Help:    "Time from a tools/list_changed sent to a session to the traversal that made it converge.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
	}
	o.Registry.MustRegister(l.generationLag, l.signalToConverged,
		&verdictCollector{reg: o.Sessions, desc: prometheus.NewDesc("fleetgate_edge_sessions_by_verdict",
			"Live sessions on this edge by convergence verdict.", []string{"verdict"}, nil)})
	return l
}

// Initialized starts the record of a session whose initialize the go-sdk
// accepted (not of a replayed one: that record exists) and, with a
// store, writes it before the initialize response leaves.
func (l *Ledger) Initialized(s *session.Session, r mcp.Request, ir *mcp.InitializeResult) {
	recs := l.o.Records
	if recs != nil {
		if _, replay := recs.Replaying.Load(s.ID()); replay {
			return
		}
	}
	params, _ := json.Marshal(r.GetParams())
	clientListChanged := declaresToolsListChanged(params)
	if recs == nil {
		params = nil // only a stored record needs them (for a rebuild)
	}
	sv := s.Served()
	conv := convergence.Record{
		ProtocolVersion:   ir.ProtocolVersion,
		ClientListChanged: clientListChanged,
		ServerListChanged: ir.Capabilities != nil && ir.Capabilities.Tools != nil && ir.Capabilities.Tools.ListChanged,
	}
	conv.SetCurrent(l.CurrentDigest(sv), l.Generation(sv))
	conv.CurrentRegions = l.Regions(sv)
	now := time.Now()
	recs.Created(s, sessionstore.Record{ID: s.ID(), Owner: l.o.Owners.Hash(l.o.Identity(r.GetExtra())), Group: l.o.Group,
		Mode: sessionstore.Mode(l.o.Mode), InitializeParams: params, ProtocolVersion: conv.ProtocolVersion,
		ClientListChanged: conv.ClientListChanged, AppliedGeneration: conv.CurrentGeneration, RegistryDigest: conv.CurrentDigest,
		Edge: l.o.Edge, CreatedAt: now, LastSeen: now, Convergence: conv}, now)
}

// declaresToolsListChanged reads a tools.listChanged client capability
// (capabilities.tools or capabilities.experimental.tools). MCP 2025-11-25
// defines none; a client that opens the standalone GET stream is counted
// as declaring it too (see StreamAttached).
func declaresToolsListChanged(params json.RawMessage) bool {
	var p struct {
		Capabilities struct {
			Tools *struct {
				ListChanged bool `json:"listChanged"`
			} `json:"tools"`
			Experimental struct {
				Tools *struct {
					ListChanged bool `json:"listChanged"`
				} `json:"tools"`
			} `json:"experimental"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	c := p.Capabilities
	return c.Tools != nil && c.Tools.ListChanged || c.Experimental.Tools != nil && c.Experimental.Tools.ListChanged
}

// Generation is the generation at which sv was last found current.
func (l *Ledger) Generation(sv *view.Served) uint64 {
	gen, _ := l.o.Sessions.Evidence(sv)
	return gen
}

// Regions is the generation vector the evidence of a session served sv
// names (nil on one log): the confirmed one while sv is current.
func (l *Ledger) Regions(sv *view.Served) map[string]uint64 {
	_, regions := l.o.Sessions.Evidence(sv)
	return regions
}

// CurrentDigest is the digest a complete tools/list traversal of sv
// yields: the catalog digest of the tools as served. An optimizer edge
// serves a different list, so it has none (its verdicts are
// unverifiable).
func (l *Ledger) CurrentDigest(sv *view.Served) string {
	if l.o.Optimizer {
		return ""
	}
	digest, _ := sv.ToolDefs()
	return digest
}

// Listed records a tools/list page served to s: its definitions as the
// view holds them (what a client of the page's revision was served is
// their projection, view.Project).
func (l *Ledger) Listed(s *session.Session, cursor string, lr *view.ListToolsResult, now time.Time) {
	if l.o.NoListEvidence {
		return
	}
	sv := s.Served()
	defs := defsOf(sv)
	raws := make([]json.RawMessage, len(lr.Tools))
	for i, t := range lr.Tools {
		if raws[i] = lr.Defs[i]; raws[i] == nil {
			raws[i], _ = json.Marshal(t)
		}
	}
	holds, toConverged, observed, err := s.Record().Listed(now, cursor, raws, lr.NextCursor, defs.digestOf)
	if err != nil {
		l.o.Log.Warn().Err(err).Str("session_hash", sessionstore.IDHash(s.ID())).Msg("tools/list evidence")
	}
	if holds {
		// The client holds the current list: a tools list_changed still
		// pending for this served value is moot.
		s.DropPendingTools(sv)
	}
	if observed {
		l.signalToConverged.Observe(toConverged.Seconds())
	}
	l.o.Records.Enqueue(s)
}

// Signalled schedules the record write of the signal.
func (l *Ledger) Signalled(s *session.Session) { l.o.Records.Enqueue(s) }

// StreamAttached records that s's client opened its standalone GET stream:
// it listens for list_changed (see declaresToolsListChanged).
func (l *Ledger) StreamAttached(s *session.Session) {
	if s.Record().StreamAttached() {
		l.o.Records.Enqueue(s)
	}
}

// IdleEnded deletes the record of s, ended for idleness: it is over on
// every edge, not left for another to rebuild.
func (l *Ledger) IdleEnded(s *session.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l.o.Records.Deleted(ctx, s.ID(), s)
}

// ViewApplied records a new view given to sessions (after a resync's
// fan-out): the current digest and generation of their evidence.
func (l *Ledger) ViewApplied(targets []*session.Session, next *view.Served) {
	digest := l.CurrentDigest(next)
	for _, s := range targets {
		l.ViewAppliedTo(s, next, digest)
	}
}

// ViewAppliedTo is ViewApplied for one session, digest being
// CurrentDigest(next): a resync's fan-out calls it for each session in
// the same pass that gives it next. Safe for concurrent use.
func (l *Ledger) ViewAppliedTo(s *session.Session, next *view.Served, digest string) {
	if s.Kind() == session.KindStateless {
		return
	}
	lag := s.Record().ViewApplied(digest, next.Gen, next.Regions)
	l.generationLag.Observe(float64(lag))
	l.o.Records.Enqueue(s)
}

// Adopt gives a rebuilt session its stored record. A view that changed
// since the client last heard (its registry digest differs) is owed to it
// as a list_changed.
func (l *Ledger) Adopt(s *session.Session, rec *sessionstore.Record, rev uint64, now time.Time) {
	sv := s.Served()
	if s.Record().Adopt(rec, rev, now, l.o.Edge, l.CurrentDigest(sv), l.Generation(sv), l.Regions(sv)) {
		s.OweTools()
	}
}

// LevelSet notes the log level the client of s set, in its record too:
// its calls are the go-sdk's from now on (they relay log messages).
func (l *Ledger) LevelSet(s *session.Session, level string) {
	s.SetFlags(session.FlagLogs)
	if s.Record().SetLogLevel(level) {
		l.o.Records.Enqueue(s)
	}
}

// TasksChanged writes the task table of s into its record.
func (l *Ledger) TasksChanged(s *session.Session) {
	if t := s.Tasks(false); t != nil && s.Record().SetTasks(t.Refs()) {
		l.o.Records.Enqueue(s)
	}
}

// SubscriptionsChanged writes the resource subscriptions of s into its
// record.
func (l *Ledger) SubscriptionsChanged(s *session.Session, uris []string) {
	if s.Record().SetSubscriptions(uris) {
		l.o.Records.Enqueue(s)
	}
}
