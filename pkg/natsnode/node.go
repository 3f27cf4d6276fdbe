package natsnode

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// DefaultMaxPayload is the message size limit of an embedded node. Catalog
// events are compressed, but a large backend catalog can still exceed the
// NATS default of 1 MiB.
const DefaultMaxPayload = 8 << 20

// DefaultMaxStore caps the JetStream file store of an embedded node. The
// session bucket and the call trail have their own MaxBytes below it (256
// MiB each by default), so neither can starve the event log.
const DefaultMaxStore = 1 << 30

// ErrNotReady is returned when a server does not accept connections in time.
var ErrNotReady = errors.New("nats server not ready")

// Options configure an embedded node. A nil *Options means defaults.
type Options struct {
	// Name is the server name; default "fleetgate".
	Name string
	// DataDir holds the JetStream store (DataDir/jetstream). Required.
	DataDir string
	// Listen is the client address host:port; port 0 picks a free port.
	// Default "127.0.0.1:4222".
	Listen string
	// MaxPayload is the largest message accepted; default DefaultMaxPayload.
	MaxPayload int32
	// ReadyTimeout bounds the wait for the server to accept connections;
	// default 10s.
	ReadyTimeout time.Duration
	// Log turns on the server's own logging (off by default).
	Log bool
	// Auth turns on nkey authentication and the two accounts (Accounts):
	// the controller with every right in FleetAccount, and in EdgeAccount
	// the controller and one user per edge (DefaultEdgeUser and EdgeUsers)
	// with EdgePermissions. The seeds are DataDir/controller.seed,
	// DataDir/controller-edges.seed, DataDir/edge.seed and
	// DataDir/edge-<name>.seed (created on the first start, reused after;
	// mode 0600, DataDir 0700). Unauthenticated connections are refused,
	// the in-process ones too. The controller's embedded node always sets
	// it; without it the node is open, one account (tests).
	Auth bool
	// MaxStore caps the JetStream file store in bytes; default
	// DefaultMaxStore.
	MaxStore int64
	// Domain is the node's JetStream domain; in a multi-region fleet it is
	// the region's name, so that every region keeps its own JetStream meta
	// layer and other regions reach its streams as "$JS.<domain>.API".
	// "" (default): no domain, as a single-region node has always run.
	Domain string
	// EdgeLogs are the event logs edge users may read (a region's own log
	// and its mirrors of the others); nil: the single-region log.
	EdgeLogs []LogNames
	// EdgeUsers names edge users minted besides DefaultEdgeUser, one per
	// edge: each has its own seed (EdgeSeedFor) and inbox prefix.
	EdgeUsers []string
	// Leaf joins regions with leaf connections; nil (default): none.
	Leaf *LeafOptions
}

// Node is a running embedded NATS server.
type Node struct {
	srv  *server.Server
	opts server.Options
	auth bool
	// conf is the configuration text the options were made from ("" for
	// none): a restart parses it again, since accounts belong to a server.
	conf string
}

// Start starts a single JetStream node and waits until it is ready.
func Start(o *Options) (*Node, error) {
	if o == nil || o.DataDir == "" {
		return nil, errors.New("natsnode: start: data dir is required")
	}
	host, port, err := splitListen(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("natsnode: start: listen %q: %w", o.Listen, err)
	}
	var conf string
	if o.Auth {
		if conf, err = accountsConfig(filepath.Clean(o.DataDir), o.EdgeUsers, o.EdgeLogs); err != nil {
			return nil, err
		}
		if err := migrateGlobal(filepath.Clean(o.DataDir)); err != nil {
			return nil, err
		}
	}
	so, err := withConfig(conf, baseOptions(o))
	if err != nil {
		return nil, err
	}
	so.Host, so.Port = host, port
	if err := applyLeaf(&so, o); err != nil {
		return nil, err
	}
	n, err := startNode(so, readyTimeout(o))
	if err != nil {
		return nil, err
	}
	n.auth, n.conf = o.Auth, conf
	return n, nil
}

