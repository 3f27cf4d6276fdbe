package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/cmdline"
	"github.com/fleetgate/fleetgate/pkg/edgestatus"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/kvbucket"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
	"github.com/fleetgate/fleetgate/pkg/signin"
)

// natsAccess holds the flags of NATS credentials and TLS (the client
// side, for --nats-url and audit) and the JetStream limits the controller
// sets: the embedded node's store, the session bucket and the call trail.
type natsAccess struct {
	access       natsnode.Access
	edgesSeed    string
	edgesCreds   string
	edgeUsers    []string
	maxStore     cmdline.ByteSize
	sessionBytes cmdline.ByteSize
	callBytes    cmdline.ByteSize
}

// accessFlags defines the client flags; audit takes them too.
func (a *natsAccess) accessFlags(fs *flag.FlagSet, inboxDefault string) {
	fs.StringVar(&a.access.NkeySeed, "nats-nkey-seed", "", "authenticate to NATS with the user nkey seed in this file (an embedded node's <data-dir>/nats/edge.seed is enough for audit)")
	fs.StringVar(&a.access.Creds, "nats-creds", "", "authenticate to NATS with this .creds file (operator/JWT deployments)")
	fs.StringVar(&a.access.TLSCA, "nats-tls-ca", "", "PEM file of the CAs that sign the NATS server's certificate")
	fs.StringVar(&a.access.TLSCert, "nats-tls-cert", "", "PEM client certificate for NATS (with -nats-tls-key)")
	fs.StringVar(&a.access.TLSKey, "nats-tls-key", "", "PEM key of -nats-tls-cert")
	fs.StringVar(&a.access.InboxPrefix, "nats-inbox-prefix", inboxDefault, "prefix of this client's NATS reply subjects; must match the user's subscribe permission (extension)")
}

func (a *natsAccess) flags(fs *flag.FlagSet) {
	a.accessFlags(fs, "")
	fs.StringVar(&a.edgesSeed, "nats-edges-nkey-seed", "", "external NATS with the edge account split off: the seed of this controller's user in "+natsnode.EdgeAccount+" (session bucket, call trail); empty: the --nats-nkey-seed connection")
	fs.StringVar(&a.edgesCreds, "nats-edges-creds", "", "as -nats-edges-nkey-seed, a .creds file")
	fs.Func("nats-edge-users", "embedded NATS: more edge users to mint besides \"edge\", comma-separated names; each gets <data-dir>/nats/edge-<name>.seed and its own inbox prefix", func(v string) error {
		a.edgeUsers = nil
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				a.edgeUsers = append(a.edgeUsers, n)
			}
		}
		if len(a.edgeUsers) > 256 {
			return fmt.Errorf("%d edge users, at most 256", len(a.edgeUsers))
		}
		return nil
	})
	a.maxStore = natsnode.DefaultMaxStore
	a.sessionBytes = sessionstore.DefaultMaxBytes
	a.callBytes = calltrail.DefaultMaxBytes
	fs.Var(&a.maxStore, "nats-max-store", "JetStream file store limit of the embedded NATS server, e.g. 1GiB")
	fs.Var(&a.sessionBytes, "session-max-bytes", "size limit of the session bucket (records at most 1/64 of it, 64KiB at most); when full, the least recently written records are evicted and the event log is unaffected")
	fs.Var(&a.callBytes, "call-trail-max-bytes", "size limit of the call trail (oldest entries discarded)")
}

// edgesAccess is the access of the controller's connection to the edge
// account: the main access's TLS with the edge account credential.
func (a *natsAccess) edgesAccess() natsnode.Access {
	e := a.access
	e.NkeySeed, e.Creds, e.InboxPrefix = a.edgesSeed, a.edgesCreds, ""
	return e
}

func (a *natsAccess) check() error {
	if err := a.access.Check(); err != nil {
		return fmt.Errorf("NATS access flags: %w", err)
	}
	if a.edgesSeed != "" || a.edgesCreds != "" {
		if err := a.edgesAccess().Check(); err != nil {
			return fmt.Errorf("NATS edge account flags: %w", err)
		}
	}
	if a.sessionBytes < 1<<20 || a.callBytes < 1<<20 || a.maxStore < 16<<20 {
		return fmt.Errorf("invalid sizes: -session-max-bytes and -call-trail-max-bytes want at least 1MiB, -nats-max-store at least 16MiB")
	}
	return nil
}

// storeHeadroom is what the embedded store keeps beyond the reserved
// bounds of the event stream, the session bucket and the call trail: the
// snapshot and leader buckets.
const storeHeadroom = 64 << 20

