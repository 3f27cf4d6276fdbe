package h1

import (
	"net"
	"sync"
	"time"
)

// refusedResponse answers a connection over the cap.
const refusedResponse = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"

// LimitListener returns a listener whose Accept hands out at most max open
// connections at a time (max <= 0: no cap). A connection beyond the cap is
// accepted, answered 503 with Retry-After, and closed at once, so that a
// flood of connections neither queues the others in the kernel's backlog
// nor holds a goroutine; refused is called for each (nil: nothing). A
// connection counts until it is closed, whoever closes it (the server, a
// handler that hijacked it).
func LimitListener(ln net.Listener, max int, refused func()) net.Listener {
	if max <= 0 {
		return ln
	}
	return &limitListener{Listener: ln, max: max, refused: refused}
}

type limitListener struct {
	net.Listener
	max     int
	refused func()

	mu   sync.Mutex
	open int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		full := l.open >= l.max
		if !full {
			l.open++
		}
		l.mu.Unlock()
		if !full {
			return &limitedConn{Conn: c, l: l}, nil
		}
		// A fresh socket's send buffer takes the answer without blocking;
		// the deadline covers a peer that already went away.
		_ = c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		_, _ = c.Write([]byte(refusedResponse))
		_ = c.Close()
		if l.refused != nil {
			l.refused()
		}
	}
}

// Open reports how many accepted connections are open.
func (l *limitListener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

type limitedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

// CloseWrite closes the writing side, as net/http's server does before
// closing a connection it answered.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return err
}
