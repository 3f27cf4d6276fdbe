package kvbucket

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
)

func TestRepairs(t *testing.T) {
	a := Hardened("a", jetstream.StreamConfig{MaxBytes: 1 << 20, MaxMsgSize: 64 << 10, MaxAge: time.Hour, Discard: jetstream.DiscardOld})
	b := Hardened("b", jetstream.StreamConfig{MaxBytes: 2 << 20, AllowMsgTTL: true})
	loosen := func(c jetstream.StreamConfig, f func(*jetstream.StreamConfig)) jetstream.StreamConfig {
		f(&c)
		return c
	}
	want := []jetstream.StreamConfig{a, b}
	for _, c := range []struct {
		name string
		seen map[string]Seen
		want []string            // "bucket missing" or "bucket drift,drift"
		left map[string][]string // Left by bucket, of those seen
	}{
		{"both current", map[string]Seen{"KV_a": {Config: a}, "KV_b": {Config: b}}, nil, nil},
		{"nothing seen (looks failed)", map[string]Seen{}, nil, nil},
		{"roll-ups allowed", map[string]Seen{"KV_a": {Config: loosen(a, func(c *jetstream.StreamConfig) { c.AllowRollup = true })}, "KV_b": {Config: b}},
			[]string{"a allow_rollup_hdrs"}, nil},
		{"nats kv edit: a plain KV stream", map[string]Seen{"KV_b": {Config: loosen(b, func(c *jetstream.StreamConfig) {
			c.AllowRollup, c.DenyPurge, c.DenyDelete, c.SubjectDeleteMarkerTTL = true, false, false, time.Minute
		})}}, []string{"b allow_rollup_hdrs,deny_purge,deny_delete,subject_delete_marker_ttl"}, nil},
		{"limits unbounded, full bucket refusing writes, history", map[string]Seen{"KV_a": {Config: loosen(a, func(c *jetstream.StreamConfig) {
			c.MaxBytes, c.MaxMsgSize, c.MaxAge, c.Discard, c.MaxMsgsPerSubject = -1, 0, 0, jetstream.DiscardNew, 5
		})}}, []string{"a max_bytes,max_msg_size,max_age,discard,max_msgs_per_subject"}, nil},
		{"history unbounded", map[string]Seen{"KV_a": {Config: loosen(a, func(c *jetstream.StreamConfig) { c.MaxMsgsPerSubject = -1 })}},
			[]string{"a max_msgs_per_subject"}, nil},
		{"discard new per subject", map[string]Seen{"KV_a": {Config: loosen(a, func(c *jetstream.StreamConfig) {
			c.Discard, c.DiscardNewPerSubject = jetstream.DiscardNew, true
		})}}, []string{"a discard"}, nil},
		{"longer max age and duplicate window", map[string]Seen{"KV_a": {Config: loosen(a, func(c *jetstream.StreamConfig) {
			c.MaxAge, c.Duplicates = 3*time.Hour, 3*time.Hour
		})}}, []string{"a max_age"}, nil},
		{"direct gets off; replicas, message size left", map[string]Seen{"KV_a": {Config: loosen(a, func(c *jetstream.StreamConfig) {
			c.AllowDirect, c.Replicas, c.MaxMsgSize = false, 3, 1024
		})}}, []string{"a allow_direct"}, map[string][]string{"a": {"max_msg_size 1024 (provisioned 65536)", "num_replicas 3 (provisioned 1)"}}},
		{"operator resized: larger bucket, larger records, more replicas", map[string]Seen{"KV_a": {Config: loosen(a, func(c *jetstream.StreamConfig) {
			c.MaxBytes, c.MaxMsgSize, c.Replicas = 8<<20, 128<<10, 3
		})}, "KV_b": {Config: loosen(b, func(c *jetstream.StreamConfig) { c.MaxBytes = 64 << 20 })}},
			nil, map[string][]string{
				"a": {"max_bytes 8388608 (provisioned 1048576)", "max_msg_size 131072 (provisioned 65536)", "num_replicas 3 (provisioned 1)"},
				"b": {"max_bytes 67108864 (provisioned 2097152)"}}},
		{"operator lowered: smaller bucket, shorter max age, fewer replicas", map[string]Seen{"KV_a": {Config: loosen(a, func(c *jetstream.StreamConfig) {
			c.MaxBytes, c.MaxAge, c.Replicas = 512<<10, time.Minute, 0
		})}}, nil, map[string][]string{"a": {"max_bytes 524288 (provisioned 1048576)", "max_age 1m0s (provisioned 1h0m0s)"}}},
		{"max age where none wanted: left", map[string]Seen{"KV_b": {Config: loosen(b, func(c *jetstream.StreamConfig) { c.MaxAge = time.Hour })}},
			nil, map[string][]string{"b": {"max_age 1h0m0s (provisioned 0s)"}}},
		{"resized and loosened: only the loosened restored", map[string]Seen{"KV_a": {Config: loosen(a, func(c *jetstream.StreamConfig) {
			c.MaxBytes, c.Replicas, c.AllowDirect = 8<<20, 3, false
		})}}, []string{"a allow_direct"}, map[string][]string{"a": {"max_bytes 8388608 (provisioned 1048576)", "num_replicas 3 (provisioned 1)"}}},
		{"per-message TTLs off where wanted", map[string]Seen{"KV_b": {Config: loosen(b, func(c *jetstream.StreamConfig) { c.AllowMsgTTL = false })}},
			[]string{"b allow_msg_ttl"}, nil},
		{"TTLs on where not wanted: current", map[string]Seen{"KV_a": {Config: loosen(a, func(c *jetstream.StreamConfig) { c.AllowMsgTTL = true })}}, nil, nil},
		{"unlimited as 0 or -1: current", map[string]Seen{"KV_b": {Config: loosen(b, func(c *jetstream.StreamConfig) { c.MaxMsgSize = -1 })}}, nil, nil},
		{"a missing, b drifted", map[string]Seen{"KV_a": {Missing: true}, "KV_b": {Config: loosen(b, func(c *jetstream.StreamConfig) { c.DenyPurge = false })}},
			[]string{"a missing", "b deny_purge"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, r := range Repairs(want, c.seen) {
				if r.Missing {
					got = append(got, r.Bucket()+" missing")
					if !reflect.DeepEqual(r.Config, r.Want) {
						t.Errorf("%s: creates %+v", r.Bucket(), r.Config)
					}
					continue
				}
				got = append(got, r.Bucket()+" "+strings.Join(r.Drift, ","))
				seen := c.seen[r.Want.Name].Config
				// The write restores what loosened and keeps the rest.
				if d := Drift(r.Config, r.Want); len(d) > 0 {
					t.Errorf("%s: still loose after the repair: %q", r.Bucket(), d)
				}
				if l, l0 := Left(r.Config, r.Want), Left(seen, r.Want); !slices.Equal(l, l0) {
					t.Errorf("%s: the repair changed what is left: %q, was %q", r.Bucket(), l, l0)
				}
				if r.Config.MaxAge > 0 && r.Config.Duplicates > r.Config.MaxAge {
					t.Errorf("%s: duplicate window %v over max age %v", r.Bucket(), r.Config.Duplicates, r.Config.MaxAge)
				}
				if r.Config.DiscardNewPerSubject && r.Config.Discard != jetstream.DiscardNew {
					t.Errorf("%s: discard new per subject with discard old", r.Bucket())
				}
				if r.Config.Replicas != seen.Replicas || r.Config.Storage != seen.Storage || r.Config.Description != seen.Description {
					t.Errorf("%s: the repair changed replicas, storage or description", r.Bucket())
				}
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("repairs %q, want %q", got, c.want)
			}
			for name, s := range c.seen {
				bucket := strings.TrimPrefix(name, "KV_")
				if s.Missing {
					continue
				}
				w := a
				if bucket == "b" {
					w = b
				}
				if l := Left(s.Config, w); !slices.Equal(l, c.left[bucket]) {
					t.Errorf("left %s: %q, want %q", bucket, l, c.left[bucket])
				}
				if Current(s.Config, w) != (len(c.left[bucket]) == 0 && len(Drift(s.Config, w)) == 0) {
					t.Errorf("current %s: %v", bucket, Current(s.Config, w))
				}
			}
		})
	}
}

