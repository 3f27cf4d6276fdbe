package mcpwire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
)

// refEvent is an event as the tests see it.
type refEvent struct{ data, id, name string }

func (e refEvent) String() string {
	return fmt.Sprintf("{data %q id %q name %q}", e.data, e.id, e.name)
}

// readAll reads every event of r, and the error that ended the reading.
func readAll(r io.Reader, maxEvent int) ([]refEvent, error) {
	er := NewEventReader(r, maxEvent)
	var evs []refEvent
	for {
		ev, err := er.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, refEvent{string(ev.Data), string(ev.ID), string(ev.Name)})
	}
}

func TestEventReader(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []refEvent
	}{
		{"one event", "data: {}\n\n", []refEvent{{data: "{}"}}},
		{"no space", "data:{}\n\n", []refEvent{{data: "{}"}}},
		{"only one space removed", "data:  x\n\n", []refEvent{{data: " x"}}},
		{"lines joined", "data: a\ndata:b\ndata\n\n", []refEvent{{data: "a\nb\n"}}},
		{"CR LF", "event: message\r\nid: 7\r\ndata: x\r\n\r\n", []refEvent{{"x", "7", "message"}}},
		{"CR", "data: a\rdata: b\r\rdata: c\r\r", []refEvent{{data: "a\nb"}, {data: "c"}}},
		{"mixed", "data: a\r\n\ndata: b\n\r", []refEvent{{data: "a"}, {data: "b"}}},
		{"comments", ": hi\ndata: x\n: there\n\n:\n\n", []refEvent{{data: "x"}}},
		{"no data no event", "event: e\nid: 1\n\ndata: x\n\n", []refEvent{{data: "x", id: "1"}}},
		{"priming event", "id: p\ndata:\n\n", []refEvent{{id: "p"}}},
		{"id persists", "id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n", []refEvent{{"a", "1", ""}, {"b", "1", ""}, {"c", "", ""}}},
		{"id with NUL ignored", "id: 1\ndata: a\n\nid: 2\x00\ndata: b\n\n", []refEvent{{"a", "1", ""}, {"b", "1", ""}}},
		{"name per event", "event: x\ndata: a\n\ndata: b\n\n", []refEvent{{"a", "", "x"}, {"b", "", ""}}},
		{"unknown fields", "retry: 10\nfoo: bar\nData: no\ndata: x\n\n", []refEvent{{data: "x"}}},
		{"last event without blank line", "data: a\n\ndata: b", []refEvent{{data: "a"}, {data: "b"}}},
		{"last event ended by one line end", "data: b\n", []refEvent{{data: "b"}}},
		{"byte order mark", "\xef\xbb\xbfdata: x\n\n", []refEvent{{data: "x"}}},
		{"second byte order mark kept", "\xef\xbb\xbf\xef\xbb\xbfdata: x\n\ndata: y\n\n", []refEvent{{data: "y"}}},
		{"empty", "", nil},
		{"blank lines only", "\n\r\n\r", nil},
	} {
		for _, r := range []struct {
			name string
			wrap func(io.Reader) io.Reader
		}{{"whole", func(r io.Reader) io.Reader { return r }}, {"bytes", iotest.OneByteReader}, {"halves", iotest.HalfReader}} {
			got, err := readAll(r.wrap(strings.NewReader(tc.in)), 1<<10)
			if err != io.EOF || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("%s (%s): %v, %v; want %v", tc.name, r.name, got, err, tc.want)
			}
		}
	}
}

// TestEventReaderLongLines: lines longer than the read buffer, of every
// field, are read through it.
func TestEventReaderLongLines(t *testing.T) {
	long := strings.Repeat("0123456789", 3*eventReadSize/10)
	in := "id: " + long + "\r\nevent:" + long + "\r\nfoo: " + long + "\r\n:" + long + "\r\ndata: " + long + "\r\ndata:" + long + "\r\n\r\n"
	want := []refEvent{{long + "\n" + long, long, long}}
	for _, r := range []io.Reader{strings.NewReader(in), iotest.HalfReader(strings.NewReader(in))} {
		got, err := readAll(r, len(in))
		if err != io.EOF || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("got %d events (%v)", len(got), err)
		}
	}
	if _, err := readAll(strings.NewReader(in), 5*len(long)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the bound: %v", err)
	}
}

