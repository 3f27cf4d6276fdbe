package health

import (
	"fmt"
	"time"
)

// Result is the outcome of one probe.
type Result int

// Probe outcomes. The zero Result is not valid; Step treats any value other
// than these three as a Failure so that a malformed observation can never
// make a backend advertisable.
const (
	// OK: the backend answered the probe correctly.
	OK Result = iota + 1
	// Failure: the probe failed (connection refused or dropped, timeout,
	// protocol error, HTTP 5xx, ...).
	Failure
	// AuthFailure: the backend rejected the gateway's credentials
	// (HTTP 401 or 403).
	AuthFailure
)

func (r Result) String() string {
	switch r {
	case OK:
		return "ok"
	case Failure:
		return "failure"
	case AuthFailure:
		return "auth-failure"
	}
	return fmt.Sprintf("Result(%d)", int(r))
}

// Observation is one probe result, or one event the controller treats as a
// probe result (a dropped backend connection is reported as a Failure at
// once, without waiting for the next probe).
type Observation struct {
	// At is when the observation was made. Times should not go backwards;
	// if they do, a recovery simply takes longer.
	At time.Time
	// Result is the outcome.
	Result Result
	// Latency is how long a successful probe took; it decides slowness.
	Latency time.Duration
	// Reason is a short human explanation of a failure ("connection
	// refused", "HTTP 403"); it is carried into the status reason.
	Reason string
	// Traceparent is the W3C trace context of the probe that made the
	// observation ("" untraced): carried into the event it causes.
	Traceparent string
}

// Transition is what one Step did to a backend's status.
type Transition struct {
	From, To Status
	// Changed is From != To.
	Changed bool
	// AdvertisabilityChanged is Advertisable(From) != Advertisable(To): the
	// backend's tools must be added to or withdrawn from the catalog views.
	AdvertisabilityChanged bool
	// Reason explains To (the same as Tracker.Reason after the step).
	Reason string
	// At is the observation's time.
	At time.Time
}

// Tracker is the health state machine of one backend. It is a pure value:
// no goroutines, no clock; feed it observations with Step and act on the
// returned Transition. A Tracker is not safe for concurrent use; the zero
// value is not usable, call NewTracker.
//
// The rules, in order of precedence for one observation:
//
//   - AuthFailure: unauthenticated at once.
//   - Failure: the consecutive-failure count grows; at Policy.UnhealthyAfter
//     or more the backend is unhealthy, below it unknown. So a single
//     failure of a healthy or degraded backend makes it unknown and
//     therefore unadvertisable immediately: a backend whose last probe (or
//     connection) failed would fail the clients calling its tools, and the
//     controller reports a dropped connection as a failure as soon as it
//     happens. UnhealthyAfter decides when the backend is declared down, not
//     when it stops being advertised.
//   - OK on a never-probed backend: healthy straight away (degraded if slow).
//   - OK after a failure, unhealthy or unauthenticated: a recovery begins at
//     this observation and the backend is degraded; it becomes healthy on the
//     first fast success at least Policy.Interval after the recovery began.
//     Any failure during the recovery cancels it.
//   - OK otherwise: healthy, or degraded if the probe was slow (latency over
//     Policy.Timeout/2). A slow probe is not a failure.
type Tracker struct {
	policy     Policy
	status     Status
	reason     string
	failures   int  // consecutive Failure results
	probed     bool // any observation at all
	recovering bool
	recoverAt  time.Time // when the current recovery began
}

// NewTracker returns a Tracker in status unknown ("not probed yet"). Zero
// fields of p take their defaults (see Policy.WithDefaults). NewTracker
// panics if p is invalid; configuration loaders validate with
// Policy.Validate or Policy.Resolve first.
func NewTracker(p Policy) *Tracker {
	if err := p.Validate(); err != nil {
		panic(fmt.Sprintf("health.NewTracker: %v", err))
	}
	return &Tracker{
		policy: p.WithDefaults(),
		status: Unknown,
		reason: "not probed yet",
	}
}

// Status returns the current status.
func (t *Tracker) Status() Status { return t.status }

// Advertisable reports Advertisable(t.Status()).
func (t *Tracker) Advertisable() bool { return Advertisable(t.status) }

// Reason explains the current status in one line.
func (t *Tracker) Reason() string { return t.reason }

// ConsecutiveFailures returns the number of Failure results since the last
// OK or AuthFailure.
func (t *Tracker) ConsecutiveFailures() int { return t.failures }

// Policy returns the policy in force, defaults applied.
func (t *Tracker) Policy() Policy { return t.policy }

// Step applies one observation and reports the resulting transition. It
// always returns a Transition, with Changed false when the status stayed.
func (t *Tracker) Step(o Observation) Transition {
	from := t.status
	switch o.Result {
	case OK:
		t.stepOK(o)
	case AuthFailure:
		t.failures = 0
		t.recovering = false
		t.set(Unauthenticated, withWhy("authentication rejected", o.Reason))
	default:
		t.stepFailure(o)
	}
	t.probed = true
	return Transition{
		From:                   from,
		To:                     t.status,
		Changed:                from != t.status,
		AdvertisabilityChanged: Advertisable(from) != Advertisable(t.status),
		Reason:                 t.reason,
		At:                     o.At,
	}
}

func (t *Tracker) stepFailure(o Observation) {
	why := o.Reason
	if o.Result != Failure {
		why = withWhy(fmt.Sprintf("invalid probe result %v", o.Result), o.Reason)
	}
	t.failures++
	t.recovering = false
	n, limit := t.failures, t.policy.UnhealthyAfter
	if n >= limit {
		t.set(Unhealthy, withWhy(fmt.Sprintf("%d consecutive probe failures", n), why))
		return
	}
	t.set(Unknown, withWhy(fmt.Sprintf("probe failed (%d of %d failures before unhealthy)", n, limit), why))
}

func (t *Tracker) stepOK(o Observation) {
	t.failures = 0
	// A recovery begins when a success follows anything unadvertisable
	// except the initial, never-probed unknown.
	if !t.recovering && t.probed && !Advertisable(t.status) {
		t.recovering = true
		t.recoverAt = o.At
	}
	if t.recovering && o.At.Sub(t.recoverAt) >= t.policy.Interval {
		t.recovering = false // a slow probe now still reads degraded below
	}
	slow := o.Latency > t.policy.slowAfter()
	switch {
	case slow:
		t.set(Degraded, fmt.Sprintf("slow probe: latency %v over %v (half the timeout)", o.Latency, t.policy.slowAfter()))
	case t.recovering:
		t.set(Degraded, fmt.Sprintf("recovering: probes must succeed for %v before healthy", t.policy.Interval))
	default:
		t.set(Healthy, "probe succeeded")
	}
}

func (t *Tracker) set(s Status, reason string) {
	t.status = s
	t.reason = reason
}

// withWhy appends the observation's own reason, if any, to a summary.
func withWhy(summary, why string) string {
	if why == "" {
		return summary
	}
	return summary + ": " + why
}
