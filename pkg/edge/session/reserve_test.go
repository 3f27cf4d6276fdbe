package session

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// Concurrent reservations never pass a cap; a reservation becomes its
// session when opened (counted once) and gives its room back when
// released, once, whatever is called after.
func TestReserve(t *testing.T) {
	g := NewRegistry(nil)
	const maxAll, maxMine = 10, 3
	fits := func(all, mine int) bool { return all < maxAll && mine < maxMine }
	var got atomic.Int64
	var mu sync.Mutex
	var held []*Reservation
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			if r := g.Reserve(fmt.Sprint("u", i%5), fits); r != nil {
				got.Add(1)
				mu.Lock()
				held = append(held, r)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if all, mine := g.Counts("u0"); got.Load() != maxAll || all != maxAll || mine > maxMine {
		t.Fatalf("%d reserved, counts %d (u0 %d); want exactly %d, at most %d each", got.Load(), all, mine, maxAll, maxMine)
	}
	// Half become sessions, the rest are given back (twice: once counts).
	for i, r := range held {
		if i%2 == 0 {
			s := g.New(fmt.Sprint("s", i), KindSession, "2025-11-25", r.ident)
			g.OpenReserved(s, r)
			r.Release() // used: nothing
		} else {
			r.Release()
			r.Release()
		}
	}
	if all, _ := g.Counts(""); all != maxAll/2 || len(g.All()) != maxAll/2 {
		t.Fatalf("counts %d, %d registered; want %d", all, len(g.All()), maxAll/2)
	}
	for _, s := range g.All() {
		g.Forget(s)
	}
	if all, _ := g.Counts("u0"); all != 0 || len(g.byIdentity) != 0 {
		t.Fatalf("after every session ended: %d, by identity %v", all, g.byIdentity)
	}
}
