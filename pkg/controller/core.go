package controller

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/health"
	"github.com/fleetgate/fleetgate/pkg/policy"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// BackendKey names a backend in the fleet.
type BackendKey struct{ Group, Name string }

func (k BackendKey) String() string { return k.Group + "/" + k.Name }

// Discovered is a backend's catalog as the prober found it.
type Discovered struct {
	Tools, Resources, Prompts []json.RawMessage
	ResourceTemplates         []json.RawMessage
	InvalidTools              []events.InvalidTool
	Digest                    string
	// ProtocolVersion is the stateless revision the backend answered
	// server/discover with ("" for none).
	ProtocolVersion string
	// StatelessOnly: the backend refused initialize (prober.Catalog).
	StatelessOnly bool
	// Stateless are the lists of the stateless generation where they
	// differ (prober.Catalog).
	Stateless *catalog.EraLists
}

// Core is the controller's decision logic: a pure state machine in the
// style of raft's RawNode. It holds the desired membership, a health
// tracker and an advertisability coalescer per backend, the last discovered
// catalogs and what the event log has been told (the expected state). The
// driver feeds it inputs with the current time and then takes the events
// to append with Ready; no goroutines, no clock inside.
//
// Reconciliation is level-based: Ready compares the desired and observed
// state with the expected state of the log and emits only the difference,
// so an input delivered twice, or a restart that reloads the log, never
// produces a duplicate event.
type Core struct {
	policy   health.Policy
	desired  map[BackendKey]events.BackendConfig
	backends map[BackendKey]*backendState
	// expected is the log's state once every event Ready returned is
	// stored (generations aside).
	expected map[BackendKey]*expectedBackend
	// pol is the desired and expected tool policy.
	pol policyState
	// names is the desired and expected naming of each group.
	names namingState
}

// policyState reconciles the fleet's authorization section like the
// membership: desired (the config, or the last PUT) against expected
// (the log), compared by digest ("" for no section).
type policyState struct {
	known          bool // SetPolicy was called: until then Ready leaves the log's policy alone
	desired        *policy.Section
	desiredDigest  string
	expectedDigest string
}

type backendState struct {
	tracker *health.Tracker
	coal    *health.Coalescer[bool]
	catalog *Discovered
	// eff is the last offered advertisability and effAt the time of the
	// input that made it so: the age of a health event's change.
	eff   bool
	effAt time.Time
	// trace is the traceparent of the last traced observation: the cause
	// its health event carries (package tracing).
	trace string
}

type expectedBackend struct {
	config       events.BackendConfig
	status       string
	advertisable bool
	catalog      *Discovered
}

// NewCore returns a core whose expected state is the log's current state
// (nil for an empty log) and whose desired membership is empty.
func NewCore(policy health.Policy, logState *events.State) *Core {
	c := &Core{
		policy:   policy,
		desired:  map[BackendKey]events.BackendConfig{},
		backends: map[BackendKey]*backendState{},
		expected: map[BackendKey]*expectedBackend{},
	}
	if logState == nil {
		return c
	}
	if a := logState.Authorization; a != nil {
		c.pol.expectedDigest = a.Digest
	}
	c.names.expected = expectedNaming(logState)
	for _, g := range logState.Groups {
		for _, b := range g.Backends {
			e := &expectedBackend{config: b.Config, status: b.Status, advertisable: b.Advertisable}
			if b.Catalog != nil {
				e.catalog = &Discovered{Tools: b.Catalog.Tools, Resources: b.Catalog.Resources,
					Prompts: b.Catalog.Prompts, ResourceTemplates: b.Catalog.ResourceTemplates, Digest: b.Catalog.Digest, InvalidTools: b.Catalog.InvalidTools,
					ProtocolVersion: b.Catalog.ProtocolVersion, StatelessOnly: b.Catalog.StatelessOnly, Stateless: b.Catalog.Stateless}
			}
			c.expected[BackendKey{g.Name, b.Name}] = e
		}
	}
	return c
}

