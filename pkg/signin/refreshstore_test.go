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
	"github.com/fleetgate/fleetgate/pkg/logtest"
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
// store failures counted and logged, and its held tokens gauged.
type refreshRig struct {
	f        *fleet
	iss      *issuertest.Issuer
	kv       *flakyKV
	failures *prometheus.CounterVec
	unsaved  prometheus.Gauge
	logs     *logtest.Buffer
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
	rig := &refreshRig{iss: issuertest.New(t, &issuertest.Options{Now: now}), logs: &logtest.Buffer{},
		cfg: &credential.Auth{Type: credential.AuthUserOAuth},
		advance: func(d time.Duration) {
			clock.Lock()
			clock.t = clock.t.Add(d)
			clock.Unlock()
		},
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "failures"}, []string{"reason"}),
		unsaved:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "unsaved"}),
	}
	rig.iss.SetTokenLifetime(time.Minute)
	backend := protectedBackend(t, rig.iss)
	rig.f = newFleet(t, now)
	a := rig.f.a
	a.mu.Lock() // a's watch reads them
	a.o.Log, a.o.StoreFailures, a.o.Unsaved = zerolog.New(rig.logs), rig.failures, rig.unsaved
	a.mu.Unlock()
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

// holdRotated makes a's refresh of alice's expired sign-in fail to write
// its rotated token (fail): the token is held; it returns a's access token.
func (r *refreshRig) holdRotated(t *testing.T, fail error) string {
	t.Helper()
	r.kv.set(fail, nil)
	r.advance(2 * time.Minute) // the access token expired
	v, err := r.f.a.Authorization(context.Background(), alice, "docs", r.cfg)
	if err != nil || len(r.iss.Refreshed()) != 1 || v != "Bearer "+r.iss.Refreshed()[0] {
		t.Fatalf("refresh with a failing bucket: %v (refreshed %d)", err, len(r.iss.Refreshed()))
	}
	if held, _ := r.held(); !held || testutil.ToFloat64(r.unsaved) != 1 {
		t.Fatalf("rotated token held %v, gauge %v", held, testutil.ToFloat64(r.unsaved))
	}
	return v
}

// held reports whether a holds alice's rotated token unsaved, and the
// sealed record a holds.
func (r *refreshRig) held() (bool, []byte) {
	a := r.f.a
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.entries[KeyOf(alice, "docs")]
	if e == nil {
		return false, nil
	}
	return e.unsaved, e.sealed
}

