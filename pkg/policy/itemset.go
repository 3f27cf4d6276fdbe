package policy

import (
	"slices"
	"sync"

	"cel.dev/cel-go/common/types/ref"
)

// ItemSet is the items of one view: built once per view generation and
// shared by every subject. It is immutable and safe for concurrent use.
type ItemSet struct {
	generation uint64
	stamp      uint64 // unique in the process: the visible-set cache's key (see Cache)
	items      []Item
	index      [kindCount]map[string]int
	valsOnce   sync.Once
	vals       []ref.Val
}

// NewItemSet indexes the items of the view at generation gen. The set is
// its own visible-set cache key (Cache), whatever its generation. items
// is kept, not copied. A name repeated within a kind keeps its first item.
func NewItemSet(gen uint64, items []Item) *ItemSet {
	s := &ItemSet{generation: gen, items: items, stamp: nextStamp()}
	for k := range s.index {
		s.index[k] = map[string]int{}
	}
	for i, it := range items {
		if it.Kind >= kindCount {
			continue
		}
		if _, dup := s.index[it.Kind][it.Name]; !dup {
			s.index[it.Kind][it.Name] = i
		}
	}
	return s
}

// Generation is the view generation the set was built for.
func (s *ItemSet) Generation() uint64 {
	if s == nil {
		return 0
	}
	return s.generation
}

// Len is the number of items.
func (s *ItemSet) Len() int {
	if s == nil {
		return 0
	}
	return len(s.items)
}

// Item returns item i.
func (s *ItemSet) Item(i int) Item { return s.items[i] }

// Index returns the position of the named item of a kind.
func (s *ItemSet) Index(k Kind, name string) (int, bool) {
	if s == nil || k >= kindCount {
		return 0, false
	}
	i, ok := s.index[k][name]
	return i, ok
}

// value is item i as the expressions see it; the values are built on the
// first per-item evaluation, once for every subject.
func (s *ItemSet) value(i int) ref.Val {
	s.valsOnce.Do(func() {
		s.vals = make([]ref.Val, len(s.items))
		for j, it := range s.items {
			s.vals[j] = it.celValue()
		}
	})
	return s.vals[i]
}

// Visibility is the items of a set one subject may see and use.
// Immutable; safe for concurrent use.
type Visibility struct {
	set       *ItemSet
	policyGen uint64
	bits      []uint64
	// failedClosed: some conditions were not evaluated (the subject's
	// claims are over MaxClaimsBytes, or the evaluations ran out of their
	// cost budget) and counted as errors.
	failedClosed bool
}

// FailedClosed reports whether some conditions were not evaluated and
// failed closed: the subject's claims exceed MaxClaimsBytes, or the
// evaluations of this set exceeded their total cost budget. Worth a log
// line and a metric: the caller sees less than the policy would allow.
func (v *Visibility) FailedClosed() bool { return v.failedClosed }

// At reports whether item i of the set is visible.
func (v *Visibility) At(i int) bool {
	return i >= 0 && i < v.set.Len() && v.bits[i/64]&(1<<(i%64)) != 0
}

// Allowed reports whether the named item is visible; an item the set does
// not hold is not.
func (v *Visibility) Allowed(k Kind, name string) bool {
	i, ok := v.set.Index(k, name)
	return ok && v.At(i)
}

// Count is the number of visible items.
func (v *Visibility) Count() int {
	n := 0
	for i := range v.set.Len() {
		if v.At(i) {
			n++
		}
	}
	return n
}

// Names returns the visible names of a kind, in set order.
func (v *Visibility) Names(k Kind) []string {
	var out []string
	for i, it := range v.set.items {
		if it.Kind == k && v.At(i) {
			out = append(out, it.Name)
		}
	}
	return out
}

// SameNames reports whether two visibilities (of possibly different sets)
// show the same names of a kind: when they do not, a session gets
// list_changed for that kind.
func SameNames(a, b *Visibility, k Kind) bool {
	return slices.Equal(a.Names(k), b.Names(k))
}

// Set is the item set the visibility was computed over.
func (v *Visibility) Set() *ItemSet { return v.set }

// PolicyGeneration is the generation of the policy that computed it.
func (v *Visibility) PolicyGeneration() uint64 { return v.policyGen }