// SetDesired replaces the desired membership. Backends that leave lose
// their health state; new ones start unknown.
func (c *Core) SetDesired(desired map[BackendKey]events.BackendConfig) {
	c.desired = maps.Clone(desired)
	for k := range c.backends {
		if _, ok := desired[k]; !ok {
			c.backends[k].coal.Stop()
			delete(c.backends, k)
		}
	}
	for k := range desired {
		if _, ok := c.backends[k]; !ok {
			// Start from what the log says: its advertisability is the
			// coalescer's published value and its catalog stands until
			// the prober rediscovers, so a controller restart does not
			// flap a healthy backend.
			b := &backendState{tracker: health.NewTracker(c.policy)}
			initial := false
			if e := c.expected[k]; e != nil {
				initial = e.advertisable
				b.catalog = e.catalog
			}
			// A withdrawal is never held: a dead backend stays advertised
			// for no one; a recovery is coalesced.
			b.coal = health.NewCoalescer(c.policy.Debounce, initial).Urgent(false)
			c.backends[k] = b
		}
	}
}

// SetPolicy sets the desired authorization section (nil: none). Ready
// publishes it when it differs from the log's, on start as after a reload
// or an admin PUT.
func (c *Core) SetPolicy(s *policy.Section) {
	c.pol.known = true
	c.pol.desired = s.Clone()
	c.pol.desiredDigest = s.Digest()
}

// Desired returns the desired membership.
func (c *Core) Desired() map[BackendKey]events.BackendConfig { return maps.Clone(c.desired) }

// Observe steps the backend's health tracker. Unknown backends are ignored
// (a late report from a prober that was just stopped).
func (c *Core) Observe(k BackendKey, o health.Observation) health.Transition {
	b := c.backends[k]
	if b == nil {
		return health.Transition{}
	}
	tr := b.tracker.Step(o)
	if o.Traceparent != "" {
		b.trace = o.Traceparent
	}
	b.offer(o.At, c.effective(b))
	return tr
}

// offer passes the backend's effective advertisability to its coalescer
// and notes when it last changed.
func (b *backendState) offer(at time.Time, eff bool) {
	if eff != b.eff || b.effAt.IsZero() {
		b.eff, b.effAt = eff, at
	}
	b.coal.Offer(at, eff)
}

// ObservedAt returns when the input that made a backend's current
// advertisability was observed (zero for an unknown backend): a health
// event's age at the probe.
func (c *Core) ObservedAt(k BackendKey) time.Time {
	if b := c.backends[k]; b != nil {
		return b.effAt
	}
	return time.Time{}
}

// Catalog records a backend's discovered catalog.
func (c *Core) Catalog(k BackendKey, d Discovered, now time.Time) {
	b := c.backends[k]
	if b == nil {
		return
	}
	b.catalog = &d
	b.offer(now, c.effective(b))
}

// effective is what the fleet should be told: the one advertisability
// predicate, and only once the backend's catalog is known, so that edges
// never advertise a backend whose tools they cannot list yet.
func (c *Core) effective(b *backendState) bool {
	return b.tracker.Advertisable() && b.catalog != nil
}

// Tick fires due trailing edges of the coalescers.
func (c *Core) Tick(now time.Time) {
	for _, b := range c.backends {
		b.coal.Tick(now)
	}
}

// Deadline is when the driver must call Tick next.
func (c *Core) Deadline() (time.Time, bool) {
	var best time.Time
	found := false
	for _, b := range c.backends {
		if d, ok := b.coal.Deadline(); ok && (!found || d.Before(best)) {
			best, found = d, true
		}
	}
	return best, found
}

// Status returns a backend's live health status and reason.
func (c *Core) Status(k BackendKey) (health.Status, string, bool) {
	b := c.backends[k]
	if b == nil {
		return "", "", false
	}
	return b.tracker.Status(), b.tracker.Reason(), true
}

