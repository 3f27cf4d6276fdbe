package search

import (
	"math"
	"slices"
	"strings"
)

// builder is the state of one Build. Terms get dense ids as they are
// first seen, so that counting a document's terms indexes slices instead
// of hashing strings; and a word (a run of letters and digits, as
// [Tokenize] splits them) is tokenised once per build, however many tools
// repeat it.
type builder struct {
	opts *resolved

	ids   map[string]uint32 // term → id
	terms []string          // id → term

	words   map[string]wordSpan // word → its term ids, words[off:off+n]
	wordIDs []uint32
	parts   []string // scratch: the terms of one word

	// The current document: each touched term's frequency per field.
	counts  [][numFields]uint16 // per term id
	touched []uint32
	length  [numFields]int // tokens per field

	entries []entry             // (term, doc) pairs with their frequencies, in doc order
	docLen  [numFields][]uint16 // per field, per doc: tokens (saturating)
	total   [numFields]float64  // per field: sum of docLen
	group   map[string]int32    // group name → id
	glen    []float64           // per group: tokens of its document
	gacc    []uint32            // per group: scratch frequency
	gseen   []uint32            // groups touched in gacc
	indexed [numFields]bool     // weight > 0

	paramName, paramDesc func(string) // scanSchema's callbacks
}

type wordSpan struct{ off, n uint32 }

// entry is one term of one document and its frequency in each field.
type entry struct {
	term, doc uint32
	tf        [numFields]uint16
}

func newBuilder(opts *resolved, docs int) *builder {
	b := &builder{opts: opts, ids: map[string]uint32{}, words: map[string]wordSpan{}, group: map[string]int32{}}
	for f := range numFields {
		b.docLen[f] = make([]uint16, docs)
		b.indexed[f] = opts.weight[f] > 0
	}
	b.entries = make([]entry, 0, 32*docs)
	b.paramName, b.paramDesc = func(string) {}, func(string) {}
	if b.indexed[fieldParamName] {
		b.paramName = func(s string) { b.addText(fieldParamName, s) }
	}
	if b.indexed[fieldParamDescription] {
		b.paramDesc = func(s string) { b.addText(fieldParamDescription, s) }
	}
	return b
}

// addDoc counts the terms of document d and returns its group id (-1 for
// none). The name, title and description are always read (they make the
// group documents); the schema only when one of its fields is indexed.
func (b *builder) addDoc(d int, doc Doc) int32 {
	b.length = [numFields]int{}
	b.addText(fieldName, doc.Name)
	b.addText(fieldTitle, doc.Title)
	b.addText(fieldDescription, doc.Description)
	if b.indexed[fieldParamName] || b.indexed[fieldParamDescription] {
		scanSchema(string(doc.InputSchema), b.opts.maxDepth, b.paramName, b.paramDesc)
	}
	for f := range numFields {
		if b.indexed[f] {
			b.docLen[f][d] = saturate16(b.length[f])
			b.total[f] += float64(b.docLen[f][d])
		}
	}
	for _, id := range b.touched {
		b.entries = append(b.entries, entry{term: id, doc: uint32(d), tf: b.counts[id]})
		b.counts[id] = [numFields]uint16{}
	}
	b.touched = b.touched[:0]

	g := int32(-1)
	if b.opts.groupWeight > 0 {
		if name := groupOf(doc); name != "" {
			id, ok := b.group[name]
			if !ok {
				id = int32(len(b.glen))
				b.group[name] = id
				b.glen = append(b.glen, 0)
			}
			b.glen[id] += float64(b.length[fieldName] + b.length[fieldTitle] + b.length[fieldDescription])
			g = id
		}
	}
	return g
}

// addText counts the terms of s in field f of the current document.
func (b *builder) addText(f field, s string) {
	forEachWord(s, func(word string) {
		sp, ok := b.words[word]
		if !ok {
			b.parts = appendWordParts(b.parts[:0], word)
			sp = wordSpan{off: uint32(len(b.wordIDs)), n: uint32(len(b.parts))}
			for _, t := range b.parts {
				b.wordIDs = append(b.wordIDs, b.id(t))
			}
			b.words[word] = sp
		}
		for _, id := range b.wordIDs[sp.off : sp.off+sp.n] {
			c := &b.counts[id]
			if *c == ([numFields]uint16{}) {
				b.touched = append(b.touched, id)
			}
			if c[f] < math.MaxUint16 {
				c[f]++
			}
		}
		b.length[f] += int(sp.n)
	})
}

// id returns the id of term t, giving it the next one if it is new. The
// term is copied: it may be a substring of a document the index must not
// retain.
func (b *builder) id(t string) uint32 {
	if id, ok := b.ids[t]; ok {
		return id
	}
	t = strings.Clone(t)
	id := uint32(len(b.terms))
	b.ids[t] = id
	b.terms = append(b.terms, t)
	b.counts = append(b.counts, [numFields]uint16{})
	return id
}

