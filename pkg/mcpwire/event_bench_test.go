package mcpwire

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
)

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
