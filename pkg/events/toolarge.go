package events

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// ReasonTooLarge starts the health reason of a backend whose catalog event
// could not be stored because it exceeds the NATS server's max_payload.
const ReasonTooLarge = "catalog_too_large"

// statusUnhealthy is the status a too-large catalog gives its backend (the
// name package health uses).
const statusUnhealthy = "unhealthy"

// headerAllowance is what the writer keeps free in a message for the
// headers it sets (Nats-Msg-Id, Nats-Expected-Last-Sequence): they count
// towards max_payload.
const headerAllowance = 1024

// tooLargeReason explains a refused catalog; it names sizes only, never
// the catalog's content.
func tooLargeReason(size, limit int) string {
	return fmt.Sprintf("%s: the catalog event is %d bytes, over the event limit of %d bytes (NATS max_payload); the backend's tools are withdrawn until its catalog fits",
		ReasonTooLarge, size, limit)
}

// tooLargeReplacement returns the events that stand in for ev when ev
// cannot be stored because of its size: for a catalog, an empty catalog
// (so that no edge keeps serving an older one) and a health change that
// makes the backend unadvertisable with a reason saying why. Other kinds
// have no replacement (nil): they are dropped. from is the backend's
// current status ("" when not known).
func tooLargeReplacement(ev *eventspb.Event, from string, size, limit int) []*eventspb.Event {
	if _, ok := ev.Kind.(*eventspb.Event_CatalogChanged); !ok {
		return nil
	}
	at := time.Now()
	if t := ev.GetTime(); t != nil {
		at = t.AsTime()
	}
	reason := tooLargeReason(size, limit)
	empty := envelope(at, ev.Group, ev.Backend)
	empty.Kind = &eventspb.Event_CatalogChanged{CatalogChanged: &eventspb.CatalogChanged{
		InvalidTools: []*eventspb.InvalidTool{{Name: "*", Reason: reason}},
	}}
	if from == "" {
		from = statusUnknown
	}
	return []*eventspb.Event{empty, NewHealthChanged(at, ev.Group, ev.Backend, from, statusUnhealthy, false, reason)}
}

// encodedSize is the size of ev as the writer publishes it.
func encodedSize(ev *eventspb.Event) int {
	b, err := Encode(ev)
	if err != nil {
		return 0
	}
	return len(b)
}

// tooLargeMark returns the reason a catalog stands in for a refused one,
// "" for any other catalog.
func tooLargeMark(c *Catalog) string {
	if c == nil || len(c.Tools) != 0 || len(c.InvalidTools) != 1 {
		return ""
	}
	if it := c.InvalidTools[0]; it.Name == "*" && strings.HasPrefix(it.Reason, ReasonTooLarge) {
		return it.Reason
	}
	return ""
}

// tooLargeMarkOf is tooLargeMark of a catalog event's stand-in catalog,
// "" for any other event.
func tooLargeMarkOf(ev *eventspb.Event) string {
	cc := ev.GetCatalogChanged()
	if cc == nil || len(cc.Tools) != 0 || len(cc.InvalidTools) != 1 {
		return ""
	}
	if it := cc.InvalidTools[0]; it.Name == "*" && strings.HasPrefix(it.Reason, ReasonTooLarge) {
		return it.Reason
	}
	return ""
}

// keepWithdrawn rewrites a health change that would advertise a backend
// whose catalog was refused for its size: the backend stays
// unadvertisable, with the too-large reason, until a catalog that fits
// replaces the stand-in. s is the state before ev; ev is not modified.
func keepWithdrawn(s *State, ev *eventspb.Event) *eventspb.Event {
	hc := ev.GetHealthChanged()
	if hc == nil || !hc.Advertisable {
		return ev
	}
	b := s.Backend(ev.Group, ev.Backend)
	if b == nil {
		return ev
	}
	reason := tooLargeMark(b.Catalog)
	if reason == "" {
		return ev
	}
	out := proto.Clone(ev).(*eventspb.Event)
	h := out.GetHealthChanged()
	h.Advertisable, h.Reason = false, reason
	return out
}
