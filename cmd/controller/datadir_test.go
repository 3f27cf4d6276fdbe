package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The data dir (NATS seeds, outbox, JetStream store) is owner-only, new or
// existing.
func TestDataDirOwnerOnly(t *testing.T) {
	fresh := filepath.Join(t.TempDir(), "a", "controller")
	existing := t.TempDir()
	if err := os.Chmod(existing, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{fresh, existing} {
		if err := ensureDataDir(dir); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, want 0700", dir, fi.Mode().Perm())
		}
	}
}
