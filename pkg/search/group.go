package search

import (
	"math"
	"strings"
)

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

// groupIndex is the BM25 index over the group documents.
type groupIndex struct {
	of     []int32 // per doc: its group, -1 for none
	length []uint32
	avgLen float64
	terms  map[string][]groupPosting
}

type groupPosting struct {
	group uint32
	tf    uint32
}

// groupBuilder collects the group documents while Build runs.
type groupBuilder struct {
	ids    map[string]int32
	counts []map[string]uint32
}

// add counts the terms of doc d (its name, title and description tokens)
// for its group.
func (gb *groupBuilder) add(gx *groupIndex, d int, doc Doc, tokens ...[]string) {
	name := groupOf(doc)
	if name == "" {
		gx.of[d] = -1
		return
	}
	id, ok := gb.ids[name]
	if !ok {
		id = int32(len(gb.counts))
		gb.ids[name] = id
		gb.counts = append(gb.counts, map[string]uint32{})
		gx.length = append(gx.length, 0)
	}
	gx.of[d] = id
	for _, ts := range tokens {
		for _, t := range ts {
			gb.counts[id][t]++
			gx.length[id]++
		}
	}
}

// finish builds the postings. A catalog of fewer than two groups, or of
// groups of one tool each, has no group index.
func (gb *groupBuilder) finish(gx *groupIndex) {
	if len(gb.counts) < 2 || len(gb.counts) == len(gx.of) {
		gx.terms = nil
		return
	}
	gx.terms = map[string][]groupPosting{}
	total := 0.0
	for g, counts := range gb.counts {
		total += float64(gx.length[g])
		for t, tf := range counts {
			gx.terms[t] = append(gx.terms[t], groupPosting{group: uint32(g), tf: tf})
		}
	}
	gx.avgLen = total / float64(len(gb.counts))
}

// score adds to scores (one per group) the BM25 score of each query term.
func (gx *groupIndex) score(scores []float64, terms []queryTerm, k1, b float64) {
	n := float64(len(gx.length))
	for _, qt := range terms {
		ps := gx.terms[qt.term]
		if len(ps) == 0 {
			continue
		}
		df := float64(len(ps))
		idf := qt.weight * math.Log(1+(n-df+0.5)/(df+0.5))
		for _, p := range ps {
			x := float64(p.tf) / (1 - b + b*float64(gx.length[p.group])/gx.avgLen)
			scores[p.group] += idf * x * (k1 + 1) / (k1 + x)
		}
	}
}
