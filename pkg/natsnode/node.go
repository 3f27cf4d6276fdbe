// Package natsnode runs NATS servers with JetStream inside the process: the
// single node the controller embeds when no external NATS URL is given, and a
// loopback cluster for tests that need replicated streams.
//
//	node, err := natsnode.Start(&natsnode.Options{DataDir: dir, Listen: "127.0.0.1:4222"})
//	if err != nil { ... }
//	defer node.Shutdown()
//	nc, err := nats.Connect(node.ClientURL())
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
}

// Node is a running embedded NATS server.
type Node struct {
	srv  *server.Server
	opts server.Options
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
	so := baseOptions(o)
	so.Host, so.Port = host, port
	return startNode(so, readyTimeout(o))
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
	return server.Options{
		ServerName:             name,
		JetStream:              true,
		StoreDir:               filepath.Clean(o.DataDir),
		NoSigs:                 true,
		NoLog:                  !o.Log,
		DisableJetStreamBanner: true,
		MaxPayload:             mp,
		JetStreamMaxMemory:     256 << 20,
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
	fresh, err := startNode(n.opts, 10*time.Second)
	if err != nil {
		return err
	}
	n.srv = fresh.srv
	return nil
}
