package edge

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/auth"
	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
	"github.com/fleetgate/fleetgate/pkg/logtest"
)

// When the issuer's keys cannot be fetched (here a JWKS served as
// text/plain that is not JSON), the edge answers 503, counts the refusal
// by its cause (decode) and logs why, with the JWKS's URL and content
// type; the client's answer does not carry the cause.
func TestJWKSFailureCause(t *testing.T) {
	f := newFleet(t)
	iss := issuertest.New(t, nil)
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("not a key set"))
	}))
	t.Cleanup(jwks.Close)
	var logs logtest.Buffer
	log := zerolog.New(&logs)
	e := startEdge(t, f, &Options{Logger: &log, CallTimeout: 10 * time.Second,
		Auth: &AuthOptions{Issuer: iss.URL(), JWKSURL: jwks.URL + "/jwks", HTTPClient: iss.Client()}})
	req, _ := http.NewRequest(http.MethodPost, e.MCPURL(), strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+iss.Mint(iss.Claims("alice", e.MCPURL())))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	_, _ = body.ReadFrom(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", res.StatusCode)
	}
	if strings.Contains(body.String(), "text/plain") || strings.Contains(body.String(), jwks.URL) {
		t.Fatalf("the client's answer carries the cause: %q", body.String())
	}
	causes := map[string]float64{}
	mfs, err := e.opts.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "fleetgate_edge_auth_keys_unavailable_total" {
			for _, m := range mf.GetMetric() {
				causes[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if len(causes) != len(auth.KeysCauses) || causes["decode"] != 1 {
		t.Fatalf("keys unavailable by cause: %v, want decode 1 and every cause of auth.KeysCauses", causes)
	}
	line := logs.String()
	if !strings.Contains(line, `"cause":"decode: `) || !strings.Contains(line, `\"text/plain\"`) || !strings.Contains(line, jwks.URL+"/jwks") {
		t.Fatalf("the refusal's log does not say why:\n%s", line)
	}
}
