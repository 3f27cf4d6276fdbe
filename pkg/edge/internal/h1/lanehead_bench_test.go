package h1

import (
	"strings"
	"testing"
)

// BenchmarkParseLaneHead parses the head a go-sdk client sends for a
// tools/call with a bearer token (allocations per head: -benchmem).
func BenchmarkParseLaneHead(b *testing.B) {
	head := []byte("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: 120\r\n" +
		"Accept: application/json, text/event-stream\r\nAuthorization: Bearer " + strings.Repeat("t", 700) + "\r\n" +
		"Content-Type: application/json\r\nMcp-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: 7UJQX4VZ3MNFOKZ2B7T6LRWQ5A\r\n" +
		"Accept-Encoding: gzip\r\n\r\n")
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := ParseLaneHead(head); !ok {
			b.Fatal("refused")
		}
	}
}
