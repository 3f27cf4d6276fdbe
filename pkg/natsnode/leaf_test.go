package natsnode

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nkeys"
)

// TestRegionLeafLinkAuth: a node with Auth accepts a leaf connection only
// from a node presenting its leaf seed; none, or another seed, is refused.
func TestRegionLeafLinkAuth(t *testing.T) {
	hub, err := Start(&Options{Name: "hub", DataDir: t.TempDir(), Listen: "127.0.0.1:0", Auth: true, Domain: "a",
		Leaf: &LeafOptions{Listen: "127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Shutdown()
	if hub.LeafURL() == "" || hub.LeafSeed() == "" {
		t.Fatalf("leaf url %q, seed %q", hub.LeafURL(), hub.LeafSeed())
	}
	if fi, err := os.Stat(hub.LeafSeed()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("leaf seed: %v", err)
	}
	other, _ := newSeed(t, nkeys.CreateUser)
	otherPath := filepath.Join(t.TempDir(), "other.seed")
	if err := os.WriteFile(otherPath, other, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, seed string
		linked     bool
	}{
		{"no seed", "", false},
		{"another seed", otherPath, false},
		{"the hub's leaf seed", hub.LeafSeed(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spoke, err := Start(&Options{Name: "spoke", DataDir: t.TempDir(), Listen: "127.0.0.1:0", Auth: true, Domain: "b",
				Leaf: &LeafOptions{Remotes: []string{hub.LeafURL()}, RemoteSeed: tc.seed}})
			if err != nil {
				t.Fatal(err)
			}
			defer spoke.Shutdown()
			// A refused link retries every second: three attempts.
			deadline := time.Now().Add(3 * time.Second)
			linked := false
			for time.Now().Before(deadline) && !linked {
				linked = hub.Server().NumLeafNodes() == 1 && spoke.Server().NumLeafNodes() == 1
				time.Sleep(20 * time.Millisecond)
			}
			if linked != tc.linked {
				t.Fatalf("linked = %v, want %v", linked, tc.linked)
			}
		})
	}
}

func TestLeafOptionsRefused(t *testing.T) {
	for name, l := range map[string]*LeafOptions{
		"bad listen":   {Listen: "nope"},
		"bad remote":   {Remotes: []string{"::not a url"}},
		"missing seed": {Remotes: []string{"nats-leaf://127.0.0.1:1"}, RemoteSeed: filepath.Join(t.TempDir(), "x")},
	} {
		if _, err := Start(&Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Leaf: l}); err == nil {
			t.Errorf("%s: started", name)
		}
	}
}
