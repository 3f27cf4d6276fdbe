package convergence

import (
	"fmt"
	"strings"
	"time"
)

// Status is the convergence verdict of a session. Its values are the strings
// of the edge admin API's "verdict" field.
type Status string

const (
	// Converged: a complete, unbroken traversal started after the last
	// change signal (or no signal was sent) and served the current digest.
	Converged Status = "converged"
	// Stale: the client was told of a change and did not list again, or
	// what it listed differs from the current tool list.
	Stale Status = "stale"
	// Incomplete: a traversal started after the last change signal still
	// has a cursor outstanding.
	Incomplete Status = "incomplete"
	// Unverifiable: the record holds no evidence that could prove either
	// way. Missing evidence is never Converged.
	Unverifiable Status = "unverifiable"
)

// Verdict judges r; it is Explain without the reason, and builds none (the
// resync asks it of every session on every change).
func Verdict(r Record) Status {
	return judge(r).status()
}

// Explain judges r and gives a short human reason. The rules are applied in
// this order, the first that matches deciding (see the package
// documentation for why):
//
//  1. no page served at all: Unverifiable;
//  2. the latest traversal has a Break: Unverifiable;
//  3. the latest traversal started before the last change signal (it is in
//     progress or complete): Stale if listChanged was negotiated,
//     Unverifiable otherwise;
//  4. the latest traversal is in progress: Incomplete;
//  5. no current digest was set: Unverifiable;
//  6. its digest equals the current digest: Converged;
//  7. listChanged was not negotiated and the traversal started at an older
//     generation than the current one: Unverifiable;
//  8. otherwise (the digests differ): Stale.
func Explain(r Record) (Status, string) {
	ru := judge(r)
	return ru.status(), ru.reason(r)
}

// rule is the rule of Explain that decided a record.
type rule uint8

const (
	ruleNoPages rule = iota
	ruleBreak
	ruleBeforeSignalNotNegotiated
	ruleBeforeSignal
	ruleInProgress
	ruleNoDigest
	ruleSameDigest
	ruleOlderNotNegotiated
	ruleDigestDiffers
)

// judge is the rule of Explain that decides r.
func judge(r Record) rule {
	t, sig := r.Traversal, r.LastSignal
	switch {
	case t.Pages == 0:
		return ruleNoPages
	case t.Break != "":
		return ruleBreak
	case startedBeforeSignal(t, sig) && !r.Negotiated():
		return ruleBeforeSignalNotNegotiated
	case startedBeforeSignal(t, sig):
		return ruleBeforeSignal
	case !t.Final:
		return ruleInProgress
	case r.CurrentDigest == "":
		return ruleNoDigest
	case t.Digest == r.CurrentDigest:
		return ruleSameDigest
	case !r.Negotiated() && t.Generation < r.CurrentGeneration:
		return ruleOlderNotNegotiated
	default:
		return ruleDigestDiffers
	}
}

func (ru rule) status() Status {
	switch ru {
	case ruleBeforeSignal, ruleDigestDiffers:
		return Stale
	case ruleInProgress:
		return Incomplete
	case ruleSameDigest:
		return Converged
	default:
		return Unverifiable
	}
}

// reason is the human reason of rule ru deciding r.
func (ru rule) reason(r Record) string {
	t, sig := r.Traversal, r.LastSignal
	switch ru {
	case ruleNoPages:
		if sig.Sent() {
			return fmt.Sprintf("no tools/list traversal observed (change signal for generation %d sent)", sig.Generation)
		}
		return "no tools/list traversal observed"
	case ruleBreak:
		return breakReason(t)
	case ruleBeforeSignalNotNegotiated:
		return fmt.Sprintf("%s, and no traversal since the change signal for generation %d", notNegotiated(r), sig.Generation)
	case ruleBeforeSignal:
		return fmt.Sprintf("no traversal since the change signal for generation %d", sig.Generation)
	case ruleInProgress:
		return fmt.Sprintf("traversal in progress: %d page(s) served, nextCursor %q outstanding", t.Pages, t.NextCursor)
	case ruleNoDigest:
		return "current digest unknown"
	case ruleSameDigest:
		return fmt.Sprintf("complete traversal of %d page(s) served the current digest %s (generation %d)", t.Pages, short(t.Digest), r.CurrentGeneration)
	case ruleOlderNotNegotiated:
		return fmt.Sprintf("%s, and no traversal since generation %d (last traversal started at generation %d)", notNegotiated(r), r.CurrentGeneration, t.Generation)
	default:
		return fmt.Sprintf("served digest %s differs from the current digest %s (generation %d)", short(t.Digest), short(r.CurrentDigest), r.CurrentGeneration)
	}
}

