package kvbucket

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/logtest"
)

// newTestKeeper is a keeper of want in fs logging to logs.
func newTestKeeper(t *testing.T, fs *fakeStreams, logs *logtest.Buffer, o KeeperOptions, want ...jetstream.StreamConfig) *Keeper {
	t.Helper()
	zl := zerolog.New(logs)
	o.Logger = &zl
	k, err := NewKeeper(fs, want, &o)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A bucket an operator resized (larger) and scaled to more replicas is
// left as it is, logged at info once per change; a loosened setting on
// top of it is restored and the resize kept.
func TestKeeperLeavesOperatorChanges(t *testing.T) {
	a := Hardened("a", jetstream.StreamConfig{MaxBytes: 1 << 20, Discard: jetstream.DiscardOld})
	resized := a
	resized.MaxBytes, resized.Replicas = 8<<20, 3
	fs := &fakeStreams{cfgs: map[string]jetstream.StreamConfig{"KV_a": resized}}
	var logs logtest.Buffer
	k := newTestKeeper(t, fs, &logs, KeeperOptions{}, a)
	for range 3 {
		if r := k.Keep(t.Context()); len(r) != 0 {
			t.Fatalf("repaired a resized bucket: %+v", r)
		}
	}
	if _, updates := fs.counts(); updates != 0 {
		t.Fatalf("%d writes to a resized bucket", updates)
	}
	if n := logs.Count(logtest.Level("info"), `"bucket":"a"`, "max_bytes 8388608 (provisioned 1048576)", "num_replicas 3 (provisioned 1)"); n != 1 {
		t.Fatalf("%d info lines on the resize, want 1:\n%s", n, logs.String())
	}
	resized.MaxBytes = 16 << 20
	fs.set(resized)
	k.Keep(t.Context())
	k.Keep(t.Context())
	if n := logs.Count(logtest.Level("info"), "max_bytes 16777216"); n != 1 {
		t.Fatalf("%d info lines on the second resize, want 1:\n%s", n, logs.String())
	}
	loose := resized
	loose.AllowDirect, loose.MaxMsgsPerSubject = false, 10
	fs.set(loose)
	r := k.Keep(t.Context())
	if len(r) != 1 || r[0].Missing {
		t.Fatalf("repairs %+v", r)
	}
	if cfg := fs.get("KV_a"); cfg.MaxBytes != 16<<20 || cfg.Replicas != 3 || !cfg.AllowDirect || cfg.MaxMsgsPerSubject != 1 || len(Drift(cfg, a)) != 0 {
		t.Fatalf("after the repair: %+v", cfg)
	}
	if n := testutil.ToFloat64(k.reapplied.WithLabelValues("a")); n != 1 {
		t.Fatalf("reapplied{a} = %v", n)
	}
	if n := logs.Count(logtest.Level("info"), "max_bytes 16777216"); n != 1 {
		t.Fatalf("the unchanged resize logged again:\n%s", logs.String())
	}
}

// Failed checks are counted each; the third in a row warns, once per
// streak, and the streak's end is logged; a failed repair warns at once
// and is not counted as reapplied.
func TestKeeperFailureStreak(t *testing.T) {
	a := Hardened("a", jetstream.StreamConfig{MaxBytes: 1 << 20})
	fs := &fakeStreams{cfgs: map[string]jetstream.StreamConfig{"KV_a": a}}
	var logs logtest.Buffer
	k := newTestKeeper(t, fs, &logs, KeeperOptions{}, a)
	fs.setFail(errors.New("nats: timeout"), nil)
	for i := range 5 {
		k.Keep(t.Context())
		if n := logs.Count(logtest.Level("warn"), `"bucket":"a"`, "nats: timeout"); (i < 2 && n != 0) || (i >= 2 && n != 1) {
			t.Fatalf("after %d failed looks: %d warnings\n%s", i+1, n, logs.String())
		}
	}
	if n := testutil.ToFloat64(k.failures.WithLabelValues("a")); n != 5 {
		t.Fatalf("check_failures{a} = %v", n)
	}
	fs.setFail(nil, nil)
	k.Keep(t.Context())
	if n := logs.Count(logtest.Level("info"), `"bucket":"a"`, "succeed again", `"failures":5`); n != 1 {
		t.Fatalf("streak end not logged:\n%s", logs.String())
	}
	fs.setFail(errors.New("nats: timeout"), nil)
	k.Keep(t.Context())
	k.Keep(t.Context())
	if n := logs.Count(logtest.Level("warn"), "nats: timeout"); n != 1 {
		t.Fatalf("a new streak of two warned: %d warnings", n)
	}

	loose := a
	loose.Discard = jetstream.DiscardNew
	fs.set(loose)
	fs.setFail(nil, errors.New("insufficient resources"))
	if r := k.Keep(t.Context()); len(r) != 0 {
		t.Fatalf("a failed write reported as a repair: %+v", r)
	}
	if n := logs.Count(logtest.Level("warn"), "insufficient resources", "restoring them failed", `"drift":["discard"]`); n != 1 {
		t.Fatalf("failed repair: %d warnings\n%s", n, logs.String())
	}
	k.Keep(t.Context())
	if n := logs.Count(logtest.Level("warn"), "insufficient resources"); n != 1 {
		t.Fatalf("the second failed repair warned again")
	}
	if n := testutil.ToFloat64(k.reapplied.WithLabelValues("a")); n != 0 {
		t.Fatalf("reapplied{a} = %v after failed writes", n)
	}
	if n := testutil.ToFloat64(k.failures.WithLabelValues("a")); n != 9 {
		t.Fatalf("check_failures{a} = %v", n)
	}
}

// A look that loses the lead writes nothing and looks at no further
// bucket.
func TestKeeperLeadLostDuringLook(t *testing.T) {
	a := Hardened("a", jetstream.StreamConfig{MaxBytes: 1 << 20})
	b := Hardened("b", jetstream.StreamConfig{MaxBytes: 1 << 20})
	loose := a
	loose.AllowDirect = false
	fs := &fakeStreams{cfgs: map[string]jetstream.StreamConfig{"KV_a": loose, "KV_b": b}}
	var logs logtest.Buffer
	k := newTestKeeper(t, fs, &logs, KeeperOptions{Leading: func() bool { looks, _ := fs.counts(); return looks == 0 }}, a, b)
	if r := k.Keep(t.Context()); len(r) != 0 {
		t.Fatalf("repaired without the lead: %+v", r)
	}
	if looks, updates := fs.counts(); looks != 1 || updates != 0 {
		t.Fatalf("%d looks, %d writes; want 1, 0", looks, updates)
	}
}

// Each bucket's check is bounded by Timeout (at most Interval): a look
// that hangs fails then, counted, and the next bucket is looked at.
func TestKeeperBucketTimeout(t *testing.T) {
	for _, c := range []struct {
		name string
		o    KeeperOptions
		want time.Duration
	}{
		{"default", KeeperOptions{}, DefaultBucketTimeout},
		{"at most the interval", KeeperOptions{Interval: 4 * time.Second, Timeout: time.Minute}, 4 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := Hardened("a", jetstream.StreamConfig{MaxBytes: 1 << 20})
				b := Hardened("b", jetstream.StreamConfig{MaxBytes: 1 << 20})
				fs := &fakeStreams{cfgs: map[string]jetstream.StreamConfig{}, block: true}
				var logs logtest.Buffer
				k := newTestKeeper(t, fs, &logs, c.o, a, b)
				start := time.Now()
				k.Keep(t.Context())
				if d := time.Since(start); d != 2*c.want {
					t.Fatalf("two hanging looks took %v, want %v", d, 2*c.want)
				}
				for _, b := range []string{"a", "b"} {
					if n := testutil.ToFloat64(k.failures.WithLabelValues(b)); n != 1 {
						t.Fatalf("check_failures{%s} = %v", b, n)
					}
				}
				if n := logs.Count(logtest.Level("debug"), "context deadline exceeded"); n != 2 {
					t.Fatalf("%d debug lines\n%s", n, logs.String())
				}
			})
		})
	}
}

