package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/adminauth"
	"github.com/fleetgate/fleetgate/pkg/region"
)

// GET /v1/regions is Options.Regions as JSON, behind the token, with a
// deadline on the call; a single-region dashboard answers 404.
func TestRegionsEndpoint(t *testing.T) {
	log := newFakeLog()
	var hadDeadline bool
	want := []region.Status{
		{Region: "a", Local: true, Head: 12},
		{Region: "b", Head: 7, MirrorLag: 3, MirrorActive: 1500 * time.Millisecond, MirrorError: "no responders"},
	}
	d := mustNew(t, &Options{Reader: log, Log: log, Regions: func(ctx context.Context) []region.Status {
		_, hadDeadline = ctx.Deadline()
		return want
	}})
	h := adminauth.Guard(d.Handler(nil), adminauth.Options{Token: []byte("t0ken"), ListenAddr: "127.0.0.1:8081", Open: OpenPaths()})
	if w := serve(h, "GET", "/v1/regions", nil); w.Code != http.StatusUnauthorized {
		t.Errorf("without token: %d", w.Code)
	}
	w := serve(h, "GET", "/v1/regions", map[string]string{"Authorization": "Bearer t0ken"})
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("regions: %d %q %s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	var raw []map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw) != 2 || raw[0]["region"] != "a" || raw[0]["local"] != true || raw[0]["head"] != 12.0 ||
		raw[1]["mirror_lag"] != 3.0 || raw[1]["mirror_active_ns"] != 1.5e9 || raw[1]["mirror_error"] != "no responders" {
		t.Errorf("regions body: %s", w.Body)
	}
	if _, ok := raw[0]["mirror_lag"]; ok {
		t.Errorf("the local log has no mirror fields: %s", w.Body)
	}
	if !hadDeadline {
		t.Error("Regions called without a deadline")
	}

	// Nothing reported: an empty list, not null.
	want = nil
	if w := serve(h, "GET", "/v1/regions", map[string]string{"Authorization": "Bearer t0ken"}); w.Code != 200 || w.Body.String() != "[]\n" && w.Body.String() != "[]" {
		t.Errorf("no regions: %d %q", w.Code, w.Body)
	}

	single := mustNew(t, &Options{Reader: log, Log: log})
	if w := serve(single.Handler(nil), "GET", "/v1/regions", nil); w.Code != http.StatusNotFound {
		t.Errorf("single region: %d %s", w.Code, w.Body)
	}
}
