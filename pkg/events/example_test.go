package events_test

import (
	"fmt"
	"time"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// Apply folds events into the fleet state; redelivered events are no-ops.
func ExampleApply() {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	added := events.NewBackendAdded(at, "default", "alpha", events.BackendConfig{URL: "http://127.0.0.1:9101/mcp", Transport: "streamable-http"})
	added.Generation = 1
	up := events.NewHealthChanged(at, "default", "alpha", "unknown", "healthy", true, "probe ok")
	up.Generation = 2

	s := events.NewState()
	s, _ = events.Apply(s, added)
	s, _ = events.Apply(s, up)
	s, _ = events.Apply(s, added) // redelivery of generation 1: no-op
	b := s.Backend("default", "alpha")
	fmt.Println(s.Generation, b.Status, b.Advertisable, b.Config.URL)
	// Output: 2 healthy true http://127.0.0.1:9101/mcp
}
