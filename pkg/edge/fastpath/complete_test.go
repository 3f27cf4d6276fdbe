package fastpath

import "testing"

// TestMarkComplete: resultType "complete" goes first into a result object
// that lacks it, and nowhere else.
func TestMarkComplete(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"content":[]}`, `{"resultType":"complete","content":[]}`},
		{`{}`, `{"resultType":"complete"}`},
		{`{ }`, `{"resultType":"complete" }`},
		{`{"content":[],"resultType":"complete"}`, `{"content":[],"resultType":"complete"}`},
		{`[]`, `[]`},
		{`{`, `{`},
		{``, ``},
	} {
		if got := string(MarkComplete([]byte(c.in))); got != c.want {
			t.Errorf("%s: %s, want %s", c.in, got, c.want)
		}
	}
}
