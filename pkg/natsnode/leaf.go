package natsnode

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// LeafSeedFile is the seed, in an authenticated node's DataDir, of the one
// user allowed to open a leaf connection to it (another region's node).
// Operators copy it to the other region and pass it as LeafOptions.RemoteSeed.
const LeafSeedFile = "leaf.seed"

// LinkDeny are the subjects never carried by a region link in either
// direction: every application subject. JetStream replication (mirrors,
// sources) crosses the link through the domain's API prefix regardless, so
// a call trail or session record published in one region is never stored
// by a same-subject stream of another.
var LinkDeny = []string{"fleetgate.>"}

// maxLeafRemotes bounds the remotes one node dials.
const maxLeafRemotes = 16

// LeafOptions join a node to other regions' nodes with leaf connections.
type LeafOptions struct {
	// Listen is host:port accepting leaf connections from other regions;
	// "" accepts none. Port 0 picks a free port.
	Listen string
	// Advertise is the address other regions dial, when it differs from
	// Listen (NAT, a proxy); peers reconnect to advertised addresses.
	Advertise string
	// Remotes are the nats-leaf:// (or nats://) URLs of other regions'
	// leaf listeners this node dials.
	Remotes []string
	// RemoteSeed is the file of the user seed presented to the remotes
	// (their leaf.seed); "" presents none (remotes without Auth).
	RemoteSeed string
	// TLS runs the link over TLS (nil: plain TCP; the seed still
	// authenticates, but the link is then readable on the wire).
	TLS *LeafTLS
}

// LeafTLS is the TLS of a leaf link, PEM files.
type LeafTLS struct {
	// Cert and Key: the listener's certificate (required to accept TLS
	// leaf connections), and the one a dialling node presents to its
	// remotes when they verify clients.
	Cert, Key string
	// CA signs the peers' certificates: the listener then requires and
	// verifies a client certificate; a dialling node verifies its
	// remotes' certificates against it (without: the system roots).
	CA string
}

// leafTLSTimeout bounds a leaf link's TLS handshake.
const leafTLSTimeout = 5 * time.Second

// listenerTLS is the listener's TLS configuration of t.
func (t *LeafTLS) listenerTLS() (*tls.Config, error) {
	if t.Cert == "" || t.Key == "" {
		return nil, errors.New("natsnode: leaf TLS listener: needs a certificate and its key")
	}
	c, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: t.Cert, KeyFile: t.Key, CaFile: t.CA, Verify: t.CA != ""})
	if err != nil {
		return nil, fmt.Errorf("natsnode: leaf TLS listener: %w", err)
	}
	return c, nil
}

// remoteTLS is a dialling node's TLS configuration of t.
func (t *LeafTLS) remoteTLS() (*tls.Config, error) {
	if (t.Cert == "") != (t.Key == "") {
		return nil, errors.New("natsnode: leaf TLS remote: a certificate needs its key and the key its certificate")
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.CA != "" {
		pem, err := os.ReadFile(t.CA)
		if err != nil {
			return nil, fmt.Errorf("natsnode: leaf TLS remote: read CA %s: %w", t.CA, err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("natsnode: leaf TLS remote: CA %s: no PEM certificate", t.CA)
		}
	}
	if t.Cert != "" {
		cert, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("natsnode: leaf TLS remote: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// applyLeaf sets the leaf node options of so from o.
func applyLeaf(so *server.Options, o *Options) error {
	l := o.Leaf
	if l == nil {
		return nil
	}
	if l.Listen != "" {
		host, port, err := splitListen(l.Listen)
		if err != nil {
			return fmt.Errorf("natsnode: leaf listen %q: %w", l.Listen, err)
		}
		if port == -1 {
			// Pick the port now so that LeafURL and a restart know it.
			if port, err = freePort(); err != nil {
				return fmt.Errorf("natsnode: leaf listen %q: %w", l.Listen, err)
			}
		}
		so.LeafNode.Host, so.LeafNode.Port = host, port
		so.LeafNode.Advertise = l.Advertise
		if l.TLS != nil {
			if so.LeafNode.TLSConfig, err = l.TLS.listenerTLS(); err != nil {
				return err
			}
			so.LeafNode.TLSTimeout = leafTLSTimeout.Seconds()
		}
		if o.Auth {
			pub, err := ensureSeed(filepath.Join(so.StoreDir, LeafSeedFile))
			if err != nil {
				return err
			}
			so.LeafNode.Nkey = pub
			// The link joins the regions' fleet accounts: their logs,
			// mirrors and leases; edge accounts never meet.
			so.LeafNode.Account = FleetAccount
		}
	}
	if len(l.Remotes) > maxLeafRemotes {
		return fmt.Errorf("natsnode: %d leaf remotes, at most %d", len(l.Remotes), maxLeafRemotes)
	}
	var seed string
	if l.RemoteSeed != "" {
		if _, err := PublicKey(l.RemoteSeed); err != nil {
			return err
		}
		b, err := os.ReadFile(l.RemoteSeed)
		if err != nil {
			return fmt.Errorf("natsnode: read leaf seed %s: %w", l.RemoteSeed, err)
		}
		seed = strings.TrimSpace(string(b))
		clear(b)
	}
	var remoteTLS *tls.Config
	if l.TLS != nil && len(l.Remotes) > 0 {
		var err error
		if remoteTLS, err = l.TLS.remoteTLS(); err != nil {
			return err
		}
	}
	for _, r := range l.Remotes {
		u, err := url.Parse(r)
		if err != nil || u.Host == "" {
			return fmt.Errorf("natsnode: leaf remote %q: not a URL", r)
		}
		ro := &server.RemoteLeafOpts{
			URLs:        []*url.URL{u},
			Nkey:        seed,
			DenyImports: LinkDeny,
			DenyExports: LinkDeny,
		}
		if o.Auth {
			ro.LocalAccount = FleetAccount
		}
		if remoteTLS != nil {
			ro.TLS, ro.TLSConfig, ro.TLSTimeout = true, remoteTLS.Clone(), leafTLSTimeout.Seconds()
		}
		so.LeafNode.Remotes = append(so.LeafNode.Remotes, ro)
	}
	if len(so.LeafNode.Remotes) > 0 {
		so.LeafNode.ReconnectInterval = time.Second
	}
	return nil
}

// LeafURL is the nats-leaf:// URL other regions dial, "" when the node
// accepts no leaf connections.
func (n *Node) LeafURL() string {
	if n.opts.LeafNode.Port == 0 {
		return ""
	}
	return "nats-leaf://" + net.JoinHostPort(n.opts.LeafNode.Host, strconv.Itoa(n.opts.LeafNode.Port))
}

// LeafSeed is the path of the seed other regions present on the leaf
// link, "" when the node runs without Auth or accepts no leaf connections.
func (n *Node) LeafSeed() string {
	if n.opts.LeafNode.Nkey == "" {
		return ""
	}
	return n.seed(LeafSeedFile)
}
