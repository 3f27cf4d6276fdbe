//go:build unix

package h1

import (
	"errors"
	"net"
	"syscall"
)

// ConnAlive reports whether an idle connection is still open and has
// nothing unread: a non-blocking peek at its socket (EOF: the peer closed
// it; data: a response nobody asked for).
func ConnAlive(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		_ = n // 0 with no error: EOF; more: unread data
		alive = errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK)
		return true // never wait for readiness
	})
	return err == nil && alive
}
