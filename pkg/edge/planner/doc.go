// Package planner is the edge's change path as a pure planner: from the
// fleet state the edge follows (an event log, or the merged logs of
// several regions) to what each session is given and owed.
//
// A Planner takes what its driver observed (the source's state, whether
// it caught up, the group's events read, that the last Ready was applied)
// together with the time, and returns one Ready: the state to apply, its
// policy, the backends calls may reach (what to prune), the next served
// view and its change, the oldest event time it carries and the trace
// contexts of the events it applies (Traced; Late for events noted after
// their state was applied), the generation
// or regional vector it confirms, and when to step again. It holds no
// goroutine, no clock and no lock, like health.Tracker, controller.Core
// and leader.Machine; its rules are tested by the scenario files of
// testdata/ (bursts, the leading edge, a policy change and a view change
// in one state, a region's mirror going quiet and coming back).
//
// A Loop drives it over a Source (events.Reader, region.Follower, or the
// in-memory Memory of tests):
//
//	p := planner.New(&planner.Options{Group: "default", Separator: "_",
//		Coalesce: 100 * time.Millisecond, Initial: view.Empty()})
//	loop := &planner.Loop{Planner: p, Source: reader, Apply: func(r planner.Ready) {
//		if r.PolicyChanged {
//			calls.SetPolicy(r.Policy) // in force before the view is served
//		}
//		if r.Backends != nil {
//			pool.Prune(r.Backends)
//		}
//		if r.View != nil {
//			// one pass: each session given r.View, owed r.Notify and what
//			// the policy change hides or shows it
//		}
//		confirm(r.Generation, r.Regions)
//	}}
//	err := loop.Run(ctx) // until ctx ends
//
// which amounts to:
//
//	for each signal of the source, each event noted, each Ready.Wake:
//		r := p.Step(now, planner.Input{State: src.State(), CaughtUp: src.CaughtUp(), Events: noted})
//		if r.Apply {
//			apply(r)
//			r = p.Step(now, planner.Input{Applied: true, State: src.State()})
//		}
//		wait for the next signal, or until r.Wake
//
// The edge (package edge, resync.go) applies each Ready in one pass over
// its sessions.
package planner
