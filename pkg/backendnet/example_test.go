package backendnet_test

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/fleetgate/fleetgate/pkg/backendnet"
)

func Example() {
	u, _ := url.Parse("http://169.254.169.254/latest/meta-data/")
	fmt.Println(backendnet.CheckURL(u, false))
	fmt.Println(backendnet.CheckURL(u, true))

	// One client for many backends: its dialer refuses link-local
	// addresses, and the backend allowed them marks its requests.
	shared := backendnet.Transport(false)
	allowed := &http.Client{Transport: backendnet.Scope(shared, true)}
	_ = allowed
	// Output:
	// host 169.254.169.254: link-local or cloud metadata address refused (allow_link_local: true allows it)
	// <nil>
}