// A look that the keeper's end cuts short is no failed check, and Run
// returns.
func TestKeeperShutdownMidLook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := Hardened("a", jetstream.StreamConfig{MaxBytes: 1 << 20})
		fs := &fakeStreams{cfgs: map[string]jetstream.StreamConfig{}, block: true}
		var logs logtest.Buffer
		k := newTestKeeper(t, fs, &logs, KeeperOptions{}, a)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- k.Run(ctx) }()
		time.Sleep(DefaultKeeperInterval + time.Second)
		synctest.Wait()
		if looks, _ := fs.counts(); looks != 1 {
			t.Fatalf("%d looks, want 1 under way", looks)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		if n := testutil.ToFloat64(k.failures.WithLabelValues("a")); n != 0 {
			t.Fatalf("check_failures{a} = %v after a shutdown", n)
		}
	})
}

// A sealed bucket takes no write: the keeper says so once at error level
// and never tries to repair it.
func TestKeeperLeavesSealedBucket(t *testing.T) {
	a := Hardened("a", jetstream.StreamConfig{MaxBytes: 1 << 20, Discard: jetstream.DiscardOld})
	sealed := a
	sealed.Sealed, sealed.MaxAge, sealed.Discard = true, 0, jetstream.DiscardNew // as the server keeps one
	fs := &fakeStreams{cfgs: map[string]jetstream.StreamConfig{"KV_a": sealed}}
	var logs logtest.Buffer
	k := newTestKeeper(t, fs, &logs, KeeperOptions{}, a)
	for range 3 {
		if r := k.Keep(t.Context()); len(r) != 0 {
			t.Fatalf("repaired a sealed bucket: %+v", r)
		}
	}
	if _, updates := fs.counts(); updates != 0 {
		t.Fatalf("%d writes to a sealed bucket", updates)
	}
	if n := logs.Count(logtest.Level("error"), `"bucket":"a"`, "sealed"); n != 1 {
		t.Fatalf("%d error lines on the sealed bucket, want 1:\n%s", n, logs.String())
	}
}
