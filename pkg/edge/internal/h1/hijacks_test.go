package h1

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
)

func TestHijacksWaitsForHeldAndTheirGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h Hijacks
		if !h.Hold() {
			t.Fatal("Hold refused before Wait")
		}
		release := make(chan struct{})
		var ran atomic.Int32
		h.Go(func() { <-release; ran.Add(1) })
		waited := make(chan struct{})
		go func() { h.Wait(); close(waited) }()
		synctest.Wait()
		select {
		case <-waited:
			t.Fatal("Wait returned with a handling held and a goroutine running")
		default:
		}
		if h.Hold() {
			t.Fatal("Hold granted after Wait released")
		}
		close(release)
		synctest.Wait()
		select {
		case <-waited:
			t.Fatal("Wait returned before the held handling was done")
		default:
		}
		h.Done()
		<-waited
		if ran.Load() != 1 {
			t.Fatal("goroutine did not run")
		}
	})
}
