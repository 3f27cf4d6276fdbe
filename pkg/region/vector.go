package region

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Vector is the generation of each region's log that a view reflects.
// A region absent from it is at generation 0.
type Vector map[string]uint64

// Covers reports whether v reflects at least every generation of w: a view
// at v includes everything a view at w does. A region-spanning group is
// converged on a target vector only when the view's vector covers it.
func (v Vector) Covers(w Vector) bool {
	for r, g := range w {
		if v[r] < g {
			return false
		}
	}
	return true
}

// Sum is the sum of the generations: it grows whenever any region moves
// on, so it orders the successive views of one follower, but it is no log
// position and never names a view alone.
func (v Vector) Sum() uint64 {
	var s uint64
	for _, g := range v {
		s += g
	}
	return s
}

// String is "a=12,b=7", regions sorted: the form evidence and audits print.
func (v Vector) String() string {
	var b strings.Builder
	for i, r := range slices.Sorted(maps.Keys(v)) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(r)
		b.WriteByte('=')
		b.WriteString(strconv.FormatUint(v[r], 10))
	}
	return b.String()
}
