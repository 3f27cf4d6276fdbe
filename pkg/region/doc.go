// Package region names a multi-region fleet's JetStream assets and
// follows every region's event log from one region's NATS.
//
// Each region has its own NATS (a JetStream domain named after the region),
// its own controller and its own event log: stream FLEETGATE_EVENTS_<REGION>
// on subjects fleetgate.<region>.events.> with snapshot bucket
// fleetgate_snapshots_<region> (LogOptions). Regions are joined by leaf
// connections; each region's JetStream holds a mirror of every other
// region's stream and snapshot bucket under the origin's names
// (EnsureMirrors). A mirror keeps the origin's sequence numbers, so within
// a region's log generation == sequence still holds, wherever it is read.
//
// An edge follows its own region's log and the local mirrors (Follower) and
// never talks to another region's NATS: a region cut off keeps serving what
// it last received. Its view merges the regional states (Merge) and names
// what it reflects with a Vector, one generation per region.
//
// The empty region name is the single-region fleet: LogOptions("") is nil,
// the events package defaults, and nothing here is used.
package region
