//go:build benchprofile

package callstages

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A window of timed calls appends one line of each stage's mean; a call
// begun again before its end is dropped, and a stage not reached is left
// out of its sums.
func TestWindowLine(t *testing.T) {
	path = filepath.Join(t.TempDir(), "stages.txt")
	for i := range Window + 1 {
		Begin()
		if i == 0 {
			Begin() // the first record dropped: not counted
		}
		Mark(HeadRead)
		Mark(Authenticated)
		Mark(Authenticated) // the first time kept
		Mark(Answered)
		End()
	}
	End() // nothing begun: nothing timed
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "calls=1000 head=") ||
		!strings.Contains(lines[0], " admitted=0.0 ") || !strings.Contains(lines[0], " total=") {
		t.Fatalf("stages file: %q", b)
	}
	if timed != 1 {
		t.Fatalf("%d calls in the next window, want 1", timed)
	}
}
