package kvbucket

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// DefaultKeeperInterval is how often a Keeper looks at its buckets.
const DefaultKeeperInterval = time.Minute

// KeeperOptions configure a Keeper. A nil *KeeperOptions means defaults.
type KeeperOptions struct {
	// Interval between two looks at every bucket; default
	// DefaultKeeperInterval.
	Interval time.Duration
	// Leading says whether this controller leads; only the leader
	// re-applies the hardening, so two controllers never both write a
	// stream's config. Nil: always (a fleet of one controller).
	Leading func() bool
	// Registerer takes the keeper's counter; nil registers nothing.
	Registerer prometheus.Registerer
	// Logger logs each re-application (warn) and each failed look or
	// re-application; nil logs nothing.
	Logger *zerolog.Logger
}

// Seen is one bucket's stream as a look found it: its config, or
// Missing (the stream does not exist).
type Seen struct {
	Config  jetstream.StreamConfig
	Missing bool
}

// Repair is a bucket stream to provision again: Missing, or its config
// drifted from Want in the settings Drift names.
type Repair struct {
	Want    jetstream.StreamConfig
	Missing bool
	Drift   []string
}

// Bucket is the KV bucket name of the stream r repairs.
func (r Repair) Bucket() string { return strings.TrimPrefix(r.Want.Name, "KV_") }

// Repairs are the streams of want (from Hardened) to provision again,
// given what a look saw of each by stream name: a missing one, and one
// whose config is not Current. A stream not in seen (its look failed) is
// left for the next look.
func Repairs(want []jetstream.StreamConfig, seen map[string]Seen) []Repair {
	var out []Repair
	for _, w := range want {
		s, ok := seen[w.Name]
		switch {
		case !ok:
		case s.Missing:
			out = append(out, Repair{Want: w, Missing: true})
		default:
			if d := Drift(s.Config, w); len(d) > 0 {
				out = append(out, Repair{Want: w, Drift: d})
			}
		}
	}
	return out
}

// Keeper keeps the hardening of the KV buckets edges write: Provision
// hardens them once, at the controller's start, and anything that updates
// a stream's config later (an operator's nats kv edit) can loosen it: a
// bucket with more history per key, unbounded, refusing writes when full,
// without direct gets. (The server itself refuses to cancel the purge and
// deletion denials, and roll-ups while purges are denied; a Keeper would
// restore those too.) A Keeper looks at each bucket's stream every
// Interval and provisions again one that is missing or has drifted.
type Keeper struct {
	js        jetstream.StreamManager
	want      []jetstream.StreamConfig
	opts      KeeperOptions
	log       zerolog.Logger
	reapplied *prometheus.CounterVec
}

// NewKeeper returns the keeper of the bucket streams want (each from
// Hardened) in js, a client that may update them.
func NewKeeper(js jetstream.StreamManager, want []jetstream.StreamConfig, o *KeeperOptions) (*Keeper, error) {
	k := &Keeper{js: js, want: want, log: zerolog.Nop(),
		reapplied: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_controller_kv_hardening_reapplied_total",
			Help: "KV bucket streams provisioned again by the controller, by bucket: found missing, or with a config that drifted from the bucket's limits and hardening."},
			[]string{"bucket"}),
	}
	if o != nil {
		k.opts = *o
	}
	if k.opts.Interval <= 0 {
		k.opts.Interval = DefaultKeeperInterval
	}
	if k.opts.Logger != nil {
		k.log = *k.opts.Logger
	}
	for _, w := range want {
		if !strings.HasPrefix(w.Name, "KV_") {
			return nil, fmt.Errorf("bucket keeper: stream %q is not a KV bucket's", w.Name)
		}
		k.reapplied.WithLabelValues(Repair{Want: w}.Bucket()) // every bucket's series, at 0
	}
	if k.opts.Registerer != nil {
		if err := k.opts.Registerer.Register(k.reapplied); err != nil {
			return nil, fmt.Errorf("bucket keeper: register metrics: %w", err)
		}
	}
	return k, nil
}

// Run looks at the buckets every Interval while this controller leads,
// until ctx ends; it returns nil then.
func (k *Keeper) Run(ctx context.Context) error {
	t := time.NewTicker(k.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if k.opts.Leading == nil || k.opts.Leading() {
				k.Keep(ctx)
			}
		}
	}
}

// Keep looks at every bucket once and provisions again those Repairs
// names; it returns the repairs made.
func (k *Keeper) Keep(ctx context.Context) []Repair {
	lctx, cancel := context.WithTimeout(ctx, k.opts.Interval)
	defer cancel()
	seen := make(map[string]Seen, len(k.want))
	for _, w := range k.want {
		st, err := k.js.Stream(lctx, w.Name)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			seen[w.Name] = Seen{Missing: true}
		case err != nil:
			k.log.Debug().Err(err).Str("stream", w.Name).Msg("bucket keeper: look at the stream")
		default:
			seen[w.Name] = Seen{Config: st.CachedInfo().Config}
		}
	}
	var done []Repair
	for _, r := range Repairs(k.want, seen) {
		if err := Provision(lctx, k.js, r.Want); err != nil {
			k.log.Warn().Err(err).Str("bucket", r.Bucket()).Strs("drift", r.Drift).Bool("missing", r.Missing).
				Msg("KV bucket drifted from its hardening; provisioning it again failed")
			continue
		}
		k.reapplied.WithLabelValues(r.Bucket()).Inc()
		done = append(done, r)
		if r.Missing {
			k.log.Warn().Str("bucket", r.Bucket()).Msg("KV bucket was missing: created again, hardened")
			continue
		}
		k.log.Warn().Str("bucket", r.Bucket()).Strs("drift", r.Drift).
			Msg("KV bucket's stream config drifted from its limits and hardening (an update of the stream, e.g. nats kv edit): hardening re-applied")
	}
	return done
}
