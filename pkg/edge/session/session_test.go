package session

import (
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/view"
)

// A change of a kind a listen stream did not subscribe to owes it
// nothing: no pending bit, no latency clock started.
func TestListenIgnoresUnsubscribedKinds(t *testing.T) {
	g := NewRegistry(nil)
	s := g.New("listen-1", KindListen, "2026-07-28", "")
	s.Listen(PendingPrompts)
	s.Apply(view.Empty(), view.Change{Tools: true}, time.Now())
	if s.Pending() != 0 || s.since.Load() != 0 {
		t.Fatalf("pending %b, since %d: want nothing owed", s.Pending(), s.since.Load())
	}
	s.Apply(&view.Served{}, view.Change{Prompts: true}, time.Now())
	if s.Pending() != PendingPrompts || s.since.Load() == 0 {
		t.Fatalf("pending %b, since %d: want the prompts notification owed", s.Pending(), s.since.Load())
	}
}