func TestEventReaderBounds(t *testing.T) {
	long := "data: " + strings.Repeat("x", 100) + "\n\n"
	if evs, err := readAll(strings.NewReader("data: a\n\n"+long), 64); !errors.Is(err, ErrTooLarge) || len(evs) != 1 {
		t.Fatalf("long line: %v, %v", evs, err)
	}
	many := "data: a\n" + strings.Repeat(": comment\n", 10) + "\n"
	if _, err := readAll(strings.NewReader(many), 64); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("long event of short lines: %v", err)
	}
	// Each event has a bound of its own.
	if evs, err := readAll(strings.NewReader(strings.Repeat("data: 0123456789\n\n", 100)), 16); err != io.EOF || len(evs) != 100 {
		t.Fatalf("many small events: %d, %v", len(evs), err)
	}
	// A line that never ends is refused once past the bound, without
	// reading (or buffering) the rest.
	endless := io.MultiReader(strings.NewReader("data: "), neverEnding('x'))
	er := NewEventReader(endless, 1<<16)
	if _, err := er.Next(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("endless line: %v", err)
	}
	if len(er.buf) != eventReadSize || len(er.data) > 1<<16 {
		t.Fatalf("buffers of %d and %d bytes for a bound of %d", len(er.buf), len(er.data), 1<<16)
	}
	if _, err := er.Next(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("the error is not kept: %v", err)
	}
}

// neverEnding is an endless stream of one byte.
type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// chunks gives its bytes a chunk at a time, then errNotYet until more are
// added, then io.EOF once closed.
type chunks struct {
	pending []byte
	closed  bool
}

var errNotYet = errors.New("not yet")

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		if c.closed {
			return 0, io.EOF
		}
		return 0, errNotYet
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// TestEventReaderResumes: after an error of its reader the EventReader
// goes on where it was, as a reader fed chunk by chunk needs.
func TestEventReaderResumes(t *testing.T) {
	in := "id: 1\r\nevent: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\ndata: last"
	src := &chunks{}
	er := NewEventReader(src, 1<<10)
	var got []refEvent
	for i := 0; i <= len(in); i++ {
		if i < len(in) {
			src.pending = append(src.pending, in[i])
		} else {
			src.closed = true
		}
		for {
			ev, err := er.Next()
			if errors.Is(err, errNotYet) || err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, refEvent{string(ev.Data), string(ev.ID), string(ev.Name)})
		}
	}
	want := []refEvent{{"{\"a\":\n1}", "1", "message"}, {"last", "1", ""}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestEventReaderReset(t *testing.T) {
	er := NewEventReader(strings.NewReader("id: 1\nevent: e\ndata: a"), 0)
	if ev, err := er.Next(); err != nil || string(ev.Data) != "a" {
		t.Fatalf("first stream: %q, %v", ev.Data, err)
	}
	// Buffers that grew large are not kept.
	long := strings.Repeat("x", eventKeepSize+1)
	er.Reset(strings.NewReader("id: "+long+"\nevent: "+long+"\ndata: "+long+"\n\n"), 0)
	if ev, err := er.Next(); err != nil || len(ev.Data) != len(long) {
		t.Fatalf("long event: %v", err)
	}
	er.Reset(strings.NewReader("data: b\n\n"), 0)
	if cap(er.data) != 0 || cap(er.id)+cap(er.nextID) > eventKeepSize || cap(er.name) != 0 {
		t.Fatalf("Reset kept buffers of %d, %d, %d and %d bytes", cap(er.data), cap(er.id), cap(er.nextID), cap(er.name))
	}
	if ev, err := er.Next(); err != nil || string(ev.Data) != "b" || len(ev.ID) != 0 || len(ev.Name) != 0 {
		t.Fatalf("second stream: %+v, %v", ev, err)
	}
	if _, err := er.Next(); err != io.EOF {
		t.Fatalf("end of the second stream: %v", err)
	}
}

// refRead is a plain reading of an event stream (whole, line by line) by
// the same rules: the reference of FuzzEventReader.
func refRead(in []byte, maxEvent int) ([]refEvent, error) {
	in = bytes.TrimPrefix(in, []byte("\xef\xbb\xbf"))
	var lines [][]byte
	for len(in) > 0 {
		i := bytes.IndexAny(in, "\r\n")
		if i < 0 {
			lines = append(lines, in)
			break
		}
		lines = append(lines, in[:i])
		if in[i] == '\r' && i+1 < len(in) && in[i+1] == '\n' {
			i++
		}
		in = in[i+1:]
	}
	var evs []refEvent
	var data []string
	var id, name string
	size := 0
	for _, l := range lines {
		if len(l) == 0 {
			if data != nil {
				evs = append(evs, refEvent{strings.Join(data, "\n"), id, name})
			}
			data, name, size = nil, "", 0
			continue
		}
		if size += len(l); maxEvent > 0 && size > maxEvent {
			return evs, ErrTooLarge
		}
		f, v, _ := strings.Cut(string(l), ":")
		v = strings.TrimPrefix(v, " ")
		switch {
		case f == "":
		case f == "data":
			data = append(data, v)
		case f == "event":
			name = v
		case f == "id" && !strings.Contains(v, "\x00"):
			id = v
		}
	}
	if data != nil {
		evs = append(evs, refEvent{strings.Join(data, "\n"), id, name})
	}
	return evs, io.EOF
}

// FuzzEventReader compares the EventReader, reading in chunks of the
// fuzzed size, with the plain reading: the same events, and the same
// verdict on the bound. It never panics, and never buffers more than the
// bound allows.
func FuzzEventReader(f *testing.F) {
	for _, s := range []string{"data: {}\n\n", "id: 1\r\nevent: message\r\ndata: a\r\n\r\n", "data:a\rdata:b\r\r",
		": c\ndata\n\n", "\xef\xbb\xbfdata: x", "data: " + strings.Repeat("y", 40) + "\n\n", "id: \x00\ndata: x\n\n"} {
		f.Add([]byte(s), uint8(0), uint16(32))
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8, maxEvent uint16) {
		want, werr := refRead(in, int(maxEvent))
		var r io.Reader = bytes.NewReader(in)
		if chunk > 0 {
			r = &chunkReader{in: in, n: int(chunk)}
		}
		er := NewEventReader(r, int(maxEvent))
		var got []refEvent
		var err error
		for {
			var ev Event
			if ev, err = er.Next(); err != nil {
				break
			}
			got = append(got, refEvent{string(ev.Data), string(ev.ID), string(ev.Name)})
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || errors.Is(err, ErrTooLarge) != errors.Is(werr, ErrTooLarge) {
			t.Fatalf("EventReader: %v, %v\nreference: %v, %v", got, err, want, werr)
		}
		if !errors.Is(err, ErrTooLarge) && err != io.EOF {
			t.Fatalf("error %v", err)
		}
		if len(er.buf) != eventReadSize || maxEvent > 0 && len(er.data) > int(maxEvent) {
			t.Fatalf("buffers of %d and %d bytes for a bound of %d", len(er.buf), len(er.data), maxEvent)
		}
	})
}

// chunkReader reads in chunks of n bytes.
type chunkReader struct {
	in []byte
	n  int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.in) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.in)
	c.in = c.in[n:]
	return n, nil
}

