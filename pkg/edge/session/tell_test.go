package session

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
)

// tcpStream attaches to s a taken-over stream over a real TCP connection
// on 127.0.0.1, whose socket buffers are small when small is set; it
// returns the client's end, the head already read.
func tcpStream(t *testing.T, s *Session, small bool) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d := net.Dialer{}
	if small {
		d.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
			if err != nil {
				return err
			}
			return serr
		}
	}
	client, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if small {
		if err := server.(*net.TCPConn).SetWriteBuffer(4096); err != nil {
			t.Fatal(err)
		}
	}
	head := append(StreamHead(), Chunk([]byte(": ok\n\n"))...)
	if !s.Attach(server, head, nil) {
		t.Fatal("stream not attached")
	}
	if _, err := io.ReadFull(client, make([]byte, len(head))); err != nil {
		t.Fatal(err)
	}
	return client
}

// readEvents parses the chunked event stream of r strictly, sending the
// number of each event's id, until r ends.
func readEvents(r io.Reader, ids chan<- uint64, errs chan<- error) {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			errs <- err
			return
		}
		size, err := strconv.ParseUint(strings.TrimSuffix(line, "\r\n"), 16, 32)
		if err != nil || !strings.HasSuffix(line, "\r\n") || size > 4096 {
			errs <- fmt.Errorf("chunk head %q", line)
			return
		}
		data := make([]byte, size+2)
		if _, err := io.ReadFull(br, data); err != nil {
			errs <- err
			return
		}
		ev := string(data[:size])
		id, rest, ok := strings.Cut(ev, "\n")
		num, found := strings.CutPrefix(id, "id: "+Epoch()+"-")
		n, perr := strconv.ParseUint(num, 10, 64)
		if string(data[size:]) != "\r\n" || !ok || !found || perr != nil || !strings.Contains(rest, ToolsChanged) {
			errs <- fmt.Errorf("event %q", data)
			return
		}
		ids <- n
	}
}

// A change told to a session whose client reads is written by the
// teller itself: when Apply returns, no flusher runs and nothing is owed,
// and the client reads the frame with its id.
func TestTellWritesAtOnce(t *testing.T) {
	hj := &h1.Hijacks{}
	g := NewRegistry(&Options{Hijacks: hj})
	s := g.New("s1", KindSession, "2025-11-25", "")
	s.Listen(PendingTools) // no go-sdk server here: it writes the kinds it listens to
	g.Open(s)
	client := tcpStream(t, s, false)
	ids, errs := make(chan uint64, 16), make(chan error, 1)
	go readEvents(client, ids, errs)
	for want := uint64(1); want <= 3; want++ {
		s.Apply(&view.Served{Gen: want}, view.Change{Tools: true}, time.Now())
		s.mu.Lock()
		writing, pending := s.stream.writing, s.pending
		s.mu.Unlock()
		if writing || pending != 0 {
			t.Fatalf("after Apply %d: a flusher writing %v, pending %b; want the write done by Apply", want, writing, pending)
		}
		select {
		case n := <-ids:
			if n != want {
				t.Fatalf("event %d, want %d", n, want)
			}
		case err := <-errs:
			t.Fatal(err)
		}
	}
	s.End()
	hj.Wait()
}

// A client that stops reading fills its socket: what a tell cannot write
// at once is left to the flusher, later changes merge, and once the
// client reads again it gets a well-formed stream whose events follow
// one another up to the last one, with nothing left owed.
func TestTellLeavesTheRestToTheFlusher(t *testing.T) {
	hj := &h1.Hijacks{}
	g := NewRegistry(&Options{Hijacks: hj})
	s := g.New("s1", KindSession, "2025-11-25", "")
	s.Listen(PendingTools) // no go-sdk server here: it writes the kinds it listens to
	g.Open(s)
	client := tcpStream(t, s, true)
	filled := uint64(0) // the changes told until the socket was full
	for gen := uint64(1); gen <= 100000 && filled == 0; gen++ {
		s.Apply(&view.Served{Gen: gen}, view.Change{Tools: true}, time.Now())
		s.mu.Lock()
		if s.stream.writing { // the flusher waits for the client
			filled = gen
		}
		s.mu.Unlock()
	}
	if filled == 0 {
		t.Fatal("the socket never filled")
	}
	for gen := uint64(100001); gen <= 100010; gen++ { // merged while the client does not read
		s.Apply(&view.Served{Gen: gen}, view.Change{Tools: true}, time.Now())
	}
	ids, errs := make(chan uint64, 64), make(chan error, 1)
	go readEvents(client, ids, errs)
	timeout := time.After(time.Minute)
	for prev := uint64(0); ; {
		select {
		case n := <-ids:
			if n != prev+1 {
				t.Fatalf("event %d after %d", n, prev)
			}
			prev = n
			s.mu.Lock()
			done := !s.stream.writing && s.pending == 0 && s.sent.n == n
			s.mu.Unlock()
			if done {
				if n != filled+1 {
					t.Fatalf("%d events, want the %d told until the socket was full and one for the 10 told after", n, filled)
				}
				s.End()
				hj.Wait()
				return
			}
		case err := <-errs:
			t.Fatalf("after event %d: %v", prev, err)
		case <-timeout:
			t.Fatalf("stuck after event %d", prev)
		}
	}
}
