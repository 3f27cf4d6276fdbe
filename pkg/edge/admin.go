package edge

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/session"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/convergence"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/region"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// SessionInfo is one session as GET /v1/sessions reports it.
type SessionInfo struct {
	ID              string `json:"id"`
	Kind            string `json:"kind"` // extension: "session" or "listen"
	ProtocolVersion string `json:"protocol_version"`
	// AppliedGeneration is the generation of the fleet state whose view
	// the session was last given (or found current at).
	AppliedGeneration uint64 `json:"applied_generation"`
	// AppliedRegions is, on an edge serving merged regional logs, the
	// generation of each region's log that view reflects
	// (AppliedGeneration is then their sum); absent on one log.
	AppliedRegions map[string]uint64 `json:"applied_regions,omitempty"`
	// Digest is the catalog digest of the tools the session is served.
	Digest string `json:"digest"`
	// Verdict is the convergence verdict of the session's evidence
	// (convergence.Explain) and VerdictReason why.
	Verdict       string    `json:"verdict"`
	VerdictReason string    `json:"verdict_reason,omitempty"`
	Created       time.Time `json:"created"`
	Tools         int       `json:"tools"`
	// Edge is the edge serving the session (extension).
	Edge string `json:"edge,omitempty"`
	// Convergence is the evidence itself; only GET /v1/sessions/{id}.
	Convergence *convergence.Record `json:"convergence,omitempty"`
}

// ViewInfo is GET /v1/view (an extension): the served view's summary.
type ViewInfo struct {
	Group      string              `json:"group"`
	Generation uint64              `json:"generation"`
	Regions    map[string]uint64   `json:"regions,omitempty"` // merged regional logs: each one's generation
	Digest     string              `json:"digest"`
	Tools      []string            `json:"tools"`
	Collisions []catalog.Collision `json:"collisions"`
	Rejected   []catalog.Rejection `json:"rejected"`
	Dropped    []string            `json:"dropped,omitempty"`
	// Mirrors judges each merged region's log (its mirror's activity).
	Mirrors []region.MirrorReport `json:"mirrors,omitempty"`
}

// Sessions returns the live sessions sorted by id.
func (e *Edge) Sessions() []SessionInfo {
	all, cur := e.reg.Snapshot()
	out := make([]SessionInfo, 0, len(all))
	for _, s := range all {
		out = append(out, e.info(s, cur))
	}
	slices.SortFunc(out, func(a, b SessionInfo) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (e *Edge) info(s *session.Session, cur *view.Served) SessionInfo {
	ap := s.Served()
	gen, regions := ap.Gen, ap.Regions
	target := e.confirmed.vector()
	if ap == cur {
		gen = max(gen, e.confirmed.Load())
		regions = target
	}
	conv := s.Record().Convergence()
	verdict, reason := convergence.Explain(conv)
	if target != nil {
		// A view merged from regional logs: converged only when it
		// reflects every region's generation the edge has confirmed.
		verdict, reason = region.Verdict(verdict, reason, regions, target, region.MirrorsOf(e.reader))
	}
	return SessionInfo{ID: s.ID(), Kind: s.Kind(), ProtocolVersion: s.ProtocolVersion(), AppliedGeneration: gen,
		AppliedRegions: regions, Digest: ap.Era(s.ProtocolVersion()).Catalog.Digest, Verdict: string(verdict), VerdictReason: reason,
		Created: s.Created(), Tools: len(ap.Tools), Edge: e.opts.ID}
}

// View returns the summary of the served view.
func (e *Edge) View() ViewInfo {
	cur := e.current()
	v := ViewInfo{Group: e.opts.Group, Generation: max(cur.Gen, e.confirmed.Load()), Regions: e.confirmed.vector(), Digest: cur.Digest(),
		Collisions: cur.Catalog.Collisions, Rejected: cur.Catalog.Rejected, Dropped: cur.Dropped, Tools: []string{}, Mirrors: region.ReportOf(e.reader)}
	for _, t := range cur.Catalog.Tools {
		v.Tools = append(v.Tools, t.Exposed)
	}
	return v
}

func (e *Edge) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !e.Ready() {
			http.Error(w, "not ready: catching up with the event log", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	mux.HandleFunc("GET /v1/sessions", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, e.Sessions())
	})
	// This edge's own instance of each stdio backend it serves (the
	// sessions to them are the edge's, pooled): state, pid, restarts and
	// why the last one ended, or why it cannot run here.
	mux.HandleFunc("GET /v1/sessions/stdio", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"edge": e.opts.ID, "instances": e.pool.StdioStatus()})
	})
	mux.HandleFunc("GET /v1/sessions/{id}", func(w http.ResponseWriter, r *http.Request) {
		s := e.reg.Lookup(r.PathValue("id"))
		if s == nil {
			if info, ok := e.storedInfo(r.Context(), r.PathValue("id")); ok {
				writeJSON(w, http.StatusOK, info)
				return
			}
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no session " + r.PathValue("id")})
			return
		}
		info := e.info(s, e.current())
		conv := s.Record().Convergence()
		info.Convergence = &conv
		writeJSON(w, http.StatusOK, info)
	})
	mux.HandleFunc("GET /v1/view", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, e.View())
	})
	mux.HandleFunc("DELETE /v1/signins", e.signInWeb.ServeRevoke) // package signins (a nil Web: 404)
	mux.Handle("GET /metrics", promhttp.HandlerFor(e.m.reg, promhttp.HandlerOpts{}))
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// storedInfo describes a session this edge does not serve from its
// stored record (another edge serves it, or none does at the moment).
func (e *Edge) storedInfo(ctx context.Context, id string) (SessionInfo, bool) {
	if e.recs == nil || sessionstore.ValidateID(id) != nil {
		return SessionInfo{}, false
	}
	rec, _, err := e.recs.Store().Get(ctx, id)
	if err != nil || rec.Group != e.opts.Group {
		return SessionInfo{}, false
	}
	verdict, reason := convergence.Explain(rec.Convergence)
	conv := rec.Convergence
	return SessionInfo{ID: rec.ID, Kind: session.KindSession, ProtocolVersion: rec.ProtocolVersion,
		AppliedGeneration: rec.AppliedGeneration, Digest: rec.RegistryDigest, Verdict: string(verdict),
		VerdictReason: reason, Created: rec.CreatedAt, Tools: conv.Traversal.Tools, Edge: rec.Edge,
		Convergence: &conv}, true
}