// Ready returns the events that bring the log to the desired and observed
// state, in a deterministic order (removals, additions, naming, catalogs,
// health), and records them as expected.
//
// A policy change comes first: it applies to the whole fleet, and the
// backends the same batch adds are not advertised before later events.
func (c *Core) Ready(now time.Time) []*eventspb.Event {
	var out []*eventspb.Event
	if c.pol.known && c.pol.desiredDigest != c.pol.expectedDigest {
		out = append(out, events.NewPolicyChanged(now, c.pol.desired))
		c.pol.expectedDigest = c.pol.desiredDigest
	}
	for _, k := range sortedKeys(c.expected) {
		if _, ok := c.desired[k]; !ok {
			out = append(out, events.NewBackendRemoved(now, k.Group, k.Name, c.expected[k].config))
			delete(c.expected, k)
		}
	}
	for _, k := range sortedKeys(c.desired) {
		cfg := c.desired[k]
		e := c.expected[k]
		if e == nil || !e.config.Equal(cfg) {
			out = append(out, events.NewBackendAdded(now, k.Group, k.Name, cfg))
			if e == nil {
				e = &expectedBackend{status: string(health.Unknown)}
				c.expected[k] = e
			}
			e.config = cfg
		}
	}
	// Naming after the additions (a spec lists the group's backends) and
	// before the catalogs, so that no catalog is ever named by a stale spec.
	out = append(out, c.namingEvents(now)...)
	for _, k := range sortedKeys(c.desired) {
		b, e := c.backends[k], c.expected[k]
		if b.catalog != nil && !sameCatalog(b.catalog, e.catalog) {
			ev, err := events.NewCatalogChanged(now, k.Group, k.Name, &events.Catalog{
				Tools: b.catalog.Tools, Resources: b.catalog.Resources, Prompts: b.catalog.Prompts,
				ResourceTemplates: b.catalog.ResourceTemplates, Digest: b.catalog.Digest, InvalidTools: b.catalog.InvalidTools,
				ProtocolVersion: b.catalog.ProtocolVersion, StatelessOnly: b.catalog.StatelessOnly, Stateless: b.catalog.Stateless})
			if err == nil {
				out = append(out, ev)
				e.catalog = b.catalog
			}
		}
	}
	for _, k := range sortedKeys(c.desired) {
		b, e := c.backends[k], c.expected[k]
		adv := b.coal.Published()
		if adv != e.advertisable {
			to := string(b.tracker.Status())
			ev := events.NewHealthChanged(now, k.Group, k.Name, e.status, to, adv, b.tracker.Reason())
			ev.Traceparent = b.trace
			out = append(out, ev)
			e.status, e.advertisable = to, adv
		}
	}
	return out
}

func sameCatalog(a, b *Discovered) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Digest == b.Digest && a.ProtocolVersion == b.ProtocolVersion && a.StatelessOnly == b.StatelessOnly && sameDefs(a.Resources, b.Resources) && sameDefs(a.Prompts, b.Prompts) &&
		sameDefs(a.ResourceTemplates, b.ResourceTemplates) &&
		len(a.InvalidTools) == len(b.InvalidTools) && sameEra(a.Stateless, b.Stateless)
}

// sameEra reports whether two catalogs' lists of the stateless
// generation are the same.
func sameEra(a, b *catalog.EraLists) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Digest == b.Digest && sameDefs(a.Tools, b.Tools) && sameDefs(a.Resources, b.Resources) &&
		sameDefs(a.Prompts, b.Prompts) && sameDefs(a.ResourceTemplates, b.ResourceTemplates)
}

func sameDefs(a, b []json.RawMessage) bool {
	return slices.EqualFunc(a, b, func(x, y json.RawMessage) bool { return bytes.Equal(x, y) })
}

func sortedKeys[V any](m map[BackendKey]V) []BackendKey {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b BackendKey) int {
		if a.Group != b.Group {
			return cmpString(a.Group, b.Group)
		}
		return cmpString(a.Name, b.Name)
	})
	return keys
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
