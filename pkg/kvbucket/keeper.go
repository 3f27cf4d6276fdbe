package kvbucket

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// DefaultKeeperInterval is how often a Keeper looks at its buckets.
const DefaultKeeperInterval = time.Minute

// DefaultBucketTimeout bounds a Keeper's look at one bucket and its
// repair.
const DefaultBucketTimeout = 10 * time.Second

// failureStreak is the number of consecutive failed checks of a bucket
// after which a Keeper warns (once per streak).
const failureStreak = 3

// KeeperOptions configure a Keeper. A nil *KeeperOptions means defaults.
type KeeperOptions struct {
	// Interval between two looks at every bucket; default
	// DefaultKeeperInterval.
	Interval time.Duration
	// Timeout of the look at one bucket and its repair; default
	// DefaultBucketTimeout, at most Interval.
	Timeout time.Duration
	// Leading says whether this controller leads; only the leader
	// repairs, so two controllers never both write a stream's config.
	// It is asked before each bucket and again before each write. Nil:
	// always (a fleet of one controller).
	Leading func() bool
	// Registerer takes the keeper's counters; nil registers nothing.
	Registerer prometheus.Registerer
	// Logger logs each repair (warn), each change left as it is (info,
	// once per change), failed checks (debug; warn at the third in a row
	// and at a failed repair opening a streak); nil logs nothing.
	Logger *zerolog.Logger
}

// Seen is one bucket's stream as a look found it: its config, or
// Missing (the stream does not exist).
type Seen struct {
	Config  jetstream.StreamConfig
	Missing bool
}

// Repair is a bucket stream to write: Missing (Config is Want, to
// create), or looser than Want in the settings Drift names (Config is
// the seen config with those restored, to update).
type Repair struct {
	Want    jetstream.StreamConfig
	Config  jetstream.StreamConfig
	Missing bool
	Drift   []string
}

// Bucket is the KV bucket name of the stream r repairs.
func (r Repair) Bucket() string { return strings.TrimPrefix(r.Want.Name, "KV_") }

// Repairs are the streams of want (from Hardened) to write, given what a
// look saw of each by stream name: a missing one, and one with Drift. A
// stream not in seen (its look failed) is left for the next look; so is
// one that differs only in settings Left names.
func Repairs(want []jetstream.StreamConfig, seen map[string]Seen) []Repair {
	var out []Repair
	for _, w := range want {
		s, ok := seen[w.Name]
		switch {
		case !ok:
		case s.Missing:
			out = append(out, Repair{Want: w, Config: w, Missing: true})
		default:
			if d := Drift(s.Config, w); len(d) > 0 {
				out = append(out, Repair{Want: w, Config: Restore(s.Config, w), Drift: d})
			}
		}
	}
	return out
}

// Keeper keeps the hardening and bounds of the KV buckets edges write:
// Provision sets them at the controller's start, and anything that
// updates a stream's config later (an operator's nats kv edit) can
// loosen them: a bucket with more history per key, unbounded, refusing
// writes when full, without direct gets. (The server itself refuses to
// cancel the purge and deletion denials, and roll-ups while purges are
// denied; a Keeper would restore those too.) A Keeper looks at each
// bucket's stream every Interval and restores what loosened (Drift),
// creating a missing bucket again; it leaves what an operator changed
// without loosening (Left: a resized bucket, other replicas).
type Keeper struct {
	js                  jetstream.StreamManager
	want                []jetstream.StreamConfig
	opts                KeeperOptions
	log                 zerolog.Logger
	reapplied, failures *prometheus.CounterVec

	mu    sync.Mutex // one Keep at a time
	state map[string]*bucketState
}

// bucketState is what a Keeper remembers of a bucket between looks.
type bucketState struct {
	failures     int    // consecutive failed checks
	repairWarned bool   // a failed repair of the streak was logged at warn
	left         string // the Left settings last logged
}

// NewKeeper returns the keeper of the bucket streams want (each from
// Hardened) in js, a client that may update them.
func NewKeeper(js jetstream.StreamManager, want []jetstream.StreamConfig, o *KeeperOptions) (*Keeper, error) {
	k := &Keeper{js: js, want: want, log: zerolog.Nop(), state: make(map[string]*bucketState, len(want)),
		reapplied: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_controller_kv_hardening_reapplied_total",
			Help: "KV bucket streams written by the controller's bucket keeper, by bucket: found missing and created, or found with loosened limits or hardening and restored."},
			[]string{"bucket"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_controller_kv_hardening_check_failures_total",
			Help: "Failed checks of a KV bucket stream by the controller's bucket keeper, by bucket: the look at the stream or its repair failed."},
			[]string{"bucket"}),
	}
	if o != nil {
		k.opts = *o
	}
	if k.opts.Interval <= 0 {
		k.opts.Interval = DefaultKeeperInterval
	}
	if k.opts.Timeout <= 0 {
		k.opts.Timeout = DefaultBucketTimeout
	}
	k.opts.Timeout = min(k.opts.Timeout, k.opts.Interval)
	if k.opts.Logger != nil {
		k.log = *k.opts.Logger
	}
	for _, w := range want {
		if !strings.HasPrefix(w.Name, "KV_") {
			return nil, fmt.Errorf("bucket keeper: stream %q is not a KV bucket's", w.Name)
		}
		b := Repair{Want: w}.Bucket()
		k.reapplied.WithLabelValues(b) // every bucket's series, at 0
		k.failures.WithLabelValues(b)
		k.state[w.Name] = &bucketState{}
	}
	if k.opts.Registerer != nil {
		for _, c := range []prometheus.Collector{k.reapplied, k.failures} {
			if err := k.opts.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("bucket keeper: register metrics: %w", err)
			}
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
			k.Keep(ctx)
		}
	}
}

