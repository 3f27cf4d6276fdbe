//go:build !unix

package h1

import "syscall"

// tryWrite cannot write without waiting here: the caller's waiting write
// writes it all.
func tryWrite(syscall.RawConn, []byte) (int, error) { return 0, nil }
