package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// heapInUse is the heap in use after a collection, in bytes.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// A client that sends a call and never reads its 12 MiB answer is dropped
// at the write deadline and counted; the response it pinned is released
// (the edge's heap back to its baseline) and the edge serves on.
func TestNonReadingClientDropped(t *testing.T) {
	const size = 12 << 20
	f := newFleet(t)
	b := startBackend(t, "alpha", nil)
	b.AddToolFunc(&mcp.Tool{Name: "big", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", size)}}}, nil
		})
	f.healthyBackend("default", b)
	e := startEdge(t, f, &Options{CallTimeout: 30 * time.Second, WriteTimeout: 3 * time.Second})
	eventually(t, 10*time.Second, "view served", func() bool { _, ok := e.current().Catalog.Tool("alpha_big"); return ok })
	sid := rawInitialize(t, e.MCPURL(), "")
	fastReady(t, e, sid)
	base := heapInUse()

	// A receive buffer of 4 KiB: the kernel takes little of the answer
	// for the client, so the edge's write blocks.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	addr := strings.TrimSuffix(strings.TrimPrefix(e.MCPURL(), "http://"), "/mcp")
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"alpha_big","arguments":{}}}`
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Mcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n%s", addr, sid, len(body), body)
	// The call returned and its answer is being written: what the client
	// pins until the deadline (on a loaded machine the call can take long
	// enough that the drop comes before a look sees the write).
	dropped := func() bool { return metricValue(t, e, "fleetgate_edge_slow_clients_dropped_total") == 1 }
	var held uint64
	eventually(t, 3*time.Minute, "the answer being written", func() bool { // 10 s alone under -race
		if e.posting.Load() == 1 && e.calls.Inflight() == 0 {
			held = heapInUse()
			return true
		}
		return dropped()
	})
	eventually(t, 3*time.Minute, "the client dropped", dropped)
	eventually(t, 10*time.Second, "the call's request ended", func() bool { return e.posting.Load() == 0 && e.calls.Inflight() == 0 })
	after := heapInUse()
	t.Logf("edge heap in use: %d KiB before the call, %d KiB while the answer waits for the client, %d KiB after the drop (answer %d KiB)",
		base>>10, held>>10, after>>10, size>>10)
	if after > base+size/2 {
		t.Fatalf("heap %d KiB after the drop, %d KiB before: the response is still held", after>>10, base>>10)
	}
	// The edge cut the connection: what the client reads ends.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, conn); err != nil && strings.Contains(err.Error(), "timeout") {
		t.Fatalf("the dropped connection is still open: %v", err)
	}
	if res := connect(t, e.MCPURL(), "2025-11-25").call(t, "alpha_echo", map[string]any{"text": "on"}); !strings.Contains(text(res), "on") {
		t.Fatalf("after the drop: %v", text(res))
	}
}
