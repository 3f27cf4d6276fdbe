package tokenexchange_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/tokenexchange"
)

var sprintf = fmt.Sprintf

func TestUseUntil(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		lifetime time.Duration
		notAfter time.Time
		want     time.Duration // after t0
	}{
		{"an hour: 30s margin", time.Hour, time.Time{}, time.Hour - 30*time.Second},
		{"a minute: a fifth", time.Minute, time.Time{}, 48 * time.Second},
		{"no expires_in", 0, time.Time{}, tokenexchange.DefaultLifetime - tokenexchange.DefaultLifetime/5},
		{"subject expires first", time.Hour, t0.Add(10 * time.Minute), 10 * time.Minute},
		{"subject expired", time.Hour, t0.Add(-time.Second), -time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tokenexchange.UseUntil(tokenexchange.Token{Lifetime: tc.lifetime}, t0, tc.notAfter)
			if got.Sub(t0) != tc.want {
				t.Fatalf("use until t0%+v, want t0%+v", got.Sub(t0), tc.want)
			}
		})
	}
}

func TestCache(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tok := func(v string, life time.Duration) tokenexchange.Token {
		return tokenexchange.Token{Value: credential.NewSecret(v), Lifetime: life}
	}
	alice := tokenexchange.Key{Identity: "iss alice", Backend: "tickets"}
	bob := tokenexchange.Key{Identity: "iss bob", Backend: "tickets"}
	carol := tokenexchange.Key{Identity: "iss carol", Backend: "tickets"}
	c := tokenexchange.NewCache(2)
	c.Put(alice, tok("a1", time.Minute), t0, time.Time{})
	if got, ok := c.Get(alice, t0.Add(47*time.Second)); !ok || got.Value.Reveal() != "a1" {
		t.Fatalf("alice before her margin: %v", ok)
	}
	if _, ok := c.Get(alice, t0.Add(48*time.Second)); ok {
		t.Fatal("alice inside the margin still served")
	}
	if c.Len() != 0 {
		t.Fatalf("expired entry kept: %d", c.Len())
	}
	if _, ok := c.Get(tokenexchange.Key{Identity: "iss alice", Backend: "docs"}, t0); ok {
		t.Fatal("another backend's key found")
	}
	// The bound: the least recently used goes.
	c.Put(alice, tok("a2", time.Hour), t0, time.Time{})
	c.Put(bob, tok("b1", time.Hour), t0, time.Time{})
	c.Get(alice, t0)
	c.Put(carol, tok("c1", time.Hour), t0, time.Time{})
	if _, ok := c.Get(bob, t0); ok || c.Len() != 2 {
		t.Fatalf("bob (least recently used) kept, len %d", c.Len())
	}
	if got, _ := c.Get(alice, t0); got.Value.Reveal() != "a2" {
		t.Fatal("alice lost")
	}
	// Replacing, and a token with no time left is not kept.
	c.Put(alice, tok("a3", time.Hour), t0, time.Time{})
	if got, _ := c.Get(alice, t0); got.Value.Reveal() != "a3" {
		t.Fatal("alice not replaced")
	}
	c.Put(alice, tok("a4", time.Hour), t0, t0)
	if _, ok := c.Get(alice, t0); ok {
		t.Fatal("a token past its subject's expiry kept")
	}
}
