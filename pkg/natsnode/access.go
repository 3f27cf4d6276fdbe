package natsnode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/nats-io/nkeys"
)

// Seed files an authenticated node keeps in its DataDir (mode 0600, the
// directory 0700). They are created on the first start and reused after.
const (
	ControllerSeedFile = "controller.seed"
	EdgeSeedFile       = "edge.seed"
)

// maxSeedFile bounds a seed file read: a user seed is 58 bytes, a
// decorated one a few hundred.
const maxSeedFile = 4 << 10

// ErrSeed is wrapped by errors about a seed file.
var ErrSeed = errors.New("natsnode: bad nkey seed")

// ControllerEdgeSeedFile is the seed of the controller's user in
// EdgeAccount.
const ControllerEdgeSeedFile = "controller-edges.seed"

// edgeSeedFile is the seed file of the edge user name: "edge" keeps
// EdgeSeedFile, any other name edge-<name>.seed.
func edgeSeedFile(name string) string {
	if name == "" || name == DefaultEdgeUser {
		return EdgeSeedFile
	}
	return "edge-" + name + ".seed"
}

// DefaultEdgeUser is the edge user every authenticated node mints.
const DefaultEdgeUser = "edge"

var edgeNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// accountsConfig returns the accounts section of the node: the controller
// in FleetAccount, the controller and one user per edge name in
// EdgeAccount. The seeds are read from dir, or written there when absent.
func accountsConfig(dir string, edgeNames []string, logs []LogNames) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("natsnode: seed dir %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", fmt.Errorf("natsnode: seed dir %s: %w", dir, err)
	}
	ctl, err := ensureSeed(filepath.Join(dir, ControllerSeedFile))
	if err != nil {
		return "", err
	}
	ctlEdges, err := ensureSeed(filepath.Join(dir, ControllerEdgeSeedFile))
	if err != nil {
		return "", err
	}
	a := Accounts{Controllers: []string{ctl}, ControllerEdges: []string{ctlEdges}, Logs: logs}
	seen := map[string]bool{}
	for _, name := range append([]string{DefaultEdgeUser}, edgeNames...) {
		if !edgeNameRE.MatchString(name) {
			return "", fmt.Errorf("natsnode: edge user %q: want [a-z0-9][a-z0-9-]{0,31}", name)
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		pub, err := ensureSeed(filepath.Join(dir, edgeSeedFile(name)))
		if err != nil {
			return "", err
		}
		a.Edges = append(a.Edges, pub)
	}
	return a.Config()
}

// ensureSeed returns the public key of the user seed in path, creating the
// file (0600) with a new seed when it does not exist.
func ensureSeed(path string) (string, error) {
	pub, err := PublicKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return pub, err
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", fmt.Errorf("natsnode: create nkey for %s: %w", path, err)
	}
	defer kp.Wipe()
	seed, err := kp.Seed()
	if err != nil {
		return "", fmt.Errorf("natsnode: create nkey for %s: %w", path, err)
	}
	// Write to a temp file and rename, so that a crash never leaves a
	// half-written seed that a restart would refuse.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(seed, '\n'), 0o600); err != nil {
		return "", fmt.Errorf("natsnode: write seed %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("natsnode: write seed %s: %w", path, err)
	}
	return kp.PublicKey()
}

// PublicKey reads the user nkey seed in path (plain or decorated, as
// nats.NkeyOptionFromSeed accepts it) and returns its public key, the "U…"
// string a server configuration lists. The seed never leaves this call.
func PublicKey(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("natsnode: read seed %s: %w", path, err)
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, maxSeedFile+1))
	defer clear(buf)
	if err != nil {
		return "", fmt.Errorf("natsnode: read seed %s: %w", path, err)
	}
	pub, err := publicKeyOf(buf)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrSeed, path, err)
	}
	return pub, nil
}

// publicKeyOf parses the content of a seed file (a plain seed or a
// decorated creds-style file) and returns the public key. Its errors never
// quote the content.
func publicKeyOf(b []byte) (string, error) {
	if len(b) > maxSeedFile {
		return "", fmt.Errorf("over %d bytes", maxSeedFile)
	}
	kp, err := nkeys.ParseDecoratedUserNKey(bytes.TrimSpace(b))
	if err != nil {
		return "", err
	}
	defer kp.Wipe()
	return kp.PublicKey()
}
