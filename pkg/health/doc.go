// Package health decides the health status of MCP backends and when a
// change of their advertisability is published.
//
// It holds two pure state machines, in the style of etcd-raft's RawNode:
// the caller steps them with inputs that carry their own time, then reads
// what must be done. Nothing here starts a goroutine, reads the clock or
// sleeps, so every decision is a deterministic function of its inputs.
//
//   - Tracker (one per backend) turns probe Observations into a Status:
//     healthy, degraded, unhealthy, unknown or unauthenticated. A backend is
//     advertisable when Advertisable(status) holds, that is when it is
//     healthy or degraded; Advertisable is the one predicate fleetgate uses
//     for that decision.
//   - Coalescer (one per backend) rate-limits the publication of its
//     advertisability: the first change of a quiet period is published at
//     once, further changes within the window collapse into one trailing
//     event carrying the final value, published only if it differs from the
//     last published one; that trailing event ends the burst, so the next
//     change is published at once again. With Urgent, a withdrawal is never
//     held. Any span of one window holds at most two events.
//   - Burst paces valueless batches (an edge's resyncs) by the same rule.
//
// Policy carries the configuration (the health section of the fleet
// config) and its defaults: interval 5s, timeout 2s, unhealthy_after 2,
// debounce equal to the interval.
//
// # Status rules
//
// A new backend is unknown. A successful probe makes it healthy, or
// degraded if the probe was slow (latency over half the timeout). A failed
// probe makes it unknown, and after UnhealthyAfter consecutive failures
// unhealthy; a single failure therefore withdraws a healthy backend at once
// (see Tracker for why). HTTP 401/403 makes it unauthenticated at once. A
// backend coming back from a failure, unhealthy or unauthenticated is
// degraded for one probe interval before it is healthy again.
//
// # Driving
//
// A controller's per-backend loop owns one Tracker and one Coalescer and a
// timer for the Coalescer's deadline:
//
//	tr := health.NewTracker(policy)
//	co := health.NewCoalescer(policy.Debounce, tr.Advertisable())
//	for {
//		select {
//		case obs := <-probes: // probe results, dropped connections
//			if t := tr.Step(obs); t.Changed {
//				log(t.From, t.To, t.Reason)
//			}
//			if emit, adv := co.Offer(obs.At, tr.Advertisable()); emit {
//				publish(adv) // append a catalog event
//			}
//		case now := <-timer.C:
//			if emit, adv := co.Tick(now); emit {
//				publish(adv)
//			}
//		case <-removed:
//			co.Stop()
//			return
//		}
//		if d, ok := co.Deadline(); ok {
//			timer.Reset(time.Until(d))
//		}
//	}
//
// The package itself never does any of this I/O.
package health
