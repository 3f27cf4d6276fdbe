package calls

import (
	"errors"
	"fmt"
	"sync"

	goauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/auth"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// The tool policy at the edge: the policy of the generation the edge has
// applied (events.State.Policy) decides, per caller, which tools, prompts
// and resources of the served view exist for it. What a caller may not use
// is absent from its lists and find_tool, and a call to it is refused like
// a call to an unknown name. Visible sets are cached per (subject, view,
// policy) in policy.Cache (the view's item set and the policy themselves,
// not their generations, which the logs of two regions share), and the
// served value filtered by one is cached here, so a cached caller runs no
// CEL and copies no list.

// errDenied is wrapped by the trail's error of a call the policy refused.
var errDenied = errors.New("refused by the tool policy")

// deniedError is the refusal of one item by the policy: it names the rule
// (the call trail records it) and wraps errDenied.
type deniedError struct {
	kind       policy.Kind
	name, rule string
}

func (d *deniedError) Error() string {
	return fmt.Sprintf("%s %q: %v (rule %s)", d.kind, d.name, errDenied, d.rule)
}

func (d *deniedError) Unwrap() error { return errDenied }

// guard is the edge's policy state.
type guard struct {
	cache   *policy.Cache
	refused *prometheus.CounterVec // by rule

	mu       sync.Mutex
	byToken  map[*auth.Identity]*policy.Subject // one per verified token the verifier caches
	byName   map[string]*policy.Subject
	keys     map[*policy.Visibility]visKey // the content key of each cached visible set
	filtered map[visKey]*view.Served
}

// maxGuardEntries bounds each of guard's maps; full, a map starts over.
const maxGuardEntries = 4096

func newGuard(reg prometheus.Registerer) *guard {
	g := &guard{cache: policy.NewCache(nil),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_edge_policy_refusals_total",
			Help: "Calls, prompt gets and resource reads the tool policy refused, by rule."}, []string{"rule"}),
		byToken: map[*auth.Identity]*policy.Subject{}, byName: map[string]*policy.Subject{},
		keys: map[*policy.Visibility]visKey{}, filtered: map[visKey]*view.Served{}}
	reg.MustRegister(g.refused)
	return g
}

// Subject is the policy subject of a request's caller: its verified token
// (ti), else the identity ident (an identity header's value, "" for an
// anonymous caller).
func (pl *Plane) Subject(ti *goauth.TokenInfo, ident string) *policy.Subject {
	g := pl.guard
	if id := TokenIdentity(ti); id != nil {
		g.mu.Lock()
		s, ok := g.byToken[id]
		g.mu.Unlock()
		if ok {
			return s
		}
		sub := policy.TokenSubject(id.Issuer, id.Subject, pl.o.Group, stableClaims(id.Claims))
		g.mu.Lock()
		if len(g.byToken) >= maxGuardEntries {
			clear(g.byToken)
		}
		g.byToken[id] = &sub
		g.mu.Unlock()
		return &sub
	}
	g.mu.Lock()
	s, ok := g.byName[ident]
	g.mu.Unlock()
	if ok {
		return s
	}
	sub := policy.HeaderSubject(ident, pl.o.Group)
	g.mu.Lock()
	if len(g.byName) >= maxGuardEntries {
		clear(g.byName)
	}
	g.byName[ident] = &sub
	g.mu.Unlock()
	return &sub
}

// VisibleTo is sv as the caller of a request (extra) may see it: sv itself
// without a policy, else sv filtered by the caller's visible set; the
// backends it has not signed in to replaced by their sign-in tools
// (signin.go).
func (pl *Plane) VisibleTo(sv *view.Served, x *mcp.RequestExtra) *view.Served {
	return pl.signInView(pl.policyView(sv, x), TokenInfoOf(x))
}

// policyView is sv filtered by the policy for the caller of x.
func (pl *Plane) policyView(sv *view.Served, x *mcp.RequestExtra) *view.Served {
	p := pl.pol.Load()
	if p == nil {
		return sv
	}
	vis := pl.guard.cache.Visible(p, *pl.Subject(TokenInfoOf(x), pl.IdentityOf(x)), sv.Items())
	g := pl.guard
	g.mu.Lock()
	key, ok := g.keys[vis]
	g.mu.Unlock()
	if !ok {
		key = visKeyOf(sv, vis)
		g.mu.Lock()
		if len(g.keys) >= maxGuardEntries {
			clear(g.keys)
		}
		g.keys[vis] = key
		g.mu.Unlock()
	}
	g.mu.Lock()
	f, ok := g.filtered[key]
	g.mu.Unlock()
	if ok {
		return f
	}
	f = sv.Filter(vis.Allowed)
	g.mu.Lock()
	if len(g.filtered) >= maxFiltered {
		clear(g.filtered)
	}
	g.filtered[key] = f
	g.mu.Unlock()
	return f
}

// visKey names a filtered view by what it shows: callers whose visible
// sets are equal (the same roles, refreshed tokens of one caller) share one
// filtered copy of the view.
type visKey struct {
	view *view.Served
	pol  uint64
	bits string
}

// visKeyOf is vis's key over sv.
func visKeyOf(sv *view.Served, vis *policy.Visibility) visKey {
	n := sv.Items().Len()
	bits := make([]byte, (n+7)/8)
	for i := range n {
		if vis.At(i) {
			bits[i/8] |= 1 << (i % 8)
		}
	}
	return visKey{view: sv, pol: vis.PolicyGeneration(), bits: string(bits)}
}

// maxFiltered bounds the distinct filtered views kept (each a copy of the
// view's lists): few distinct visible sets exist per view.
const maxFiltered = 256

// Allowed reports whether the caller (ti, ident) may use the item of kind
// k named name in sv; when not, refusal is the error the call trail
// records (naming the rule).
func (pl *Plane) Allowed(sv *view.Served, ti *goauth.TokenInfo, ident string, k policy.Kind, name string) (ok bool, refusal error) {
	p := pl.pol.Load()
	if p == nil {
		return true, nil
	}
	sub := pl.Subject(ti, ident)
	if pl.guard.cache.Visible(p, *sub, sv.Items()).Allowed(k, name) {
		return true, nil
	}
	rule := "default"
	if i, ok := sv.Items().Index(k, name); ok {
		if d := p.Decide(*sub, sv.Items().Item(i)); d.Rule != "" {
			rule = d.Rule
		}
	}
	pl.guard.refused.WithLabelValues(rule).Inc()
	return false, &deniedError{kind: k, name: name, rule: rule}
}

// TokenInfoOf is a request's TokenInfo, nil without one.
func TokenInfoOf(x *mcp.RequestExtra) *goauth.TokenInfo {
	if x == nil {
		return nil
	}
	return x.TokenInfo
}

// perToken are the claims every refreshed token changes: left out of the
// subject (and so of the visible-set cache key), so that a refresh costs
// no policy evaluation and no new filtered view. Rules cannot read them.
var perToken = []string{"exp", "iat", "nbf", "jti"}

// stableClaims is claims without perToken.
func stableClaims(claims map[string]any) map[string]any {
	out := make(map[string]any, len(claims))
	for k, v := range claims {
		out[k] = v
	}
	for _, k := range perToken {
		delete(out, k)
	}
	return out
}
