// Package logtest holds a log destination for tests: written by the
// goroutines of what a test runs (zerolog's JSON lines, a command's
// output), read by the test while they still write.
//
//	var logs logtest.Buffer
//	zl := zerolog.New(&logs)
//	... run what logs to zl ...
//	if logs.Count(`"level":"warn"`, "bucket") != 1 { t.Fatal(logs.String()) }
package logtest

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is an io.Writer safe for concurrent writes and reads. The zero
// value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Count is the number of lines written so far that hold every one of
// parts.
func (b *Buffer) Count(parts ...string) int {
	n := 0
	for line := range strings.SplitSeq(b.String(), "\n") {
		all := line != ""
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

// Level is the member a zerolog JSON line of level holds, for Count.
func Level(level string) string { return `"level":"` + level + `"` }
