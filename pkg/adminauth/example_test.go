package adminauth_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/fleetgate/fleetgate/pkg/adminauth"
)

func ExampleGuard() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/state", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "state") })
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })
	h := adminauth.Guard(mux, adminauth.Options{Token: []byte("t0ken"), ListenAddr: "127.0.0.1:8081"})

	for _, c := range []struct{ path, host, token string }{
		{"/v1/state", "127.0.0.1:8081", ""},
		{"/v1/state", "rebound.example:8081", "t0ken"},
		{"/v1/state", "localhost:8081", "t0ken"},
		{"/healthz", "10.0.0.9:8081", ""},
	} {
		r := httptest.NewRequest("GET", c.path, nil)
		r.Host = c.host
		adminauth.SetToken(r.Header, []byte(c.token))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(c.path, c.host, w.Code)
	}
	// Output:
	// /v1/state 127.0.0.1:8081 401
	// /v1/state rebound.example:8081 403
	// /v1/state localhost:8081 200
	// /healthz 10.0.0.9:8081 200
}
