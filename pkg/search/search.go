package search

import (
	"math"
	mathbits "math/bits"
	"slices"
)

// Limits on the number of hits [Index.Search] returns.
const (
	DefaultLimit = 8  // used when the requested limit is <= 0
	MaxLimit     = 50 // larger requests are capped to this
)

// Hit is one search result.
type Hit struct {
	Doc   int     // position of the tool in the docs passed to Build
	Name  string  // the tool's Name
	Score float64 // BM25F score; higher is better, always > 0
	// Matched are the words of the query the tool matched, in query
	// order, each as the query spelled it: directly, or through a related
	// word that expansion added for it. Words that only frame the request
	// ("I need a tool to") and stop words are not query words.
	Matched []string
}

// Search returns the best-matching tools for a free-text query, best first,
// at most limit of them (see [DefaultLimit] and [MaxLimit]). The query is
// tokenised exactly like the documents ([Tokenize]); repeated query terms
// count once. Each term's synonyms (Options.Synonyms) are added with weight
// Options.SynonymWeight, and a query phrased as a question (what, which,
// who, how) adds "list", "get" and "show" the same way. Only documents sharing at least one term with the query are
// returned, so the result is empty when nothing matches. Equal scores are
// ordered by Name, then by Doc, so results are deterministic.
//
// The score is BM25F: for each query term t,
//
//	tf~(t,d) = Σ_fields w_f · tf_f(t,d) / (1 − b + b · len_f(d)/avglen_f)
//	score   += q(t) · idf(t) · tf~ · (k1+1) / (k1 + tf~)
//	idf(t)   = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//
// where df counts documents containing t in any field and q(t) is 1 for a
// query term (Options.LiteralWeight for a literal's) and the weight of its
// source for an added one, whose idf is at most Options.AddedIDFCap times
// that of the query word it stands for.
func (ix *Index) Search(query string, limit int) []Hit {
	return ix.SearchFunc(query, limit, nil)
}

// SearchFunc is Search over the documents keep allows (nil: all): the
// best limit of those, so that a caller who may see only some documents
// gets as many hits as one who sees all.
func (ix *Index) SearchFunc(query string, limit int, keep func(doc int) bool) []Hit {
	switch {
	case limit <= 0:
		limit = DefaultLimit
	case limit > MaxLimit:
		limit = MaxLimit
	}
	if len(ix.names) == 0 {
		return nil
	}
	s := ix.scratch.Get().(*scratch)
	defer ix.scratch.Put(s)

	s.tokens, s.words, s.lit = appendQueryTokens(s.tokens[:0], s.words[:0], s.lit[:0], stripWrapper(query))
	question := isQuestion(query)
	s.terms = ix.opts.expandQuery(s.terms[:0], s.tokens, s.lit, question)
	family := int8(noFamily)
	if ix.family != nil {
		family = ix.opts.queryFamily(s.tokens, question)
	}
	n, ng := float64(len(ix.names)), float64(ix.groups)
	groups := ix.opts.groupWeight > 0 && ix.groups > 0
	var originWeight [maxOrigins]float64 // per origin: its best term's q·idf
	var idfCap [maxOrigins]float64       // per origin: the most an added term's idf may be
	for _, qt := range s.terms {
		e, ok := ix.terms[qt.term] // the terms of the query come first
		if !qt.added && qt.origin != noOrigin {
			idfCap[qt.origin] = math.Inf(1)
			if ix.opts.addedIDFCap > 0 {
				df := float64(e.hi - e.lo)
				idfCap[qt.origin] = ix.opts.addedIDFCap * math.Log(1+(n-df+0.5)/(df+0.5))
			}
		}
		if !ok {
			continue
		}
		if groups && e.ghi > e.glo {
			df := float64(e.ghi - e.glo)
			idf := qt.weight * math.Log(1+(ng-df+0.5)/(df+0.5))
			for _, p := range ix.gpostings[e.glo:e.ghi] {
				s.group[p.group] += idf * float64(p.sat)
			}
		}
		if e.hi == e.lo {
			continue
		}
		df := float64(e.hi - e.lo)
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		if qt.added && qt.origin != noOrigin {
			idf = min(idf, idfCap[qt.origin])
		}
		idf *= qt.weight
		var bit uint64
		if qt.origin != noOrigin {
			bit = 1 << qt.origin
			originWeight[qt.origin] = max(originWeight[qt.origin], idf)
		}
		var exact uint64
		if !qt.added {
			exact = bit
		}
		for _, p := range ix.postings[e.lo:e.hi] {
			d := p.doc &^ inName
			c := &s.doc[d]
			if c.score == 0 {
				s.docs = append(s.docs, d)
			}
			c.score += idf * float64(p.sat)
			c.any |= bit
			c.exact |= exact
			if p.doc&inName != 0 {
				c.name |= bit
			}
		}
	}
	ix.rescore(s, &originWeight, groups, family)
	return ix.topHits(s, limit, keep)
}