// benchBody is an event-stream response body as a go-sdk backend writes
// it: a progress notification, then the response carrying a result of
// about size bytes.
func benchBody(size int) []byte {
	text := strings.Repeat("x", max(size-80, 1))
	return []byte("event: message\nid: 0_1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n" +
		"event: message\nid: 0_2\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"fleetgate-1\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"" + text + "\"}]}}\n\n")
}

var benchSizes = []struct {
	name string
	size int
}{{"256B", 256}, {"4KiB", 4 << 10}, {"64KiB", 64 << 10}}

// scanBufs and scannerEvents are the line loop that the edge's readEvents
// used before the EventReader, for comparison.
var scanBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

func scannerEvents(r io.Reader, each func([]byte)) error {
	buf := scanBufs.Get().(*[]byte)
	defer scanBufs.Put(buf)
	sc := bufio.NewScanner(r)
	sc.Buffer((*buf)[:0], 64<<20)
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if data.Len() == 0 {
				continue
			}
			each(data.Bytes())
			data.Reset()
		case bytes.HasPrefix(line, []byte("data:")):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" ")))
		}
	}
	if data.Len() > 0 {
		each(data.Bytes())
	}
	return sc.Err()
}

var eventReaders = sync.Pool{New: func() any { return NewEventReader(nil, 0) }}

// BenchmarkEventStream reads one response body per op: "scanner" is the
// bufio.Scanner loop the edge had, "reader" a pooled EventReader.
func BenchmarkEventStream(b *testing.B) {
	for _, s := range benchSizes {
		body := benchBody(s.size)
		var events int
		each := func(d []byte) { events += len(d) & 1 }
		b.Run("scanner/"+s.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			r := bytes.NewReader(body)
			for b.Loop() {
				r.Reset(body)
				if err := scannerEvents(r, each); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("reader/"+s.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			r := bytes.NewReader(body)
			for b.Loop() {
				r.Reset(body)
				er := eventReaders.Get().(*EventReader)
				er.Reset(r, 64<<20)
				for {
					ev, err := er.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					each(ev.Data)
				}
				eventReaders.Put(er)
			}
		})
	}
}
