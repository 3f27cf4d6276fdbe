package signin

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
	"github.com/fleetgate/fleetgate/pkg/credential"
)

// flakyKV is a sign-in bucket whose Update fails with fail while set, or,
// with conflict set, finds the record rewritten (by another edge) just
// before.
type flakyKV struct {
	jetstream.KeyValue
	mu       sync.Mutex
	fail     error
	conflict []byte // a sealed record another edge writes first
	updates  int
}

func (f *flakyKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	f.mu.Lock()
	f.updates++
	fail, other := f.fail, f.conflict
	f.conflict = nil
	f.mu.Unlock()
	if fail != nil {
		return 0, fail
	}
	if other != nil {
		if _, err := f.KeyValue.Put(ctx, key, other); err != nil {
			return 0, err
		}
	}
	return f.KeyValue.Update(ctx, key, value, rev)
}

func (f *flakyKV) set(fail error, conflict []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail, f.conflict = fail, conflict
}

func (f *flakyKV) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.updates
}

// refreshRig is a fleet whose edge a signed alice in to a backend, with
// a clock the test moves, a's bucket writes through a flakyKV, and a's
// store failures counted and logged.
type refreshRig struct {
	f        *fleet
	iss      *issuertest.Issuer
	kv       *flakyKV
	failures *prometheus.CounterVec
	logs     *lockedBuffer
	advance  func(time.Duration)
	cfg      *credential.Auth
}

const alice = "https://idp alice"

func newRefreshRig(t *testing.T) *refreshRig {
	var clock struct {
		sync.Mutex
		t time.Time
	}
	clock.t = time.Now()
	now := func() time.Time { clock.Lock(); defer clock.Unlock(); return clock.t }
	rig := &refreshRig{iss: issuertest.New(t, &issuertest.Options{Now: now}), logs: &lockedBuffer{},
		cfg: &credential.Auth{Type: credential.AuthUserOAuth},
		advance: func(d time.Duration) {
			clock.Lock()
			clock.t = clock.t.Add(d)
			clock.Unlock()
		},
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "failures"}, []string{"reason"}),
	}
	rig.iss.SetTokenLifetime(time.Minute)
	backend := protectedBackend(t, rig.iss)
	rig.f = newFleet(t, now)
	a := rig.f.a
	a.o.Log, a.o.StoreFailures = zerolog.New(rig.logs), rig.failures
	ctx := context.Background()
	authURL, err := a.Begin(ctx, alice, "docs", backend, rig.cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	code, state := authorize(t, authURL, "alice")
	if _, err := a.Complete(ctx, state, code, Cookie(""), noSecret); err != nil {
		t.Fatal(err)
	}
	kv, err := a.bucket()
	if err != nil {
		t.Fatal(err)
	}
	rig.kv = &flakyKV{KeyValue: kv}
	var ikv jetstream.KeyValue = rig.kv
	a.kv.Store(&ikv)
	return rig
}

func (r *refreshRig) failureCounts(t *testing.T) (conflicts, storeErrors float64) {
	t.Helper()
	return testutil.ToFloat64(r.failures.WithLabelValues(ReasonConflict)), testutil.ToFloat64(r.failures.WithLabelValues(ReasonStoreError))
}

// A rotated refresh token whose bucket write fails is counted
// (store_error) and logged at warn by the sign-in's key hash, never a
// token; its access token is used; the rotated token is held and written
// again at the first use after the retry pause, so that another edge
// (here a new one, reading the bucket) refreshes with it. Without the
// write, that edge would present the spent token and sign the user out.
func TestRefreshStoreErrorHeldAndWrittenAgain(t *testing.T) {
	rig := newRefreshRig(t)
	a, ctx := rig.f.a, context.Background()
	rig.kv.set(errors.New("nats: timeout"), nil)
	rig.advance(2 * time.Minute) // the access token expired
	v, err := a.Authorization(ctx, alice, "docs", rig.cfg)
	if err != nil || len(rig.iss.Refreshed()) != 1 || v != "Bearer "+rig.iss.Refreshed()[0] {
		t.Fatalf("refresh with a failing bucket: %v (refreshed %d)", err, len(rig.iss.Refreshed()))
	}
	if c, s := rig.failureCounts(t); c != 0 || s != 1 {
		t.Fatalf("failures: conflict %v, store_error %v", c, s)
	}
	logs := rig.logs.String()
	if !strings.Contains(logs, `"level":"warn"`) || !strings.Contains(logs, KeyOf(alice, "docs")) ||
		!strings.Contains(logs, "refresh: write the rotated refresh token") {
		t.Fatalf("log:\n%s", logs)
	}
	if strings.Contains(logs, "rt-") || strings.Contains(logs, rig.iss.Refreshed()[0]) || strings.Contains(logs, alice) {
		t.Fatalf("a token or identity logged:\n%s", logs)
	}
	// Before the pause: the held access token, no write, no refresh.
	rig.advance(saveRetryPause - time.Second)
	if v2, err := a.Authorization(ctx, alice, "docs", rig.cfg); err != nil || v2 != v || rig.kv.count() != 1 {
		t.Fatalf("within the pause: %v, same token %v, writes %d", err, v2 == v, rig.kv.count())
	}
	// After it, still failing: written again, counted, the access token used.
	rig.advance(time.Second)
	if v2, err := a.Authorization(ctx, alice, "docs", rig.cfg); err != nil || v2 != v || rig.kv.count() != 2 {
		t.Fatalf("retry while failing: %v, same token %v, writes %d", err, v2 == v, rig.kv.count())
	}
	if _, s := rig.failureCounts(t); s != 2 {
		t.Fatalf("store_error %v after a failed retry", s)
	}
	// The bucket back: the next use after the pause writes it.
	rig.kv.set(nil, nil)
	rig.advance(saveRetryPause)
	if v2, err := a.Authorization(ctx, alice, "docs", rig.cfg); err != nil || v2 != v || rig.kv.count() != 3 {
		t.Fatalf("retry: %v, same token %v, writes %d", err, v2 == v, rig.kv.count())
	}
	rig.advance(saveRetryPause)
	if _, err := a.Authorization(ctx, alice, "docs", rig.cfg); err != nil || rig.kv.count() != 3 {
		t.Fatalf("written again once saved: %v, writes %d", err, rig.kv.count())
	}
	if len(rig.iss.Refreshed()) != 1 {
		t.Fatalf("refreshed %d times", len(rig.iss.Refreshed()))
	}
	c := rig.f.open("c")
	if v3, err := c.Authorization(ctx, alice, "docs", rig.cfg); err != nil || len(rig.iss.Refreshed()) != 2 || v3 != "Bearer "+rig.iss.Refreshed()[1] {
		t.Fatalf("another edge's refresh from the bucket: %v (refreshed %d)", err, len(rig.iss.Refreshed()))
	}
	if c, s := rig.failureCounts(t); c != 0 || s != 2 {
		t.Fatalf("failures: conflict %v, store_error %v", c, s)
	}
}

