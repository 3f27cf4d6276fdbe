package h1

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A client that stops reading is cut at the write deadline, counted once,
// and its connection closed; one that reads slowly but steadily keeps it,
// however large the response.
func TestWriteDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cli := net.Pipe()
		defer cli.Close()
		var dropped atomic.Int64
		c := NewDeadlineConn(srv, time.Second, func() { dropped.Add(1) })
		start := time.Now()
		n, err := c.Write(make([]byte, 1<<20)) // nobody reads
		if !errors.Is(err, os.ErrDeadlineExceeded) || n != 0 {
			t.Fatalf("write to a client that does not read: %d, %v", n, err)
		}
		if waited := time.Since(start); waited != time.Second {
			t.Fatalf("cut after %v, want the deadline (1s)", waited)
		}
		if _, err := c.Write([]byte("x")); err == nil || dropped.Load() != 1 {
			t.Fatalf("after the cut: write %v, %d drops counted; want an error and 1", err, dropped.Load())
		}
		if _, err := cli.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Fatalf("client side after the cut: %v, want EOF (closed)", err)
		}
	})
}

func TestWriteDeadlineSlowReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cli := net.Pipe()
		var dropped atomic.Int64
		c := NewDeadlineConn(srv, time.Second, func() { dropped.Add(1) })
		done := make(chan struct{})
		go func() {
			defer close(done)
			buf := make([]byte, writeChunk)
			for {
				time.Sleep(900 * time.Millisecond) // each chunk just within the deadline
				if _, err := io.ReadFull(cli, buf); err != nil {
					return
				}
			}
		}()
		size := 8 * writeChunk // takes 7.2s: far past one deadline
		if n, err := c.Write(make([]byte, size)); err != nil || n != size || dropped.Load() != 0 {
			t.Fatalf("slow reader: %d of %d written, %v, %d drops", n, size, err, dropped.Load())
		}
		c.Close()
		<-done
	})
}

// A sooner deadline its writer set is kept; a later one is not (the
// connection's own bounds every write).
func TestWriteDeadlineExplicit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct {
			explicit, want time.Duration
		}{{200 * time.Millisecond, 200 * time.Millisecond}, {time.Hour, time.Second}} {
			srv, cli := net.Pipe()
			c := NewDeadlineConn(srv, time.Second, nil)
			_ = c.SetWriteDeadline(time.Now().Add(tc.explicit))
			start := time.Now()
			if _, err := c.Write([]byte("x")); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("explicit %v: %v", tc.explicit, err)
			}
			if waited := time.Since(start); waited != tc.want {
				t.Fatalf("explicit deadline %v: cut after %v, want %v", tc.explicit, waited, tc.want)
			}
			cli.Close()
		}
	})
}

func TestNoWriteDeadline(t *testing.T) {
	base, _ := net.Listen("tcp", "127.0.0.1:0")
	defer base.Close()
	if WriteDeadlineListener(base, 0, nil) != base {
		t.Fatal("a timeout of 0 wrapped the listener")
	}
}
