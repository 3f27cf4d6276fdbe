package ratelimit_test

import (
	"encoding/binary"
	"encoding/json"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/ratelimit"
)

// FuzzLimitsJSON: arbitrary JSON never panics ParseJSON, and what it
// accepts always builds a Limiter that answers every operation.
func FuzzLimitsJSON(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"identity":{"requests_per_second":0.5,"burst":2,"concurrent_calls":1}}`,
		`{"tools":[{"name":"a","tools":["x*","[ab]"],"requests_per_second":1e6,"burst":1000000,"per_identity":true}]}`,
		`{"failed_auth":{"per_address_per_minute":1000000,"burst":0}}`,
		`{"tools":[{"tools":["\\"],"requests_per_second":1}]}`,
		`{"identity":{"requests_per_second":1e308}}`,
		`{"identity":null,"tools":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ratelimit.ParseJSON(data)
		if err != nil {
			return
		}
		if err := l.Validate(); err != nil {
			t.Fatalf("ParseJSON accepted what Validate refuses: %v", err)
		}
		// The JSON form (as an event would carry it) round-trips.
		enc, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ratelimit.ParseJSON(enc)
		if err != nil {
			t.Fatalf("ParseJSON(%s) of its own encoding: %v", enc, err)
		}
		if enc2, _ := json.Marshal(back); string(enc2) != string(enc) {
			t.Fatalf("round trip: %s != %s", enc2, enc)
		}
		lim, err := ratelimit.New(l, &ratelimit.Options{MaxKeys: 4})
		if err != nil {
			t.Fatalf("New refused valid limits: %v", err)
		}
		for i := range 20 {
			now := at(time.Duration(i) * 300 * time.Millisecond)
			checkDecision(t, lim.Request(now, "id"))
			d, release := lim.Call(now, "id", "x"+string(rune('a'+i%3)))
			checkDecision(t, d)
			release()
			checkDecision(t, lim.FailedAuth(now, "addr"))
			checkDecision(t, lim.AuthBlocked(now, "addr"))
		}
		if err := lim.Update(l); err != nil {
			t.Fatal(err)
		}
	})
}

func checkDecision(t *testing.T, d ratelimit.Decision) {
	t.Helper()
	if d.Allowed {
		if d != (ratelimit.Decision{Allowed: true}) {
			t.Fatalf("allowed decision carries %+v", d)
		}
		return
	}
	if d.RetryAfter < time.Second || d.RetryAfter > ratelimit.MaxRetryAfter || d.RetryAfter%time.Second != 0 || d.Reason == "" || d.Rule == "" {
		t.Fatalf("bad refusal %+v", d)
	}
}

// FuzzOperations: a random sequence of calls, releases (some twice),
// requests, failures and updates over few identities keeps the
// invariants: an identity never holds more calls than its limit, every
// refusal is well formed, the maps stay within MaxKeys.
func FuzzOperations(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 5, 5, 5, 0, 0, 0})
	f.Add([]byte{0x20, 0x41, 0x62, 0x83, 0xa4, 0xc5, 0xe6, 0x07, 0xff, 0xfe})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 1024 {
			ops = ops[:1024]
		}
		const limit = 2
		const maxKeys = 16 // more than the identities: nothing in flight is untracked
		l := ratelimit.Limits{
			Identity:   &ratelimit.IdentityLimits{RequestsPerSecond: 3, ConcurrentCalls: limit},
			Tools:      []ratelimit.ToolRule{{Tools: []string{"p*"}, RequestsPerSecond: 2, PerIdentity: true}, {Tools: []string{"s*"}, RequestsPerSecond: 1}},
			FailedAuth: &ratelimit.FailedAuthLimits{PerAddressPerMinute: 30, Burst: 2},
		}
		lim := mustNew(t, l, &ratelimit.Options{MaxKeys: maxKeys})
		ids := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
		tools := []string{"p1", "s1", "other", "p2"}
		type held struct {
			id      int
			release func()
		}
		var calls []held
		holding := make([]int, len(ids))
		now := t0
		for i, op := range ops {
			id := int(op>>3) % len(ids)
			switch op & 7 {
			case 0, 1:
				d, release := lim.Call(now, ids[id], tools[int(op>>5)%len(tools)])
				checkDecision(t, d)
				if d.Allowed {
					holding[id]++
					if holding[id] > limit {
						t.Fatalf("op %d: %s holds %d calls, limit %d", i, ids[id], holding[id], limit)
					}
					calls = append(calls, held{id, release})
				} else {
					release()
				}
			case 2, 3:
				if len(calls) > 0 {
					c := calls[int(op>>3)%len(calls)]
					calls = removeHeld(calls, int(op>>3)%len(calls))
					c.release()
					holding[c.id]--
					if op&1 == 1 {
						c.release() // twice: no effect
					}
				}
			case 4:
				checkDecision(t, lim.Request(now, ids[id]))
			case 5:
				checkDecision(t, lim.FailedAuth(now, ids[id]))
				checkDecision(t, lim.AuthBlocked(now, ids[id]))
			case 6:
				var b [8]byte
				b[0] = op
				now = now.Add(time.Duration(binary.LittleEndian.Uint64(b[:])) * 10 * time.Millisecond)
			case 7:
				u := l
				if op&0x80 != 0 {
					u.Identity = &ratelimit.IdentityLimits{RequestsPerSecond: 5, ConcurrentCalls: limit}
				}
				if err := lim.Update(u); err != nil {
					t.Fatal(err)
				}
			}
			if s := lim.Sizes(); s.Identities > maxKeys || s.IdentityTools > maxKeys || s.Addresses > maxKeys {
				t.Fatalf("op %d: sizes %+v", i, s)
			}
		}
		for _, c := range calls {
			c.release()
		}
		for _, id := range ids { // every slot came back
			for range limit {
				if d, _ := lim.Call(now, id, "other"); !d.Allowed {
					t.Fatalf("%s: slot leaked: %+v", id, d)
				}
			}
		}
	})
}

func removeHeld[T any](s []T, i int) []T {
	s[i] = s[len(s)-1]
	return s[:len(s)-1]
}

// FuzzClientAddr: any RemoteAddr gives a key, never a panic; an address
// that parses gives the same key with and without a port.
func FuzzClientAddr(f *testing.F) {
	for _, s := range []string{"192.0.2.1:80", "[2001:db8::1]:443", "::1", "[fe80::1%eth0]:1", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_ = ratelimit.ClientAddr(s)
	})
}
