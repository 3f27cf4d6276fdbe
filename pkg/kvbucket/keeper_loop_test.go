package kvbucket

import (
	"context"
	"errors"
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
)

// fakeStreams is a JetStream's stream configs, in memory: what a Keeper
// looks at and updates.
type fakeStreams struct {
	jetstream.StreamManager // nil: any other method panics
	mu                      sync.Mutex
	cfgs                    map[string]jetstream.StreamConfig
	looks, updates          int
	fail                    error // every look fails with it
	failWrite               error // every create and update fails with it
	block                   bool  // every look waits for its context's end
}

type fakeStream struct {
	jetstream.Stream
	info *jetstream.StreamInfo
}

func (s fakeStream) CachedInfo() *jetstream.StreamInfo { return s.info }

func (f *fakeStreams) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.looks++
	if f.block {
		f.mu.Unlock()
		<-ctx.Done()
		f.mu.Lock()
		return nil, ctx.Err()
	}
	if f.fail != nil {
		return nil, f.fail
	}
	cfg, ok := f.cfgs[name]
	if !ok {
		return nil, jetstream.ErrStreamNotFound
	}
	return fakeStream{info: &jetstream.StreamInfo{Config: cfg}}, nil
}

func (f *fakeStreams) CreateStream(_ context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	return f.UpdateStream(context.Background(), cfg)
}

func (f *fakeStreams) UpdateStream(_ context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failWrite != nil {
		return nil, f.failWrite
	}
	f.updates++
	f.cfgs[cfg.Name] = cfg
	return fakeStream{info: &jetstream.StreamInfo{Config: cfg}}, nil
}

func (f *fakeStreams) set(cfg jetstream.StreamConfig) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cfgs[cfg.Name] = cfg
}

func (f *fakeStreams) get(name string) jetstream.StreamConfig {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cfgs[name]
}

func (f *fakeStreams) setFail(look, write error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail, f.failWrite = look, write
}

func (f *fakeStreams) counts() (looks, updates int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.looks, f.updates
}

// The keeper looks once a minute (the default), only while leading; a
// loosened bucket is hardened again at the next look, logged at warn and
// counted by bucket; a current one is left alone; a failed look writes
// nothing; Run returns once ctx ends.
func TestKeeperLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := Hardened("a", jetstream.StreamConfig{MaxBytes: 1 << 20})
		b := Hardened("b", jetstream.StreamConfig{MaxBytes: 1 << 20})
		fs := &fakeStreams{cfgs: map[string]jetstream.StreamConfig{"KV_a": a, "KV_b": b}}
		var leading sync.Mutex
		lead := false
		var logs logtest.Buffer
		zl := zerolog.New(&logs)
		reg := prometheus.NewRegistry()
		k, err := NewKeeper(fs, []jetstream.StreamConfig{a, b}, &KeeperOptions{Registerer: reg, Logger: &zl,
			Leading: func() bool { leading.Lock(); defer leading.Unlock(); return lead }})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- k.Run(ctx) }()

		loose := a
		loose.AllowRollup, loose.DenyPurge = true, false
		fs.set(loose)
		time.Sleep(DefaultKeeperInterval)
		synctest.Wait()
		if looks, updates := fs.counts(); looks != 0 || updates != 0 {
			t.Fatalf("a keeper that does not lead looked %d times, wrote %d", looks, updates)
		}
		leading.Lock()
		lead = true
		leading.Unlock()
		time.Sleep(DefaultKeeperInterval - time.Second)
		synctest.Wait()
		if looks, _ := fs.counts(); looks != 0 {
			t.Fatal("looked before the interval")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if looks, updates := fs.counts(); looks != 2 || updates != 1 {
			t.Fatalf("first look: %d looks, %d updates; want 2, 1", looks, updates)
		}
		if cfg := fs.get("KV_a"); !Current(cfg, a) {
			t.Fatalf("not hardened again: %+v", cfg)
		}
		if n := testutil.ToFloat64(k.reapplied.WithLabelValues("a")); n != 1 {
			t.Fatalf("reapplied{a} = %v", n)
		}
		if n := testutil.ToFloat64(k.reapplied.WithLabelValues("b")); n != 0 {
			t.Fatalf("reapplied{b} = %v", n)
		}
		if l := logs.String(); !strings.Contains(l, `"level":"warn"`) || !strings.Contains(l, `"bucket":"a"`) ||
			!strings.Contains(l, "allow_rollup_hdrs") || strings.Contains(l, `"bucket":"b"`) {
			t.Fatalf("log:\n%s", l)
		}
		time.Sleep(DefaultKeeperInterval)
		synctest.Wait()
		if looks, updates := fs.counts(); looks != 4 || updates != 1 {
			t.Fatalf("second look: %d looks, %d updates; want 4, 1", looks, updates)
		}
		fs.setFail(errors.New("nats: timeout"), nil)
		time.Sleep(DefaultKeeperInterval)
		synctest.Wait()
		if looks, updates := fs.counts(); looks != 6 || updates != 1 {
			t.Fatalf("failed look: %d looks, %d updates; want 6, 1", looks, updates)
		}
		for _, b := range []string{"a", "b"} {
			if n := testutil.ToFloat64(k.failures.WithLabelValues(b)); n != 1 {
				t.Fatalf("check_failures{%s} = %v", b, n)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		n, err := testutil.GatherAndCount(reg, "fleetgate_controller_kv_hardening_reapplied_total", "fleetgate_controller_kv_hardening_check_failures_total")
		if err != nil || n != 4 {
			t.Fatalf("registered series %d: %v", n, err)
		}
	})
}

// A missing bucket is created again, hardened; the interval is an option.
func TestKeeperRecreatesMissing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := Hardened("a", jetstream.StreamConfig{MaxBytes: 1 << 20})
		fs := &fakeStreams{cfgs: map[string]jetstream.StreamConfig{}}
		k, err := NewKeeper(fs, []jetstream.StreamConfig{a}, &KeeperOptions{Interval: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- k.Run(ctx) }()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if cfg := fs.get("KV_a"); !Current(cfg, a) {
			t.Fatalf("missing bucket not created again: %+v", cfg)
		}
		if n := testutil.ToFloat64(k.reapplied.WithLabelValues("a")); n != 1 {
			t.Fatalf("reapplied{a} = %v", n)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
	})
}
