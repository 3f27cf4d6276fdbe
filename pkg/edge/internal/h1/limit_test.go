package h1

import (
	"bufio"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

func TestLimitListener(t *testing.T) {
	base, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var refused atomic.Int64
	ln := LimitListener(base, 2, func() { refused.Add(1) })
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", base.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	dial()
	dial()
	s1, _ := <-accepted, <-accepted
	over := dial()
	resp, err := http.ReadResponse(bufio.NewReader(over), nil)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("over the cap: %v %v", resp, err)
	}
	// The refusal is counted after its answer is written: wait for it.
	eventually(t, 5*time.Second, "the refusal counted", func() bool { return refused.Load() == 1 })
	if n := ln.(*limitListener).Open(); n != 2 || refused.Load() != 1 {
		t.Fatalf("%d open, %d refused; want 2 and 1", n, refused.Load())
	}
	s1.Close()
	s1.Close() // counted once
	dial()
	<-accepted
	if n := ln.(*limitListener).Open(); n != 2 {
		t.Fatalf("%d open after one closed and one more came, want 2", n)
	}
}

func TestNoLimit(t *testing.T) {
	base, _ := net.Listen("tcp", "127.0.0.1:0")
	defer base.Close()
	if LimitListener(base, 0, nil) != base {
		t.Fatal("a cap of 0 wrapped the listener")
	}
}
