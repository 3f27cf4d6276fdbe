package convergence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrNoDigest is returned by [Record.ListPage] when a traversal completes and
// no digest function was given.
var ErrNoDigest = errors.New("no digest function")

// ListPage records one tools/list response served to the session: the
// request's cursor, the tools on the page and the page's nextCursor. The edge
// calls it from its tools/list middleware after the response is built.
//
// The cursor decides which traversal the page belongs to:
//
//   - cursor "" starts a new traversal (abandoning any traversal in progress);
//   - a non-empty cursor equal to the nextCursor of the previous page, while
//     that traversal is in progress, continues it;
//   - any other cursor (including any non-empty cursor after a complete
//     traversal, and a retry of a page already served) starts a new
//     traversal with Break set to [BreakCursor]. It is followed to its end
//     like any other, but its pages are not accumulated and it never yields
//     a digest: only a chain that starts at "" proves what the client holds.
//
// A continuation page on a record whose accumulated tools were lost (the
// record was reloaded from its JSON form mid-traversal) marks the traversal
// [BreakPagesLost].
//
// When a page without nextCursor completes an unbroken traversal, digest is
// called once with the tools of all its pages, in the order served, and its
// result becomes [Traversal.Digest]. If digest fails (or is nil) the
// traversal is marked [BreakDigest] and the wrapped error is returned; the
// record is updated either way.
//
// ListPage copies the tool bytes it keeps; the caller may reuse tools.
func (r *Record) ListPage(now time.Time, cursor string, tools []json.RawMessage, nextCursor string, digest func([]json.RawMessage) (string, error)) error {
	r.Seq++
	t := &r.Traversal
	switch {
	case cursor == "":
		r.startTraversal(now, "", "")
	case t.Pages > 0 && !t.Final && cursor == t.NextCursor:
		if t.Break == "" && (r.pending.startSeq != t.StartSeq || r.pending.pages != t.Pages) {
			t.Break = BreakPagesLost
			r.pending = pendingPages{}
		}
	default:
		expected := ""
		if t.Pages > 0 && !t.Final {
			expected = t.NextCursor
		}
		r.startTraversal(now, BreakCursor, expected)
	}

	t.Pages++
	if len(t.Cursors) < MaxCursorChain {
		t.Cursors = append(slices.Clip(t.Cursors), cursor)
	}
	t.Tools += len(tools)
	t.NextCursor = nextCursor
	if t.Break == "" {
		acc := slices.Clip(r.pending.tools) // never append into a shared array
		for _, tool := range tools {
			acc = append(acc, bytes.Clone(tool))
		}
		r.pending.tools = acc
		r.pending.pages++
	}
	if nextCursor != "" {
		return nil
	}

	t.Final = true
	t.CompletedAt = now
	all := r.pending.tools
	r.pending = pendingPages{}
	if t.Break != "" {
		return nil
	}
	if digest == nil {
		t.Break = BreakDigest
		return fmt.Errorf("convergence: digest traversal of %d page(s), %d tool(s): %w", t.Pages, len(all), ErrNoDigest)
	}
	d, err := digest(all)
	if err != nil {
		t.Break = BreakDigest
		return fmt.Errorf("convergence: digest traversal of %d page(s), %d tool(s): %w", t.Pages, len(all), err)
	}
	t.Digest = d
	return nil
}

// startTraversal replaces the latest traversal with a new one whose first
// page is being recorded now.
func (r *Record) startTraversal(now time.Time, brk Break, expected string) {
	r.Traversal = Traversal{
		StartSeq:       r.Seq,
		StartedAt:      now,
		Generation:     r.CurrentGeneration,
		Break:          brk,
		ExpectedCursor: expected,
	}
	r.pending = pendingPages{startSeq: r.Seq}
}

// Signal records that a notifications/tools/list_changed announcing
// generation was sent to the session at now. Only the last signal is kept:
// convergence is always judged against the most recent one.
func (r *Record) Signal(now time.Time, generation uint64) {
	r.Seq++
	r.LastSignal = ChangeSignal{At: now, Generation: generation, Seq: r.Seq}
}

// SetCurrent records the digest of the tool list the session should see now
// and the catalog generation it belongs to. Traversals started afterwards
// carry generation in [Traversal.Generation].
func (r *Record) SetCurrent(digest string, generation uint64) {
	r.CurrentDigest = digest
	r.CurrentGeneration = generation
}
