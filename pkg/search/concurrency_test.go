package search

import (
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrentSearchAndSwap runs many searchers against whatever index an
// atomic.Pointer holds while another goroutine keeps building replacement
// indexes over different catalogs and swapping them in. Every result must
// equal what a quiet, single-goroutine search of that same index returned
// (an index is immutable, so a concurrent rebuild must not disturb it).
// Run with -race.
func TestConcurrentSearchAndSwap(t *testing.T) {
	docs := catalogDocs(t)
	queries := catalogQueries(t)

	// Three catalog variants with distinct sizes, so a searcher can tell
	// from Len which expected results apply.
	variants := [][]Doc{docs, docs[:len(docs)/2], docs[len(docs)/3:]}
	want := map[int][][]Hit{} // Len → per-query expected hits
	for _, v := range variants {
		ix := Build(v, nil)
		res := make([][]Hit, len(queries))
		for i, q := range queries {
			res[i] = ix.Search(q.Query, 5)
		}
		want[ix.Len()] = res
	}
	if len(want) != len(variants) {
		t.Fatalf("variant sizes collide: %d distinct", len(want))
	}

	var current atomic.Pointer[Index]
	current.Store(Build(variants[0], nil))

	searchers := 4 * runtime.GOMAXPROCS(0)
	// Each searcher runs at least perSearcher searches and keeps going
	// until the builder has swapped minSwaps times, so searches overlap
	// builds and swaps however the scheduler orders the goroutines.
	const perSearcher, minSwaps = 300, 6
	done := make(chan struct{})
	var swaps atomic.Int64
	var builder sync.WaitGroup
	builder.Add(1)
	go func() {
		defer builder.Done()
		for i := 1; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			current.Store(Build(variants[i%len(variants)], nil))
			swaps.Add(1)
		}
	}()

	var wg sync.WaitGroup
	errs := make(chan string, searchers)
	for s := range searchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perSearcher || swaps.Load() < minSwaps; i++ {
				qi := (s*7 + i) % len(queries)
				ix := current.Load()
				got := ix.Search(queries[qi].Query, 5)
				if exp := want[ix.Len()][qi]; !reflect.DeepEqual(got, exp) {
					errs <- queries[qi].Query
					return
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	builder.Wait()
	close(errs)
	for q := range errs {
		t.Errorf("query %q: concurrent result differs from the quiet one", q)
	}
	if swaps.Load() < minSwaps {
		t.Errorf("builder swapped %d times, want at least %d", swaps.Load(), minSwaps)
	}
	t.Logf("%d searchers, >= %d searches each, %d index swaps", searchers, perSearcher, swaps.Load())
}