// rescore is the second pass: each scored document's BM25F score is
// scaled by how much of the query it covers (Options.CoverageWeight and
// NameCoverageWeight), its group's score added (Options.GroupWeight), and
// the sum scaled by the agreement of its action with the query's family
// (Options.IntentWeight and IntentPenalty).
func (ix *Index) rescore(s *scratch, originWeight *[maxOrigins]float64, groups bool, family int8) {
	total := 0.0
	for _, w := range originWeight {
		total += w
	}
	alpha, beta := ix.opts.coverage, ix.opts.nameCoverage
	gamma := ix.opts.groupWeight
	var factor [len(actionFamilies) + 1]float64 // by tool family + 1
	if family != noFamily {
		for f := range factor {
			factor[f] = ix.opts.intentFactor(family, int8(f-1))
		}
	}
	for _, d := range s.docs {
		c := &s.doc[d]
		if g := ix.groupOf[d]; groups && g >= 0 {
			c.score += gamma * s.group[g]
		}
		if family != noFamily {
			c.score *= factor[ix.family[d]+1]
		}
		if total == 0 || (alpha == 0 && beta == 0) {
			continue
		}
		var any, name float64
		for bits := c.any; bits != 0; bits &= bits - 1 {
			o := mathbits.TrailingZeros64(bits)
			w := originWeight[o]
			if c.exact&(1<<o) == 0 {
				w /= 2
			}
			any += w
			if c.name&(1<<o) != 0 {
				name += w
			}
		}
		c.score *= 1 + (alpha*any+beta*name)/total
	}
	if groups {
		clear(s.group)
	}
}

// topHits selects the limit best of the scored documents in s, resets the
// scores in s and returns the hits best first.
func (ix *Index) topHits(s *scratch, limit int, keep func(doc int) bool) []Hit {
	if len(s.docs) == 0 {
		return nil
	}
	h := candidateHeap{names: ix.names, c: s.heap[:0]}
	for _, d := range s.docs {
		c := candidate{doc: d, score: s.doc[d].score, matched: s.doc[d].any}
		s.doc[d] = docState{}
		switch {
		case keep != nil && !keep(int(d)):
		case len(h.c) < limit:
			h.push(c)
		case h.better(c, h.c[0]):
			h.c[0] = c
			h.down(0)
		}
	}
	s.docs = s.docs[:0]
	slices.SortFunc(h.c, func(a, b candidate) int {
		if h.better(a, b) {
			return -1
		}
		return 1
	})
	hits := make([]Hit, len(h.c))
	n := 0
	for _, c := range h.c {
		n += mathbits.OnesCount64(c.matched)
	}
	words := make([]string, 0, n) // one array for every hit's Matched
	for i, c := range h.c {
		start := len(words)
		words = s.appendMatched(words, c.matched)
		hits[i] = Hit{Doc: int(c.doc), Name: ix.names[c.doc], Score: c.score, Matched: words[start:len(words):len(words)]}
		if len(words) == start {
			hits[i].Matched = nil
		}
	}
	s.heap = h.c[:0]
	return hits
}

// scratch is the per-search working memory, pooled per Index so a search
// allocates little more than its result.
type scratch struct {
	doc    []docState // per doc: its score and coverage, zero when unmatched
	group  []float64  // per group: its score
	docs   []uint32   // docs with score != 0
	tokens []string   // the query's terms
	lit    []bool     // lit[i]: tokens[i] is part of a literal
	words  []string   // words[i]: the query word tokens[i] came from
	terms  []queryTerm
	heap   []candidate
}

func newScratch(n, groups int) *scratch {
	return &scratch{doc: make([]docState, n), group: make([]float64, groups)}
}

// appendMatched appends to dst the query words of the origins in bits,
// in query order, each once: an origin is a distinct query term, and the
// terms of one word ("PR": pull, request) share it.
func (s *scratch) appendMatched(dst []string, bits uint64) []string {
	start := len(dst)
	for o, t := range s.terms {
		if bits == 0 || t.added || o >= maxOrigins {
			break
		}
		if bits&(1<<t.origin) == 0 {
			continue
		}
		if o == maxOrigins-1 { // the last origin is shared: only its first word
			bits &^= 1 << t.origin
		}
		w := t.term
		if i := slices.Index(s.tokens, t.term); i >= 0 {
			w = s.words[i]
		}
		if !slices.Contains(dst[start:], w) {
			dst = append(dst, w)
		}
	}
	return dst
}

// docState is one document's accumulated score, and the set of query
// words (origins, as bits) it matched: through any term, through the word
// itself, in its name or title. Kept together, a posting touches one
// cache line.
type docState struct {
	score            float64
	any, exact, name uint64
}

type candidate struct {
	doc     uint32
	score   float64
	matched uint64 // docState.any
}

// candidateHeap is a min-heap on quality: the root is the worst kept hit.
type candidateHeap struct {
	names []string
	c     []candidate
}

// better reports whether a ranks before b: higher score, then smaller name,
// then smaller doc position.
func (h *candidateHeap) better(a, b candidate) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	if na, nb := h.names[a.doc], h.names[b.doc]; na != nb {
		return na < nb
	}
	return a.doc < b.doc
}

func (h *candidateHeap) push(c candidate) {
	h.c = append(h.c, c)
	i := len(h.c) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !h.better(h.c[parent], h.c[i]) {
			break
		}
		h.c[parent], h.c[i] = h.c[i], h.c[parent]
		i = parent
	}
}

func (h *candidateHeap) down(i int) {
	n := len(h.c)
	for {
		worst := i
		for _, child := range [2]int{2*i + 1, 2*i + 2} {
			if child < n && h.better(h.c[worst], h.c[child]) {
				worst = child
			}
		}
		if worst == i {
			return
		}
		h.c[i], h.c[worst] = h.c[worst], h.c[i]
		i = worst
	}
}
