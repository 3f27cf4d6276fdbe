package natsnode

import (
	"github.com/nats-io/nats-server/v2/server"
)

// Names the permission sets are written for: the defaults of packages
// events, sessionstore and calltrail.
const (
	EventStream     = "FLEETGATE_EVENTS"
	EventSubjects   = "fleetgate.events.>"
	SnapshotBucket  = "fleetgate_snapshots"
	SessionBucket   = "fleetgate_sessions"
	CallStream      = "FLEETGATE_CALLS"
	CallSubjects    = "fleetgate.calls.>"
	LeaderBucket    = "fleetgate_leader"
	EdgeInboxPrefix = "_INBOX_edge"
)

// EdgePublish is the publish allow-list of an edge: read the event stream
// and the snapshots, read and write session records, publish the call
// trail. Everything else is refused, in particular publishing events,
// the leader bucket, any stream or consumer deletion or purge, and
// consumer deletion (ephemeral consumers expire on their own). Each entry
// is a subject the nats.go jetstream client really publishes for an
// operation an edge makes.
func EdgePublish() []string {
	return []string{
		// event log: stream info, ordered consumers, reads by sequence
		"$JS.API.STREAM.INFO." + EventStream,
		"$JS.API.CONSUMER.CREATE." + EventStream + ".>",
		"$JS.API.CONSUMER.MSG.NEXT." + EventStream + ".*",
		"$JS.API.STREAM.MSG.GET." + EventStream,
		// snapshots: KeyValue handle, Get, Watch and its flow control
		"$JS.API.STREAM.INFO.KV_" + SnapshotBucket,
		"$JS.API.DIRECT.GET.KV_" + SnapshotBucket + ".>",
		"$JS.API.CONSUMER.CREATE.KV_" + SnapshotBucket + ".>",
		"$JS.FC.KV_" + SnapshotBucket + ".>",
		// session records: handle, Get, Create/Update/Delete (publishes to
		// the key subjects), Watch
		"$JS.API.STREAM.INFO.KV_" + SessionBucket,
		"$JS.API.DIRECT.GET.KV_" + SessionBucket + ".>",
		"$JS.API.CONSUMER.CREATE.KV_" + SessionBucket + ".>",
		"$JS.FC.KV_" + SessionBucket + ".>",
		"$KV." + SessionBucket + ".>",
		// the call trail: stream info (attach) and the entries
		"$JS.API.STREAM.INFO." + CallStream,
		CallSubjects,
	}
}

// EdgeSubscribe is the subscribe allow-list of an edge: only replies to
// its own inbox prefix, so it cannot read other clients' replies.
func EdgeSubscribe(inboxPrefix string) []string {
	if inboxPrefix == "" {
		inboxPrefix = EdgeInboxPrefix
	}
	return []string{inboxPrefix + ".>"}
}

// EdgePermissions is the server-side permission set of an edge user with
// the given inbox prefix (default EdgeInboxPrefix).
func EdgePermissions(inboxPrefix string) *server.Permissions {
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: EdgePublish()},
		Subscribe: &server.SubjectPermission{Allow: EdgeSubscribe(inboxPrefix)},
	}
}

// LogNames are the names of one event log: its stream and its snapshot
// bucket (a region's own log, or a local mirror of another region's).
type LogNames struct {
	Stream, SnapshotBucket string
}

// EdgeReadPublish is the publish allow-list that lets an edge read the
// event log l (stream info, ordered consumers, reads by sequence, snapshot
// Get and Watch): the read half of EdgePublish, for another log.
func EdgeReadPublish(l LogNames) []string {
	return []string{
		"$JS.API.STREAM.INFO." + l.Stream,
		"$JS.API.CONSUMER.CREATE." + l.Stream + ".>",
		"$JS.API.CONSUMER.MSG.NEXT." + l.Stream + ".*",
		"$JS.API.STREAM.MSG.GET." + l.Stream,
		"$JS.API.STREAM.INFO.KV_" + l.SnapshotBucket,
		"$JS.API.DIRECT.GET.KV_" + l.SnapshotBucket + ".>",
		"$JS.API.CONSUMER.CREATE.KV_" + l.SnapshotBucket + ".>",
		"$JS.FC.KV_" + l.SnapshotBucket + ".>",
	}
}

// edgePermissionsWith is EdgePermissions plus reads of the logs.
func edgePermissionsWith(inboxPrefix string, logs []LogNames) *server.Permissions {
	p := EdgePermissions(inboxPrefix)
	for _, l := range logs {
		p.Publish.Allow = append(p.Publish.Allow, EdgeReadPublish(l)...)
	}
	return p
}
