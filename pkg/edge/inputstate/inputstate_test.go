package inputstate

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var (
	key   = []byte(strings.Repeat("k", 32))
	alice = Binding{Identity: "alice", Method: "tools/call", Target: "alpha_confirm"}
	t0    = time.Unix(1_800_000_000, 0)
)

func TestSealOpen(t *testing.T) {
	s, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := New([]byte(strings.Repeat("o", 32)))
	sealed, err := s.Seal(alice, `{"step":1}`, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, "step") {
		t.Fatalf("sealed state %q shows the backend's state", sealed)
	}
	twin, _ := New(key) // another edge of the group
	// One character of the encoding replaced by another of the alphabet
	// (a bit flipped could leave it, and the state would be malformed
	// rather than refused); its six bits all count.
	flip := []byte(sealed)
	if i := len(flip) - 3; flip[i] == 'A' {
		flip[i] = 'B'
	} else {
		flip[i] = 'A'
	}
	for _, tc := range []struct {
		name   string
		s      *Sealer
		b      Binding
		state  string
		now    time.Time
		want   string
		wantIs error
	}{
		{"same edge", s, alice, sealed, t0, `{"step":1}`, nil},
		{"another edge of the group", twin, alice, sealed, t0, `{"step":1}`, nil},
		{"another key", other, alice, sealed, t0, "", ErrRefused},
		{"another caller", s, Binding{Identity: "bob", Method: alice.Method, Target: alice.Target}, sealed, t0, "", ErrRefused},
		{"another tool", s, Binding{Identity: "alice", Method: alice.Method, Target: "alpha_delete"}, sealed, t0, "", ErrRefused},
		{"another method", s, Binding{Identity: "alice", Method: "prompts/get", Target: alice.Target}, sealed, t0, "", ErrRefused},
		{"expired", s, alice, sealed, t0.Add(2 * time.Minute), "", ErrExpired},
		{"tampered", s, alice, string(flip), t0, "", ErrRefused},
		{"appended", s, alice, sealed + "-TAMPERED", t0, "", ErrRefused},
		{"the backend's own state", s, alice, `{"step":1}`, t0, "", ErrMalformed},
		{"empty", s, alice, "", t0, "", ErrMalformed},
		{"prefix only", s, alice, prefix, t0, "", ErrMalformed},
		{"huge", s, alice, prefix + strings.Repeat("A", maxSealed), t0, "", ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.s.Open(tc.b, tc.state, tc.now)
			if !errors.Is(err, tc.wantIs) || (tc.wantIs == nil && err != nil) || got != tc.want {
				t.Errorf("Open = %q, %v; want %q, %v", got, err, tc.want, tc.wantIs)
			}
		})
	}
}

func TestSealBounds(t *testing.T) {
	s := NewRandom()
	if _, err := s.Seal(alice, strings.Repeat("x", MaxInner+1), t0); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a state over MaxInner: %v, want ErrTooLarge", err)
	}
	big := strings.Repeat("x", MaxInner)
	sealed, err := s.Seal(alice, big, t0)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Open(alice, sealed, t0); err != nil || got != big {
		t.Errorf("the largest state does not open: %v", err)
	}
	if _, err := New([]byte("short")); err == nil {
		t.Error("a key of 5 bytes accepted")
	}
}

// FuzzOpen: Open never panics, and opens nothing but what a Sealer of the
// same key made for the same binding (the seed's state is sealed anew in
// each fuzzing process, with another nonce: any of them opens).
func FuzzOpen(f *testing.F) {
	s, _ := New(key)
	sealed, _ := s.Seal(alice, "inner", t0.Add(time.Hour))
	f.Add(sealed, "alice")
	f.Add(prefix+"AAAA", "alice")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, state, identity string) {
		got, err := s.Open(Binding{Identity: identity, Method: alice.Method, Target: alice.Target}, state, t0)
		if err == nil && (identity != "alice" || got != "inner") {
			t.Fatalf("opened %q for %q: %q", state, identity, got)
		}
	})
}
