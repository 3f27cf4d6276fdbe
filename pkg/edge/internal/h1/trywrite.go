package h1

import (
	"net"
	"syscall"
)

// RawConn is the socket of c, an accepted connection, for TryWrite; nil
// when it has none (a net.Pipe, say). It is had once per connection:
// each call of a net.Conn's SyscallConn allocates.
func RawConn(c net.Conn) syscall.RawConn {
	rc, err := rawConn(c)
	if err != nil {
		return nil
	}
	return rc
}

// TryWrite writes to rc (RawConn of a connection; nil: nothing is
// written) what its socket takes now, without waiting and without
// touching the connection's deadlines: n < len(b) with a nil error means
// that the rest would wait. A fan-out tells thousands of streams one
// small frame each; written this way, a stream whose client reads costs
// one system call on the caller's goroutine, and only one whose socket is
// full needs a goroutine of its own to wait (with a deadline) for the
// rest. The caller serializes its writes to the connection.
func TryWrite(rc syscall.RawConn, b []byte) (n int, err error) {
	if rc == nil || len(b) == 0 {
		return 0, nil
	}
	return tryWrite(rc, b)
}

// SyscallConn is the accepted connection's: TryWrite writes past the
// per-write deadline, which only bounds a write that waits.
func (c *deadlineConn) SyscallConn() (syscall.RawConn, error) { return rawConn(c.Conn) }

// SyscallConn is the accepted connection's (TryWrite).
func (c *limitedConn) SyscallConn() (syscall.RawConn, error) { return rawConn(c.Conn) }

// rawConn is c's syscall.RawConn; an error when c has none.
func rawConn(c net.Conn) (syscall.RawConn, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, syscall.EINVAL
	}
	return sc.SyscallConn()
}
