package convergence

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func tool(name string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"name":%q,"inputSchema":{"type":"object"}}`, name))
}

// page is one ListPage call in a table.
type page struct {
	cursor, next string
	tools        []string
}

func play(t *testing.T, r *Record, pages ...page) {
	t.Helper()
	for i, p := range pages {
		tools := make([]json.RawMessage, len(p.tools))
		for j, n := range p.tools {
			tools[j] = tool(n)
		}
		if err := r.ListPage(base.Add(time.Duration(i)*time.Second), p.cursor, tools, p.next, testDigest); err != nil {
			t.Fatalf("page %d: %v", i, err)
		}
	}
}

func digestOf(t *testing.T, names ...string) string {
	t.Helper()
	tools := make([]json.RawMessage, len(names))
	for i, n := range names {
		tools[i] = tool(n)
	}
	d, err := testDigest(tools)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestListPageCursorChain(t *testing.T) {
	tests := []struct {
		name      string
		pages     []page
		want      Traversal // compared on the fields below
		digestOf  []string  // tools the digest must cover; nil: no digest
		wantBreak Break
	}{
		{
			name:     "single page",
			pages:    []page{{"", "", []string{"a", "b"}}},
			want:     Traversal{Cursors: []string{""}, Final: true, Pages: 1, Tools: 2},
			digestOf: []string{"a", "b"},
		},
		{
			name:     "three pages digest all of them",
			pages:    []page{{"", "x", []string{"a"}}, {"x", "y", []string{"b"}}, {"y", "", []string{"c"}}},
			want:     Traversal{Cursors: []string{"", "x", "y"}, Final: true, Pages: 3, Tools: 3},
			digestOf: []string{"a", "b", "c"},
		},
		{
			name:  "in progress",
			pages: []page{{"", "x", []string{"a"}}},
			want:  Traversal{Cursors: []string{""}, NextCursor: "x", Pages: 1, Tools: 1},
		},
		{
			name:     "empty cursor restarts an unfinished traversal",
			pages:    []page{{"", "x", []string{"a"}}, {"", "", []string{"b"}}},
			want:     Traversal{StartSeq: 2, Cursors: []string{""}, Final: true, Pages: 1, Tools: 1},
			digestOf: []string{"b"},
		},
		{
			name:      "cursor not the outstanding nextCursor",
			pages:     []page{{"", "x", []string{"a"}}, {"z", "", []string{"b"}}},
			want:      Traversal{StartSeq: 2, Cursors: []string{"z"}, Final: true, Pages: 1, Tools: 1, ExpectedCursor: "x"},
			wantBreak: BreakCursor,
		},
		{
			name:      "cursor after a complete traversal",
			pages:     []page{{"", "x", []string{"a"}}, {"x", "", []string{"b"}}, {"x", "", []string{"b"}}},
			want:      Traversal{StartSeq: 3, Cursors: []string{"x"}, Final: true, Pages: 1, Tools: 1},
			wantBreak: BreakCursor,
		},
		{
			name:      "retried middle page breaks the chain",
			pages:     []page{{"", "x", []string{"a"}}, {"x", "y", []string{"b"}}, {"x", "y", []string{"b"}}, {"y", "", []string{"c"}}},
			want:      Traversal{StartSeq: 3, Cursors: []string{"x", "y"}, Final: true, Pages: 2, Tools: 2, ExpectedCursor: "y"},
			wantBreak: BreakCursor,
		},
		{
			name:      "first page ever with a cursor",
			pages:     []page{{"q", "r", []string{"a"}}, {"r", "", []string{"b"}}},
			want:      Traversal{StartSeq: 1, Cursors: []string{"q", "r"}, Final: true, Pages: 2, Tools: 2},
			wantBreak: BreakCursor,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Record
			play(t, &r, tt.pages...)
			got := r.Traversal
			want := tt.want
			if want.StartSeq == 0 {
				want.StartSeq = 1
			}
			if got.StartSeq != want.StartSeq || !slices.Equal(got.Cursors, want.Cursors) || got.Final != want.Final ||
				got.NextCursor != want.NextCursor || got.Pages != want.Pages || got.Tools != want.Tools ||
				got.ExpectedCursor != want.ExpectedCursor || got.Break != tt.wantBreak {
				t.Errorf("traversal = %+v\nwant fields %+v, break %q", got, want, tt.wantBreak)
			}
			wantDigest := ""
			if tt.digestOf != nil {
				wantDigest = digestOf(t, tt.digestOf...)
			}
			if got.Digest != wantDigest {
				t.Errorf("digest = %q, want %q", got.Digest, wantDigest)
			}
			if got.Final != !got.CompletedAt.IsZero() {
				t.Errorf("final %v but completed_at %v", got.Final, got.CompletedAt)
			}
			if got.Final && len(r.pending.tools) != 0 {
				t.Errorf("%d tools still accumulated after completion", len(r.pending.tools))
			}
		})
	}
}

func TestListPageTimesAndGeneration(t *testing.T) {
	var r Record
	r.SetCurrent("sha256:one", 7)
	t0 := base
	if err := r.ListPage(t0, "", []json.RawMessage{tool("a")}, "n", testDigest); err != nil {
		t.Fatal(err)
	}
	r.SetCurrent("sha256:two", 8) // a change mid-traversal does not move the start generation
	if err := r.ListPage(t0.Add(time.Minute), "n", nil, "", testDigest); err != nil {
		t.Fatal(err)
	}
	tr := r.Traversal
	if !tr.StartedAt.Equal(t0) || !tr.CompletedAt.Equal(t0.Add(time.Minute)) || tr.Generation != 7 {
		t.Errorf("traversal = %+v; want started %v, completed +1m, generation 7", tr, t0)
	}
}

func TestListPageCopiesToolBytes(t *testing.T) {
	var r Record
	buf := []byte(`{"name":"a"}`)
	if err := r.ListPage(base, "", []json.RawMessage{buf}, "n", testDigest); err != nil {
		t.Fatal(err)
	}
	copy(buf, `{"name":"z"}`) // the caller reuses its buffer
	if err := r.ListPage(base, "n", nil, "", testDigest); err != nil {
		t.Fatal(err)
	}
	want, err := testDigest([]json.RawMessage{json.RawMessage(`{"name":"a"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Traversal.Digest != want {
		t.Errorf("digest = %s, want digest of the bytes served (%s)", r.Traversal.Digest, want)
	}
}

