package calls

import (
	"fmt"
	"testing"
)

// The retries waiting for a sign-in are bounded per identity and in all.
func TestSignInWaitsBounded(t *testing.T) {
	var w signInWaits
	for i := range maxWaitsPerIdentity {
		if !w.hold("alice") {
			t.Fatalf("wait %d of alice refused", i)
		}
	}
	if w.hold("alice") {
		t.Fatal("alice waits beyond her bound")
	}
	w.release("alice")
	if !w.hold("alice") {
		t.Fatal("a released wait not given back")
	}
	for i := 0; w.hold(fmt.Sprint("u", i)); i++ {
		if i > maxWaits {
			t.Fatal("no bound in all")
		}
	}
	if w.n != maxWaits {
		t.Fatalf("%d waiting, want %d", w.n, maxWaits)
	}
}
