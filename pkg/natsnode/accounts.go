package natsnode

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
)

// The two accounts of an authenticated fleet NATS. The event log, its
// snapshots, the leader lease and every controller subject live in
// FleetAccount, which has no user but the controllers. Edges are users of
// EdgeAccount, which holds what edges write (the session records and the
// call trail). EdgeAccount reaches FleetAccount only through the read-only
// services FleetAccount exports (stream info and reads by sequence of the
// event log, info and direct gets of the snapshot bucket) and the stream
// export of the event subjects (a wake-up: an edge re-reads what it
// announces through the services). Nothing published in EdgeAccount, by a
// client or by a consumer delivering to any subject, can land in
// FleetAccount: accounts have separate subject spaces and every import of
// EdgeAccount is a read.
const (
	FleetAccount = "FLEETGATE"
	EdgeAccount  = "FLEETGATE_EDGES"
	// FleetAPIPrefix is the JetStream API prefix under which EdgeAccount
	// imports FleetAccount's read services: an edge reads the event log
	// with jetstream.NewWithAPIPrefix(nc, FleetAPIPrefix).
	FleetAPIPrefix = "$JS.fleetgate.API"
)

// Accounts lists the users of the two accounts by their public nkeys ("U…").
type Accounts struct {
	// Controllers are the controllers' users in FleetAccount (every right).
	Controllers []string
	// ControllerEdges are the controllers' users in EdgeAccount (every
	// right there: they provision the session bucket and the call trail
	// and the dashboard reads the sessions).
	ControllerEdges []string
	// Edges are the edges' users, one per edge, each with
	// EdgePermissions for its own inbox prefix (InboxPrefixFor).
	Edges []string
	// Logs are the event logs edges read; nil: the single-region log.
	Logs []LogNames
}

var nkeyRE = regexp.MustCompile(`^U[A-Z2-7]{55}$`)

// Check refuses a malformed key or an account without users.
func (a Accounts) Check() error {
	if len(a.Controllers) == 0 {
		return fmt.Errorf("%w: accounts: no controller user", ErrAccess)
	}
	for _, group := range [][]string{a.Controllers, a.ControllerEdges, a.Edges} {
		for _, k := range group {
			if !nkeyRE.MatchString(k) {
				return fmt.Errorf("%w: accounts: %q is not a user public nkey", ErrAccess, k)
			}
		}
	}
	for _, l := range a.logs() {
		for _, n := range []string{l.Stream, l.SnapshotBucket} {
			if !nameRE.MatchString(n) {
				return fmt.Errorf("%w: accounts: log name %q", ErrAccess, n)
			}
		}
		if l.Subjects != "" && !subjectRE.MatchString(l.Subjects) {
			return fmt.Errorf("%w: accounts: log subjects %q", ErrAccess, l.Subjects)
		}
	}
	return nil
}

