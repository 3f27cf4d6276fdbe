package edge

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/edge/admission"
)

// A flood of concurrent initializes never passes the caps: of 400, from 8
// identities at once, exactly the edge's cap succeed, no identity passes
// its own, and the rest are refused 503 or 429; the edge then holds
// exactly the cap.
func TestConcurrentInitializesKeepCaps(t *testing.T) {
	const maxAll, maxMine, n, users = 24, 4, 400, 8
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	e := startEdge(t, f, &Options{IdentityHeader: userHeader,
		Limits: admission.Options{MaxSessions: maxAll, MaxSessionsPerIdentity: maxMine}})
	pad := strings.Repeat("x", 60<<10) // the most an initialize may carry: the longest parse before the session is made
	var mu sync.Mutex
	codes := map[int]int{}
	perUser := map[string]int{}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		user := fmt.Sprint("user", i%users)
		wg.Go(func() {
			<-start
			code := initializePadded(t, e.MCPURL(), user, pad)
			mu.Lock()
			defer mu.Unlock()
			codes[code]++
			if code == http.StatusOK {
				perUser[user]++
			}
		})
	}
	close(start)
	wg.Wait()
	if codes[http.StatusOK] != maxAll || codes[http.StatusOK]+codes[http.StatusServiceUnavailable]+codes[http.StatusTooManyRequests] != n {
		t.Fatalf("answers %v; want exactly %d 200 and the rest 503 or 429", codes, maxAll)
	}
	for u, k := range perUser {
		if k > maxMine {
			t.Fatalf("%s got %d sessions, cap %d (all: %v)", u, k, maxMine, perUser)
		}
	}
	if all, _ := e.reg.Counts(""); all != maxAll || len(e.reg.All()) != maxAll {
		t.Fatalf("the edge holds %d sessions (%d counted), want %d", len(e.reg.All()), all, maxAll)
	}
}

// initializePadded posts an initialize as user whose capabilities carry
// pad, and returns the status.
func initializePadded(t *testing.T, url, user, pad string) int {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"experimental":{"pad":{"v":"` +
		pad + `"}}},"clientInfo":{"name":"flood","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(userHeader, user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The gap a flood races through, made deterministic: an initialize
// admitted holds its room until its session is made or its request ends,
// so a second one admitted meanwhile is refused at a cap of one (a check
// of the sessions made so far, then a create, let both through).
func TestAdmittedInitializeHoldsRoom(t *testing.T) {
	f := newFleet(t)
	e := startEdge(t, f, &Options{Limits: admission.Options{MaxSessions: 1}})
	admit := func() (*admitted, int) {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		_, a, ok := e.admitHTTP(w, r)
		if !ok {
			return nil, w.Code
		}
		return a, http.StatusOK
	}
	first, code := admit()
	if code != http.StatusOK {
		t.Fatalf("first initialize: %d", code)
	}
	if second, code := admit(); code != http.StatusServiceUnavailable {
		second.done()
		t.Fatalf("second initialize while the first is being made: %d, want 503 (cap 1)", code)
	}
	first.done() // its request ended without a session: the room is back
	third, code := admit()
	if code != http.StatusOK {
		t.Fatalf("an initialize after the first ended: %d", code)
	}
	third.done()
}
