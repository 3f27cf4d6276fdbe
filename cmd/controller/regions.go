package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/pkg/region"
)

// regionFlags are the multi-region flags (docs/regions.md). With --region
// empty, the default, none may be set and nothing changes: the log is
// FLEETGATE_EVENTS, the embedded node has no domain and no leaf links.
type regionFlags struct {
	name, list                                       string
	leafListen, leafAdvertise, leafRemotes, leafSeed string
	leafCert, leafKey, leafCA                        string
	regions                                          []string
}

func (r *regionFlags) flags(fs *flag.FlagSet) {
	fs.StringVar(&r.name, "region", "", "this controller's region ([a-z0-9-], at most 32): its event log is FLEETGATE_EVENTS_<REGION> and the embedded NATS its JetStream domain; empty: a single-region fleet (extension)")
	fs.StringVar(&r.list, "regions", "", "every region of the fleet, comma-separated (this one included); the other regions' logs are mirrored into this region's NATS (extension)")
	fs.StringVar(&r.leafListen, "nats-leaf-listen", "", "embedded NATS: accept leaf connections from other regions on this address; they authenticate with <data-dir>/nats/leaf.seed (extension)")
	fs.StringVar(&r.leafAdvertise, "nats-leaf-advertise", "", "embedded NATS: the leaf address other regions dial, when it differs from -nats-leaf-listen (extension)")
	fs.StringVar(&r.leafRemotes, "nats-leaf-remotes", "", "embedded NATS: other regions' leaf URLs to dial, comma-separated (extension)")
	fs.StringVar(&r.leafSeed, "nats-leaf-seed", "", "embedded NATS: the other region's leaf.seed, presented on -nats-leaf-remotes (extension)")
	fs.StringVar(&r.leafCert, "nats-leaf-tls-cert", "", "embedded NATS: leaf links over TLS: the certificate (PEM) of -nats-leaf-listen, and the client certificate presented on -nats-leaf-remotes (extension)")
	fs.StringVar(&r.leafKey, "nats-leaf-tls-key", "", "embedded NATS: the key (PEM) of -nats-leaf-tls-cert (extension)")
	fs.StringVar(&r.leafCA, "nats-leaf-tls-ca", "", "embedded NATS: leaf links over TLS: the CA (PEM) that signs the other regions' certificates; the listener then requires client certificates (extension)")
}

// leafTLS is the leaf links' TLS, nil without any -nats-leaf-tls-* flag.
func (r *regionFlags) leafTLS() *natsnode.LeafTLS {
	if r.leafCert == "" && r.leafKey == "" && r.leafCA == "" {
		return nil
	}
	return &natsnode.LeafTLS{Cert: r.leafCert, Key: r.leafKey, CA: r.leafCA}
}

func (r *regionFlags) check() error {
	if r.name == "" {
		if r.list != "" || r.leafListen != "" || r.leafAdvertise != "" || r.leafRemotes != "" || r.leafSeed != "" || r.leafTLS() != nil {
			return errors.New("flags -regions and -nats-leaf-* need -region")
		}
		return nil
	}
	if err := region.CheckName(r.name); err != nil {
		return fmt.Errorf("flag -region: %w", err)
	}
	regions, err := region.ParseList(r.list)
	if err != nil {
		return fmt.Errorf("flag -regions: %w", err)
	}
	if len(regions) == 0 {
		regions = []string{r.name}
	}
	if !slices.Contains(regions, r.name) {
		return fmt.Errorf("flag -regions %q does not list -region %q", r.list, r.name)
	}
	if t := r.leafTLS(); t != nil {
		switch {
		case r.leafListen == "" && r.leafRemotes == "":
			return errors.New("flags -nats-leaf-tls-* need -nats-leaf-listen or -nats-leaf-remotes")
		case (t.Cert == "") != (t.Key == ""):
			return errors.New("flags -nats-leaf-tls-cert and -nats-leaf-tls-key go together")
		case r.leafListen != "" && t.Cert == "":
			return errors.New("flag -nats-leaf-listen over TLS needs -nats-leaf-tls-cert and -nats-leaf-tls-key")
		}
	}
	r.regions = regions
	return nil
}

// node sets the embedded node's region options.
func (r *regionFlags) node(o *natsnode.Options) {
	if r.name == "" {
		return
	}
	o.Domain = region.Domain(r.name)
	o.EdgeLogs = region.EdgeLogs(r.regions)
	if r.leafListen != "" || r.leafRemotes != "" {
		o.Leaf = &natsnode.LeafOptions{Listen: r.leafListen, Advertise: r.leafAdvertise, RemoteSeed: r.leafSeed, TLS: r.leafTLS()}
		for _, u := range strings.Split(r.leafRemotes, ",") {
			if u = strings.TrimSpace(u); u != "" {
				o.Leaf.Remotes = append(o.Leaf.Remotes, u)
			}
		}
	}
}

// logOptions are the event log options: the single-region ones for an
// empty region.
func (r *regionFlags) logOptions(replicas int) *events.LogOptions {
	if r.name == "" {
		return &events.LogOptions{Replicas: replicas}
	}
	return region.LogOptions(r.name, replicas)
}

// mirror creates the mirrors of the other regions' logs (none for a
// single-region fleet), each bounded by maxBytes (0: the default).
func (r *regionFlags) mirror(ctx context.Context, js jetstream.JetStream, replicas int, maxBytes int64) error {
	if len(r.regions) < 2 {
		return nil
	}
	return region.EnsureMirrors(ctx, js, r.name, r.regions, &region.MirrorOptions{Replicas: replicas, MaxBytes: maxBytes})
}

// keeper keeps the mirrors of the other regions' logs moving after a cut
// of the region link (region.Keeper) while this controller leads its
// region, logging each one it re-creates.
func (r *regionFlags) keeper(js jetstream.JetStream, replicas int, maxBytes int64, leading func() bool, zl zerolog.Logger) (*region.Keeper, error) {
	return region.NewKeeper(js, r.name, r.regions, &region.KeeperOptions{
		Leading: leading,
		Mirror:  &region.MirrorOptions{Replicas: replicas, MaxBytes: maxBytes},
		OnNudge: func(origin string, a region.Asset, reason string) {
			zl.Info().Str("origin", origin).Str("mirror", a.Stream(origin)).Str("reason", reason).
				Msg("mirror of another region re-created: it was behind a reachable origin and silent (the server's mirror retry timers)")
		},
		OnError: func(err error) { zl.Debug().Err(err).Msg("region mirror keeper") },
	})
}
