package catalog

import (
	"cmp"
	"slices"
	"strconv"
	"unicode/utf8"
)

// claim is one definition asking for an exposed name: <backend><sep><original>.
type claim struct {
	backend, original string
	candidate         string // the name asked for
	exposed           string // the name given, set by resolveNames
	idx               int    // index of the definition in the caller's slice
}

func compareClaims(a, b claim) int {
	return cmp.Or(
		cmp.Compare(a.candidate, b.candidate),
		cmp.Compare(a.backend, b.backend),
		cmp.Compare(a.original, b.original),
	)
}

// resolveNames gives every claim a unique exposed name of at most
// MaxNameLen bytes and reports the claims that did not get their candidate.
// It sorts claims by (candidate, backend, original).
//
// The rule, which depends only on the set of claims and never on their
// order:
//
//  1. Of the claims sharing a candidate, the one with the smallest
//     (backend, original) keeps it, provided the candidate is at most
//     MaxNameLen bytes long.
//  2. Every other claim, taken in (candidate, backend, original) order, gets
//     the candidate cut to fit (at a UTF-8 boundary) followed by "_<n>", for
//     the smallest n >= 2 giving a name that no claim kept in step 1 and no
//     earlier claim of step 2 holds.
//
// Names kept in step 1 are never displaced by a suffixed name, so adding a
// colliding backend never renames a tool that did not collide.
func resolveNames(kind Kind, claims []claim) []Collision {
	slices.SortFunc(claims, compareClaims)
	type loser struct {
		i      int
		keptBy string
	}
	taken := make(map[string]struct{}, len(claims))
	var losers []loser
	keptBy := "" // backend keeping the current candidate, if any
	for i := range claims {
		c := &claims[i]
		if i == 0 || claims[i-1].candidate != c.candidate {
			keptBy = ""
			if len(c.candidate) <= MaxNameLen {
				keptBy = c.backend
				c.exposed = c.candidate
				taken[c.candidate] = struct{}{}
				continue
			}
		}
		losers = append(losers, loser{i: i, keptBy: keptBy})
	}
	if len(losers) == 0 {
		return nil
	}
	collisions := make([]Collision, 0, len(losers))
	for _, l := range losers {
		c := &claims[l.i]
		for n := 2; ; n++ {
			suffix := "_" + strconv.Itoa(n)
			name := truncateUTF8(c.candidate, MaxNameLen-len(suffix)) + suffix
			if _, ok := taken[name]; !ok {
				taken[name] = struct{}{}
				c.exposed = name
				break
			}
		}
		collisions = append(collisions, Collision{
			Kind: kind, Name: c.candidate, Backend: c.backend, Original: c.original,
			KeptBy: l.keptBy, Exposed: c.exposed,
		})
	}
	return collisions
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
