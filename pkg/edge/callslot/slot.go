// Package callslot hands the concurrency slots a request was admitted
// with to the calls that request carries, when the go-sdk serves them.
//
// The edge's gate takes a call's slots when it admits the request
// (package admission), and gives them back when the response is written.
// On the edge's own paths the call ends before its response; a call the
// go-sdk serves may not: the go-sdk does not cancel a call whose client
// has gone (it has no event store here to resume the stream from), so the
// call would run on, out of its slot, and a client that leaves and comes
// back could run any number of calls at once. A Table ties the slots to
// the calls: the request's handler holds them (Hold) and names them to
// the go-sdk in a header that only the edge sets; each call of the
// request takes part in them (Begin) and ends (the func Begin returns);
// the slots are given back once the request is over and no call of it
// runs. A request that ends with calls still running ends those calls
// (their contexts are cancelled): their results can reach no one.
package callslot

import (
	"context"
	"net/http"
	"strconv"
	"sync"
)

// Header is the request header by which the edge names a request's slots
// to its own call handler. A client may not send it (the edge refuses a
// request that does).
const Header = "Fleetgate-Call-Slots"

// Table holds the slots of the requests in flight. The zero value is
// ready; a Table is safe for concurrent use. Begin on a nil *Table runs
// every call as it is.
type Table struct {
	mu   sync.Mutex
	next uint64
	held map[string]*slots
}

// slots are one request's: release gives them back; running are the
// cancels of its calls in progress, by call; over is set once the request
// is answered or its client gone.
type slots struct {
	release func()
	running map[uint64]context.CancelFunc
	over    bool
}

// Hold takes release, the giving back of a request's slots, and returns
// the token that names them (for Header) and done, which the request's
// handler calls once the request is over: it gives the slots back at
// once when no call of the request runs, else it cancels those calls and
// the last of them to end gives the slots back. done may be called more
// than once.
func (t *Table) Hold(release func()) (token string, done func()) {
	t.mu.Lock()
	if t.held == nil {
		t.held = map[string]*slots{}
	}
	t.next++
	token = strconv.FormatUint(t.next, 36)
	s := &slots{release: release, running: map[uint64]context.CancelFunc{}}
	t.held[token] = s
	t.mu.Unlock()
	return token, func() { t.over(token, s) }
}

func (t *Table) over(token string, s *slots) {
	t.mu.Lock()
	if s.over {
		t.mu.Unlock()
		return
	}
	s.over = true
	cancels := make([]context.CancelFunc, 0, len(s.running))
	for _, c := range s.running {
		cancels = append(cancels, c)
	}
	var release func()
	if len(s.running) == 0 {
		release = s.release
		delete(t.held, token)
	}
	t.mu.Unlock()
	for _, c := range cancels {
		c()
	}
	if release != nil {
		release()
	}
}

// Begin starts a call of the request whose header h is: the call's
// context (cancelled when the request is over before the call ends) and
// end, to call when the call ends. A request without the header holds no
// slots: ctx is returned as it is. A header naming slots no longer held
// is a request already over: the context returned is cancelled, so the
// call ends at once rather than run out of its slot.
func (t *Table) Begin(ctx context.Context, h http.Header) (context.Context, func()) {
	token := h.Get(Header)
	if t == nil || token == "" {
		return ctx, func() {}
	}
	cctx, cancel := context.WithCancel(ctx)
	t.mu.Lock()
	s := t.held[token]
	if s == nil || s.over {
		t.mu.Unlock()
		cancel()
		return cctx, func() {}
	}
	t.next++
	id := t.next
	s.running[id] = cancel
	t.mu.Unlock()
	return cctx, func() { t.end(token, s, id) }
}

func (t *Table) end(token string, s *slots, id uint64) {
	t.mu.Lock()
	cancel, ok := s.running[id]
	delete(s.running, id)
	var release func()
	if ok && s.over && len(s.running) == 0 {
		release = s.release
		delete(t.held, token)
	}
	t.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if release != nil {
		release()
	}
}

// Len is the number of requests whose slots are held.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.held)
}