// finish turns the entries into the index's postings, sorted by term
// with a counting sort that keeps each term's documents in ascending
// order and reads the entries in sequence: each document's postings with
// their saturated weights, and each group's, summed over its tools.
func (b *builder) finish(ix *Index) {
	n := len(ix.names)
	var avg [numFields]float64
	for f := range numFields {
		if n > 0 {
			avg[f] = b.total[f] / float64(n)
		}
	}
	// Groups: none for a catalog of fewer than two, or of one tool each.
	ngroups := len(b.glen)
	if ngroups < 2 || ngroups == n {
		ngroups = 0
		for d := range ix.groupOf {
			ix.groupOf[d] = -1
		}
	}
	ix.groups = ngroups
	gavg := 0.0
	if ngroups > 0 {
		for _, l := range b.glen[:ngroups] {
			gavg += l
		}
		gavg /= float64(ngroups)
	}

	// Count each term's postings and group contributions, then place them.
	nt := len(b.terms)
	pnext, gnext := make([]uint32, nt+1), make([]uint32, nt+1)
	for i := range b.entries {
		e := &b.entries[i]
		if b.indexedIn(e) {
			pnext[e.term+1]++
		}
		if ix.groupOf[e.doc] >= 0 && groupTF(e) > 0 {
			gnext[e.term+1]++
		}
	}
	for t := range nt {
		pnext[t+1] += pnext[t]
		gnext[t+1] += gnext[t]
	}
	pstart, gstart := slices.Clone(pnext), slices.Clone(gnext)

	o := &ix.opts
	k1, bb := o.k1, o.b
	ix.postings = make([]posting, pnext[nt])
	contrib := make([]groupPosting, gnext[nt]) // sat holds the tf until summed
	for i := range b.entries {
		e := &b.entries[i]
		x, name := 0.0, false
		for f := range numFields {
			if tf := e.tf[f]; tf != 0 && b.indexed[f] {
				norm := 1 - bb + bb*float64(b.docLen[f][e.doc])/avg[f]
				x += o.weight[f] * float64(tf) / norm
				name = name || f == fieldName || f == fieldTitle
			}
		}
		if x > 0 {
			p := posting{doc: e.doc, sat: saturation(x, k1)}
			if name {
				p.doc |= inName
			}
			ix.postings[pnext[e.term]] = p
			pnext[e.term]++
		}
		if g := ix.groupOf[e.doc]; g >= 0 {
			if tf := groupTF(e); tf > 0 {
				contrib[gnext[e.term]] = groupPosting{group: uint32(g), sat: float32(tf)}
				gnext[e.term]++
			}
		}
	}
	b.entries = nil

	b.gacc = make([]uint32, ngroups)
	ix.terms = make(map[string]termEntry, nt)
	for t, term := range b.terms {
		te := termEntry{lo: pstart[t], hi: pstart[t+1], glo: uint32(len(ix.gpostings))}
		for _, c := range contrib[gstart[t]:gstart[t+1]] {
			if b.gacc[c.group] == 0 {
				b.gseen = append(b.gseen, c.group)
			}
			b.gacc[c.group] += uint32(c.sat)
		}
		for _, g := range b.gseen {
			x := float64(b.gacc[g]) / (1 - bb + bb*b.glen[g]/gavg)
			ix.gpostings = append(ix.gpostings, groupPosting{group: g, sat: saturation(x, k1)})
			b.gacc[g] = 0
		}
		b.gseen = b.gseen[:0]
		te.ghi = uint32(len(ix.gpostings))
		if te.hi > te.lo || te.ghi > te.glo {
			ix.terms[term] = te
		}
	}
	ix.gpostings = slices.Clip(ix.gpostings)
}

// indexedIn reports whether e has the term in an indexed field.
func (b *builder) indexedIn(e *entry) bool {
	for f := range numFields {
		if e.tf[f] != 0 && b.indexed[f] {
			return true
		}
	}
	return false
}

// groupTF is the frequency of e's term in the text its group's document
// is made of: the tool's name, title and description.
func groupTF(e *entry) uint32 {
	return uint32(e.tf[fieldName]) + uint32(e.tf[fieldTitle]) + uint32(e.tf[fieldDescription])
}

// Tools of one backend share a context: a query that names what a
// backend is about ("the repo", "the cluster", "my inbox") speaks for all
// of its tools, even those whose own text does not repeat it. The index
// keeps one document per group of tools, the union of their names, titles
// and descriptions, scored with BM25 over the groups like the tools; a
// tool's score gains Options.GroupWeight times its group's.

// groupOf returns doc's group: Doc.Group, else the prefix of its name
// before the first "_", "." or "/" ("github_create_issue" → "github"), the
// backend prefix a gateway adds, else "" (no group).
func groupOf(doc Doc) string {
	if doc.Group != "" {
		return doc.Group
	}
	if i := strings.IndexAny(doc.Name, "_./"); i > 0 {
		return doc.Name[:i]
	}
	return ""
}
