// Package kvbucket provisions the NATS KV buckets that edges write,
// hardened against the writes subject permissions cannot refuse.
//
// An edge may publish to $KV.<bucket>.> to put its records; a permission
// on the subject cannot look at headers, so on a plain KV bucket one
// Nats-Rollup: all header on the edge's own key would wipe every record
// of every edge, and the JetStream API's purge and message deletion are
// a permission mistake away. A hardened bucket's stream refuses all
// three: roll-ups are off (AllowRollup false), purges and API deletions
// denied. KV puts, gets, watches and delete markers (a put with a
// KV-Operation header) work as on any bucket; KeyValue.Purge, a roll-up,
// does not, so the packages using these buckets never call it.
//
// The stream is configured directly (jetstream.KeyValueConfig has no
// such switches and CreateOrUpdateKeyValue turns roll-ups back on):
//
//	cfg := kvbucket.Hardened("fleetgate_edges", jetstream.StreamConfig{MaxBytes: 4 << 20, ...})
//	err := kvbucket.Provision(ctx, js, cfg)
//
// The controller provisions the buckets at its start, to its flags; its
// Keeper (keeper.go) restores, while it leads, the settings of a bucket
// whose stream an update loosened since (drift.go), and leaves the
// others an operator changed.
package kvbucket

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Hardened is the stream of KV bucket name with the limits of limits
// (MaxBytes, MaxMsgSize, MaxAge, Discard, Replicas, Storage, Description,
// AllowMsgTTL, Duplicates) and the KV and hardening settings: one record
// per key, direct gets, no roll-ups, purges or API deletions.
func Hardened(name string, limits jetstream.StreamConfig) jetstream.StreamConfig {
	cfg := limits
	cfg.Name = "KV_" + name
	cfg.Subjects = []string{"$KV." + name + ".>"}
	cfg.MaxMsgsPerSubject = 1
	cfg.Replicas = max(cfg.Replicas, 1)
	cfg.AllowDirect = true
	cfg.AllowRollup, cfg.DenyDelete, cfg.DenyPurge = false, true, true
	cfg.SubjectDeleteMarkerTTL = 0 // markers would need roll-ups
	if cfg.Duplicates == 0 {
		cfg.Duplicates = 2 * time.Minute
	}
	if cfg.MaxAge > 0 && cfg.Duplicates > cfg.MaxAge {
		cfg.Duplicates = cfg.MaxAge
	}
	return cfg
}

// Provision creates the stream of cfg (from Hardened), or brings an
// existing one to cfg's limits, replicas and hardening in place: one an
// earlier version made as a plain KV bucket is hardened, one made on a
// single node gets the replicas of the cluster it now runs on. The server refuses what
// it cannot change (a stream's storage, for one).
func Provision(ctx context.Context, js jetstream.StreamManager, cfg jetstream.StreamConfig) error {
	st, err := js.Stream(ctx, cfg.Name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			return fmt.Errorf("provision bucket stream %s: %w", cfg.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("provision bucket stream %s: %w", cfg.Name, err)
	}
	cur := st.CachedInfo().Config
	if Current(cur, cfg) {
		return nil
	}
	upd := cur
	upd.MaxBytes, upd.MaxMsgSize, upd.MaxAge, upd.Discard = cfg.MaxBytes, cfg.MaxMsgSize, cfg.MaxAge, cfg.Discard
	upd.MaxMsgsPerSubject, upd.AllowRollup, upd.DenyPurge, upd.DenyDelete = 1, false, true, true
	upd.Replicas, upd.AllowDirect = cfg.Replicas, true   // edges read by direct gets only
	upd.AllowMsgTTL = upd.AllowMsgTTL || cfg.AllowMsgTTL // the server cannot turn it off
	upd.SubjectDeleteMarkerTTL = 0
	if upd.MaxAge > 0 && upd.Duplicates > upd.MaxAge { // the server wants the window within MaxAge
		upd.Duplicates = upd.MaxAge
	}
	if upd.Discard != jetstream.DiscardNew {
		upd.DiscardNewPerSubject = false // the server refuses it with another policy
	}
	if _, err := js.UpdateStream(ctx, upd); err != nil {
		return fmt.Errorf("provision bucket stream %s: update limits and hardening: %w", cfg.Name, err)
	}
	return nil
}