// startedBeforeSignal reports whether t's first page was served before sig
// was sent. Records written by this package order them by sequence number;
// for a record lacking them it falls back to the timestamps and, when those
// cannot tell either, assumes the traversal came first (missing evidence is
// never converged).
func startedBeforeSignal(t Traversal, sig ChangeSignal) bool {
	if !sig.Sent() {
		return false
	}
	if sig.Seq != 0 && t.StartSeq != 0 {
		return t.StartSeq < sig.Seq
	}
	return !t.StartedAt.After(sig.At)
}

// GenerationLag is how many catalog generations the session's latest
// traversal trails the newest generation the session knows of (the larger of
// the current generation and the last signalled one). It is 0 when the
// session is [Converged] — a generation that did not change the session's
// tool list is no lag — and when the latest traversal started at the newest
// generation, whatever its verdict. With no traversal at all it is the
// newest generation itself.
func GenerationLag(r Record) uint64 {
	if Verdict(r) == Converged {
		return 0
	}
	target := max(r.CurrentGeneration, r.LastSignal.Generation)
	if r.Traversal.Pages == 0 {
		return target
	}
	if r.Traversal.Generation >= target {
		return 0
	}
	return target - r.Traversal.Generation
}

// SignalToConverged is the time from the last change signal to the
// completion of the traversal that made the session converge. ok is false
// unless the session is [Converged] after a signal whose time, like the
// completion's, is known. Times come from the edges that served the session,
// so a negative difference (clock skew between edges) is reported as 0.
func SignalToConverged(r Record) (d time.Duration, ok bool) {
	sig, t := r.LastSignal, r.Traversal
	if !sig.Sent() || sig.At.IsZero() || t.CompletedAt.IsZero() || Verdict(r) != Converged {
		return 0, false
	}
	return max(t.CompletedAt.Sub(sig.At), 0), true
}

func breakReason(t Traversal) string {
	switch t.Break {
	case BreakCursor:
		first := ""
		if len(t.Cursors) > 0 {
			first = t.Cursors[0]
		}
		if t.ExpectedCursor == "" {
			return fmt.Sprintf("broken cursor chain: traversal began at cursor %q, not at the first page", first)
		}
		return fmt.Sprintf("broken cursor chain: cursor %q does not continue nextCursor %q", first, t.ExpectedCursor)
	case BreakPagesLost:
		return fmt.Sprintf("earlier pages lost: record reloaded during a traversal (%d page(s) served)", t.Pages)
	case BreakDigest:
		return fmt.Sprintf("digest of the traversal failed (%d page(s), %d tool(s))", t.Pages, t.Tools)
	default:
		return fmt.Sprintf("traversal unusable: %s", t.Break)
	}
}

func notNegotiated(r Record) string {
	var missing []string
	if !r.ClientListChanged {
		missing = append(missing, "client did not declare listChanged")
	}
	if !r.ServerListChanged {
		missing = append(missing, "server did not advertise tools.listChanged")
	}
	return "listChanged not negotiated (" + strings.Join(missing, "; ") + ")"
}

// short abbreviates a digest for reasons: "sha256:0123456789ab".
func short(d string) string {
	if d == "" {
		return `""`
	}
	hex := d
	prefix := ""
	if i := strings.IndexByte(d, ':'); i >= 0 {
		prefix, hex = d[:i+1], d[i+1:]
	}
	if len(hex) > 12 {
		hex = hex[:12]
	}
	return prefix + hex
}
