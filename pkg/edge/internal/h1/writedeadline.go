package h1

import (
	"errors"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// A client that stops reading would otherwise pin what answers it: the
// handler's goroutine blocked in a write, its concurrency slot and its
// response (up to the backend response limit), on every connection it
// holds. WriteDeadlineListener bounds every write of every connection it
// accepts, whoever writes (net/http's server, a call lane, a taken-over
// stream): each piece of at most writeChunk bytes must be taken by the
// client within the timeout, so a slow but reading client keeps its
// connection and one that stopped is dropped. A write deadline a writer
// sets itself (a stream's, shutdown's) is kept when it is sooner.

// writeChunk is the most one deadline covers: a large write is split, so a
// client reading at a steady pace is never cut by its response's size.
const writeChunk = 64 << 10

// WriteDeadlineListener returns a listener whose connections fail a write
// the client does not take within timeout (timeout <= 0: ln as it is).
// dropped is called once per connection cut that way (nil: nothing); the
// connection is then closed.
func WriteDeadlineListener(ln net.Listener, timeout time.Duration, dropped func()) net.Listener {
	if timeout <= 0 {
		return ln
	}
	return &deadlineListener{Listener: ln, timeout: timeout, dropped: dropped}
}

type deadlineListener struct {
	net.Listener
	timeout time.Duration
	dropped func()
}

func (l *deadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return NewDeadlineConn(c, l.timeout, l.dropped), nil
}

// NewDeadlineConn is c with every write bounded by timeout (see
// WriteDeadlineListener).
func NewDeadlineConn(c net.Conn, timeout time.Duration, dropped func()) net.Conn {
	return &deadlineConn{Conn: c, timeout: timeout, dropped: dropped}
}

type deadlineConn struct {
	net.Conn
	timeout time.Duration
	dropped func()
	// explicit is the write deadline a writer set (unix nanoseconds; 0
	// none): a write's own deadline never goes past it.
	explicit atomic.Int64
	cut      atomic.Bool
}

func (c *deadlineConn) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		n := min(len(b), writeChunk)
		d := time.Now().Add(c.timeout)
		if e := c.explicit.Load(); e != 0 && e < d.UnixNano() {
			d = time.Unix(0, e)
		}
		_ = c.Conn.SetWriteDeadline(d)
		m, err := c.Conn.Write(b[:n])
		written += m
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && c.cut.CompareAndSwap(false, true) {
				_ = c.Conn.Close() // its reader and every later write end too
				if c.dropped != nil {
					c.dropped()
				}
			}
			return written, err
		}
		b = b[n:]
	}
	return written, nil
}

func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.setExplicit(t)
	return c.Conn.SetWriteDeadline(t)
}

func (c *deadlineConn) SetDeadline(t time.Time) error {
	c.setExplicit(t)
	return c.Conn.SetDeadline(t)
}

func (c *deadlineConn) setExplicit(t time.Time) {
	if t.IsZero() {
		c.explicit.Store(0)
		return
	}
	c.explicit.Store(t.UnixNano())
}

// CloseWrite closes the writing side, as net/http's server does before
// closing a connection it answered.
func (c *deadlineConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Linger ends a connection answered before its request's body was read:
// it closes the writing side (the answer, already written, is followed by
// a FIN), then reads and drops what the client still sends, for at most d,
// and closes. Closing with unread data would send a reset instead, which
// can destroy the answer in the client's buffer before it is read.
func Linger(c net.Conn, d time.Duration) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 32<<10)
	for {
		if _, err := c.Read(buf); err != nil {
			break
		}
	}
	_ = c.Close()
}
