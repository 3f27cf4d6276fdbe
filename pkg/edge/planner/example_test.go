package planner_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/planner"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/events"
)

// A backend comes up, then changes twice inside the window its first
// batch opened: the first change is applied at once, the two others
// together at the window's end.
func Example() {
	p := planner.New(&planner.Options{Group: "default", Separator: "_", Coalesce: 100 * time.Millisecond,
		Initial: view.Empty()})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	show := func(at time.Duration, r planner.Ready) {
		switch {
		case r.Apply && r.View != nil:
			fmt.Printf("%v: apply generation %d, %d tools, notify tools %v\n", at, r.Generation, len(r.View.Tools), r.Notify.Tools)
		case r.Apply:
			fmt.Printf("%v: apply generation %d, view unchanged\n", at, r.Generation)
		case !r.Wake.IsZero():
			fmt.Printf("%v: wait until %v\n", at, r.Wake.Sub(t0))
		}
	}
	step := func(at time.Duration, in planner.Input) {
		r := p.Step(t0.Add(at), in)
		show(at, r)
		if r.Apply { // the driver applied it
			p.Step(t0.Add(at), planner.Input{Applied: true, State: in.State})
		}
	}
	step(0, planner.Input{State: state(1, "a"), CaughtUp: true})
	step(time.Second, planner.Input{State: state(2, "a", "b")})
	step(time.Second+10*time.Millisecond, planner.Input{State: state(3, "a", "b", "c")})
	step(time.Second+50*time.Millisecond, planner.Input{State: state(4, "a", "b", "c", "d")})
	step(time.Second+100*time.Millisecond, planner.Input{State: state(4, "a", "b", "c", "d")})
	// Output:
	// 0s: apply generation 1, 1 tools, notify tools true
	// 1s: apply generation 2, 2 tools, notify tools true
	// 1.01s: wait until 1.1s
	// 1.05s: wait until 1.1s
	// 1.1s: apply generation 4, 4 tools, notify tools true
}

var states = map[uint64]*events.State{}

// state is generation gen of a fleet whose one backend, alpha, has tools.
func state(gen uint64, tools ...string) *events.State {
	if st := states[gen]; st != nil {
		return st
	}
	c := &events.Catalog{Digest: fmt.Sprint(tools)}
	for _, t := range tools {
		raw, _ := json.Marshal(map[string]any{"name": t, "inputSchema": map[string]string{"type": "object"}})
		c.Tools = append(c.Tools, raw)
	}
	b := &events.Backend{Name: "alpha", Group: "default", Status: "healthy", Advertisable: true, Catalog: c,
		Config: events.BackendConfig{URL: "http://alpha.test/mcp"}}
	st := &events.State{Generation: gen, Groups: map[string]*events.Group{
		"default": {Name: "default", Backends: map[string]*events.Backend{"alpha": b}}}}
	states[gen] = st
	return st
}
