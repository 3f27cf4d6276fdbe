package events

import (
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// statusUnknown is the status of a backend that has not been probed yet.
const statusUnknown = "unknown"

// Apply folds one event into the state and returns the new state. It is a
// pure function: s is never modified.
//
// An event at or below s.Generation is a no-op (redelivery is harmless).
// An event that cannot be applied (a health or catalog event for a backend
// the state does not hold, a payload that does not decode) returns an error
// matching ErrInvalidEvent together with s advanced to the event's
// generation, so that the caller's cursor moves on and the state is not
// corrupted.
func Apply(s *State, ev *eventspb.Event) (*State, error) {
	if s == nil {
		s = NewState()
	}
	gen := ev.GetGeneration()
	if gen <= s.Generation {
		return s, nil
	}
	switch k := ev.Kind.(type) {
	case *eventspb.Event_PolicyChanged:
		return applyPolicy(s, gen, k.PolicyChanged)
	case *eventspb.Event_NamingChanged:
		return applyNaming(s, gen, ev.GetGroup(), k.NamingChanged)
	}
	group, name := ev.GetGroup(), ev.GetBackend()
	if group == "" || name == "" {
		return s.withGeneration(gen), errorf(CodeInvalidEvent, gen, nil, "apply %s: empty group or backend", Kind(ev))
	}
	old := s.Backend(group, name)
	switch k := ev.Kind.(type) {
	case *eventspb.Event_BackendAdded:
		b := &Backend{Name: name, Group: group, Status: statusUnknown, Generation: gen}
		if old != nil {
			c := *old
			b = &c
			b.Generation = gen
		}
		b.Config = configFromProto(k.BackendAdded.GetConfig())
		return s.withBackend(gen, group, name, b), nil
	case *eventspb.Event_BackendRemoved:
		if old == nil {
			return s.withGeneration(gen), nil
		}
		return s.withBackend(gen, group, name, nil), nil
	case *eventspb.Event_HealthChanged:
		if old == nil {
			return s.withGeneration(gen), errorf(CodeInvalidEvent, gen, nil, "apply health_changed %s/%s: unknown backend", group, name)
		}
		b := *old
		b.Status = k.HealthChanged.GetTo()
		b.Advertisable = k.HealthChanged.GetAdvertisable()
		b.Reason = k.HealthChanged.GetReason()
		b.Generation = gen
		return s.withBackend(gen, group, name, &b), nil
	case *eventspb.Event_CatalogChanged:
		if old == nil {
			return s.withGeneration(gen), errorf(CodeInvalidEvent, gen, nil, "apply catalog_changed %s/%s: unknown backend", group, name)
		}
		c, err := catalogFromEvent(gen, k.CatalogChanged)
		if err != nil {
			return s.withGeneration(gen), errorf(CodeInvalidEvent, gen, err, "apply catalog_changed %s/%s", group, name)
		}
		b := *old
		b.Catalog = c
		b.Generation = gen
		return s.withBackend(gen, group, name, &b), nil
	default:
		return s.withGeneration(gen), errorf(CodeInvalidEvent, gen, nil, "apply: unknown event kind")
	}
}

// Skip returns s advanced to gen without applying anything; readers use it
// for an event that could not be decoded.
func Skip(s *State, gen uint64) *State {
	if s == nil {
		s = NewState()
	}
	if gen <= s.Generation {
		return s
	}
	return s.withGeneration(gen)
}
