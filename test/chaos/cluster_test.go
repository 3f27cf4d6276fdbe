package chaos

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// cluster is a 3-node JetStream cluster on loopback whose nodes do not
// advertise their client URLs: a client knows only the URLs it was given,
// so a proxy in front of the nodes can cut it off.
type cluster struct {
	opts []server.Options
	mu   sync.Mutex // srvs: a node is restarted from a timer
	srvs []*server.Server
}

func startCluster(t *testing.T, size int) *cluster {
	t.Helper()
	dir := t.TempDir()
	var routes []*url.URL
	routePorts, clientPorts := make([]int, size), make([]int, size)
	for i := range size {
		routePorts[i], clientPorts[i] = freePort(t), freePort(t)
		routes = append(routes, &url.URL{Scheme: "nats", Host: "127.0.0.1:" + strconv.Itoa(routePorts[i])})
	}
	c := &cluster{}
	for i := range size {
		c.opts = append(c.opts, server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: clientPorts[i],
			JetStream: true, StoreDir: filepath.Join(dir, fmt.Sprintf("n%d", i+1)),
			NoSigs: true, NoLog: true, DisableJetStreamBanner: true,
			JetStreamMaxMemory: 256 << 20, JetStreamMaxStore: 1 << 30, MaxPayload: 8 << 20,
			Cluster: server.ClusterOpts{Name: "chaos", Host: "127.0.0.1", Port: routePorts[i], NoAdvertise: true},
			Routes:  routes,
		})
		c.srvs = append(c.srvs, nil)
		c.start(t, i)
	}
	t.Cleanup(func() {
		for i := range c.srvs {
			c.stop(i)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for !c.ready() {
		if time.Now().After(deadline) {
			t.Fatal("the NATS cluster has no meta leader with every peer current")
		}
		time.Sleep(25 * time.Millisecond)
	}
	return c
}

func (c *cluster) start(t testing.TB, i int) {
	t.Helper()
	o := c.opts[i]
	srv, err := server.NewServer(&o)
	if err != nil {
		t.Fatalf("NATS node %d: %v", i+1, err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatalf("NATS node %d not ready", i+1)
	}
	c.mu.Lock()
	c.srvs[i] = srv
	c.mu.Unlock()
}

func (c *cluster) node(i int) *server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.srvs[i]
}

func (c *cluster) stop(i int) {
	if s := c.node(i); s != nil && s.Running() {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

func (c *cluster) ready() bool {
	leader := false
	for i := range c.srvs {
		s := c.node(i)
		if !s.JetStreamIsCurrent() {
			return false
		}
		if s.JetStreamIsLeader() {
			leader = len(s.JetStreamClusterPeers()) == len(c.srvs)
		}
	}
	return leader
}

// addrs are the nodes' client addresses.
func (c *cluster) addrs() []string {
	var out []string
	for _, o := range c.opts {
		out = append(out, fmt.Sprintf("127.0.0.1:%d", o.Port))
	}
	return out
}

func natsURLs(addrs []string) string {
	var out []string
	for _, a := range addrs {
		out = append(out, "nats://"+a)
	}
	return strings.Join(out, ",")
}

// streamLeader is the index of the node leading the event stream, or -1.
func (c *cluster) streamLeader() int {
	for i := range c.srvs {
		if s := c.node(i); s.Running() && s.JetStreamIsStreamLeader("$G", "FLEETGATE_EVENTS") {
			return i
		}
	}
	return -1
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
