package signin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/sync/singleflight"

	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/kvbucket"
	"github.com/fleetgate/fleetgate/pkg/tokenexchange"
)

// DefaultBucket is the KV bucket of the sign-ins.
const DefaultBucket = "fleetgate_signins"

// Defaults of Options.
const (
	DefaultMaxEntries = 100_000
	// discoveryTTL is how long a backend's discovered metadata is used.
	discoveryTTL = 10 * time.Minute
)

// ErrNotSignedIn: the caller has not signed in to the backend (or signed
// out, or was revoked, or the server refused the refresh token).
var ErrNotSignedIn = errors.New("not signed in to the backend")

// Options configure a Manager; zero fields take the defaults.
type Options struct {
	// Key seals states and records; nil: NewRandomKey (sign-ins do not
	// survive a move to another edge).
	Key *Key
	// JetStream holds the bucket; Bucket names it (DefaultBucket).
	JetStream jetstream.JetStream
	Bucket    string
	// Replicas of the bucket when the manager creates it (default 1).
	Replicas int
	// HTTPClient makes discovery and token requests; nil: one whose dials
	// refuse link-local and metadata addresses. Redirects to another
	// origin are never followed.
	HTTPClient *http.Client
	// Timeout bounds each request (DefaultTimeout).
	Timeout time.Duration
	// RedirectURL is the edge's callback URL (CallbackURL).
	RedirectURL string
	// Login binds each sign-in to its user's browser (binding.go). nil:
	// Begin refuses (ErrNoLogin), unless Unbound accepts sign-ins that
	// any browser may complete (the authorization URL is the backend's).
	Login   *Login
	Unbound bool
	// OnChange is told of each sign-in and sign-out of any edge (from the
	// bucket's watch): the sessions of identity list again.
	OnChange func(identity, backend string)
	// MaxEntries bounds the sign-ins held in memory (DefaultMaxEntries).
	MaxEntries int
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Log tells of each rotated refresh token whose bucket write failed
	// (by the sign-in's key hash, never a token); zero: no logs.
	Log zerolog.Logger
	// StoreFailures counts the failed writes of rotated refresh tokens
	// (each attempt) by reason (ReasonConflict, ReasonStoreError,
	// ReasonSealError); nil: not counted.
	StoreFailures *prometheus.CounterVec
	// Unsaved is set to the rotated refresh tokens held in memory, not
	// yet written to the bucket (heldwriter.go); nil: not set.
	Unsaved prometheus.Gauge
	// SaveRetry is the pause between two writes of a held rotated refresh
	// token, and how often Run writes the ones due (DefaultSaveRetry).
	SaveRetry time.Duration
}

// entry is one sign-in as this edge holds it: the sealed record (a copy
// of the bucket's) and the access token, in memory only.
type entry struct {
	identity, backend string
	sealed            []byte
	rev               uint64
	access            tokenexchange.Token
	until             time.Time // the access token is used until then
	// unsaved: sealed holds a rotated refresh token newer than the
	// bucket's record at rev, whose write failed; Run's writer writes it
	// again from saveAt on (heldwriter.go). Set by setUnsaved only.
	unsaved bool
	saveAt  time.Time
}

// discovered is a backend's authorization server, as discovery found it.
type discovered struct {
	resource ResourceMetadata
	server   ServerMetadata
	at       time.Time
}

// Manager is an edge's sign-ins. Open it, Run its watch, and ask it for
// a caller's Authorization. It is safe for concurrent use.
type Manager struct {
	o      Options
	hc     http.Client
	kv     atomic.Pointer[jetstream.KeyValue] // set by Run once attached
	flight singleflight.Group

	mu        sync.Mutex
	entries   map[string]*entry   // by bucket key
	held      map[string]struct{} // the keys of the entries unsaved
	backends  map[string]discovered
	clients   map[string]string // registered client ids by registration endpoint
	refreshes int
	// writerStopped: Run's writer of held tokens made its last round
	// (heldwriter.go): a rotated token not written is lost.
	writerStopped bool
	ready         chan struct{} // closed once the watch delivered the bucket's content
	changed       chan struct{} // closed (and replaced) at each sign-in held: Wait

	// Test hooks of Run's writer of held tokens, set before Run: its
	// ticks (nil: a ticker of Options.SaveRetry), and a call after each
	// of its rounds.
	saveTicks  <-chan time.Time
	afterRound func()

	readyOnce sync.Once // closes ready
}

