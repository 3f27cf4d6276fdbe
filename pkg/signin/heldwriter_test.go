package signin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/logtest"
	"github.com/fleetgate/fleetgate/pkg/tokenexchange"
)

// stallingKV is a bucket whose Update waits for its context to end while
// stalled, and succeeds otherwise.
type stallingKV struct {
	jetstream.KeyValue
	mu      sync.Mutex
	stalled bool
	updates int
}

func (s *stallingKV) Update(ctx context.Context, _ string, _ []byte, rev uint64) (uint64, error) {
	s.mu.Lock()
	s.updates++
	stalled := s.stalled
	s.mu.Unlock()
	if stalled {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	return rev + 1, nil
}

func (s *stallingKV) state() (updates int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.updates
}

// heldManager is a manager (not run: no watch) over kv holding alice's
// rotated token, whose write over revision rev failed.
func heldManager(t *testing.T, kv jetstream.KeyValue, rev uint64, o Options) *Manager {
	t.Helper()
	key, err := NewKey([]byte(strings.Repeat("s", 40)))
	if err != nil {
		t.Fatal(err)
	}
	o.Key = key
	m := Open(o)
	m.kv.Store(&kv)
	k := KeyOf(alice, "docs")
	m.entries[k] = &entry{identity: alice, backend: "docs", sealed: []byte("the bucket's"), rev: rev}
	r := Record{Identity: alice, Backend: "docs", Refresh: "rotated", ClientID: "c", TokenEndpoint: "https://as/token"}
	m.storeFailed(k, r, rev, tokenexchange.Token{}, time.Now(), errors.New("nats: timeout"))
	if !m.entries[k].unsaved {
		t.Fatal("not held")
	}
	return m
}

// Run's writer wakes every SaveRetry (the default 10 s) and writes the
// held tokens due; a stalled bucket costs a round saveRetryTimeout, and
// the writes when the writer stops take at most finalSaveTimeout in all,
// after which the tokens still held are logged as lost (by count).
func TestHeldWriterCadenceAndStopBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kv := &stallingKV{stalled: true}
		failures := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "failures"}, []string{"reason"})
		unsaved := prometheus.NewGauge(prometheus.GaugeOpts{Name: "unsaved"})
		logs := &logtest.Buffer{}
		m := heldManager(t, kv, 3, Options{StoreFailures: failures, Unsaved: unsaved, Log: zerolog.New(logs)})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); m.writeHeldLoop(ctx) }()
		time.Sleep(DefaultSaveRetry - time.Millisecond)
		synctest.Wait()
		if kv.state() != 0 {
			t.Fatalf("written before the pause: %d", kv.state())
		}
		time.Sleep(time.Millisecond) // the tick: a write, stalled
		synctest.Wait()
		if kv.state() != 1 || testutil.ToFloat64(failures.WithLabelValues(ReasonStoreError)) != 1 {
			t.Fatalf("at the tick: writes %d", kv.state())
		}
		time.Sleep(saveRetryTimeout)
		synctest.Wait()
		if n := testutil.ToFloat64(failures.WithLabelValues(ReasonStoreError)); n != 2 || testutil.ToFloat64(unsaved) != 1 {
			t.Fatalf("after the stalled write: store_error %v, gauge %v", n, testutil.ToFloat64(unsaved))
		}
		start := time.Now()
		cancel()
		<-done
		if d := time.Since(start); d != finalSaveTimeout || kv.state() != 2 {
			t.Fatalf("stop took %v, writes %d", d, kv.state())
		}
		if !strings.Contains(logs.String(), `"held":1`) || !strings.Contains(logs.String(), "lost") {
			t.Fatalf("tokens lost at stop not logged:\n%s", logs.String())
		}
	})
}

// A healthy bucket: the first tick from the pause on writes the held
// token, once.
func TestHeldWriterWritesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kv := &stallingKV{}
		unsaved := prometheus.NewGauge(prometheus.GaugeOpts{Name: "unsaved"})
		m := heldManager(t, kv, 3, Options{Unsaved: unsaved, SaveRetry: time.Minute})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); m.writeHeldLoop(ctx) }()
		time.Sleep(3 * time.Minute)
		synctest.Wait()
		m.mu.Lock()
		rev := m.entries[KeyOf(alice, "docs")].rev
		m.mu.Unlock()
		if kv.state() != 1 || testutil.ToFloat64(unsaved) != 0 || rev != 4 {
			t.Fatalf("writes %d, gauge %v, rev %d", kv.state(), testutil.ToFloat64(unsaved), rev)
		}
		cancel()
		<-done
		if kv.state() != 1 {
			t.Fatalf("written again at stop: %d", kv.state())
		}
	})
}