// fakeStreams is a JetStream's stream configs, in memory: what a Keeper
// looks at and updates.
type fakeStreams struct {
	jetstream.StreamManager // nil: any other method panics
	mu                      sync.Mutex
	cfgs                    map[string]jetstream.StreamConfig
	looks, updates          int
	fail                    error // every look fails with it
}

type fakeStream struct {
	jetstream.Stream
	info *jetstream.StreamInfo
}

func (s fakeStream) CachedInfo() *jetstream.StreamInfo { return s.info }

func (f *fakeStreams) Stream(_ context.Context, name string) (jetstream.Stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.looks++
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

func (f *fakeStreams) counts() (looks, updates int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.looks, f.updates
}

// syncBuffer is a log destination safe for the keeper's goroutine and the
// test's.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
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
		var logs syncBuffer
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
		fs.mu.Lock()
		fs.fail = errors.New("nats: timeout")
		fs.mu.Unlock()
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

func TestNewKeeperRefusesOtherStreams(t *testing.T) {
	if _, err := NewKeeper(&fakeStreams{}, []jetstream.StreamConfig{{Name: "EVENTS"}}, nil); err == nil {
		t.Fatal("a stream that is no KV bucket's was taken")
	}
}

// On a real JetStream: a hardened bucket loosened by a stream update (as
// nats kv edit does) is hardened again by the keeper's look, its records
// kept; roll-ups and purges are refused again; a look at current buckets
// changes nothing.
func TestKeeperRestoresLoosenedBucket(t *testing.T) {
	node := natstest.Start(t)
	js := natstest.JetStream(t, node.ClientURL())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	want := []jetstream.StreamConfig{
		Hardened("s", jetstream.StreamConfig{MaxBytes: 1 << 20, Storage: jetstream.FileStorage, Discard: jetstream.DiscardOld, AllowMsgTTL: true}),
		Hardened("e", jetstream.StreamConfig{MaxBytes: 1 << 20, MaxAge: time.Hour, Storage: jetstream.FileStorage}),
	}
	for _, w := range want {
		if err := Provision(ctx, js, w); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	k, err := NewKeeper(js, want, &KeeperOptions{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if r := k.Keep(ctx); len(r) != 0 {
		t.Fatalf("current buckets repaired: %+v", r)
	}
	kv, err := js.KeyValue(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "kept", []byte("v")); err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "KV_s")
	if err != nil {
		t.Fatal(err)
	}
	loose := st.CachedInfo().Config
	// What nats kv edit --history 5 --max-bucket-size -1 and a DiscardNew
	// would set: unbounded, full buckets refusing writes. (The server
	// refuses to turn DenyPurge or DenyDelete off once on, and roll-ups on
	// while purges are denied.)
	loose.MaxMsgsPerSubject, loose.MaxBytes, loose.Discard, loose.AllowDirect = 5, -1, jetstream.DiscardNew, false
	if _, err := js.UpdateStream(ctx, loose); err != nil {
		t.Fatal(err)
	}
	r := k.Keep(ctx)
	if len(r) != 1 || r[0].Bucket() != "s" || !slices.Equal(r[0].Drift, []string{"max_bytes", "allow_direct", "discard", "max_msgs_per_subject"}) {
		t.Fatalf("repairs %+v", r)
	}
	st, err = js.Stream(ctx, "KV_s")
	if err != nil {
		t.Fatal(err)
	}
	if !Current(st.CachedInfo().Config, want[0]) {
		t.Fatalf("not hardened again: %+v", st.CachedInfo().Config)
	}
	m := &nats.Msg{Subject: "$KV.s.mine", Header: nats.Header{"Nats-Rollup": []string{"all"}}}
	if _, err := js.PublishMsg(ctx, m); err == nil {
		t.Fatal("roll-up accepted after the keeper's look")
	}
	if err := st.Purge(ctx); err == nil {
		t.Fatal("purge accepted after the keeper's look")
	}
	if e, err := kv.Get(ctx, "kept"); err != nil || string(e.Value()) != "v" {
		t.Fatalf("kept: %v", err)
	}
	if n := testutil.ToFloat64(k.reapplied.WithLabelValues("s")); n != 1 {
		t.Fatalf("reapplied{s} = %v", n)
	}
	if r := k.Keep(ctx); len(r) != 0 {
		t.Fatalf("repaired again: %+v", r)
	}
}

// The server itself refuses to loosen a hardened stream's switches: purge
// and API deletion denials cannot be cancelled, nor roll-ups allowed while
// purges are denied. What a Keeper restores is the rest (limits, history,
// discard, direct gets); should a server version accept these updates,
// this test tells, and the keeper restores them too (TestRepairs).
func TestServerKeepsHardeningSwitches(t *testing.T) {
	node := natstest.Start(t)
	js := natstest.JetStream(t, node.ClientURL())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	want := Hardened("h", jetstream.StreamConfig{MaxBytes: 1 << 20, Storage: jetstream.MemoryStorage})
	if err := Provision(ctx, js, want); err != nil {
		t.Fatal(err)
	}
	for name, loosen := range map[string]func(*jetstream.StreamConfig){
		"roll-ups":      func(c *jetstream.StreamConfig) { c.AllowRollup = true },
		"purges":        func(c *jetstream.StreamConfig) { c.DenyPurge = false },
		"API deletions": func(c *jetstream.StreamConfig) { c.DenyDelete = false },
		"all three":     func(c *jetstream.StreamConfig) { c.AllowRollup, c.DenyPurge, c.DenyDelete = true, false, false },
	} {
		cfg := want
		loosen(&cfg)
		if _, err := js.UpdateStream(ctx, cfg); err == nil {
			t.Errorf("the server allowed %s on a hardened stream", name)
		}
	}
}