// withConfig returns base with the configuration text conf applied (its
// accounts and users); conf "" returns base.
func withConfig(conf string, base server.Options) (server.Options, error) {
	if conf == "" {
		return base, nil
	}
	var so server.Options
	if err := so.ProcessConfigString(conf); err != nil {
		return server.Options{}, fmt.Errorf("natsnode: accounts configuration: %w", err)
	}
	base.Accounts, base.Nkeys, base.Users = so.Accounts, so.Nkeys, so.Users
	return base, nil
}

func baseOptions(o *Options) server.Options {
	name := o.Name
	if name == "" {
		name = "fleetgate"
	}
	mp := o.MaxPayload
	if mp == 0 {
		mp = DefaultMaxPayload
	}
	store := o.MaxStore
	if store <= 0 {
		store = DefaultMaxStore
	}
	return server.Options{
		ServerName:             name,
		JetStream:              true,
		StoreDir:               filepath.Clean(o.DataDir),
		NoSigs:                 true,
		NoLog:                  !o.Log,
		DisableJetStreamBanner: true,
		MaxPayload:             mp,
		JetStreamMaxMemory:     256 << 20,
		JetStreamMaxStore:      store,
		JetStreamDomain:        o.Domain,
	}
}

func readyTimeout(o *Options) time.Duration {
	if o.ReadyTimeout > 0 {
		return o.ReadyTimeout
	}
	return 10 * time.Second
}

func startNode(so server.Options, ready time.Duration) (*Node, error) {
	srv, err := server.NewServer(&so)
	if err != nil {
		return nil, fmt.Errorf("natsnode: new server %s: %w", so.ServerName, err)
	}
	if so.Debug || !so.NoLog {
		srv.ConfigureLogger()
	}
	srv.Start()
	if !srv.ReadyForConnections(ready) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("natsnode: start %s: %w after %s", so.ServerName, ErrNotReady, ready)
	}
	// Pin the chosen port so that a restart of the same node keeps its URL.
	if addr, ok := srv.Addr().(*net.TCPAddr); ok {
		so.Port = addr.Port
	}
	return &Node{srv: srv, opts: so}, nil
}

func splitListen(listen string) (string, int, error) {
	if listen == "" {
		listen = "127.0.0.1:4222"
	}
	host, p, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", p)
	}
	if port == 0 {
		port = -1 // nats-server's "pick a free port"
	}
	return host, port, nil
}

// ClientURL is the nats:// URL clients connect to.
func (n *Node) ClientURL() string { return n.srv.ClientURL() }

// ControllerSeed is the path of the controller user's seed, "" when the
// node runs without Auth.
func (n *Node) ControllerSeed() string { return n.seed(ControllerSeedFile) }

// EdgeSeed is the path of the default edge user's seed, "" when the node
// runs without Auth.
func (n *Node) EdgeSeed() string { return n.seed(EdgeSeedFile) }

// EdgeSeedFor is the path of the seed of the edge user name (Options.
// EdgeUsers), "" when the node runs without Auth.
func (n *Node) EdgeSeedFor(name string) string { return n.seed(edgeSeedFile(name)) }

// ControllerEdgeSeed is the path of the seed of the controller's user in
// EdgeAccount, "" when the node runs without Auth.
func (n *Node) ControllerEdgeSeed() string { return n.seed(ControllerEdgeSeedFile) }

func (n *Node) seed(name string) string {
	if !n.auth {
		return ""
	}
	return filepath.Join(n.opts.StoreDir, name)
}

// Server exposes the underlying server (tests inspect cluster state).
func (n *Node) Server() *server.Server { return n.srv }

// Running reports whether the server is running.
func (n *Node) Running() bool { return n.srv.Running() }

// Shutdown stops the server and waits until it has stopped.
func (n *Node) Shutdown() {
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
}

// Restart shuts the node down (if running) and starts it again with the same
// name, address and data directory.
func (n *Node) Restart() error {
	if n.srv.Running() {
		n.Shutdown()
	}
	so := n.opts
	if n.conf != "" {
		var err error
		if so, err = withConfig(n.conf, n.opts); err != nil {
			return err
		}
	}
	fresh, err := startNode(so, 10*time.Second)
	if err != nil {
		return err
	}
	n.srv = fresh.srv
	return nil
}
