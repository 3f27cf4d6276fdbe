package prober

import (
	"bytes"
	"encoding/json"
	"sync"
)

// The list methods whose raw results are captured.
const (
	methodTools     = "tools/list"
	methodResources = "resources/list"
	methodPrompts   = "prompts/list"
)

// maxEventBytes bounds one buffered event (or JSON body); a larger one is
// skipped, and the list call it answered then fails to be captured.
const maxEventBytes = 64 << 20

// listKey identifies one page request: the method and the cursor sent.
type listKey struct{ method, cursor string }

// capture pairs raw list results with the requests that asked for them,
// by JSON-RPC id. The prober lists serially, so at most a few ids are
// pending at a time; reset drops leftovers of abandoned calls.
type capture struct {
	mu      sync.Mutex
	pending map[string]listKey
	results map[listKey]json.RawMessage
}

func newCapture() *capture {
	return &capture{pending: map[string]listKey{}, results: map[listKey]json.RawMessage{}}
}

func (c *capture) expect(id string, k listKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending[id] = k
	delete(c.results, k)
}

// take returns and forgets the raw result captured for k.
func (c *capture) take(k listKey) (json.RawMessage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.results[k]
	delete(c.results, k)
	return r, ok
}

func (c *capture) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.pending)
	clear(c.results)
}

// deliver inspects one JSON-RPC message and keeps its result if it answers
// a pending list call.
func (c *capture) deliver(msg []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 || !bytes.Contains(msg, []byte(`"result"`)) {
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(msg, &m) != nil || len(m.ID) == 0 || m.Result == nil {
		return
	}
	id := string(bytes.TrimSpace(m.ID))
	k, ok := c.pending[id]
	if !ok {
		return
	}
	delete(c.pending, id)
	c.results[k] = m.Result
}

// parser extracts JSON-RPC messages from a response body as it is read:
// either a whole application/json body or the data of text/event-stream
// events. It runs inside the body's Read, before the SDK sees the bytes'
// meaning, so a result is captured before the SDK's call returns.
type parser struct {
	c     *capture
	json  bool   // the body is one JSON message
	line  []byte // the current (incomplete) line, event streams only
	data  []byte // the current event's data, or the whole JSON body
	skip  bool   // the current event or body is over maxEventBytes
	ended bool
}

func newParser(c *capture, wholeJSON bool) *parser { return &parser{c: c, json: wholeJSON} }

// feed consumes the next chunk; eof marks the end of the body.
func (p *parser) feed(b []byte, eof bool) {
	if p.ended {
		return
	}
	if p.json {
		p.grow(b)
		if eof {
			p.ended = true
			if !p.skip {
				p.c.deliver(p.data)
			}
			p.data = nil
		}
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.line = append(p.line, b...)
			break
		}
		p.line = append(p.line, b[:i]...)
		p.endLine()
		b = b[i+1:]
	}
	if eof {
		p.ended = true
		if len(p.line) > 0 {
			p.endLine()
		}
		p.dispatch()
	}
}

func (p *parser) grow(b []byte) {
	if p.skip {
		return
	}
	if len(p.data)+len(b) > maxEventBytes {
		p.skip, p.data = true, nil
		return
	}
	p.data = append(p.data, b...)
}

// endLine interprets one complete SSE line (without its '\n').
func (p *parser) endLine() {
	line := bytes.TrimSuffix(p.line, []byte{'\r'})
	switch {
	case len(line) == 0:
		p.dispatch()
	case bytes.HasPrefix(line, []byte("data:")):
		v := bytes.TrimPrefix(line[len("data:"):], []byte{' '})
		if len(p.data) > 0 {
			p.grow([]byte{'\n'})
		}
		p.grow(v)
	}
	p.line = p.line[:0]
}

func (p *parser) dispatch() {
	if len(p.data) > 0 && !p.skip {
		p.c.deliver(p.data)
	}
	p.data, p.skip = p.data[:0], false
}
