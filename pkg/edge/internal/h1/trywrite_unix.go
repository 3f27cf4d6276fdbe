//go:build unix

package h1

import (
	"errors"
	"syscall"
)

// tryWrite makes one non-blocking write attempt of b to rc's socket, and
// a second one for what a short write left (the kernel may take a frame
// in two pieces); EAGAIN is not an error but a short count. An error of
// rc itself (a deadline passed, the descriptor closed) is a short count
// too: the waiting write that follows reports it.
func tryWrite(rc syscall.RawConn, b []byte) (n int, err error) {
	rerr := rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			m, werr := syscall.Write(int(fd), b[n:])
			switch {
			case errors.Is(werr, syscall.EINTR):
				continue
			case errors.Is(werr, syscall.EAGAIN):
				return true
			case werr != nil:
				err = werr
				return true
			case m <= 0:
				return true
			}
			n += m
		}
		return true // never wait for the socket
	})
	if rerr != nil && err == nil {
		return n, nil
	}
	return n, err
}
