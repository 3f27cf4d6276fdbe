package leader

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Run campaigns for the lease and, once elected, renews it until ctx ends.
// It creates the bucket if needed (retrying until NATS answers). On exit as
// leader it releases the lease, deleting the key at its own revision so
// that a standby takes over at its next poll instead of waiting for the
// TTL, and reports OnLost. It returns nil when ctx ends, or the error that
// made the bucket unusable (a bad configuration, such as Replicas above
// the cluster size).
func (e *Elector) Run(ctx context.Context) error {
	if !e.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer e.running.Store(false)
	s, err := e.open(ctx)
	if err != nil || s == nil {
		return err
	}
	return e.drive(ctx, s)
}

// open binds the store, retrying errors that are not the server's answer.
func (e *Elector) open(ctx context.Context) (store, error) {
	retry := max(e.ttl/10, time.Millisecond)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, nil
		case <-t.C:
		}
		octx, cancel := context.WithTimeout(ctx, e.ttl)
		s, err := openStore(octx, e.js, e.bucket, e.key, e.replicas)
		cancel()
		var apiErr *jetstream.APIError
		switch {
		case err == nil:
			return s, nil
		case errors.As(err, &apiErr) || errors.Is(err, jetstream.ErrBucketExists) || errors.Is(err, jetstream.ErrInvalidBucketName):
			return nil, err
		}
		t.Reset(retry)
	}
}

// drive is the I/O loop around a Machine.
func (e *Elector) drive(ctx context.Context, s store) error {
	m := NewMachine(e.ttl)
	m.SetID(e.id)
	a := m.Start(time.Now())
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		a = e.report(m, a)
		if d := time.Until(a.At); d > 0 {
			t.Reset(d)
			select {
			case <-ctx.Done():
				e.resign(ctx, s, m)
				return nil
			case <-t.C:
			}
		} else if ctx.Err() != nil {
			e.resign(ctx, s, m)
			return nil
		}
		if e.beforeOp != nil {
			e.beforeOp(a.Op)
		}
		a = e.perform(ctx, s, m, a)
	}
}

// report publishes a's leadership change and the validity of a renewal.
// If the published term expired meanwhile, the machine steps down.
func (e *Elector) report(m *Machine, a Action) Action {
	for {
		switch a.Event {
		case EventElected:
			_, until, _ := m.Leading(time.Now())
			e.elected(a.Term, until)
		case EventLost:
			e.lost(a.Term)
		}
		_, until, ok := m.Leading(time.Now())
		if !ok || e.extended(until) {
			return a
		}
		a = m.Lapse(time.Now())
	}
}

// perform does a's operation and steps m with its outcome.
func (e *Elector) perform(ctx context.Context, s store, m *Machine, a Action) Action {
	if a.Op == OpGet {
		gctx, cancel := context.WithTimeout(ctx, e.ttl/2)
		o, err := s.Get(gctx)
		cancel()
		switch {
		case errors.Is(err, errNoLease):
			return m.Observed(time.Now(), Observation{})
		case err != nil:
			return m.GetFailed(time.Now())
		}
		return m.Observed(time.Now(), o)
	}
	sent := time.Now()
	deadline := sent.Add(m.Validity())
	if _, until, ok := m.Leading(sent); ok {
		deadline = until // a renewal after the validity is no use
	}
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	l := Lease{Holder: e.id, TTL: e.ttl, RenewedAt: time.Now().UTC()}
	var rev uint64
	var err error
	switch a.Op {
	case OpCreate:
		rev, err = s.Create(wctx, l)
	case OpTakeover:
		rev, err = s.Update(wctx, l, a.Rev)
	case OpRenew:
		l.Term = a.Term
		rev, err = s.Update(wctx, l, a.Rev)
	}
	if err != nil {
		return m.WriteFailed(time.Now(), errors.Is(err, errConflict))
	}
	return m.Written(sent, time.Now(), rev)
}

// resign releases the lease on exit (unless a test simulates a crash) and
// reports the end of the term.
func (e *Elector) resign(ctx context.Context, s store, m *Machine) {
	rev, term, ok := m.Resign()
	if !ok {
		return
	}
	if !e.noRelease.Load() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.ttl/2)
		_ = s.Delete(dctx, rev) // on failure the lease simply expires
		cancel()
	}
	e.lost(term)
}
