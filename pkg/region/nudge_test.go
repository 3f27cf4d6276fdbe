package region

import (
	"strings"
	"testing"
	"time"
)

func TestNudge(t *testing.T) {
	s := time.Second
	for _, c := range []struct {
		name      string
		look      Look
		sinceLast time.Duration
		want      bool
		reason    string
	}{
		{"origin unreachable, far behind and silent", Look{Head: 3, Active: time.Hour}, -1, false, "unreachable"},
		{"origin unreachable, mirror missing", Look{Missing: true}, -1, false, "unreachable"},
		{"mirror missing", Look{Missing: true, OriginOK: true, OriginHead: 9}, -1, true, "missing"},
		{"at the head, silent", Look{Head: 9, Active: time.Hour, OriginOK: true, OriginHead: 9}, -1, false, "head"},
		{"ahead of a read head (read before a publish)", Look{Head: 10, Active: s, OriginOK: true, OriginHead: 9}, -1, false, "head"},
		{"behind, receiving", Look{Head: 3, Active: 500 * time.Millisecond, OriginOK: true, OriginHead: 9}, -1, false, "receiving"},
		{"behind, silent at the bound", Look{Head: 3, Active: 3 * s, OriginOK: true, OriginHead: 9}, -1, false, "receiving"},
		{"behind, silent past the bound", Look{Head: 3, Active: 3*s + 1, OriginOK: true, OriginHead: 9}, -1, true, "6 behind"},
		{"behind, never heard", Look{Head: 0, Active: -1, OriginOK: true, OriginHead: 2}, -1, true, "never heard"},
		{"behind, silent, re-created just now", Look{Head: 3, Active: 10 * s, OriginOK: true, OriginHead: 9}, time.Second, false, "re-created"},
		{"behind, silent, re-created long ago", Look{Head: 3, Active: 10 * s, OriginOK: true, OriginHead: 9}, 6 * s, true, "silent for 10s"},
	} {
		got, reason := Nudge(c.look, c.sinceLast, NudgePolicy{})
		if got != c.want || !strings.Contains(reason, c.reason) {
			t.Errorf("%s: Nudge = %v %q, want %v naming %q", c.name, got, reason, c.want, c.reason)
		}
	}
}