// After a retry's conflict, the entry holds the bucket's record and
// revision at once (before the watch brings it: here there is none); a
// sign-out meanwhile (the key deleted) drops the entry, as the watch
// would, and tells OnChange; a bucket unreadable after the conflict
// keeps the token held, for the next round.
func TestHeldRetryConflictTakesBucketRecord(t *testing.T) {
	f := newFleet(t, nil)
	real, err := f.a.bucket()
	if err != nil {
		t.Fatal(err)
	}
	ctx, k := context.Background(), KeyOf(alice, "docs")
	for _, tc := range []string{"newer", "signed out", "unreadable"} {
		old, err := real.Put(ctx, k, []byte("the record the held token was rotated from"))
		if err != nil {
			t.Fatal(err)
		}
		var kv jetstream.KeyValue = real
		if tc == "unreadable" {
			kv = &unreadableKV{KeyValue: real}
		}
		var changes []string
		m := heldManager(t, kv, old, Options{OnChange: func(id, b string) { changes = append(changes, id+" "+b) }})
		held := m.entries[k].sealed
		newer, err := m.o.Key.SealRecord(Record{Identity: alice, Backend: "docs", Refresh: "rt-newer", ClientID: "c"})
		if err != nil {
			t.Fatal(err)
		}
		rev, err := real.Put(ctx, k, newer)
		if err != nil {
			t.Fatal(err)
		}
		if tc == "signed out" {
			if err := real.Delete(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.writeHeld(ctx, k, time.Now(), true); err != nil {
			t.Fatal(err)
		}
		e := m.entries[k]
		switch tc {
		case "signed out":
			if e != nil || len(m.held) != 0 || m.SignedIn(alice, "docs") || len(changes) != 1 {
				t.Fatalf("signed out: entry kept %v, held %d, changes %v", e != nil, len(m.held), changes)
			}
		case "unreadable":
			if e == nil || !e.unsaved || len(m.held) != 1 || !bytes.Equal(e.sealed, held) || e.rev != old {
				t.Fatalf("unreadable: the held state ended (%+v)", e)
			}
		default:
			if e.unsaved || len(m.held) != 0 || !bytes.Equal(e.sealed, newer) || e.rev != rev || len(changes) != 0 {
				t.Fatalf("the bucket's record not taken: rev %d of %d, unsaved %v", e.rev, rev, e.unsaved)
			}
		}
		if cur, err := real.Get(ctx, k); tc != "signed out" && (err != nil || !bytes.Equal(cur.Value(), newer)) {
			t.Fatalf("the bucket's record overwritten: %v", err)
		}
	}
}

// unreadableKV is a bucket whose reads fail (the bucket unavailable).
type unreadableKV struct{ jetstream.KeyValue }

func (unreadableKV) Get(context.Context, string) (jetstream.KeyValueEntry, error) {
	return nil, errors.New("nats: timeout")
}

// Once Run's writer has stopped (its last round begun), a rotated token
// whose write fails is logged as lost (by the key hash), not as held and
// written in the background.
func TestStoreFailedAfterWriterStoppedLogsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logtest.Buffer{}
		m := heldManager(t, &stallingKV{}, 3, Options{Log: zerolog.New(logs)})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		m.writeHeldLoop(ctx) // the last round writes the held token
		k := KeyOf(alice, "docs")
		if m.entries[k].unsaved {
			t.Fatal("not written at stop")
		}
		before := len(logs.String())
		r := Record{Identity: alice, Backend: "docs", Refresh: "rotated-later", ClientID: "c", TokenEndpoint: "https://as/token"}
		m.storeFailed(k, r, 4, tokenexchange.Token{}, time.Now(), errors.New("nats: timeout"))
		got := logs.String()[before:]
		if !strings.Contains(got, `"lost":true`) || strings.Contains(got, "written again in the background") ||
			!strings.Contains(got, k) || strings.Contains(got, "rotated-later") || !strings.Contains(got, `"level":"warn"`) {
			t.Fatalf("log after the writer stopped:\n%s", got)
		}
	})
}

// tokenEndpoint answers every request with new tokens, counting them.
type tokenEndpoint struct {
	mu sync.Mutex
	n  int
}

func (te *tokenEndpoint) RoundTrip(r *http.Request) (*http.Response, error) {
	te.mu.Lock()
	te.n++
	n := te.n
	te.mu.Unlock()
	body := fmt.Sprintf(`{"access_token":"at-%d","token_type":"Bearer","expires_in":60,"refresh_token":"rt-%d"}`, n, n)
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

func (te *tokenEndpoint) count() int {
	te.mu.Lock()
	defer te.mu.Unlock()
	return te.n
}

// An Authorization whose access token expired while Run's writer writes
// the key's held token joins that write's flight (no refresh of its own
// meanwhile), then refreshes, once, with the held token: no error.
func TestAuthorizationJoinsHeldWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kv := &stallingKV{stalled: true}
		te := &tokenEndpoint{}
		m := heldManager(t, kv, 3, Options{HTTPClient: &http.Client{Transport: te}})
		ctx := context.Background()
		wrote := make(chan struct{})
		go func() { defer close(wrote); m.writeHeldRound(ctx, true) }()
		synctest.Wait() // the writer's Update stalls, in the key's flight
		kv.mu.Lock()
		kv.stalled = false // the writes from now on succeed
		kv.mu.Unlock()
		type result struct {
			v   string
			err error
		}
		got := make(chan result, 1)
		go func() {
			v, err := m.Authorization(ctx, alice, "docs", nil)
			got <- result{v, err}
		}()
		synctest.Wait()
		if te.count() != 0 || kv.state() != 1 {
			t.Fatalf("did not join the write: refreshes %d, writes %d", te.count(), kv.state())
		}
		time.Sleep(saveRetryTimeout) // the stalled write times out; the flight ends
		<-wrote
		r := <-got
		if r.err != nil || r.v != "Bearer at-1" || te.count() != 1 || kv.state() != 2 {
			t.Fatalf("after the joined write: %q, %v; refreshes %d, writes %d", r.v, r.err, te.count(), kv.state())
		}
	})
}
