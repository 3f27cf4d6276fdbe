package natsnode

import (
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Names the permission sets are written for: the defaults of packages
// events, sessionstore and calltrail.
const (
	EventStream    = "FLEETGATE_EVENTS"
	EventSubjects  = "fleetgate.events.>"
	SnapshotBucket = "fleetgate_snapshots"
	SessionBucket  = "fleetgate_sessions"
	SignInBucket   = "fleetgate_signins"
	// EdgeStatusBucket holds each edge's status record (package
	// edgestatus), read by the controller's dashboard.
	EdgeStatusBucket = "fleetgate_edges"
	CallStream       = "FLEETGATE_CALLS"
	CallSubjects     = "fleetgate.calls.>"
	LeaderBucket     = "fleetgate_leader"
	EdgeInboxPrefix  = "_INBOX_edge"
	// HeldSubjects are the subjects over which an edge forwards the retry
	// of a held call to the edge that holds it (package heldrelay):
	// fleetgate.held.<edge>, published and subscribed by edges only.
	HeldSubjects = "fleetgate.held.>"
)

// EdgePublish is the publish allow-list of an edge user of EdgeAccount:
// read the single-region event log and its snapshots through FleetAccount's
// read services (FleetAPIPrefix), read and write the session records and
// publish the call trail in EdgeAccount. Everything else is refused, in
// particular any write into FleetAccount (there is no subject that reaches
// it), consumers on the event log (reads go by sequence), stream or
// consumer deletion and purges. Each entry is a subject the nats.go
// jetstream client really publishes for an operation an edge makes.
func EdgePublish() []string { return edgePublish([]LogNames{DefaultLog}) }

func edgePublish(logs []LogNames) []string {
	var out []string
	for _, l := range logs {
		out = append(out, EdgeReadPublish(l)...)
	}
	return append(out,
		// session records: handle, Get, Create/Update/Delete (publishes to
		// the key subjects), Watch
		"$JS.API.STREAM.INFO.KV_"+SessionBucket,
		"$JS.API.DIRECT.GET.KV_"+SessionBucket+".>",
		"$JS.API.CONSUMER.CREATE.KV_"+SessionBucket+".>",
		"$JS.FC.KV_"+SessionBucket+".>",
		"$KV."+SessionBucket+".>",
		// sign-ins of user_oauth backends (package signin; the
		// controller provisions the bucket): the edges read, write and
		// delete sealed records, and watch it (the watch's consumer is
		// deleted when it stops)
		"$JS.API.STREAM.INFO.KV_"+SignInBucket,
		"$JS.API.DIRECT.GET.KV_"+SignInBucket+".>",
		"$JS.API.CONSUMER.CREATE.KV_"+SignInBucket+".>",
		"$JS.API.CONSUMER.DELETE.KV_"+SignInBucket+".>",
		"$JS.FC.KV_"+SignInBucket+".>",
		"$KV."+SignInBucket+".>",
		// the edge's status record (package edgestatus; the controller
		// provisions the bucket): bucket info and puts
		"$JS.API.STREAM.INFO.KV_"+EdgeStatusBucket,
		"$KV."+EdgeStatusBucket+".>",
		// the call trail: stream info (attach) and the entries
		"$JS.API.STREAM.INFO."+CallStream,
		CallSubjects,
		// retries of held calls, to the edge that holds the call
		HeldSubjects,
	)
}

// EdgeSubscribe is the subscribe allow-list of an edge: replies to its own
// inbox prefix only, so it cannot read other clients' replies, the
// retries of held calls forwarded to it (HeldSubjects: edges share the
// input-state key, so any edge may open any held call's state anyway),
// and the event subjects FleetAccount exports (wake-ups; the events
// themselves are read through the read services).
func EdgeSubscribe(inboxPrefix string) []string {
	return edgeSubscribe(inboxPrefix, []LogNames{DefaultLog})
}

func edgeSubscribe(inboxPrefix string, logs []LogNames) []string {
	if inboxPrefix == "" {
		inboxPrefix = EdgeInboxPrefix
	}
	out := []string{inboxPrefix + ".>", HeldSubjects}
	for _, l := range logs {
		if l.Subjects != "" {
			out = append(out, l.Subjects)
		}
	}
	return out
}

// EdgePermissions is the server-side permission set of an edge user with
// the given inbox prefix (default EdgeInboxPrefix) in EdgeAccount.
func EdgePermissions(inboxPrefix string) *server.Permissions {
	return edgePermissionsFor(inboxPrefix, []LogNames{DefaultLog})
}

func edgePermissionsFor(inboxPrefix string, logs []LogNames) *server.Permissions {
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: edgePublish(logs)},
		Subscribe: &server.SubjectPermission{Allow: edgeSubscribe(inboxPrefix, logs)},
		Response:  &server.ResponsePermission{MaxMsgs: EdgeResponseMax, Expires: EdgeResponseExpiry},
	}
}

// An edge answers the retries of held calls other edges forward to it on
// their own inboxes, which its publish allow-list does not name: it may
// answer each request it received once (NATS allow_responses), within
// EdgeResponseExpiry (heldrelay.MaxWait, the longest a holder takes).
const (
	EdgeResponseMax    = 1
	EdgeResponseExpiry = 10 * time.Minute
)

// LogNames are the names of one event log: its stream and its snapshot
// bucket (a region's own log, or a local mirror of another region's), and
// the subjects its stream binds ("" for a mirror, which binds none).
type LogNames struct {
	Stream, SnapshotBucket string
	Subjects               string
}

// EdgeReadPublish is the publish allow-list that lets an edge read the
// event log l through FleetAccount's read services: stream info, reads by
// sequence, snapshot info and direct gets.
func EdgeReadPublish(l LogNames) []string {
	return []string{
		FleetAPIPrefix + ".STREAM.INFO." + l.Stream,
		FleetAPIPrefix + ".STREAM.MSG.GET." + l.Stream,
		FleetAPIPrefix + ".STREAM.INFO.KV_" + l.SnapshotBucket,
		FleetAPIPrefix + ".DIRECT.GET.KV_" + l.SnapshotBucket,
		FleetAPIPrefix + ".DIRECT.GET.KV_" + l.SnapshotBucket + ".>",
	}
}
