//go:build !unix

package h1

import "net"

// ConnAlive cannot peek at a socket here: an idle connection the peer
// closed fails its next exchange, which is then retried (see pool.do).
func ConnAlive(net.Conn) bool { return true }
