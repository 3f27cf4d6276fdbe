package calls

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	goauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetgate/fleetgate/pkg/auth"
	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/inputstate"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/policy"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// Options configure a Plane. View, Backend and Generation are required.
type Options struct {
	Group string // the group the edge serves
	// Optimizer makes the plane answer the optimizer mode's tools/list and
	// meta-tools (find_tool, call_tool: optimizer.go).
	Optimizer bool
	Edge      string // the edge's id (call trail, spans)
	// IdentityHeader names the header of the caller's identity when no
	// token names it ("" for none).
	IdentityHeader string
	Pool           *backend.Pool
	// View is the view served now; Backend the config of an advertisable
	// backend; Generation the generation at which a view was last found
	// current.
	View       func() *view.Served
	Backend    func(name string) (events.BackendConfig, bool)
	Generation func(*view.Served) uint64
	// InputState seals the requestState of input-required results for
	// clients (stateless.go), under the key every edge of the group
	// shares; nil: a key of this process alone (a retry that reaches
	// another edge is refused).
	InputState *inputstate.Sealer
	// Owners hashes a caller's identity into the call trail's owner, as
	// the session records do; nil: unkeyed (sessionstore.OwnerHash).
	Owners *sessionstore.OwnerKey
	// Trail records every tools/call; nil records none.
	Trail *calltrail.Trail
	// HeldWait is how long the input request of a call held for a
	// 2026-07-28 client waits for the retry that answers it, and the
	// call's result for a request to take it (held.go); default
	// DefaultHeldWait.
	HeldWait time.Duration
	// Peers forwards the retry of a call held on another edge to that
	// edge (heldpeer.go); nil: such a retry is refused naming the edge.
	// PeerWait bounds how long a forwarded retry waits for the holder's
	// answer (default DefaultPeerWait).
	Peers    HeldPeers
	PeerWait time.Duration
	Log      zerolog.Logger
	// Tracer makes the calls' spans; nil for none.
	Tracer trace.Tracer
	// Registry takes the plane's metrics; nil for none.
	Registry prometheus.Registerer
	// TasksChanged is told when a session's task table changed, and
	// SubscriptionsChanged when its resource subscriptions did (the
	// session record keeps both); nil: nobody.
	TasksChanged         func(*session.Session)
	SubscriptionsChanged func(s *session.Session, uris []string)
	// Background owns what the plane runs off a request's goroutine (a
	// backend unsubscribe): Hold before it starts (false: do not start),
	// Done when it ends. Required with subscriptions.
	Background interface {
		Hold() bool
		Done()
	}
	// SignIns are the sign-ins of user_oauth backends (signin.go); nil:
	// such backends show every caller their tools, and calls go without
	// a sign-in (refused by the pool).
	SignIns SignIns
	// Separator joins a backend's name and its sign-in tools' names.
	Separator string
}

// Plane is the edge's call plane: it routes what a client asks of the
// backends (a tools/call, prompts/get, resources/read, completion) by the
// view served now, to the backend that owns it, as the policy in force
// lets the caller see it, and records each call in the call trail.
type Plane struct {
	o            Options
	subs         subscriptions
	pol          atomic.Pointer[policy.Policy]
	guard        *guard
	inflight     atomic.Int64
	unknownCalls prometheus.Counter
	findSeconds  prometheus.Histogram
	tracer       trace.Tracer
	traced       bool
	sealer       *inputstate.Sealer
	held         heldCalls
	heldCtx      context.Context // of held calls; ended by Close
	heldStop     context.CancelFunc
	record       func(calltrail.Entry) // the trail's Record; nil: none kept
	signIns      signInViews
	waits        signInWaits // retries waiting for a sign-in (signinresume.go)
}

// New returns a plane with options o.
func New(o Options) *Plane {
	reg := o.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	pl := &Plane{o: o, guard: newGuard(reg),
		unknownCalls: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetgate_edge_unavailable_calls_total",
			Help: "Calls, prompt gets, resource reads and completions of a name no advertisable backend serves (or the policy hides)."})}
	pl.findSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "fleetgate_edge_find_tool_seconds",
		Help:    "Time to answer a valid find_tool call: index search and result encoding.",
		Buckets: prometheus.ExponentialBuckets(0.00005, 2, 14)})
	reg.MustRegister(pl.unknownCalls, pl.findSeconds)
	if o.Tracer != nil {
		pl.tracer, pl.traced = o.Tracer, true
	}
	pl.heldCtx, pl.heldStop = context.WithCancel(context.Background())
	if o.Trail != nil {
		pl.record = o.Trail.Record
	}
	if pl.sealer = o.InputState; pl.sealer == nil {
		pl.sealer = inputstate.NewRandom()
	}
	return pl
}

// SetPolicy makes p the policy in force (nil: none, everything allowed)
// and returns the one it replaces.
func (pl *Plane) SetPolicy(p *policy.Policy) (old *policy.Policy) { return pl.pol.Swap(p) }

// Policy is the policy in force; nil for none.
func (pl *Plane) Policy() *policy.Policy { return pl.pol.Load() }

// Visibility is what p lets sub see of items (cached).
func (pl *Plane) Visibility(p *policy.Policy, sub policy.Subject, items *policy.ItemSet) *policy.Visibility {
	return pl.guard.cache.Visible(p, sub, items)
}

// Begin counts one request routed to a backend in progress; End ends it.
func (pl *Plane) Begin() { pl.inflight.Add(1) }

// End ends a request Begin counted.
func (pl *Plane) End() { pl.inflight.Add(-1) }

// Inflight is how many requests routed to backends are in progress.
func (pl *Plane) Inflight() int64 { return pl.inflight.Load() }

// Unknown counts a request for a name no advertisable backend serves.
func (pl *Plane) Unknown() { pl.unknownCalls.Inc() }

// IdentityOf is the caller's identity of a request inside the go-sdk:
// its token's user id, else the identity header's value.
func (pl *Plane) IdentityOf(x *mcp.RequestExtra) string {
	if x == nil {
		return ""
	}
	if x.TokenInfo != nil && x.TokenInfo.UserID != "" {
		return x.TokenInfo.UserID
	}
	if pl.o.IdentityHeader == "" || x.Header == nil {
		return ""
	}
	return strings.TrimSpace(x.Header.Get(pl.o.IdentityHeader))
}

// ClaimsKey is the key of a verified token's identity in TokenInfo.Extra.
const ClaimsKey = backend.IdentityKey

// TokenIdentity is the verified identity a TokenInfo carries; nil for
// none.
func TokenIdentity(ti *goauth.TokenInfo) *auth.Identity {
	if ti == nil {
		return nil
	}
	id, _ := ti.Extra[ClaimsKey].(*auth.Identity)
	return id
}

// CacheStats are the filtered views the plane keeps and the policy
// evaluations it made (visible sets computed).
func (pl *Plane) CacheStats() (filtered int, evaluations int) {
	pl.guard.mu.Lock()
	filtered = len(pl.guard.filtered)
	pl.guard.mu.Unlock()
	_, misses := pl.guard.cache.Stats()
	return filtered, int(misses)
}

// Refused is the count of requests the policy refused, by rule.
func (pl *Plane) Refused() *prometheus.CounterVec { return pl.guard.refused }
