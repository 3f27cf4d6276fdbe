package leader

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of Options.
const (
	DefaultBucket = "fleetgate_leader"
	DefaultKey    = "controller"
	DefaultTTL    = 6 * time.Second
	// MinTTL is the shortest TTL New accepts.
	MinTTL = 100 * time.Millisecond
)

// ErrRunning is returned by Run when the Elector is already running.
var ErrRunning = errors.New("elector already running")

// Options configure an Elector. A nil *Options means defaults.
type Options struct {
	// Bucket is the KV bucket holding the lease; default DefaultBucket.
	Bucket string
	// Key is the lease's key; default DefaultKey.
	Key string
	// TTL is the lease's time to live (default 6s, at least MinTTL). A
	// leader renews every TTL/3; a standby takes over a lease whose
	// revision it has not seen change for the TTL written in the lease.
	TTL time.Duration
	// Replicas of the bucket when Run creates it; default 1. It must fit
	// the NATS deployment (1 on a single server).
	Replicas int
	// OnElected is called when this elector becomes leader, with the new
	// term. OnLost is called when it stops leading, with the term that
	// ended: a lost renewal, a deposition, or Run's exit. Both run on Run's
	// goroutine, in order, and must not block (renewals wait for them).
	OnElected func(term uint64)
	OnLost    func(term uint64)
}

// Elector campaigns for, holds and renews the lease of one elector id.
type Elector struct {
	js       jetstream.JetStream
	id       string
	bucket   string
	key      string
	ttl      time.Duration
	replicas int
	onElect  func(uint64)
	onLost   func(uint64)

	running atomic.Bool

	mu         sync.Mutex
	term       uint64
	validUntil time.Time
	lead       context.Context // non-nil while leading; cancelled when the term ends
	cancelLead context.CancelFunc
	expiry     *time.Timer   // cancels lead at validUntil
	changed    chan struct{} // closed and replaced on every change of leadership

	// Test hooks.
	beforeOp  func(Op)    // called on Run's goroutine before each operation
	noRelease atomic.Bool // on exit, keep the lease as a crashed process would
}

// New returns an Elector for the elector id (unique per controller, e.g.
// its --id). It does no I/O; Run does.
func New(js jetstream.JetStream, id string, o *Options) (*Elector, error) {
	if js == nil {
		return nil, errors.New("leader: new elector: nil JetStream")
	}
	e, err := newElector(id, o)
	if err != nil {
		return nil, err
	}
	e.js = js
	return e, nil
}

// newElector checks the options and applies their defaults.
func newElector(id string, o *Options) (*Elector, error) {
	if id == "" {
		return nil, errors.New("leader: new elector: empty id")
	}
	if o == nil {
		o = &Options{}
	}
	e := &Elector{id: id, bucket: o.Bucket, key: o.Key, ttl: o.TTL, replicas: o.Replicas,
		onElect: o.OnElected, onLost: o.OnLost, changed: make(chan struct{})}
	if e.bucket == "" {
		e.bucket = DefaultBucket
	}
	if e.key == "" {
		e.key = DefaultKey
	}
	if e.ttl == 0 {
		e.ttl = DefaultTTL
	}
	if e.ttl < MinTTL {
		return nil, fmt.Errorf("leader: new elector %q: ttl %s is below the minimum %s", id, e.ttl, MinTTL)
	}
	if e.replicas <= 0 {
		e.replicas = 1
	}
	return e, nil
}

// ID returns the elector's id.
func (e *Elector) ID() string { return e.id }

// Leader reports whether this elector leads now, and its term. It turns
// false as soon as the validity of the last renewal has passed, even when
// Run has not yet noticed (its goroutine starved, say).
func (e *Elector) Leader() (term uint64, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lead == nil || !time.Now().Before(e.validUntil) {
		return 0, false
	}
	return e.term, true
}

// Await blocks until this elector leads (or ctx ends) and returns the term
// and a context that is cancelled when that term ends: when leadership is
// lost, when the validity of the last renewal passes without a new one, or
// when Run exits. Leader duties run under that context:
//
//	for {
//		lead, term, err := el.Await(ctx)
//		if err != nil {
//			return err // ctx ended
//		}
//		serveAsLeader(lead, term) // returns when lead is cancelled
//	}
func (e *Elector) Await(ctx context.Context) (lead context.Context, term uint64, err error) {
	for {
		e.mu.Lock()
		if e.lead != nil && e.lead.Err() == nil {
			lead, term = e.lead, e.term
			e.mu.Unlock()
			return lead, term, nil
		}
		ch := e.changed
		e.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-ch:
		}
	}
}

// elected publishes a new term.
func (e *Elector) elected(term uint64, validUntil time.Time) {
	e.mu.Lock()
	lead, cancel := context.WithCancel(context.Background())
	e.lead, e.cancelLead, e.term, e.validUntil = lead, cancel, term, validUntil
	e.expiry = time.AfterFunc(time.Until(validUntil), cancel)
	e.notifyLocked()
	e.mu.Unlock()
	if e.onElect != nil {
		e.onElect(term)
	}
}

// extended publishes a renewal. It returns false if the published term
// had already expired (its context is cancelled).
func (e *Elector) extended(validUntil time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lead == nil || e.lead.Err() != nil {
		return false
	}
	if validUntil.After(e.validUntil) {
		e.validUntil = validUntil
		e.expiry.Reset(time.Until(validUntil))
	}
	return true
}

// lost publishes the end of a term.
func (e *Elector) lost(term uint64) {
	e.mu.Lock()
	if e.lead != nil {
		e.expiry.Stop()
		e.cancelLead()
		e.lead, e.cancelLead, e.expiry, e.term, e.validUntil = nil, nil, nil, 0, time.Time{}
		e.notifyLocked()
	}
	e.mu.Unlock()
	if e.onLost != nil {
		e.onLost(term)
	}
}

func (e *Elector) notifyLocked() {
	close(e.changed)
	e.changed = make(chan struct{})
}
