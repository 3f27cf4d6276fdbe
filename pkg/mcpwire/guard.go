package mcpwire

import (
	"bytes"
	"fmt"
	"io"
)

// Limits bound the messages of one stream of outside bytes.
type Limits struct {
	// MaxDepth bounds the nesting of each message; 0 means MaxDepth.
	MaxDepth int
	// MaxMessage bounds one message: a whole application/json body, or
	// one event of a text/event-stream body; 0 means no bound.
	MaxMessage int64
}

// Guard wraps a body of outside JSON-RPC bytes so that no parser reading
// through it sees a message nested deeper than MaxDepth or larger than
// MaxMessage: the Read that would deliver such bytes fails instead, with
// an error wrapping ErrTooDeep or ErrTooLarge. With sse set the body is a
// text/event-stream: only the values of its data fields count towards the
// depth, and each event (up to its blank line) is one message; otherwise
// the whole body is one JSON message (or batch).
//
// A Guard keeps a few words of state whatever it reads, and costs one pass
// over the bytes.
func Guard(r io.ReadCloser, sse bool, l Limits) io.ReadCloser {
	if l.MaxDepth <= 0 {
		l.MaxDepth = MaxDepth
	}
	return &guard{r: r, sse: sse, l: l, lineStart: true}
}

type guard struct {
	r   io.ReadCloser
	sse bool
	l   Limits
	err error

	// JSON scanning state.
	depth    int
	inString bool
	escape   bool

	// SSE line state.
	lineStart bool
	afterCR   bool
	field     [5]byte // the first bytes of a line's field name
	fieldLen  int
	inValue   bool // past the field's ':'
	isData    bool // the field is "data"

	size int64 // bytes of the current message
}

func (g *guard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.r.Read(p)
	if ferr := g.feed(p[:n]); ferr != nil {
		g.err = ferr
		return 0, ferr
	}
	return n, err
}

func (g *guard) Close() error { return g.r.Close() }

func (g *guard) feed(b []byte) error {
	if !g.sse {
		g.size += int64(len(b))
		if g.l.MaxMessage > 0 && g.size > g.l.MaxMessage {
			return fmt.Errorf("%w: over %d bytes", ErrTooLarge, g.l.MaxMessage)
		}
		for i := 0; i < len(b); i++ {
			if g.inString && !g.escape { // skip to the string's next quote or escape
				if i += stringRun(b[i:], false); i == len(b) {
					break
				}
			}
			if err := g.scan(b[i]); err != nil {
				return err
			}
		}
		return nil
	}
	for i := 0; i < len(b); i++ {
		if g.inString && !g.escape && g.inValue && g.isData {
			// Skip to the next quote, escape or line end of a string in a
			// data field (the bulk of a large event).
			j := stringRun(b[i:], true)
			g.size += int64(j)
			if g.l.MaxMessage > 0 && g.size > g.l.MaxMessage {
				return fmt.Errorf("%w: event over %d bytes", ErrTooLarge, g.l.MaxMessage)
			}
			if i += j; i == len(b) {
				break
			}
		}
		if err := g.sseByte(b[i]); err != nil {
			return err
		}
	}
	return nil
}

// stringRun is the length of the run of b inside a JSON string: up to
// its first quote or backslash (or, in an event stream, line end).
func stringRun(b []byte, lines bool) int {
	n := len(b)
	cut := func(c byte) {
		if j := bytes.IndexByte(b[:n], c); j >= 0 {
			n = j
		}
	}
	cut('"')
	cut('\\')
	if lines {
		cut('\n')
		cut('\r')
	}
	return n
}

// sseByte advances the event-stream state by one byte.
func (g *guard) sseByte(c byte) error {
	if c == '\n' && g.afterCR { // the LF of a CR LF line end
		g.afterCR = false
		return nil
	}
	g.afterCR = c == '\r'
	if c == '\n' || c == '\r' {
		if g.lineStart { // a blank line ends the event
			g.size, g.depth, g.inString, g.escape = 0, 0, false, false
		}
		g.lineStart, g.fieldLen, g.inValue, g.isData = true, 0, false, false
		return nil
	}
	g.size++
	if g.l.MaxMessage > 0 && g.size > g.l.MaxMessage {
		return fmt.Errorf("%w: event over %d bytes", ErrTooLarge, g.l.MaxMessage)
	}
	g.lineStart = false
	if !g.inValue {
		if c == ':' {
			g.inValue = true
			g.isData = g.fieldLen == 4 && string(g.field[:4]) == "data"
			return nil
		}
		if g.fieldLen < len(g.field) {
			g.field[g.fieldLen] = c
		}
		g.fieldLen++
		return nil
	}
	if !g.isData {
		return nil
	}
	return g.scan(c)
}

// scan advances the JSON depth state by one byte.
func (g *guard) scan(c byte) error {
	if g.inString {
		switch {
		case g.escape:
			g.escape = false
		case c == '\\':
			g.escape = true
		case c == '"':
			g.inString = false
		}
		return nil
	}
	switch c {
	case '"':
		g.inString = true
	case '[', '{':
		g.depth++
		if g.depth > g.l.MaxDepth {
			return &DepthError{Limit: g.l.MaxDepth, Offset: int(g.size)}
		}
	case ']', '}':
		if g.depth > 0 {
			g.depth--
		}
	}
	return nil
}