// Open returns the sign-ins of options o; Run attaches the bucket.
func Open(o Options) *Manager {
	if o.Key == nil {
		o.Key = NewRandomKey()
	}
	if o.Bucket == "" {
		o.Bucket = DefaultBucket
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.OnChange == nil {
		o.OnChange = func(string, string) {}
	}
	if o.SaveRetry <= 0 {
		o.SaveRetry = DefaultSaveRetry
	}
	return &Manager{o: o, hc: newHTTPClient(o.HTTPClient), entries: map[string]*entry{}, held: map[string]struct{}{}, backends: map[string]discovered{},
		clients: map[string]string{}, ready: make(chan struct{}), changed: make(chan struct{})}
}

// The sign-in bucket's bounds: BucketMaxBytes in all (within the 64 MiB
// the controller's store check keeps for snapshots and buckets), and a
// sign-in not written for BucketTTL (a refresh rewrites it) expires: its
// user signs in again. A full bucket evicts the sign-ins written least
// recently (DiscardOld): a bucket that refused writes when full would
// refuse the rotated refresh token of every sign-in too, signing
// everyone out at their next move to another edge.
const (
	BucketMaxBytes = 16 << 20
	BucketTTL      = 90 * 24 * time.Hour
)

// Provision creates the bucket (the controller does, for edges that may
// not create it) with replicas (at least 1), or bounds and hardens an
// existing one (package kvbucket: an edge's roll-up, purge or API deletion
// would otherwise wipe every user's sign-in).
func Provision(ctx context.Context, js jetstream.JetStream, bucket string, replicas int) error {
	if bucket == "" {
		bucket = DefaultBucket
	}
	if err := kvbucket.Provision(ctx, js, BucketConfig(bucket, replicas)); err != nil {
		return fmt.Errorf("sign-ins: provision bucket %s: %w", bucket, err)
	}
	return nil
}

// BucketConfig is the stream of bucket ("": DefaultBucket) as Provision
// makes it: the controller's kvbucket.Keeper restores what loosens it
// and leaves an operator's resize.
func BucketConfig(bucket string, replicas int) jetstream.StreamConfig {
	if bucket == "" {
		bucket = DefaultBucket
	}
	return kvbucket.Hardened(bucket, jetstream.StreamConfig{
		Description: "fleetgate sign-ins: sealed refresh tokens per identity and backend",
		MaxBytes:    BucketMaxBytes,
		MaxMsgSize:  MaxRecord + recordOverhead,
		MaxAge:      BucketTTL,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Discard:     jetstream.DiscardOld,
	})
}

// recordOverhead is room for a record's subject and headers in a stream
// message.
const recordOverhead = 1 << 10

// errNoBucket: the bucket is not attached yet (Run waits for it).
var errNoBucket = errors.New("sign-ins: the bucket is not available yet")

// attachRetry is the pause between two attempts to attach the bucket.
const attachRetry = time.Second

// attach waits for the bucket until ctx ends: an existing one, or one it
// creates (a client with the rights: a fleet without a controller
// provisioning it).
func (m *Manager) attach(ctx context.Context) (jetstream.KeyValue, error) {
	for {
		kv, err := m.o.JetStream.KeyValue(ctx, m.o.Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err = Provision(cctx, m.o.JetStream, m.o.Bucket, m.o.Replicas)
			cancel()
			if err == nil {
				continue
			}
		}
		if err == nil {
			return kv, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(attachRetry):
		}
	}
}

// bucket is the attached bucket, errNoBucket before.
func (m *Manager) bucket() (jetstream.KeyValue, error) {
	if kv := m.kv.Load(); kv != nil {
		return *kv, nil
	}
	return nil, errNoBucket
}

// Ready is closed once the watch delivered the bucket's content.
func (m *Manager) Ready() <-chan struct{} { return m.ready }

// SignedIn reports whether identity holds a sign-in to backend (of any
// edge).
func (m *Manager) SignedIn(identity, backend string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[KeyOf(identity, backend)]
	return e != nil && e.sealed != nil
}

// Stats are the sign-ins held and the refresh grants made.
func (m *Manager) Stats() (signedIn, refreshes int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries), m.refreshes
}

// discover is the authorization server of the backend at resource
// (cached discoveryTTL).
func (m *Manager) discover(ctx context.Context, resource string) (discovered, error) {
	now := m.o.Now()
	m.mu.Lock()
	d, ok := m.backends[resource]
	m.mu.Unlock()
	if ok && now.Sub(d.at) < discoveryTTL {
		return d, nil
	}
	v, err, _ := m.flight.Do("discover\x00"+resource, func() (any, error) {
		prm, asm, err := discover(context.WithoutCancel(ctx), &m.hc, m.o.Timeout, resource)
		if err != nil {
			return discovered{}, err
		}
		d := discovered{resource: prm, server: asm, at: now}
		m.mu.Lock()
		if len(m.backends) >= maxDiscovered {
			clear(m.backends)
		}
		m.backends[resource] = d
		m.mu.Unlock()
		return d, nil
	})
	if err != nil {
		return discovered{}, fmt.Errorf("discover the authorization server: %w", err)
	}
	return v.(discovered), nil
}

// maxDiscovered bounds the backends whose metadata is kept.
const maxDiscovered = 1024

// client is the client the edge signs users in as at d's server: the
// configured one, else one registered (once per registration endpoint).
func (m *Manager) client(ctx context.Context, d discovered, a *credential.Auth) (Client, error) {
	if a.ClientID != "" {
		return Client{ID: a.ClientID, Secret: a.ClientSecret}, nil
	}
	ep := d.server.RegistrationEndpoint
	if ep == "" {
		return Client{}, fmt.Errorf("%w: no client_id configured and the authorization server takes no registration", ErrBadMetadata)
	}
	m.mu.Lock()
	id, ok := m.clients[ep]
	m.mu.Unlock()
	if ok {
		return Client{ID: id}, nil
	}
	v, err, _ := m.flight.Do("register\x00"+ep, func() (any, error) {
		id, err := register(context.WithoutCancel(ctx), &m.hc, m.o.Timeout, ep, m.o.RedirectURL, a.Scopes)
		if err != nil {
			return "", err
		}
		m.mu.Lock()
		if len(m.clients) >= maxDiscovered {
			clear(m.clients)
		}
		m.clients[ep] = id
		m.mu.Unlock()
		return id, nil
	})
	if err != nil {
		return Client{}, err
	}
	return Client{ID: v.(string)}, nil
}
