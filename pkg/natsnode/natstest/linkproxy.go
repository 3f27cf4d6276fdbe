package natstest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// LinkProxy is a loopback TCP proxy standing for a network link (between
// two regions' NATS, say): Cut closes every connection and refuses new
// ones until Heal.
type LinkProxy struct {
	ln     net.Listener
	mu     sync.Mutex
	target string
	cut    bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// NewLinkProxy starts a proxy with no target (it refuses connections
// until SetTarget); it is closed when the test ends.
func NewLinkProxy(t testing.TB) *LinkProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &LinkProxy{ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's listening address.
func (p *LinkProxy) Addr() string { return p.ln.Addr().String() }

// SetTarget sets where new connections go.
func (p *LinkProxy) SetTarget(addr string) {
	p.mu.Lock()
	p.target = addr
	p.mu.Unlock()
}

func (p *LinkProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		target, cut := p.target, p.cut
		p.mu.Unlock()
		if cut || target == "" {
			c.Close()
			continue
		}
		u, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[u] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, u)
		go p.pipe(u, c)
	}
}

func (p *LinkProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// Cut closes every connection through the proxy and refuses new ones.
func (p *LinkProxy) Cut() {
	p.mu.Lock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
}

// Heal accepts connections again.
func (p *LinkProxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

func (p *LinkProxy) close() {
	p.ln.Close()
	p.Cut()
	p.wg.Wait()
}
