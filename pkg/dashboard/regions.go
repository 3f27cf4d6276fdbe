package dashboard

import (
	"context"
	"net/http"
	"time"

	"github.com/fleetgate/fleetgate/pkg/region"
)

// RegionsTimeout bounds one call of Options.Regions for GET /v1/regions.
const RegionsTimeout = 5 * time.Second

// serveRegions is GET /v1/regions: the regions of a multi-region fleet as
// this controller's NATS holds them (region.Status, its own log and the
// mirrors of the others), or 404 for a single-region controller.
func (d *Dashboard) serveRegions(w http.ResponseWriter, r *http.Request) {
	secure(w.Header())
	if d.o.Regions == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "regions: this controller serves a single region"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), RegionsTimeout)
	defer cancel()
	out := d.o.Regions(ctx)
	if len(out) > region.MaxRegions {
		out = out[:region.MaxRegions]
	}
	if out == nil {
		out = []region.Status{}
	}
	writeJSON(w, http.StatusOK, out)
}