var (
	nameRE    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	subjectRE = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.>$`)
)

func (a Accounts) logs() []LogNames {
	if a.Logs == nil {
		return []LogNames{DefaultLog}
	}
	return a.Logs
}

// DefaultLog is the single-region event log.
var DefaultLog = LogNames{Stream: EventStream, SnapshotBucket: SnapshotBucket, Subjects: EventSubjects}

// InboxPrefixFor is the inbox prefix of the user with public key pub: each
// user's replies go under its own prefix, which only it may subscribe to.
func InboxPrefixFor(pub string) string { return "_INBOX_" + pub }

// fleetReadServices are the JetStream API subjects of FleetAccount that
// EdgeAccount imports (under FleetAPIPrefix): reads of the logs, nothing
// that creates a consumer or writes.
func fleetReadServices(logs []LogNames) []string {
	var out []string
	for _, l := range logs {
		out = append(out,
			"$JS.API.STREAM.INFO."+l.Stream,
			"$JS.API.STREAM.MSG.GET."+l.Stream,
			"$JS.API.STREAM.INFO.KV_"+l.SnapshotBucket,
			"$JS.API.DIRECT.GET.KV_"+l.SnapshotBucket,
			"$JS.API.DIRECT.GET.KV_"+l.SnapshotBucket+".>",
		)
	}
	return out
}

// Config is the accounts section of a nats-server configuration for a:
// the text the embedded node runs and an operator puts into an external
// cluster's configuration (see docs/limits.md).
func (a Accounts) Config() (string, error) {
	if err := a.Check(); err != nil {
		return "", err
	}
	logs := a.logs()
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("accounts {\n")
	w("  %s {\n    jetstream: enabled\n    users: [\n", FleetAccount)
	for _, k := range a.Controllers {
		w("      {nkey: %s}\n", k)
	}
	w("    ]\n    exports: [\n")
	for _, s := range fleetReadServices(logs) {
		w("      {service: %q, accounts: [%s]}\n", s, EdgeAccount)
	}
	for _, l := range logs {
		if l.Subjects != "" {
			w("      {stream: %q, accounts: [%s]}\n", l.Subjects, EdgeAccount)
		}
	}
	w("    ]\n  }\n")
	w("  %s {\n    jetstream: enabled\n    users: [\n", EdgeAccount)
	for _, k := range a.ControllerEdges {
		w("      {nkey: %s}\n", k)
	}
	for _, k := range a.Edges {
		p := edgePermissionsFor(InboxPrefixFor(k), logs)
		w("      {nkey: %s, permissions: {\n        publish: {allow: [%s]}\n        subscribe: {allow: [%s]}\n        allow_responses: {max: %d, expires: %q}\n      }}\n",
			k, quoteList(p.Publish.Allow), quoteList(p.Subscribe.Allow), p.Response.MaxMsgs, p.Response.Expires.String())
	}
	w("    ]\n    imports: [\n")
	for _, s := range fleetReadServices(logs) {
		w("      {service: {account: %s, subject: %q}, to: %q}\n", FleetAccount, s, FleetAPIPrefix+strings.TrimPrefix(s, "$JS.API"))
	}
	for _, l := range logs {
		if l.Subjects != "" {
			w("      {stream: {account: %s, subject: %q}}\n", FleetAccount, l.Subjects)
		}
	}
	w("    ]\n  }\n}\n")
	return b.String(), nil
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

// ExampleKeys are the placeholder public keys of docs/limits.md's example
// configuration (controller, controller in the edge account, two edges);
// an operator puts the keys of the users made with `nk -gen user -pubout`
// in their place.
var ExampleKeys = []string{
	"UCONTROLLERAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	"UCONTROLLEREDGESAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	"UEDGEONEAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	"UEDGETWOAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
}

// edgeAccountStreams are the streams of an authenticated node that belong
// to EdgeAccount: what edges write.
var edgeAccountStreams = map[string]bool{"KV_" + SessionBucket: true, "KV_" + SignInBucket: true, "KV_" + EdgeStatusBucket: true, CallStream: true}

// migrateGlobal moves the streams a node kept in the global account (the
// one-account layout of earlier releases) into the two accounts: the
// session bucket and the call trail into EdgeAccount, everything else
// (the event log, snapshots, the leader lease, regional logs and mirrors)
// into FleetAccount. It does nothing once either account has a store.
func migrateGlobal(storeDir string) error {
	js := filepath.Join(storeDir, "jetstream")
	global := filepath.Join(js, server.DEFAULT_GLOBAL_ACCOUNT, "streams")
	entries, err := os.ReadDir(global)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("natsnode: migrate the global account's streams: %w", err)
	}
	for _, acc := range []string{FleetAccount, EdgeAccount} {
		if _, err := os.Stat(filepath.Join(js, acc)); err == nil {
			return nil
		}
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		acc := FleetAccount
		if edgeAccountStreams[e.Name()] {
			acc = EdgeAccount
		}
		dst := filepath.Join(js, acc, "streams")
		if err := os.MkdirAll(dst, 0o700); err != nil {
			return fmt.Errorf("natsnode: migrate stream %s: %w", e.Name(), err)
		}
		if err := os.Rename(filepath.Join(global, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return fmt.Errorf("natsnode: migrate stream %s: %w", e.Name(), err)
		}
	}
	return nil
}