// A held rotated token is also the one this edge's next refresh uses
// (and writes, over the bucket's revision), when the access token
// expires before any retry.
func TestRefreshStoreErrorNextRefreshUsesHeld(t *testing.T) {
	rig := newRefreshRig(t)
	a, ctx := rig.f.a, context.Background()
	rig.kv.set(errors.New("nats: connection closed"), nil)
	rig.advance(2 * time.Minute)
	if _, err := a.Authorization(ctx, alice, "docs", rig.cfg); err != nil {
		t.Fatal(err)
	}
	rig.kv.set(nil, nil)
	rig.advance(2 * time.Minute) // expired again: a refresh with the held (rotated) token
	v, err := a.Authorization(ctx, alice, "docs", rig.cfg)
	if err != nil || len(rig.iss.Refreshed()) != 2 || v != "Bearer "+rig.iss.Refreshed()[1] {
		t.Fatalf("second refresh: %v (refreshed %d)", err, len(rig.iss.Refreshed()))
	}
	c := rig.f.open("c")
	if _, err := c.Authorization(ctx, alice, "docs", rig.cfg); err != nil || len(rig.iss.Refreshed()) != 3 {
		t.Fatalf("another edge's refresh from the bucket: %v (refreshed %d)", err, len(rig.iss.Refreshed()))
	}
}

// A conflict behaves as before: the access token is used, the bucket's
// record wins (no rotated token held, none written again); it is counted
// as a conflict, not a store error.
func TestRefreshStoreConflict(t *testing.T) {
	rig := newRefreshRig(t)
	a, ctx := rig.f.a, context.Background()
	other, err := a.o.Key.SealRecord(Record{Identity: alice, Backend: "docs", Refresh: "rt-of-another-edge", ClientID: "dcr-1"})
	if err != nil {
		t.Fatal(err)
	}
	rig.kv.set(nil, other)
	rig.advance(2 * time.Minute)
	v, err := a.Authorization(ctx, alice, "docs", rig.cfg)
	if err != nil || len(rig.iss.Refreshed()) != 1 || v != "Bearer "+rig.iss.Refreshed()[0] {
		t.Fatalf("refresh with a conflict: %v", err)
	}
	if c, s := rig.failureCounts(t); c != 1 || s != 0 {
		t.Fatalf("failures: conflict %v, store_error %v", c, s)
	}
	a.mu.Lock()
	unsaved := a.entries[KeyOf(alice, "docs")].unsaved
	a.mu.Unlock()
	if unsaved {
		t.Fatal("a conflicting rotated token held to write again")
	}
	rig.advance(saveRetryPause)
	if v2, err := a.Authorization(ctx, alice, "docs", rig.cfg); err != nil || v2 != v || rig.kv.count() != 1 {
		t.Fatalf("after a conflict: %v, same token %v, writes %d", err, v2 == v, rig.kv.count())
	}
	e, err := rig.kv.Get(ctx, KeyOf(alice, "docs"))
	if err != nil || !bytes.Equal(e.Value(), other) {
		t.Fatalf("the bucket's record: %v", err)
	}
	if strings.Contains(rig.logs.String(), `"level":"warn"`) {
		t.Fatalf("a conflict logged at warn:\n%s", rig.logs.String())
	}
}

// lockedBuffer is a log destination safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
