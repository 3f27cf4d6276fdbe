package kvbucket

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A bucket stream's config compared with the one Hardened made of its
// limits (want) differs in two kinds of settings.
//
// Drift: settings that loosen the hardening or the bounds, which a
// Keeper restores. The hardening switches (roll-ups, purges, API
// deletions, subject delete markers), more than want's history per key
// or none, no MaxBytes, MaxMsgSize or MaxAge where want has one, a
// MaxAge longer than want's, another discard policy, direct gets off,
// per-message TTLs off where want has them.
//
// Left: settings an operator may set on purpose and that bound the
// bucket no less, which a Keeper leaves (and logs): a finite MaxBytes or
// MaxMsgSize other than want's (a bucket resized with nats kv edit; a
// lower MaxBytes on a DiscardOld stream evicts records at once, so
// lowering one an operator raised would lose them), a shorter MaxAge,
// other replicas. The controller's start-up Provision sets them to its
// flags again: flags are authoritative at start.

// Drift names the settings in which the stream configured as cur is
// looser than want (the stream config's JSON names), none when it bounds
// and hardens the bucket at least as much.
func Drift(cur, want jetstream.StreamConfig) []string {
	var d []string
	add := func(off bool, name string) {
		if off {
			d = append(d, name)
		}
	}
	add(unbounded(cur.MaxBytes, want.MaxBytes), "max_bytes")
	add(unbounded(int64(cur.MaxMsgSize), int64(want.MaxMsgSize)), "max_msg_size")
	add(longerAge(cur.MaxAge, want.MaxAge), "max_age")
	add(!cur.AllowDirect, "allow_direct")
	add(cur.Discard != want.Discard, "discard")
	add(moreHistory(cur.MaxMsgsPerSubject, want.MaxMsgsPerSubject), "max_msgs_per_subject")
	add(cur.AllowRollup, "allow_rollup_hdrs")
	add(!cur.DenyPurge, "deny_purge")
	add(!cur.DenyDelete, "deny_delete")
	add(!cur.AllowMsgTTL && want.AllowMsgTTL, "allow_msg_ttl")
	add(cur.SubjectDeleteMarkerTTL != 0, "subject_delete_marker_ttl")
	return d
}

// Left describes the settings in which the stream configured as cur
// differs from want without loosening it, each as "name value
// (provisioned value)", the stream config's JSON names, -1 for no limit.
func Left(cur, want jetstream.StreamConfig) []string {
	var l []string
	add := func(differs bool, name string, c, w any) {
		if differs {
			l = append(l, fmt.Sprintf("%s %v (provisioned %v)", name, c, w))
		}
	}
	cb, wb := unlimited(cur.MaxBytes), unlimited(want.MaxBytes)
	add(cb != wb && !unbounded(cur.MaxBytes, want.MaxBytes), "max_bytes", cb, wb)
	cs, ws := unlimited(int64(cur.MaxMsgSize)), unlimited(int64(want.MaxMsgSize))
	add(cs != ws && !unbounded(int64(cur.MaxMsgSize), int64(want.MaxMsgSize)), "max_msg_size", cs, ws)
	add(max(cur.MaxAge, 0) != max(want.MaxAge, 0) && !longerAge(cur.MaxAge, want.MaxAge), "max_age", max(cur.MaxAge, 0), max(want.MaxAge, 0))
	add(max(cur.Replicas, 1) != max(want.Replicas, 1), "num_replicas", max(cur.Replicas, 1), max(want.Replicas, 1))
	return l
}

// Current reports whether the stream configured as cur has exactly the
// limits, replicas and hardening of want: no Drift and nothing Left.
func Current(cur, want jetstream.StreamConfig) bool {
	return len(Drift(cur, want)) == 0 && len(Left(cur, want)) == 0
}

// Restore is cur with the settings Drift names set to want's and every
// other one as it is: what a Keeper writes.
func Restore(cur, want jetstream.StreamConfig) jetstream.StreamConfig {
	upd := cur
	if unbounded(cur.MaxBytes, want.MaxBytes) {
		upd.MaxBytes = want.MaxBytes
	}
	if unbounded(int64(cur.MaxMsgSize), int64(want.MaxMsgSize)) {
		upd.MaxMsgSize = want.MaxMsgSize
	}
	if longerAge(cur.MaxAge, want.MaxAge) {
		upd.MaxAge = want.MaxAge
		if upd.Duplicates > upd.MaxAge { // the server wants the window within MaxAge
			upd.Duplicates = min(max(want.Duplicates, 0), upd.MaxAge)
		}
	}
	if moreHistory(cur.MaxMsgsPerSubject, want.MaxMsgsPerSubject) {
		upd.MaxMsgsPerSubject = max(want.MaxMsgsPerSubject, 1)
	}
	upd.Discard = want.Discard
	if upd.Discard != jetstream.DiscardNew {
		upd.DiscardNewPerSubject = false // the server refuses it with another policy
	}
	upd.AllowDirect = true                                // edges read by direct gets only
	upd.AllowMsgTTL = upd.AllowMsgTTL || want.AllowMsgTTL // the server cannot turn it off
	upd.AllowRollup, upd.DenyPurge, upd.DenyDelete = false, true, true
	upd.SubjectDeleteMarkerTTL = 0
	return upd
}

// unbounded reports whether a size limit cur is none where want sets one.
func unbounded(cur, want int64) bool { return want > 0 && cur <= 0 }

// longerAge reports whether a MaxAge cur is none or longer where want
// sets one.
func longerAge(cur, want time.Duration) bool { return want > 0 && (cur <= 0 || cur > want) }

// moreHistory reports whether a history per key cur is unbounded or
// longer than want's (at least 1).
func moreHistory(cur, want int64) bool { return cur <= 0 || cur > max(want, 1) }

// unlimited is a stream limit as the server reports it: -1 for none.
func unlimited(v int64) int64 {
	if v <= 0 {
		return -1
	}
	return v
}