func TestListPageCopiesOfRecordAreIndependent(t *testing.T) {
	var a Record
	play(t, &a, page{"", "n", []string{"a"}})
	b := a // e.g. a snapshot taken before persisting
	play(t, &a, page{"n", "m", []string{"x"}}, page{"m", "", []string{"y"}})
	play(t, &b, page{"n", "m", []string{"p"}}, page{"m", "", []string{"q"}})
	if want := digestOf(t, "a", "x", "y"); a.Traversal.Digest != want {
		t.Errorf("a digest = %s, want %s", a.Traversal.Digest, want)
	}
	if want := digestOf(t, "a", "p", "q"); b.Traversal.Digest != want {
		t.Errorf("b digest = %s, want %s", b.Traversal.Digest, want)
	}
	if !slices.Equal(a.Traversal.Cursors, []string{"", "n", "m"}) || !slices.Equal(b.Traversal.Cursors, []string{"", "n", "m"}) {
		t.Errorf("cursors a=%q b=%q", a.Traversal.Cursors, b.Traversal.Cursors)
	}
}

func TestListPagePagesLostAfterReload(t *testing.T) {
	var r Record
	r.SetCurrent(digestOf(t, "a", "b"), 1)
	play(t, &r, page{"", "n", []string{"a"}})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"a"`) {
		t.Errorf("serialised record carries the accumulated tools: %s", b)
	}
	var moved Record
	if err := json.Unmarshal(b, &moved); err != nil {
		t.Fatal(err)
	}
	if err := moved.ListPage(base, "n", []json.RawMessage{tool("b")}, "", testDigest); err != nil {
		t.Fatal(err)
	}
	if moved.Traversal.Break != BreakPagesLost || moved.Traversal.Digest != "" || !moved.Traversal.Final {
		t.Errorf("traversal = %+v; want final, break %q, no digest", moved.Traversal, BreakPagesLost)
	}
	if v := Verdict(moved); v != Unverifiable {
		t.Errorf("verdict = %s, want %s", v, Unverifiable)
	}
	// The original, never reloaded, completes normally.
	play(t, &r, page{"n", "", []string{"b"}})
	if v, reason := Explain(r); v != Converged {
		t.Errorf("original: %s %q, want converged", v, reason)
	}
}

func TestListPageDigestErrors(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name   string
		digest func([]json.RawMessage) (string, error)
		is     error
	}{
		{"digest fails", func([]json.RawMessage) (string, error) { return "", errBoom }, errBoom},
		{"no digest function", nil, ErrNoDigest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Record
			r.SetCurrent("sha256:x", 1)
			if err := r.ListPage(base, "", []json.RawMessage{tool("a")}, "n", tt.digest); err != nil {
				t.Fatalf("page without nextCursor must not digest: %v", err)
			}
			err := r.ListPage(base, "n", []json.RawMessage{tool("b")}, "", tt.digest)
			if !errors.Is(err, tt.is) {
				t.Fatalf("err = %v, want errors.Is %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), "2 page(s), 2 tool(s)") {
				t.Errorf("err %q does not name the traversal", err)
			}
			if r.Traversal.Break != BreakDigest || !r.Traversal.Final {
				t.Errorf("traversal = %+v, want final with break %q", r.Traversal, BreakDigest)
			}
			if v, reason := Explain(r); v != Unverifiable || !strings.Contains(reason, "digest of the traversal failed") {
				t.Errorf("Explain = %s %q", v, reason)
			}
		})
	}
}

func TestDigestCalledOnceWithAllPagesInOrder(t *testing.T) {
	var calls [][]string
	digest := func(tools []json.RawMessage) (string, error) {
		var names []string
		for _, raw := range tools {
			var v struct{ Name string }
			if err := json.Unmarshal(raw, &v); err != nil {
				return "", err
			}
			names = append(names, v.Name)
		}
		calls = append(calls, names)
		return "d", nil
	}
	var r Record
	for i, p := range []page{{"", "1", []string{"c", "a"}}, {"1", "2", nil}, {"2", "", []string{"b"}}} {
		tools := make([]json.RawMessage, len(p.tools))
		for j, n := range p.tools {
			tools[j] = tool(n)
		}
		if err := r.ListPage(base, p.cursor, tools, p.next, digest); err != nil {
			t.Fatalf("page %d: %v", i, err)
		}
	}
	if len(calls) != 1 || !slices.Equal(calls[0], []string{"c", "a", "b"}) {
		t.Errorf("digest calls = %q, want one call with [c a b]", calls)
	}
}

func TestRecordStaysSmall(t *testing.T) {
	var r Record
	r.ProtocolVersion = "2025-11-25"
	r.SetCurrent("sha256:"+strings.Repeat("ab", 32), 12)
	r.Signal(base, 12)
	pages := make([]page, 0, 500)
	for i := range 500 {
		next := ""
		if i < 499 {
			next = fmt.Sprintf("cursor-%04d-%s", i+1, strings.Repeat("x", 40))
		}
		cursor := ""
		if i > 0 {
			cursor = pages[i-1].next
		}
		pages = append(pages, page{cursor, next, []string{fmt.Sprintf("tool%d", i)}})
	}
	play(t, &r, pages...)
	if r.Traversal.Pages != 500 || len(r.Traversal.Cursors) != MaxCursorChain || !r.Traversal.Complete() {
		t.Fatalf("pages %d, cursors %d, complete %v", r.Traversal.Pages, len(r.Traversal.Cursors), r.Traversal.Complete())
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 8<<10 {
		t.Errorf("record of a 500-page traversal is %d bytes, want at most 8 KiB", len(b))
	}
}

func TestSignalAndSetCurrent(t *testing.T) {
	var r Record
	if r.LastSignal.Sent() {
		t.Fatal("zero record reports a signal")
	}
	r.Signal(base, 3)
	r.Signal(base.Add(time.Second), 4)
	if s := r.LastSignal; !s.Sent() || s.Generation != 4 || !s.At.Equal(base.Add(time.Second)) || s.Seq != 2 {
		t.Errorf("last signal = %+v", s)
	}
	r.SetCurrent("sha256:x", 4)
	if r.CurrentDigest != "sha256:x" || r.CurrentGeneration != 4 || r.Seq != 2 {
		t.Errorf("record = %+v", r)
	}
}
