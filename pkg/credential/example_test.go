package credential_test

import (
	"fmt"
	"net/http"
	"os"

	"github.com/fleetgate/fleetgate/pkg/credential"
)

func Example() {
	os.Setenv("EXAMPLE_ALPHA_TOKEN", "Bearer not-for-your-eyes")
	h := credential.Headers{"Authorization": {Env: "EXAMPLE_ALPHA_TOKEN"}}
	if err := h.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	s, _ := credential.Resolve(h["Authorization"])
	fmt.Println(h["Authorization"], s)

	// The transport of one backend: every request gets the headers.
	client := &http.Client{Transport: credential.NewTransport(http.DefaultTransport, h,
		&credential.TransportOptions{Backend: "alpha", URL: "http://127.0.0.1:9101/mcp"})}
	_ = client

	_, err := credential.Resolve(credential.Ref{Env: "EXAMPLE_UNSET"})
	fmt.Println(err)
	// Output:
	// env EXAMPLE_ALPHA_TOKEN [redacted]
	// credential: env EXAMPLE_UNSET: not set
}
