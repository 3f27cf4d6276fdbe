package mcpwire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Event is one server-sent event of a text/event-stream body.
//
// Its byte slices belong to the EventReader: they are valid until the
// next call of Next or Reset.
type Event struct {
	// Data is the values of the event's data fields joined by "\n" (one
	// leading space of each value removed). It may be empty: an event of
	// "data:" alone (an MCP priming event) is delivered.
	Data []byte
	// ID is the stream's last event ID: the value of the latest id field
	// in this event or an earlier one (an id field holding a NUL is
	// ignored), as a client sends it in Last-Event-ID.
	ID []byte
	// Name is the value of the event's event field; empty for the default
	// ("message").
	Name []byte
}

// Sizes of an EventReader's buffers.
const (
	eventReadSize = 8 << 10   // the read buffer
	eventKeepSize = 256 << 10 // Reset keeps buffers up to this capacity
	maxEmptyReads = 100       // reads of nothing in a row before io.ErrNoProgress
	maxFieldName  = len("event")
)

// The fields an EventReader keeps.
type fieldKind uint8

const (
	fieldOther fieldKind = iota // comments, retry and unknown fields
	fieldData
	fieldEvent
	fieldID
)

// EventReader reads the events of a text/event-stream body, per the HTML
// standard's event-stream interpretation: lines end with LF, CR or CR LF;
// a line starting with ':' is a comment; a blank line ends an event; an
// event without data fields is not delivered; a leading byte order mark
// is skipped. Unlike the standard, an event that the end of the stream
// cuts off (no blank line after it) is still delivered.
//
// It reads through a buffer of a fixed size and copies only the values of
// the fields it keeps, so that it holds at most one event's data however
// long its lines: an event whose lines (line ends not counted) add up to
// more than maxEvent bytes fails with an error wrapping ErrTooLarge, as
// soon as the bytes past the bound are read. Its buffers are kept from
// event to event and, through Reset, from stream to stream.
type EventReader struct {
	r        io.Reader
	maxEvent int

	buf        []byte // read buffer; the unread bytes are buf[start:end]
	start, end int
	eof        bool  // r has ended
	err        error // sticky: the end, or a bound exceeded
	skipLF     bool  // the last line ended with CR: a following LF is its end too
	started    bool  // past the byte order mark, if any

	// The line being read, once its field is known.
	inLine  bool
	kind    fieldKind
	atValue bool // the value's first byte is next: a space there is dropped

	data, name, id, nextID []byte
	hasData                bool // a data field in the current event
	dispatched             bool // the last Next returned an event: reset it first
	size                   int  // bytes of the current event's lines
}

// NewEventReader returns an EventReader of r that refuses events over
// maxEvent bytes (maxEvent <= 0 means no bound: only for trusted streams).
func NewEventReader(r io.Reader, maxEvent int) *EventReader {
	er := &EventReader{}
	er.Reset(r, maxEvent)
	return er
}

// Reset makes er read a new stream r, keeping its buffers unless they
// grew large, so that a pool of EventReaders reads without allocating.
func (er *EventReader) Reset(r io.Reader, maxEvent int) {
	buf := er.buf
	if buf == nil {
		buf = make([]byte, eventReadSize)
	}
	*er = EventReader{r: r, maxEvent: maxEvent, buf: buf,
		data: keep(er.data), name: keep(er.name), id: keep(er.id), nextID: keep(er.nextID)}
}

// keep is b emptied, or nil when it grew large.
func keep(b []byte) []byte {
	if cap(b) > eventKeepSize {
		return nil
	}
	return b[:0]
}

// Next returns the next event. At the end of the stream it returns
// io.EOF; an event over the bound an error wrapping ErrTooLarge, and from
// then on the same error. An error of the underlying reader is returned
// wrapped, and er keeps its place: Next may be called again when that
// reader has more to give (a reader fed chunk by chunk can say "not yet"
// that way).
func (er *EventReader) Next() (Event, error) {
	if er.err != nil {
		return Event{}, er.err
	}
	if er.dispatched {
		er.data, er.name, er.hasData, er.dispatched = er.data[:0], er.name[:0], false, false
	}
	for {
		ev, ok, more := er.step()
		switch {
		case ok:
			return ev, nil
		case er.err != nil:
			return Event{}, er.err
		case !more:
			continue
		case !er.eof:
			if err := er.fill(); err != nil {
				return Event{}, err
			}
		default: // the end, and a last event without its blank line
			er.err = io.EOF
			if er.hasData {
				return er.dispatch(), nil
			}
			return Event{}, io.EOF
		}
	}
}

