package kvbucket

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
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
				repaired := slices.ContainsFunc(c.want, func(r string) bool { return strings.HasPrefix(r, bucket+" ") })
				if Current(s.Config, w) != (len(c.left[bucket]) == 0 && !repaired) {
					t.Errorf("current %s: %v", bucket, Current(s.Config, w))
				}
			}
		})
	}
}
