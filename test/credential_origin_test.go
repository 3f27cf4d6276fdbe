package test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/controller"
)

// TestAdminPutCredentialOrigin: over the controller's admin API, a PUT
// cannot pair alpha's credential reference with another origin (an
// attacker's URL), nor bring in a reference the config file does not hold
// for the backend (the controller's NATS seed, another backend's): 400
// naming the reference, the fleet unchanged, the attacker never
// contacted. The same reference at alpha's own origin is accepted.
func TestAdminPutCredentialOrigin(t *testing.T) {
	var hits atomic.Int64
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNotFound)
	}))
	defer attacker.Close()
	node := startNATS(t)
	const alphaURL = "http://127.0.0.1:9/mcp"
	yaml := "groups:\n  - name: default\n    backends:\n" +
		"      - name: alpha\n        url: " + alphaURL + "\n        headers:\n          Authorization: {file: /run/secrets/alpha}\n" +
		"      - name: beta\n        url: http://127.0.0.1:10/mcp\n        headers:\n          Authorization: {env: BETA_AUTHORIZATION}\n" +
		"health:\n  interval: 200ms\n  timeout: 100ms\n  unhealthy_after: 2\n  debounce: 100ms\n"
	x := startController(t, node.ClientURL(), "ctl-origin", yaml)
	eventually(t, 20*time.Second, "leader", x.c.Leading)
	put := func(name, body string) (int, string) {
		var out map[string]any
		code := httpJSON(t, "PUT", x.admin+"/v1/groups/default/backends/"+name, body, &out)
		return code, fmt.Sprint(out)
	}
	for _, tc := range []struct{ name, body, want string }{
		// alpha's reference pointed at the attacker.
		{"alpha", `{"url":"` + attacker.URL + `/mcp","headers":{"Authorization":{"file":"/run/secrets/alpha"}}}`,
			"headers.Authorization: credential reference file /run/secrets/alpha is bound to the origin http://127.0.0.1:9 of this backend in the config file, not " + attacker.URL},
		// alpha's origin, but another scheme or port.
		{"alpha", `{"url":"https://127.0.0.1:9/mcp","headers":{"Authorization":{"file":"/run/secrets/alpha"}}}`, "is bound to the origin http://127.0.0.1:9"},
		// a new file reference the config file does not hold.
		{"alpha", `{"url":"` + alphaURL + `","headers":{"Authorization":{"file":"/run/secrets/other"}}}`,
			"headers.Authorization: credential reference file /run/secrets/other is not one the config file holds for this backend"},
		// a new backend carrying the controller's NATS seed to the attacker.
		{"gamma", `{"url":"` + attacker.URL + `/","headers":{"X":{"file":"/var/lib/fleetgate/nats/controller.seed"}}}`,
			"headers.X: credential reference file /var/lib/fleetgate/nats/controller.seed is not one the config file holds"},
		// another backend's reference on alpha.
		{"alpha", `{"url":"` + alphaURL + `","headers":{"Authorization":{"env":"BETA_AUTHORIZATION"}}}`, "env BETA_AUTHORIZATION is not one the config file holds"},
	} {
		code, out := put(tc.name, tc.body)
		if code != http.StatusBadRequest || !strings.Contains(out, tc.want) {
			t.Errorf("PUT %s %s: %d %s, want 400 with %q", tc.name, tc.body, code, out, tc.want)
		}
	}
	time.Sleep(500 * time.Millisecond) // two probe intervals
	if n := hits.Load(); n != 0 {
		t.Errorf("the attacker got %d requests after refused PUTs", n)
	}
	var st controller.StateJSON
	httpJSON(t, "GET", x.admin+"/v1/state", "", &st)
	for _, g := range st.Groups {
		for _, b := range g.Backends {
			if b.Name == "gamma" || (b.Name == "alpha" && (b.URL != alphaURL || b.Headers["Authorization"].File != "/run/secrets/alpha")) {
				t.Errorf("a refused PUT changed the fleet: %+v", b)
			}
		}
	}
	// Accepted: alpha's reference at alpha's origin (another path), and a
	// new backend without references at any origin.
	if code, out := put("alpha", `{"url":"http://127.0.0.1:9/v2/mcp","headers":{"Authorization":{"file":"/run/secrets/alpha"}}}`); code != http.StatusOK && code != http.StatusAccepted {
		t.Errorf("PUT alpha at its own origin: %d %s", code, out)
	}
	if code, out := put("gamma", `{"url":"`+attacker.URL+`/mcp"}`); code != http.StatusOK && code != http.StatusAccepted {
		t.Errorf("PUT gamma without references: %d %s", code, out)
	}
}
