package prober

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// The list methods whose raw results are captured.
const (
	methodTools     = "tools/list"
	methodResources = "resources/list"
	methodPrompts   = "prompts/list"
	methodTemplates = "resources/templates/list"
)

// listKey identifies one page request: the method and the cursor sent.
type listKey struct{ method, cursor string }

// capture pairs raw list results with the requests that asked for them,
// by JSON-RPC id. The prober lists serially, so at most a few ids are
// pending at a time; reset drops leftovers of abandoned calls.
type capture struct {
	mu      sync.Mutex
	pending map[mcpwire.ID]listKey
	results map[listKey]json.RawMessage
}

func newCapture() *capture {
	return &capture{pending: map[mcpwire.ID]listKey{}, results: map[listKey]json.RawMessage{}}
}

func (c *capture) expect(id mcpwire.ID, k listKey) {
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

// deliver inspects one JSON-RPC message (or batch) and keeps the results
// of the responses to pending list calls.
func (c *capture) deliver(data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 || !bytes.Contains(data, []byte(`"result"`)) {
		return
	}
	for m, err := range mcpwire.Messages(data) {
		if err != nil {
			return
		}
		k, ok := c.pending[m.ID]
		if !ok || m.Method != "" || m.Result == nil {
			continue
		}
		delete(c.pending, m.ID)
		c.results[k] = m.Result
	}
}

// parser extracts JSON-RPC messages from a response body as it is read:
// either a whole application/json body or the data of text/event-stream
// events. It runs inside the body's Read, before the SDK sees the bytes'
// meaning, so a result is captured before the SDK's call returns. A body
// or event over maxMessage bytes is not captured (the Guard under the
// parser fails the read first).
type parser struct {
	c          *capture
	json       bool // the body is one JSON message
	maxMessage int
	body       []byte // the JSON body so far
	over       bool   // the JSON body is over maxMessage
	chunk      chunkSource
	events     *mcpwire.EventReader // event streams only
	ended      bool
}

func newParser(c *capture, wholeJSON bool, maxMessage int) *parser {
	p := &parser{c: c, json: wholeJSON, maxMessage: maxMessage}
	if !wholeJSON {
		p.events = mcpwire.NewEventReader(&p.chunk, maxMessage)
	}
	return p
}

// feed consumes the next chunk; eof marks the end of the body.
func (p *parser) feed(b []byte, eof bool) {
	if p.ended {
		return
	}
	p.ended = eof
	if p.json {
		if !p.over && len(p.body)+len(b) > p.maxMessage {
			p.over, p.body = true, nil
		}
		if !p.over {
			p.body = append(p.body, b...)
		}
		if eof && !p.over {
			p.c.deliver(p.body)
			p.body = nil
		}
		return
	}
	p.chunk.b, p.chunk.eof = b, eof
	for {
		ev, err := p.events.Next()
		if err != nil { // not yet, the end, or an event over the bound
			break
		}
		if len(bytes.TrimSpace(ev.Data)) > 0 { // not a priming event
			p.c.deliver(ev.Data)
		}
	}
	p.chunk.b = nil // the caller's buffer
}

// chunkSource gives the EventReader the chunk being fed, then
// errNotYet until the next one.
type chunkSource struct {
	b   []byte
	eof bool
}

var errNotYet = errors.New("prober: the rest of the body is not read yet")

func (c *chunkSource) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		if c.eof {
			return 0, io.EOF
		}
		return 0, errNotYet
	}
	n := copy(p, c.b)
	c.b = c.b[n:]
	return n, nil
}

// result keeps the raw result of the response with id, when it answers a
// pending list call.
func (c *capture) result(id mcpwire.ID, raw json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.pending[id]
	if !ok {
		return
	}
	delete(c.pending, id)
	c.results[k] = append(json.RawMessage(nil), raw...)
}
