package logtest

import (
	"fmt"
	"sync"
	"testing"
)

// Lines written from many goroutines are all kept whole, and Count finds
// those holding every part asked.
func TestBufferConcurrent(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				fmt.Fprintf(&b, `{"level":"%s","i":%d,"j":%d}`+"\n", map[bool]string{true: "warn", false: "info"}[i%2 == 0], i, j)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if n := b.Count(Level("warn")); n != 200 {
		t.Fatalf("%d warn lines, want 200", n)
	}
	if n := b.Count(Level("info"), `"j":7}`); n != 4 {
		t.Fatalf("%d info lines of j 7, want 4", n)
	}
	if n := b.Count(); n != 400 {
		t.Fatalf("%d lines, want 400", n)
	}
}
