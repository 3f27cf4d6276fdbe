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
//
// Field weights, k1 and b are fixed when the index is built, so each
// posting holds its term's finished BM25F weight in its document: a
// search only multiplies by the query term's weight and idf and adds.
type Index struct {
	names []string
	opts  resolved

	terms     map[string]termEntry
	postings  []posting      // all postings, grouped by term, then ascending doc
	gpostings []groupPosting // all group postings, grouped by term

	groupOf []int32 // per doc: its group, -1 for none
	groups  int     // number of groups with a group index, else 0
	family  []int8  // per doc: its action's family (intent.go); nil when off

	scratch sync.Pool // of *scratch sized for len(names) and groups
}

// termEntry locates a term's postings, postings[lo:hi], and its group
// postings, gpostings[glo:ghi]. A term's df is hi-lo: the number of
// documents holding it in an indexed field.
type termEntry struct{ lo, hi, glo, ghi uint32 }

// posting is one document holding a term: its position (with inName set
// when the term is in its name or title) and the term's saturated weight
// there, sat = x·(k1+1)/(k1+x) where x = Σ_fields w_f·tf_f / norm_f.
type posting struct {
	doc uint32
	sat float32
}

// inName marks, in posting.doc, a term found in the tool's name or title.
const inName = 1 << 31

// maxDocs is the most documents Build indexes; later ones are left out.
const maxDocs = inName - 1

// groupPosting is one group holding a term, and the term's saturated BM25
// weight in the group's document.
type groupPosting struct {
	group uint32
	sat   float32
}

// Build indexes docs; Hit.Doc values returned by the index are positions in
// docs. Build does not retain docs or their schemas. opts may be nil for the
// defaults. An InputSchema that is not a JSON object contributes no parameter
// terms; the rest of that document is indexed as usual.
func Build(docs []Doc, opts *Options) *Index {
	if len(docs) > maxDocs {
		docs = docs[:maxDocs]
	}
	ix := &Index{names: make([]string, len(docs)), opts: resolve(opts), groupOf: make([]int32, len(docs))}
	b := newBuilder(&ix.opts, len(docs))
	for d, doc := range docs {
		ix.names[d] = doc.Name
		ix.groupOf[d] = b.addDoc(d, doc)
	}
	b.finish(ix)
	ix.family = toolFamilies(docs, &ix.opts)
	n, g := len(docs), ix.groups
	ix.scratch.New = func() any { return newScratch(n, g) }
	return ix
}

// Len returns the number of documents in the index.
func (ix *Index) Len() int { return len(ix.names) }

// saturation is BM25's term-frequency saturation of a weighted frequency.
func saturation(x, k1 float64) float32 { return float32(x * (k1 + 1) / (k1 + x)) }

func saturate16(n int) uint16 {
	if n > math.MaxUint16 {
		return math.MaxUint16
	}
	return uint16(n)
}