// step reads one line, or as much of one as the buffer holds. It returns
// the event a blank line ends, or more when it needs more of the stream.
func (er *EventReader) step() (ev Event, ok, more bool) {
	b := er.buf[er.start:er.end]
	if er.skipLF && len(b) > 0 {
		er.skipLF = false
		if b[0] == '\n' {
			er.start++
			b = b[1:]
		}
	}
	if !er.started {
		if len(b) < 3 && !er.eof && bytes.HasPrefix([]byte("\xef\xbb\xbf"), b) {
			return Event{}, false, true // perhaps a byte order mark: read on
		}
		er.started = true
		if bytes.HasPrefix(b, []byte("\xef\xbb\xbf")) {
			er.start += 3
			b = b[3:]
		}
	}
	if len(b) == 0 {
		if er.eof && er.inLine {
			er.endLine()
		}
		return Event{}, false, true
	}
	// The line end, if the buffer has it.
	i := bytes.IndexByte(b, '\n')
	seg := b
	if i >= 0 {
		seg = b[:i]
	}
	if j := bytes.IndexByte(seg, '\r'); j >= 0 {
		i, seg = j, b[:j]
	}
	if !er.inLine {
		if i == 0 { // a blank line
			er.start++
			er.skipLF = b[0] == '\r'
			er.size = 0
			if er.hasData {
				return er.dispatch(), true, false
			}
			er.name = er.name[:0]
			return Event{}, false, false
		}
		colon := bytes.IndexByte(seg, ':')
		if colon < 0 && i < 0 && len(seg) <= maxFieldName && !er.eof {
			return Event{}, false, true // the field is not known yet
		}
		name := seg
		if colon >= 0 {
			name = seg[:colon]
		}
		er.beginField(name, colon >= 0)
		if !er.count(len(name) + min(colon+1, 1)) {
			return Event{}, false, false
		}
		seg = seg[len(name)+min(colon+1, 1):]
	}
	if !er.count(len(seg)) {
		return Event{}, false, false
	}
	er.value(seg)
	if i < 0 {
		er.start = er.end
		if er.eof {
			er.endLine()
		}
		return Event{}, false, true
	}
	er.start += i + 1
	er.skipLF = b[i] == '\r'
	er.endLine()
	return Event{}, false, false
}

// beginField starts a line of field name (a comment for an empty one).
func (er *EventReader) beginField(name []byte, hasValue bool) {
	er.inLine, er.atValue, er.kind = true, hasValue, fieldOther
	switch string(name) {
	case "data":
		er.kind = fieldData
		if er.hasData {
			er.data = append(er.data, '\n')
		}
		er.hasData = true
	case "event":
		er.kind, er.name = fieldEvent, er.name[:0]
	case "id":
		er.kind, er.nextID = fieldID, er.nextID[:0]
	}
}

// count adds n bytes to the event's size; false when that is too many.
func (er *EventReader) count(n int) bool {
	er.size += n
	if er.maxEvent > 0 && er.size > er.maxEvent {
		er.err = fmt.Errorf("%w: event over %d bytes", ErrTooLarge, er.maxEvent)
		return false
	}
	return true
}

// value takes the next bytes of the current line's value.
func (er *EventReader) value(v []byte) {
	if len(v) == 0 || er.kind == fieldOther {
		return
	}
	if er.atValue {
		er.atValue = false
		if v[0] == ' ' {
			v = v[1:]
		}
	}
	switch er.kind {
	case fieldData:
		er.data = append(er.data, v...)
	case fieldEvent:
		er.name = append(er.name, v...)
	case fieldID:
		er.nextID = append(er.nextID, v...)
	}
}

// endLine ends the current line.
func (er *EventReader) endLine() {
	if er.kind == fieldID && bytes.IndexByte(er.nextID, 0) < 0 {
		er.id, er.nextID = er.nextID, er.id
	}
	er.inLine, er.kind = false, fieldOther
}

// fill reads more of the stream, after the unread bytes (a few at most:
// the start of a line whose field is not known yet).
func (er *EventReader) fill() error {
	if er.start > 0 {
		er.end = copy(er.buf, er.buf[er.start:er.end])
		er.start = 0
	}
	for range maxEmptyReads {
		n, err := er.r.Read(er.buf[er.end:])
		er.end += n
		if errors.Is(err, io.EOF) {
			er.eof = true
			return nil
		}
		if err != nil {
			return fmt.Errorf("mcpwire: read event stream: %w", err)
		}
		if n > 0 {
			return nil
		}
	}
	return fmt.Errorf("mcpwire: read event stream: %w", io.ErrNoProgress)
}

// dispatch returns the current event; the next Next starts a new one.
func (er *EventReader) dispatch() Event {
	er.dispatched = true
	return Event{Data: er.data, ID: er.id, Name: er.name}
}
