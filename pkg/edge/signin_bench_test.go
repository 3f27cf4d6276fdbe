package edge

import (
	"fmt"
	"net/http"
	"testing"
)

// The numbers of per-user sign-in, through a real edge, go-sdk clients,
// the test authorization server and a protected go-sdk backend over
// loopback, with the sign-in bucket on embedded NATS:
//
//	go test -run '^$' -bench 'SignIn' -benchtime 30x ./pkg/edge/
//
// round_trip: the sign_in tool's call (the authorization URL made), the
// browser at the authorization server and the edge's callback (code
// redeemed with its verifier, the refresh token sealed into the bucket),
// until the callback's page is answered. first_call: a signed-in user's
// first call to the backend (its backend session opened with its token);
// cached: a later call.

func BenchmarkSignIn(b *testing.B) {
	sf := startSignInFleet(b, "")
	seq := 0
	fresh := func() string { seq++; return fmt.Sprint("user-", seq) }
	b.Run("round_trip", func(b *testing.B) {
		name := fresh()
		u := sf.user(b, name)
		for range b.N {
			b.StopTimer()
			if err := sf.a.signIns.SignOut(b.Context(), sf.idp.URL()+" "+name, "docs"); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if code := sf.browse(b, u.call(b, "docs_sign_in", nil), name+"@docs"); code != http.StatusOK {
				b.Fatalf("callback %d", code)
			}
		}
	})
	b.Run("first_call", func(b *testing.B) {
		users := make([]*client, b.N)
		for i := range users {
			name := fresh()
			users[i] = sf.user(b, name)
			if code := sf.browse(b, users[i].call(b, "docs_sign_in", nil), name+"@docs"); code != http.StatusOK {
				b.Fatalf("callback %d", code)
			}
		}
		b.ResetTimer()
		for _, u := range users {
			if res := u.call(b, "docs_whoami", nil); res.IsError {
				b.Fatal(text(res))
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		name := fresh()
		u := sf.user(b, name)
		sf.browse(b, u.call(b, "docs_sign_in", nil), name+"@docs")
		u.call(b, "docs_whoami", nil)
		b.ResetTimer()
		for range b.N {
			if res := u.call(b, "docs_whoami", nil); res.IsError {
				b.Fatal(text(res))
			}
		}
	})
}
