package natsnode

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Cluster is a JetStream cluster of nodes on loopback inside this process.
// It exists for tests and local experiments with replicated streams.
type Cluster struct {
	Nodes []*Node
}

// StartCluster starts size nodes (use 3) with data under dir and waits until
// the JetStream meta group has a leader and every peer is current.
func StartCluster(dir string, size int) (*Cluster, error) {
	return StartClusterConfig(dir, size, "")
}

// StartClusterConfig is StartCluster with every node running the
// configuration text conf besides (such as the accounts section an
// operator writes: Accounts.Config).
func StartClusterConfig(dir string, size int, conf string) (*Cluster, error) {
	if size < 1 {
		return nil, errors.New("natsnode: start cluster: size must be at least 1")
	}
	routePorts := make([]int, size)
	for i := range routePorts {
		p, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("natsnode: start cluster: route port: %w", err)
		}
		routePorts[i] = p
	}
	var routes []*url.URL
	for _, p := range routePorts {
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	c := &Cluster{}
	for i := range size {
		o := &Options{Name: fmt.Sprintf("n%d", i+1), DataDir: filepath.Join(dir, fmt.Sprintf("n%d", i+1))}
		so, err := withConfig(conf, baseOptions(o))
		if err != nil {
			return nil, err
		}
		so.Host, so.Port = "127.0.0.1", -1
		so.Cluster = server.ClusterOpts{Name: "fleetgate-test", Host: "127.0.0.1", Port: routePorts[i]}
		so.Routes = routes
		srv, err := server.NewServer(&so)
		if err != nil {
			c.Shutdown()
			return nil, fmt.Errorf("natsnode: start cluster: node %s: %w", so.ServerName, err)
		}
		srv.Start()
		c.Nodes = append(c.Nodes, &Node{srv: srv, opts: so, conf: conf})
	}
	for _, n := range c.Nodes {
		if !n.srv.ReadyForConnections(10 * time.Second) {
			c.Shutdown()
			return nil, fmt.Errorf("natsnode: start cluster: %w", ErrNotReady)
		}
		if addr, ok := n.srv.Addr().(*net.TCPAddr); ok {
			n.opts.Port = addr.Port
		}
	}
	if err := c.WaitReady(30 * time.Second); err != nil {
		c.Shutdown()
		return nil, err
	}
	return c, nil
}

// WaitReady waits until the running nodes agree on a meta leader and are
// current.
func (c *Cluster) WaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if c.ready() {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("natsnode: cluster: %w: no meta leader with all peers current after %s", ErrNotReady, timeout)
}

func (c *Cluster) ready() bool {
	leader := false
	for _, n := range c.Nodes {
		if !n.srv.Running() {
			continue
		}
		if !n.srv.JetStreamIsCurrent() {
			return false
		}
		if n.srv.JetStreamIsLeader() {
			leader = len(n.srv.JetStreamClusterPeers()) == len(c.Nodes)
		}
	}
	return leader
}

// ClientURLs is a comma separated list of every node's client URL, as
// nats.Connect accepts it.
func (c *Cluster) ClientURLs() string {
	var urls []string
	for _, n := range c.Nodes {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", n.opts.Port))
	}
	return strings.Join(urls, ",")
}

// StreamLeader returns the node that leads the named stream, or nil.
func (c *Cluster) StreamLeader(account, stream string) *Node {
	for _, n := range c.Nodes {
		if n.srv.Running() && n.srv.JetStreamIsStreamLeader(account, stream) {
			return n
		}
	}
	return nil
}

// Shutdown stops every running node.
func (c *Cluster) Shutdown() {
	for _, n := range c.Nodes {
		if n.srv.Running() {
			n.Shutdown()
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
