package auth_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/fleetgate/fleetgate/pkg/auth"
	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
)

// exampleTB stands in for a *testing.T outside a test.
type exampleTB struct{ cleanups []func() }

func (*exampleTB) Helper()                      {}
func (*exampleTB) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }
func (e *exampleTB) Cleanup(f func())           { e.cleanups = append(e.cleanups, f) }
func (e *exampleTB) done() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
}

// An endpoint that serves its RFC 9728 metadata and refuses requests
// without a good token the way the contract says.
func Example() {
	tb := &exampleTB{}
	defer tb.done()
	iss := issuertest.New(tb, nil)
	resource := "http://127.0.0.1:8080/mcp"

	v, err := auth.NewVerifier(auth.Options{Issuer: iss.URL(), Audience: resource, Scopes: []string{"tools"}, HTTPClient: iss.Client()})
	if err != nil {
		panic(err)
	}
	mdPath, mdURL, err := auth.MetadataURL(resource)
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+mdPath, auth.MetadataHandler(auth.NewMetadata(resource, iss.URL(), []string{"tools"})))
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		id, err := v.VerifyRequest(r)
		if err != nil {
			status, challenge := auth.Challenge(err, mdURL)
			if challenge != "" {
				w.Header().Set("WWW-Authenticate", challenge)
			}
			http.Error(w, http.StatusText(status), status)
			return
		}
		fmt.Fprintf(w, "hello %s", id.Subject)
	})

	call := func(token string) {
		r := httptest.NewRequest("POST", "/mcp", nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		fmt.Println(w.Code, w.Header().Get("WWW-Authenticate"), strings.TrimSpace(w.Body.String()))
	}
	call("")
	call(iss.Mint(iss.Claims("alice", resource)))
	call(iss.Mint(iss.Claims("alice", resource, "tools")))
	// Output:
	// 401 Bearer resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp" Unauthorized
	// 403 Bearer resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp", error="insufficient_scope", scope="tools" Forbidden
	// 200  hello alice
}