// Keep looks at every bucket once, while this controller leads, and
// writes those Repairs names; it returns the repairs written.
func (k *Keeper) Keep(ctx context.Context) []Repair {
	k.mu.Lock()
	defer k.mu.Unlock()
	var done []Repair
	for _, w := range k.want {
		if ctx.Err() != nil || !k.leading() {
			break
		}
		if r, ok := k.keep(ctx, w); ok {
			done = append(done, r)
		}
	}
	return done
}

func (k *Keeper) leading() bool { return k.opts.Leading == nil || k.opts.Leading() }

// keep looks at the stream of w and writes its repair, if any, within
// Timeout; ok when it wrote.
func (k *Keeper) keep(parent context.Context, w jetstream.StreamConfig) (r Repair, ok bool) {
	ctx, cancel := context.WithTimeout(parent, k.opts.Timeout)
	defer cancel()
	bucket, st := Repair{Want: w}.Bucket(), k.state[w.Name]
	var seen Seen
	s, err := k.js.Stream(ctx, w.Name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		seen.Missing = true
		st.left = ""
	case parent.Err() != nil: // shutting down: no failure of the bucket's
		return Repair{}, false
	case err != nil:
		k.failed(bucket, st, fmt.Errorf("bucket keeper: look at stream %s: %w", w.Name, err), nil)
		return Repair{}, false
	case s.CachedInfo().Config.Sealed:
		// A sealed stream takes no update and no write (the server
		// forces its age and discard policy): said once, never repaired.
		if st.left != "sealed" {
			k.log.Error().Str("bucket", bucket).Msg("KV bucket's stream is sealed: edges cannot write it; the keeper leaves it")
		}
		st.left = "sealed"
		return Repair{}, false
	default:
		seen.Config = s.CachedInfo().Config
		k.noteLeft(bucket, st, Left(seen.Config, w))
	}
	rs := Repairs([]jetstream.StreamConfig{w}, map[string]Seen{w.Name: seen})
	if len(rs) == 0 {
		k.succeeded(bucket, st)
		return Repair{}, false
	}
	r = rs[0]
	if !k.leading() { // the lead moved during the look: the new leader's keeper repairs
		return Repair{}, false
	}
	if r.Missing {
		_, err = k.js.CreateStream(ctx, r.Config)
	} else {
		_, err = k.js.UpdateStream(ctx, r.Config)
	}
	if err != nil {
		if parent.Err() == nil {
			k.failed(bucket, st, fmt.Errorf("bucket keeper: write stream %s: %w", w.Name, err), &r)
		}
		return Repair{}, false
	}
	k.succeeded(bucket, st)
	k.reapplied.WithLabelValues(bucket).Inc()
	if r.Missing {
		k.log.Warn().Str("bucket", bucket).Msg("KV bucket was missing: created again, hardened")
	} else {
		k.log.Warn().Str("bucket", bucket).Strs("drift", r.Drift).
			Msg("KV bucket's stream config was loosened (an update of the stream, e.g. nats kv edit): limits and hardening restored")
	}
	return r, true
}

// noteLeft logs, once per change, the settings of a bucket's stream an
// operator changed without loosening it, which the keeper leaves.
func (k *Keeper) noteLeft(bucket string, st *bucketState, left []string) {
	sig := strings.Join(left, "; ")
	if sig != st.left && sig != "" {
		k.log.Info().Str("bucket", bucket).Strs("left", left).
			Msg("KV bucket's stream config differs from the provisioned one without loosening it (an operator's change): left as it is")
	}
	st.left = sig
}

// failed counts and logs a failed check of bucket: the look, or the
// repair r (nil for a look). It warns at the first failed repair of a
// streak and at the streak's failureStreak-th failure, once each.
func (k *Keeper) failed(bucket string, st *bucketState, err error, r *Repair) {
	k.failures.WithLabelValues(bucket).Inc()
	st.failures++
	switch {
	case r != nil && !st.repairWarned:
		st.repairWarned = true
		k.log.Warn().Err(err).Str("bucket", bucket).Strs("drift", r.Drift).Bool("missing", r.Missing).Int("failures", st.failures).
			Msg("KV bucket's limits or hardening are loosened or it is missing; restoring them failed")
	case st.failures == failureStreak:
		k.log.Warn().Err(err).Str("bucket", bucket).Int("failures", st.failures).
			Msg("KV bucket: the bucket keeper's checks failed repeatedly; its limits and hardening are not watched until one succeeds")
	default:
		k.log.Debug().Err(err).Str("bucket", bucket).Int("failures", st.failures).Msg("KV bucket: bucket keeper check failed")
	}
}

// succeeded ends a streak of failed checks of bucket.
func (k *Keeper) succeeded(bucket string, st *bucketState) {
	if st.failures >= failureStreak {
		k.log.Info().Str("bucket", bucket).Int("failures", st.failures).Msg("KV bucket: the bucket keeper's checks succeed again")
	}
	st.failures, st.repairWarned = 0, false
}