// bucketRecord is alice's record in the bucket (not through a's flakyKV).
func (r *refreshRig) bucketRecord(t *testing.T) jetstream.KeyValueEntry {
	t.Helper()
	e, err := r.kv.KeyValue.Get(context.Background(), KeyOf(alice, "docs"))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A rotated refresh token whose bucket write fails is counted
// (store_error) and logged at warn by the sign-in's key hash, never a
// token; its access token is used; the rotated token is held (gauged) and
// written again by a's writer in the background, not in the user's
// requests (which use the held access token and never wait for the
// bucket), once the retry pause passed; another edge (here a new one,
// reading the bucket) then refreshes with it. Without the write, that
// edge would present the spent token and sign the user out.
func TestRefreshStoreErrorHeldAndWrittenAgain(t *testing.T) {
	rig := newRefreshRig(t)
	a, ctx := rig.f.a, context.Background()
	v := rig.holdRotated(t, errors.New("nats: timeout"))
	if c, s := rig.failureCounts(t); c != 0 || s != 1 {
		t.Fatalf("failures: conflict %v, store_error %v", c, s)
	}
	logs := rig.logs.String()
	if !strings.Contains(logs, `"level":"warn"`) || !strings.Contains(logs, KeyOf(alice, "docs")) ||
		!strings.Contains(logs, "refresh: write the rotated refresh token") || !strings.Contains(logs, `"held":true`) {
		t.Fatalf("log:\n%s", logs)
	}
	if strings.Contains(logs, "rt-") || strings.Contains(logs, rig.iss.Refreshed()[0]) || strings.Contains(logs, alice) {
		t.Fatalf("a token or identity logged:\n%s", logs)
	}
	// Before the pause: a round writes nothing; requests use the held
	// access token.
	rig.advance(DefaultSaveRetry - time.Second)
	rig.f.saveRound(a)
	if v2, err := a.Authorization(ctx, alice, "docs", rig.cfg); err != nil || v2 != v || rig.kv.count() != 1 {
		t.Fatalf("within the pause: %v, same token %v, writes %d", err, v2 == v, rig.kv.count())
	}
	// Due: a request still only uses the access token (no write); the
	// round writes, still failing: counted, held.
	rig.advance(time.Second)
	if v2, err := a.Authorization(ctx, alice, "docs", rig.cfg); err != nil || v2 != v || rig.kv.count() != 1 {
		t.Fatalf("a request wrote the held token: %v, same token %v, writes %d", err, v2 == v, rig.kv.count())
	}
	rig.f.saveRound(a)
	if _, s := rig.failureCounts(t); s != 2 || rig.kv.count() != 2 || testutil.ToFloat64(rig.unsaved) != 1 {
		t.Fatalf("retry while failing: store_error %v, writes %d, gauge %v", s, rig.kv.count(), testutil.ToFloat64(rig.unsaved))
	}
	if !strings.Contains(rig.logs.String(), "retry: write the held rotated refresh token") {
		t.Fatalf("failed retry not logged:\n%s", rig.logs.String())
	}
	// The bucket back: the next round after the pause writes it.
	rig.kv.set(nil, nil)
	rig.advance(DefaultSaveRetry)
	rig.f.saveRound(a)
	held, sealed := rig.held()
	if held || rig.kv.count() != 3 || testutil.ToFloat64(rig.unsaved) != 0 || !bytes.Equal(rig.bucketRecord(t).Value(), sealed) {
		t.Fatalf("retry: held %v, writes %d, gauge %v", held, rig.kv.count(), testutil.ToFloat64(rig.unsaved))
	}
	rig.advance(DefaultSaveRetry)
	rig.f.saveRound(a)
	if v2, err := a.Authorization(ctx, alice, "docs", rig.cfg); err != nil || v2 != v || rig.kv.count() != 3 {
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

// The session moved away: edge a is not used again after its write
// failed; its writer alone stores the held token once the bucket is
// back, and a third edge refreshes from the bucket (the rotated token,
// not the spent one: the sign-in stays).
func TestHeldTokenWrittenWithoutUse(t *testing.T) {
	rig := newRefreshRig(t)
	a, ctx := rig.f.a, context.Background()
	rig.holdRotated(t, errors.New("nats: no responders available for request"))
	_, sealed := rig.held()
	rig.kv.set(nil, nil)
	rig.advance(DefaultSaveRetry)
	rig.f.saveRound(a)
	if got := rig.bucketRecord(t).Value(); !bytes.Equal(got, sealed) || rig.kv.count() != 2 || testutil.ToFloat64(rig.unsaved) != 0 {
		t.Fatalf("the bucket's record is the held one %v, writes %d, gauge %v", bytes.Equal(got, sealed), rig.kv.count(), testutil.ToFloat64(rig.unsaved))
	}
	c := rig.f.open("c")
	if v, err := c.Authorization(ctx, alice, "docs", rig.cfg); err != nil || len(rig.iss.Refreshed()) != 2 || v != "Bearer "+rig.iss.Refreshed()[1] {
		t.Fatalf("edge c's refresh from the bucket: %v (refreshed %d)", err, len(rig.iss.Refreshed()))
	}
	if !c.SignedIn(alice, "docs") {
		t.Fatal("signed out by edge c's refresh")
	}
}

// A held token whose retry finds a newer record (another edge wrote it)
// does not overwrite it: a conflict is counted, the held state ends, the
// entry takes the bucket's record and revision, and nothing is written
// again.
func TestHeldTokenRetryConflict(t *testing.T) {
	rig := newRefreshRig(t)
	a := rig.f.a
	rig.holdRotated(t, errors.New("nats: timeout"))
	other, err := a.o.Key.SealRecord(Record{Identity: alice, Backend: "docs", Refresh: "rt-of-another-edge", ClientID: "dcr-1"})
	if err != nil {
		t.Fatal(err)
	}
	rig.kv.set(nil, other) // another edge writes just before the retry
	rig.advance(DefaultSaveRetry)
	rig.f.saveRound(a)
	cur := rig.bucketRecord(t)
	if !bytes.Equal(cur.Value(), other) {
		t.Fatal("the held token overwrote the newer record")
	}
	if c, s := rig.failureCounts(t); c != 1 || s != 1 {
		t.Fatalf("failures: conflict %v, store_error %v", c, s)
	}
	a.mu.Lock()
	e := a.entries[KeyOf(alice, "docs")]
	unsaved, sealed, rev := e.unsaved, e.sealed, e.rev
	a.mu.Unlock()
	if unsaved || !bytes.Equal(sealed, other) || rev != cur.Revision() || testutil.ToFloat64(rig.unsaved) != 0 {
		t.Fatalf("after the conflict: unsaved %v, the bucket's record %v, rev %d of %d, gauge %v",
			unsaved, bytes.Equal(sealed, other), rev, cur.Revision(), testutil.ToFloat64(rig.unsaved))
	}
	rig.advance(DefaultSaveRetry)
	rig.f.saveRound(a)
	if rig.kv.count() != 2 {
		t.Fatalf("writes %d after the conflict", rig.kv.count())
	}
}

// Run's end writes a held token (the bucket healthy again) before Run
// returns.
func TestHeldTokenWrittenAtStop(t *testing.T) {
	rig := newRefreshRig(t)
	rig.holdRotated(t, errors.New("nats: timeout"))
	_, sealed := rig.held()
	rig.kv.set(nil, nil) // no round runs: only the stop writes
	rig.f.cancel()
	rig.f.done.Wait()
	if got := rig.bucketRecord(t).Value(); !bytes.Equal(got, sealed) || rig.kv.count() != 2 || testutil.ToFloat64(rig.unsaved) != 0 {
		t.Fatalf("the bucket's record is the held one %v, writes %d, gauge %v", bytes.Equal(got, sealed), rig.kv.count(), testutil.ToFloat64(rig.unsaved))
	}
	if strings.Contains(rig.logs.String(), "lost") {
		t.Fatalf("logged as lost:\n%s", rig.logs.String())
	}
}

// A held token is also the one this edge's next refresh uses
// (and writes, over the bucket's revision), when the access token
// expires before any retry.
func TestRefreshStoreErrorNextRefreshUsesHeld(t *testing.T) {
	rig := newRefreshRig(t)
	a, ctx := rig.f.a, context.Background()
	rig.holdRotated(t, errors.New("nats: connection closed"))
	rig.kv.set(nil, nil)
	rig.advance(2 * time.Minute) // expired again: a refresh with the held (rotated) token
	v, err := a.Authorization(ctx, alice, "docs", rig.cfg)
	if err != nil || len(rig.iss.Refreshed()) != 2 || v != "Bearer "+rig.iss.Refreshed()[1] {
		t.Fatalf("second refresh: %v (refreshed %d)", err, len(rig.iss.Refreshed()))
	}
	if held, _ := rig.held(); held || testutil.ToFloat64(rig.unsaved) != 0 {
		t.Fatalf("still held after the refresh wrote: %v", held)
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
	if held, _ := rig.held(); held {
		t.Fatal("a conflicting rotated token held to write again")
	}
	rig.advance(DefaultSaveRetry)
	rig.f.saveRound(a)
	if v2, err := a.Authorization(ctx, alice, "docs", rig.cfg); err != nil || v2 != v || rig.kv.count() != 1 {
		t.Fatalf("after a conflict: %v, same token %v, writes %d", err, v2 == v, rig.kv.count())
	}
	if !bytes.Equal(rig.bucketRecord(t).Value(), other) {
		t.Fatal("the bucket's record replaced")
	}
	if strings.Contains(rig.logs.String(), `"level":"warn"`) {
		t.Fatalf("a conflict logged at warn:\n%s", rig.logs.String())
	}
}
