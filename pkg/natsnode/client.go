package natsnode

import (
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"
)

// ErrAccess is wrapped by errors about client access options.
var ErrAccess = errors.New("natsnode: invalid NATS access")

// Access is how a client authenticates to NATS and secures the link: the
// values of the --nats-nkey-seed, --nats-creds and --nats-tls-* flags. The
// zero Access connects without credentials or TLS.
type Access struct {
	// NkeySeed is a file holding a user nkey seed (such as an embedded
	// node's edge.seed).
	NkeySeed string
	// Creds is a NATS .creds file (a user JWT and its seed; operator
	// deployments). At most one of NkeySeed and Creds.
	Creds string
	// TLSCA is a PEM file of the CAs that sign the server's certificate.
	TLSCA string
	// TLSCert and TLSKey are the client certificate and its key (PEM),
	// both or neither.
	TLSCert, TLSKey string
	// InboxPrefix replaces "_INBOX" as the prefix of reply subjects. A
	// user whose subscribe permission is limited to its own prefix needs
	// it; "" derives it from the credential's public key
	// (InboxPrefixFor, the prefix Accounts gives every edge user), or
	// keeps "_INBOX" without a credential.
	InboxPrefix string
}

// Check reports conflicting or unreadable settings. Errors name the file,
// never its content.
func (a Access) Check() error {
	switch {
	case a.NkeySeed != "" && a.Creds != "":
		return fmt.Errorf("%w: an nkey seed and a creds file are exclusive", ErrAccess)
	case (a.TLSCert == "") != (a.TLSKey == ""):
		return fmt.Errorf("%w: a TLS client certificate needs its key and the key its certificate", ErrAccess)
	}
	for _, f := range []string{a.NkeySeed, a.Creds, a.TLSCA, a.TLSCert, a.TLSKey} {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%w: %w", ErrAccess, err)
		}
	}
	if a.NkeySeed != "" {
		if _, err := PublicKey(a.NkeySeed); err != nil {
			return fmt.Errorf("%w: %w", ErrAccess, err)
		}
	}
	return nil
}

// Options are the nats.Connect options for a.
func (a Access) Options() ([]nats.Option, error) {
	if err := a.Check(); err != nil {
		return nil, err
	}
	var opts []nats.Option
	if a.NkeySeed != "" {
		o, err := nats.NkeyOptionFromSeed(a.NkeySeed)
		if err != nil {
			return nil, fmt.Errorf("%w: nkey seed %s: %w", ErrAccess, a.NkeySeed, err)
		}
		opts = append(opts, o)
	}
	if a.Creds != "" {
		opts = append(opts, nats.UserCredentials(a.Creds))
	}
	if a.TLSCA != "" {
		opts = append(opts, nats.RootCAs(a.TLSCA))
	}
	if a.TLSCert != "" {
		opts = append(opts, nats.ClientCert(a.TLSCert, a.TLSKey))
	}
	inbox, err := a.Inbox()
	if err != nil {
		return nil, err
	}
	if inbox != "" {
		opts = append(opts, nats.CustomInboxPrefix(inbox))
	}
	return opts, nil
}

// Inbox is the inbox prefix the connection uses: InboxPrefix, or the one
// derived from the credential's public key, or "" (the client default).
func (a Access) Inbox() (string, error) {
	switch {
	case a.InboxPrefix != "":
		return a.InboxPrefix, nil
	case a.NkeySeed != "":
		pub, err := PublicKey(a.NkeySeed)
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrAccess, err)
		}
		return InboxPrefixFor(pub), nil
	case a.Creds != "":
		pub, err := PublicKey(a.Creds)
		if err != nil {
			return "", fmt.Errorf("%w: creds %s: %w", ErrAccess, a.Creds, err)
		}
		return InboxPrefixFor(pub), nil
	}
	return "", nil
}

// ControllerAccess is the access of the controller's own connection to
// this node: its nkey in FleetAccount when the node runs with Auth.
func (n *Node) ControllerAccess() Access { return Access{NkeySeed: n.ControllerSeed()} }

// ControllerEdgeAccess is the access of the controller's connection to
// EdgeAccount (provisioning the session bucket and the call trail, the
// dashboard's sessions); the zero Access when the node runs without Auth.
func (n *Node) ControllerEdgeAccess() Access { return Access{NkeySeed: n.ControllerEdgeSeed()} }

// EdgeAccess is the access the default edge user uses on this node; its
// inbox prefix is derived from its key.
func (n *Node) EdgeAccess() Access { return Access{NkeySeed: n.EdgeSeed()} }

// EdgeAccessFor is the access of the edge user name (Options.EdgeUsers).
func (n *Node) EdgeAccessFor(name string) Access { return Access{NkeySeed: n.EdgeSeedFor(name)} }
