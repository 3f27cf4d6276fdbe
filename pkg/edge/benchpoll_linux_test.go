package edge

import (
	"bytes"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The fan-out benchmarks' synthetic clients share the two cores with the
// edges they measure: a go-sdk or net/http client per session spends a
// goroutine wake, a chunked reader and a scanner on every notification,
// about as much CPU as the edge's write. FLEETGATE_BENCH_CLIENT=poll
// makes each session's GET stream a bare socket read by one epoll loop per
// client process: one read system call per notification, nothing else.

// streamPoller reads the GET streams of many sessions with one epoll loop.
type streamPoller struct {
	epfd int
	mu   sync.Mutex
	subs map[int32]*polledStream
}

// polledStream is one session's stream: whom to tell, and the tail of
// what was read (a notification may span two reads).
type polledStream struct {
	notified func()
	tail     []byte
}

// pollPause is the loop's pause when no stream has anything: it never
// sleeps in epoll_wait, so an edge's write finds no reader to wake (a
// wake-up per write would be the edge's cost, not the client's).
var pollPause = time.Millisecond

var listChangedMark = []byte("notifications/tools/list_changed")

func newStreamPoller() (*streamPoller, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	p := &streamPoller{epfd: epfd, subs: map[int32]*polledStream{}}
	go p.loop()
	return p, nil
}

func (p *streamPoller) loop() {
	evs := make([]syscall.EpollEvent, 256)
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.EpollWait(p.epfd, evs, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return
		}
		if n == 0 {
			time.Sleep(pollPause)
			continue
		}
		for _, ev := range evs[:n] {
			p.mu.Lock()
			s := p.subs[ev.Fd]
			p.mu.Unlock()
			if s != nil {
				p.read(int(ev.Fd), s, buf)
			}
		}
	}
}

// read takes what fd has and tells s of each notification in it.
func (p *streamPoller) read(fd int, s *polledStream, buf []byte) {
	n, err := syscall.Read(fd, buf)
	if err == syscall.EAGAIN || err == syscall.EINTR {
		return
	}
	if n <= 0 {
		p.drop(fd)
		return
	}
	data := append(s.tail, buf[:n]...)
	for {
		i := bytes.Index(data, listChangedMark)
		if i < 0 {
			break
		}
		s.notified()
		data = data[i+len(listChangedMark):]
	}
	keep := min(len(data), len(listChangedMark)-1)
	s.tail = append(s.tail[:0], data[len(data)-keep:]...)
}

func (p *streamPoller) drop(fd int) {
	p.mu.Lock()
	_, ok := p.subs[int32(fd)]
	delete(p.subs, int32(fd))
	p.mu.Unlock()
	if !ok {
		return
	}
	_ = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, fd, nil)
	_ = syscall.Close(fd)
}

// openStream opens session sid's GET stream on rawURL as a bare socket:
// the request written and the response head read blocking, then the
// socket handed to the epoll loop. It returns the closer.
func (p *streamPoller) openStream(rawURL, sid string, notified func()) (func(), error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	addr, err := net.ResolveTCPAddr("tcp4", u.Host)
	if err != nil {
		return nil, err
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	sa := &syscall.SockaddrInet4{Port: addr.Port}
	copy(sa.Addr[:], addr.IP.To4())
	if err := syscall.Connect(fd, sa); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("connect %s: %w", u.Host, err)
	}
	req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nAccept: text/event-stream\r\n" +
		"Mcp-Session-Id: " + sid + "\r\nMcp-Protocol-Version: 2025-11-25\r\n\r\n"
	if _, err := syscall.Write(fd, []byte(req)); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("write GET: %w", err)
	}
	var head []byte
	buf := make([]byte, 4096)
	for !bytes.Contains(head, []byte("\r\n\r\n")) {
		n, err := syscall.Read(fd, buf)
		if err != nil || n <= 0 || len(head) > 64<<10 {
			syscall.Close(fd)
			return nil, fmt.Errorf("read GET response head: %v", err)
		}
		head = append(head, buf[:n]...)
	}
	if !strings.HasPrefix(string(head), "HTTP/1.1 200") {
		syscall.Close(fd)
		return nil, fmt.Errorf("GET stream: %q", head[:min(len(head), 40)])
	}
	s := &polledStream{notified: notified}
	// What came with the head is the stream's start (no notification yet).
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	p.mu.Lock()
	p.subs[int32(fd)] = s
	p.mu.Unlock()
	if err := syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}); err != nil {
		p.drop(fd)
		return nil, fmt.Errorf("epoll_ctl: %w", err)
	}
	return func() { p.drop(fd); deleteRawSession(rawURL, sid) }, nil
}

// openPolledSession is openRawSession with its GET stream read by p.
func (p *streamPoller) openPolledSession(url string, notified func()) (func(), error) {
	sid, err := initRawSession(url)
	if err != nil {
		return nil, err
	}
	return p.openStream(url, sid, notified)
}
