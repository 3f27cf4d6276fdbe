package search

import (
	"flag"
	"fmt"
	"slices"
	"testing"
)

// figures are the ranking quality figures of one corpus: the share of
// queries whose relevant tool is ranked first, in the top 3 and in the top
// 8, and the mean reciprocal rank (a tool ranked below MaxLimit, or absent,
// counts 0).
type figures struct {
	Queries    int
	R1, R3, R8 float64
	MRR        float64
	Misses     []string // queries whose tool is not first, described
}

func (f figures) String() string {
	return fmt.Sprintf("queries=%d recall@1=%.3f recall@3=%.3f recall@8=%.3f MRR=%.3f",
		f.Queries, f.R1, f.R3, f.R8, f.MRR)
}

// evaluate ranks every query of qs on ix and returns the figures.
func evaluate(ix *Index, qs []catalogQuery) figures {
	f := figures{Queries: len(qs)}
	for _, q := range qs {
		hits := ix.Search(q.Query, MaxLimit)
		rank := slices.IndexFunc(hits, func(h Hit) bool { return h.Name == q.Expect }) + 1
		if rank > 0 {
			f.MRR += 1 / float64(rank)
		}
		switch {
		case rank == 1:
			f.R1++
		case rank == 0:
			f.Misses = append(f.Misses, fmt.Sprintf("absent: %q want %s, got %v", q.Query, q.Expect, hitNames(hits, 3)))
		default:
			f.Misses = append(f.Misses, fmt.Sprintf("rank %d: %q want %s, got %v", rank, q.Query, q.Expect, hitNames(hits, 3)))
		}
		if rank > 0 && rank <= 3 {
			f.R3++
		}
		if rank > 0 && rank <= 8 {
			f.R8++
		}
	}
	if n := float64(len(qs)); n > 0 {
		f.R1, f.R3, f.R8, f.MRR = f.R1/n, f.R3/n, f.R8/n, f.MRR/n
	}
	return f
}

func hitNames(hits []Hit, n int) []string {
	var names []string
	for _, h := range hits[:min(n, len(hits))] {
		names = append(names, h.Name)
	}
	return names
}

var showMisses = flag.Bool("misses", false, "TestCorpusFigures logs the queries whose tool is not ranked first")

// TestCorpusFigures logs the figures of every corpus in testdata with the
// default options: go test -run TestCorpusFigures -v ./pkg/search (add
// -args -misses for the queries whose tool is not ranked first).
func TestCorpusFigures(t *testing.T) {
	for _, c := range corpora {
		docs, qs := loadCorpus(t, c)
		f := evaluate(Build(docs, nil), qs)
		t.Logf("%-8s %s", c.name, f)
		if *showMisses {
			for _, m := range f.Misses {
				t.Logf("%-8s %s", c.name, m)
			}
		}
	}
}

// TestEvalCorpusFloor fails when the figures on the held-out evaluation
// corpus drop below what the ranking reached when it was last changed
// (issue #33; its targets, recall@1 0.80, recall@3 0.93 and MRR 0.86,
// are not reached yet). Raise the floor when the figures rise; never tune
// on this corpus.
func TestEvalCorpusFloor(t *testing.T) {
	floor := figures{R1: 0.72, R3: 0.855, R8: 0.95, MRR: 0.805}
	docs, qs := loadCorpus(t, evalCorpus)
	got := evaluate(Build(docs, nil), qs)
	t.Logf("eval %s", got)
	if got.R1 < floor.R1 || got.R3 < floor.R3 || got.R8 < floor.R8 || got.MRR < floor.MRR {
		t.Errorf("evaluation corpus: %s, below the floor recall@1 %.3f, @3 %.3f, @8 %.3f, MRR %.3f",
			got, floor.R1, floor.R3, floor.R8, floor.MRR)
	}
}
