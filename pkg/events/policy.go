package events

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/fleetgate/fleetgate/pkg/policy"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// NewPolicyChanged builds a policy-changed event carrying the fleet's
// authorization section as canonical JSON (nil: the fleet has none, and
// everything is allowed). The event has no group and no backend.
func NewPolicyChanged(at time.Time, s *policy.Section) *eventspb.Event {
	ev := envelope(at, "", "")
	ev.Kind = &eventspb.Event_PolicyChanged{PolicyChanged: &eventspb.PolicyChanged{
		Section: s.Canonical(), Digest: s.Digest(),
	}}
	return ev
}

// Authorization is the fleet's tool policy in a State: the section in
// force and the generation of the event that set it. It is immutable and
// shared by every State that follows, so the policy is compiled once per
// policy generation, on the first call to Policy.
type Authorization struct {
	// Section is nil when the fleet has no section (everything allowed).
	Section *policy.Section `json:"section"`
	// Digest is the section's digest ("" for none).
	Digest string `json:"digest,omitempty"`
	// Generation is the policy_changed event that set it.
	Generation uint64 `json:"generation"`
	// Error says why the section in the log could not be read or
	// compiled; the policy then refuses everything (fail closed).
	Error string `json:"error,omitempty"`

	once     sync.Once
	compiled *policy.Policy
}

// Policy returns the compiled policy of the state, stamped with the
// generation it took effect at: allow-all (a nil policy at generation 0)
// before any policy_changed event, and a policy that refuses everything
// when the section in the log cannot be compiled. Safe for concurrent
// use; compiled once per Authorization.
func (s *State) Policy() *policy.Policy {
	if s == nil || s.Authorization == nil {
		return nil
	}
	return s.Authorization.Policy()
}

// Policy is the compiled policy (see State.Policy).
func (a *Authorization) Policy() *policy.Policy {
	if a == nil {
		return nil
	}
	a.once.Do(func() {
		if a.Error != "" {
			a.compiled = policy.DenyAll().WithGeneration(a.Generation)
			return
		}
		p, err := policy.Compile(a.Section)
		if err != nil {
			p = policy.DenyAll()
		}
		a.compiled = p.WithGeneration(a.Generation)
	})
	return a.compiled
}

// applyPolicy folds a policy_changed event. A section that does not decode
// leaves a policy that refuses everything, and an error.
func applyPolicy(s *State, gen uint64, pc *eventspb.PolicyChanged) (*State, error) {
	next := s.withGeneration(gen)
	a := &Authorization{Generation: gen, Digest: pc.GetDigest()}
	next.Authorization = a
	if len(pc.GetSection()) == 0 {
		return next, nil
	}
	sec, err := policy.ParseJSON(pc.GetSection())
	var p *policy.Policy
	if err == nil {
		p, err = policy.Compile(sec)
	}
	if err != nil {
		a.Error = err.Error()
		return next, errorf(CodeInvalidEvent, gen, err, "apply policy_changed: the section fails closed")
	}
	a.Section = sec
	a.once.Do(func() { a.compiled = p.WithGeneration(gen) })
	return next, nil
}

// AuthorizationJSON is the payload of a policy_changed event in its JSON
// form: the section (null for none) and its digest.
type AuthorizationJSON struct {
	Digest  string          `json:"digest,omitempty"`
	Section json.RawMessage `json:"section"`
}

func authorizationJSON(pc *eventspb.PolicyChanged) (*AuthorizationJSON, error) {
	out := &AuthorizationJSON{Digest: pc.GetDigest(), Section: json.RawMessage("null")}
	if len(pc.GetSection()) == 0 {
		return out, nil
	}
	sec, err := policy.ParseJSON(pc.GetSection())
	if err != nil {
		return out, err
	}
	out.Section = sec.Canonical()
	return out, nil
}