// minMirrorBytes is the smallest bound a mirror of another region's
// stream or snapshot bucket is given: below it the embedded store is
// refused rather than mirrors that hold a few events.
const minMirrorBytes = 16 << 20

// storePlan is what the embedded store reserves: the region's own
// streams and headroom (own) and a bound for each mirror of another
// region's stream and snapshot bucket (mirrorBytes, 0 without mirrors).
type storePlan struct {
	own, mirrorBytes int64
	mirrors          int
}

// checkStore refuses an embedded store smaller than what the streams
// reserve (JetStream would refuse to create them) and sizes the mirrors of
// the other regions' logs (otherRegions of them, a stream and a snapshot
// bucket each) to what the region's own streams leave, at most
// events.DefaultMaxBytes each and at least minMirrorBytes.
func (a *natsAccess) checkStore(otherRegions int) (storePlan, error) {
	p := storePlan{own: int64(events.DefaultMaxBytes) + int64(a.sessionBytes) + int64(a.callBytes) + storeHeadroom, mirrors: 2 * otherRegions}
	if int64(a.maxStore) < p.own {
		return p, fmt.Errorf("invalid value %s for flag -nats-max-store: the event log (%s), -session-max-bytes, -call-trail-max-bytes and 64MiB for snapshots need %s",
			&a.maxStore, ptr(cmdline.ByteSize(events.DefaultMaxBytes)), ptr(cmdline.ByteSize(p.own)))
	}
	if p.mirrors == 0 {
		return p, nil
	}
	p.mirrorBytes = min((int64(a.maxStore)-p.own)/int64(p.mirrors), events.DefaultMaxBytes)
	if p.mirrorBytes < minMirrorBytes {
		return p, fmt.Errorf("invalid value %s for flag -nats-max-store: the event log (%s), -session-max-bytes, -call-trail-max-bytes and 64MiB for snapshots need %s, and the mirrors of %d other region(s) (a stream and a snapshot bucket each, at least %s apiece) %s more",
			&a.maxStore, ptr(cmdline.ByteSize(events.DefaultMaxBytes)), ptr(cmdline.ByteSize(p.own)), otherRegions,
			ptr(cmdline.ByteSize(minMirrorBytes)), ptr(cmdline.ByteSize(int64(p.mirrors)*minMirrorBytes)))
	}
	return p, nil
}

func ptr[T any](v T) *T { return &v }

// connectOptions are the connection options for access, with async
// errors (a permission refusal among them) logged.
func connectOptions(access natsnode.Access, zl zerolog.Logger, base ...nats.Option) ([]nats.Option, error) {
	opts, err := access.Options()
	if err != nil {
		return nil, err
	}
	return append(append(base, opts...), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		zl.Warn().Err(err).Msg("NATS asynchronous error")
	})), nil
}

// provision creates the session bucket, the sign-in bucket, the edges'
// status bucket and the call trail with their limits, so that edges, which may not create them,
// find them.
func (a *natsAccess) provision(ctx context.Context, js jetstream.JetStream, replicas int) error {
	if err := sessionstore.Provision(ctx, js, &sessionstore.ProvisionOptions{Replicas: replicas, MaxBytes: int64(a.sessionBytes)}); err != nil {
		return err
	}
	if err := signin.Provision(ctx, js, "", replicas); err != nil {
		return err
	}
	if err := edgestatus.Provision(ctx, js, replicas); err != nil {
		return err
	}
	return calltrail.Provision(ctx, js, &calltrail.Options{Replicas: replicas, MaxBytes: int64(a.callBytes)})
}

// buckets are the streams of the KV buckets edges write, as provision
// makes them: the session bucket, the sign-in bucket, the edges' status
// bucket.
func (a *natsAccess) buckets(replicas int) []jetstream.StreamConfig {
	return []jetstream.StreamConfig{
		sessionstore.BucketConfig(&sessionstore.ProvisionOptions{Replicas: replicas, MaxBytes: int64(a.sessionBytes)}),
		signin.BucketConfig("", replicas),
		edgestatus.BucketConfig(replicas),
	}
}

// bucketKeeper keeps the hardening and bounds of the buckets edges write
// (kvbucket.Keeper) while this controller leads: a setting an update of a
// bucket's stream after provision (nats kv edit) loosened is restored
// within a minute; one it changed without loosening (a larger or smaller
// bucket, other replicas) is left and logged. zl names the controller.
func (a *natsAccess) bucketKeeper(js jetstream.JetStream, replicas int, leading func() bool, reg prometheus.Registerer, zl *zerolog.Logger) (*kvbucket.Keeper, error) {
	return kvbucket.NewKeeper(js, a.buckets(replicas), &kvbucket.KeeperOptions{Leading: leading, Registerer: reg, Logger: zl})
}
