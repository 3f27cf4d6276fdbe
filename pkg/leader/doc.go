// Package leader elects one leader among the controllers that share a NATS
// JetStream: a lease under one key of a KV bucket (default bucket
// "fleetgate_leader", key "controller").
//
// # The lease
//
// The value is JSON {"holder", "term", "ttl", "renewed_at"}. A free key is
// taken with Create; an expired lease with Update at the revision observed
// (compare-and-set). The term of a leadership is the KV revision of the
// write that acquired it (the acquiring write stores term 0, renewals store
// the term), so terms increase strictly from leader to leader, across
// releases and crashes, as long as the bucket is not deleted. Downstream
// writers can use the term as a fencing token.
//
// The leader renews every TTL/3 with Update at its own revision. It counts
// itself leader until 9/10 of the TTL after it sent its last successful
// write. A renewal that meets another revision, or that has not succeeded
// by then, ends its leadership at once (OnLost).
//
// A standby polls the lease every TTL/4. It never compares clocks across
// machines: it notes the local monotonic time at which it first saw a
// revision, and takes the lease over once the revision has not changed for
// the TTL stored in the lease. As a standby first sees a revision after it
// was written, its deadline is never earlier than the writer's, so two
// electors never lead at once (given clocks of similar rate: the 1/10
// margin). After a crash the lease is taken over within TTL plus one poll,
// 1.25 TTL; after a graceful stop the leader deletes its lease (at its own
// revision) and a standby takes over at its next poll. An elector that
// finds a lease under its own id, left by its previous run (a controller
// restarted with the same --id), takes it over at once: ids are unique per
// controller, so that run is gone, and the takeover moves the revision
// (the old run's renewal fails) and starts a new term.
//
// # Structure
//
// Machine holds the decisions as a pure state machine: the driver feeds it
// each operation's outcome and the local time, and it returns the next
// Action (get, create, takeover, renew, each at a time) with the change of
// leadership, if any. Elector.Run is the I/O loop that drives it against
// the KV bucket.
//
// # Use
//
//	el, err := leader.New(js, id, &leader.Options{
//		OnElected: func(term uint64) { log.Info().Uint64("term", term).Msg("leading") },
//		OnLost:    func(term uint64) { log.Warn().Uint64("term", term).Msg("not leading") },
//	})
//	go el.Run(ctx) // campaigns and renews until ctx ends, then releases
//	for {
//		lead, term, err := el.Await(ctx) // blocks until this controller leads
//		if err != nil {
//			return err
//		}
//		runLeaderDuties(lead, term) // lead is cancelled when the term ends
//	}
//
// Leader reports the current term at any moment; it turns false as soon as
// the validity of the last renewal has passed, even if Run's goroutine has
// not caught up. OnElected and OnLost run on Run's goroutine and must not
// block.
package leader
