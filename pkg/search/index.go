package search

import (
	"encoding/json"
	"math"
	"sync"
)

// Doc is one tool as the index sees it.
type Doc struct {
	Name        string
	Title       string
	Description string
	InputSchema json.RawMessage
	// Group names the set of tools doc belongs to, such as its backend;
	// empty means the prefix of Name before its first "_", "." or "/".
	Group string
}

// Index is an immutable BM25F index over a fixed list of tool documents.
// Once returned by [Build] it is never modified, so any number of goroutines
// may call [Index.Search] on it at once without locking. To change the
// catalog, build a new Index and swap it in (for example through an
// atomic.Pointer[Index]); searches already running on the old one finish on
// it undisturbed.
type Index struct {
	names  []string
	length [numFields][]uint16 // per field, per doc: number of terms (saturating)
	avgLen [numFields]float64  // per field: mean of length over all docs
	opts   resolved

	groups   groupIndex
	terms    map[string]termEntry
	postings []posting // all postings, grouped by term, then by field, then ascending doc

	scratch sync.Pool // of *scratch sized for len(names)
}

// termEntry locates a term's postings: those of field f are
// postings[start[f]:start[f+1]].
type termEntry struct {
	df    uint32 // documents containing the term in any indexed field
	start [numFields + 1]uint32
}

// posting is one (document, term frequency) pair of a term in one field.
type posting struct {
	doc uint32
	tf  uint16 // saturates at math.MaxUint16
}

// Build indexes docs; Hit.Doc values returned by the index are positions in
// docs. Build does not retain docs or their schemas. opts may be nil for the
// defaults. An InputSchema that is not a JSON object contributes no parameter
// terms; the rest of that document is indexed as usual.
func Build(docs []Doc, opts *Options) *Index {
	ix := &Index{
		names: make([]string, len(docs)),
		opts:  resolve(opts),
	}
	for f := range numFields {
		ix.length[f] = make([]uint16, len(docs))
	}

	// Per term, per field, the postings in ascending doc order (docs are
	// visited in order). Nothing per document survives the loop.
	byTerm := make(map[string]*building)
	var tokens [numFields][]string
	counts := make(map[string]uint16)
	var totalLen [numFields]float64
	ix.groups.of = make([]int32, len(docs))
	gb := groupBuilder{ids: map[string]int32{}}

	for d, doc := range docs {
		ix.names[d] = doc.Name
		for f := range numFields {
			tokens[f] = tokens[f][:0]
		}
		tokens[fieldName] = appendTokens(tokens[fieldName], doc.Name)
		tokens[fieldTitle] = appendTokens(tokens[fieldTitle], doc.Title)
		tokens[fieldDescription] = appendTokens(tokens[fieldDescription], doc.Description)
		tokens[fieldParamName], tokens[fieldParamDescription] = schemaTerms(doc.InputSchema,
			ix.opts.maxDepth, tokens[fieldParamName], tokens[fieldParamDescription])
		if ix.opts.groupWeight > 0 {
			gb.add(&ix.groups, d, doc, tokens[fieldName], tokens[fieldTitle], tokens[fieldDescription])
		}

		for f := range numFields {
			if ix.opts.weight[f] == 0 {
				continue
			}
			ix.length[f][d] = saturate16(len(tokens[f]))
			totalLen[f] += float64(ix.length[f][d])
			clear(counts)
			for _, t := range tokens[f] {
				if c := counts[t]; c < math.MaxUint16 {
					counts[t] = c + 1
				}
			}
			for t, tf := range counts {
				b := byTerm[t]
				if b == nil {
					b = &building{}
					byTerm[t] = b
				}
				if b.lastDoc != d+1 {
					b.lastDoc = d + 1
					b.df++
				}
				b.fields[f] = append(b.fields[f], posting{doc: uint32(d), tf: tf})
			}
		}
	}
	gb.finish(&ix.groups)
	if n := float64(len(docs)); n > 0 {
		for f := range numFields {
			ix.avgLen[f] = totalLen[f] / n
		}
	}

	// Flatten into one postings slice so the index holds a handful of
	// large allocations instead of one per term and field.
	total := 0
	for _, b := range byTerm {
		for f := range numFields {
			total += len(b.fields[f])
		}
	}
	ix.postings = make([]posting, 0, total)
	ix.terms = make(map[string]termEntry, len(byTerm))
	for t, b := range byTerm {
		e := termEntry{df: b.df}
		for f := range numFields {
			e.start[f] = uint32(len(ix.postings))
			ix.postings = append(ix.postings, b.fields[f]...)
		}
		e.start[numFields] = uint32(len(ix.postings))
		ix.terms[t] = e
	}
	n, g := len(docs), len(ix.groups.length)
	ix.scratch.New = func() any { return newScratch(n, g) }
	return ix
}

// building is the state of one term while Build runs.
type building struct {
	df      uint32
	lastDoc int // 1 + the last doc counted in df, 0 for none
	fields  [numFields][]posting
}

// Len returns the number of documents in the index.
func (ix *Index) Len() int { return len(ix.names) }

func saturate16(n int) uint16 {
	if n > math.MaxUint16 {
		return math.MaxUint16
	}
	return uint16(n)
}
