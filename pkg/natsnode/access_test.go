package natsnode

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

func newSeed(t *testing.T, create func() (nkeys.KeyPair, error)) (seed []byte, pub string) {
	t.Helper()
	kp, err := create()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ = kp.Seed()
	pub, _ = kp.PublicKey()
	return append([]byte(nil), seed...), pub
}

func TestPublicKey(t *testing.T) {
	user, userPub := newSeed(t, nkeys.CreateUser)
	account, _ := newSeed(t, nkeys.CreateAccount)
	decorated, err := jwt.DecorateSeed(user)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		content []byte
		ok      bool
	}{
		{"plain seed", user, true},
		{"seed with newline", append(append([]byte(nil), user...), '\n'), true},
		{"decorated", decorated, true},
		{"account seed", account, false},
		{"garbage", []byte("not a seed"), false},
		{"empty", nil, false},
		{"oversized", []byte(strings.Repeat("x", maxSeedFile+1)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "s.seed")
			if err := os.WriteFile(p, tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
			pub, err := PublicKey(p)
			if tc.ok && (err != nil || pub != userPub) {
				t.Fatalf("PublicKey = %q, %v; want %q", pub, err, userPub)
			}
			if !tc.ok && (err == nil || !errors.Is(err, ErrSeed)) {
				t.Fatalf("PublicKey = %q, %v; want ErrSeed", pub, err)
			}
			if err != nil && len(tc.content) > 8 && strings.Contains(err.Error(), string(tc.content[:8])) {
				t.Fatalf("the error quotes the file: %v", err)
			}
		})
	}
	if _, err := PublicKey(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func FuzzPublicKeyOf(f *testing.F) {
	kp, _ := nkeys.CreateUser()
	seed, _ := kp.Seed()
	f.Add(append([]byte(nil), seed...))
	f.Add([]byte("-----BEGIN USER NKEY SEED-----\nSUAAA\n------END USER NKEY SEED------\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		pub, err := publicKeyOf(b)
		if err == nil && !strings.HasPrefix(pub, "U") {
			t.Fatalf("public key %q is not a user key", pub)
		}
	})
}

func TestAccessCheck(t *testing.T) {
	dir := t.TempDir()
	seed, _ := newSeed(t, nkeys.CreateUser)
	seedPath := filepath.Join(dir, "edge.seed")
	if err := os.WriteFile(seedPath, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	pem := filepath.Join(dir, "x.pem")
	if err := os.WriteFile(pem, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		a    Access
		ok   bool
		opts int
	}{
		{"none", Access{}, true, 0},
		{"seed and inbox", Access{NkeySeed: seedPath, InboxPrefix: EdgeInboxPrefix}, true, 2},
		{"tls", Access{TLSCA: pem, TLSCert: pem, TLSKey: pem}, true, 2},
		{"seed and creds", Access{NkeySeed: seedPath, Creds: seedPath}, false, 0},
		{"cert without key", Access{TLSCert: pem}, false, 0},
		{"key without cert", Access{TLSKey: pem}, false, 0},
		{"missing seed", Access{NkeySeed: filepath.Join(dir, "nope")}, false, 0},
		{"bad seed", Access{NkeySeed: pem}, false, 0},
	} {
		opts, err := tc.a.Options()
		if tc.ok != (err == nil) || len(opts) != tc.opts {
			t.Errorf("%s: %d options, %v; want ok %v with %d", tc.name, len(opts), err, tc.ok, tc.opts)
		}
		if err != nil && !errors.Is(err, ErrAccess) {
			t.Errorf("%s: %v does not match ErrAccess", tc.name, err)
		}
	}
}

func TestStartAuth(t *testing.T) {
	dir := t.TempDir()
	n, err := Start(&Options{DataDir: dir, Listen: "127.0.0.1:0", Auth: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown()
	for path, mode := range map[string]os.FileMode{n.EdgeSeed(): 0o600, n.ControllerSeed(): 0o600, dir: 0o700} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != mode {
			t.Fatalf("%s: %v, want mode %v", path, err, mode)
		}
	}
	if _, err := nats.Connect(n.ClientURL()); err == nil {
		t.Fatal("connected without credentials")
	}
	for name, a := range map[string]Access{"controller": n.ControllerAccess(), "edge": n.EdgeAccess()} {
		opts, err := a.Options()
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(n.ClientURL(), opts...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		nc.Close()
	}
	edgePub, _ := PublicKey(n.EdgeSeed())
	n.Shutdown()
	again, err := Start(&Options{DataDir: dir, Listen: "127.0.0.1:0", Auth: true})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Shutdown()
	if pub, _ := PublicKey(again.EdgeSeed()); pub != edgePub {
		t.Fatal("a restart made a new edge seed")
	}
	open, err := Start(&Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer open.Shutdown()
	if open.EdgeSeed() != "" || open.ControllerSeed() != "" {
		t.Fatal("a node without Auth names seeds")
	}
}
