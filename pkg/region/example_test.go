package region_test

import (
	"fmt"
	"time"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/region"
)

// A group spanning two regions: each region's controller publishes its own
// backend; the merged view holds both and names both generations.
func ExampleMerge() {
	at := time.Unix(1700000000, 0)
	state := func(backend string) *events.State {
		ev := events.NewBackendAdded(at, "shared", backend, events.BackendConfig{URL: "http://" + backend + ".internal/mcp"})
		ev.Generation = 1
		s, _ := events.Apply(events.NewState(), ev)
		return s
	}
	view, vec, conflicts := region.Merge(map[string]*events.State{"eu": state("beta"), "us": state("alpha")})
	fmt.Println(view.Group("shared").BackendNames(), vec, len(conflicts))
	fmt.Println(region.LogOptions("us", 3).Stream, region.LogOptions("", 0) == nil)
	// Output:
	// [alpha beta] eu=1,us=1 0
	// FLEETGATE_EVENTS_US true
}
