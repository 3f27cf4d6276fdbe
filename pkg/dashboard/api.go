package dashboard

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edgestatus"
	"github.com/fleetgate/fleetgate/pkg/events"
)

// Bounds of the data endpoints.
const (
	DefaultPage   = 50
	MaxPage       = 500
	MaxEdges      = 256
	DefaultRecent = 200
	MaxRecent     = 1000
)

// EdgesJSON is GET /v1/edges: every edge that serves a session, with its
// counts (all indexed sessions), and one page of sessions, optionally of
// one edge (?edge=), verdict (?verdict=) or class (?class=), ordered by
// edge, then most recently seen first.
type EdgesJSON struct {
	// Available is false when the controller reads no session bucket.
	Available bool `json:"available"`
	// Ready is false until the first listing of the bucket is complete.
	Ready     bool      `json:"ready"`
	ScannedAt time.Time `json:"scanned_at,omitzero"`
	Total     int       `json:"total"`
	Untracked int       `json:"untracked,omitempty"`
	Verdicts  Counts    `json:"verdicts"`
	// Classes counts the sessions by class (Class): the verdicts of the
	// sessions in use, and idle ones apart.
	Classes   Counts     `json:"classes"`
	IdleAfter int64      `json:"idle_after_ms"`
	Edges     []EdgeJSON `json:"edges"`
	// EdgesTruncated: more than MaxEdges edges; the ones with the most
	// sessions are listed.
	EdgesTruncated bool          `json:"edges_truncated,omitempty"`
	Matched        int           `json:"matched"`
	Offset         int           `json:"offset"`
	Limit          int           `json:"limit"`
	Sessions       []SessionJSON `json:"sessions"`
}

// EdgeJSON summarises the sessions an edge last served.
type EdgeJSON struct {
	ID       string    `json:"id"`
	Groups   []string  `json:"groups"`
	Sessions int       `json:"sessions"`
	Verdicts Counts    `json:"verdicts"`
	Classes  Counts    `json:"classes"`
	MinGen   uint64    `json:"min_applied_generation"`
	MaxGen   uint64    `json:"max_applied_generation"`
	LastSeen time.Time `json:"last_seen,omitzero"`
	// Stdio are the edge's own instances of stdio backends, and
	// ReportedAt when its status record was written (package
	// edgestatus); absent when it wrote none within its lifetime.
	Stdio      []edgestatus.Instance `json:"stdio,omitempty"`
	ReportedAt time.Time             `json:"reported_at,omitzero"`
}

// Counts are sessions by verdict.
type Counts map[string]int

func (d *Dashboard) serveEdges(w http.ResponseWriter, r *http.Request) {
	secure(w.Header())
	q := r.URL.Query()
	offset, err1 := intParam(q.Get("offset"), 0, 1<<30)
	limit, err2 := intParam(q.Get("limit"), DefaultPage, MaxPage)
	if err := errors.Join(err1, err2); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "edges: " + err.Error()})
		return
	}
	out := d.sessions.edges(sessionQuery{edge: q.Get("edge"), verdict: q.Get("verdict"), class: q.Get("class"),
		offset: offset, limit: max(limit, 1), now: d.now(), idleAfter: d.o.IdleAfter})
	out.Available = d.o.Sessions != nil
	withInstances(&out, d.instances.current(d.now()))
	writeJSON(w, http.StatusOK, out)
}

func intParam(s string, def, maxV int) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > maxV {
		return 0, fmt.Errorf("%q: want an integer in 0..%d", clip(s, 32), maxV)
	}
	return n, nil
}

// withInstances gives each edge of out its status record's instances,
// and lists the edges that reported a status but serve no session (up to
// MaxEdges edges in all).
func withInstances(out *EdgesJSON, st map[string]edgestatus.Record) {
	if len(st) == 0 {
		return
	}
	for i, e := range out.Edges {
		if r, ok := st[e.ID]; ok {
			out.Edges[i].Stdio, out.Edges[i].ReportedAt = r.Stdio, r.UpdatedAt
			delete(st, e.ID)
		}
	}
	for _, r := range st {
		if len(out.Edges) >= MaxEdges {
			out.EdgesTruncated = true
			break
		}
		out.Edges = append(out.Edges, EdgeJSON{ID: r.Edge, Groups: []string{}, Verdicts: Counts{}, Classes: Counts{},
			Stdio: r.Stdio, ReportedAt: r.UpdatedAt})
	}
	slices.SortFunc(out.Edges, func(a, b EdgeJSON) int { return strings.Compare(a.ID, b.ID) })
}

// sessionQuery selects the sessions of GET /v1/edges and classes them.
type sessionQuery struct {
	edge, verdict, class string
	offset, limit        int
	now                  time.Time
	idleAfter            time.Duration
}

// edges builds GET /v1/edges from the index.
func (x *sessionIndex) edges(q sessionQuery) EdgesJSON {
	edge, verdict, offset, limit := q.edge, q.verdict, q.offset, q.limit
	x.mu.Lock()
	out := EdgesJSON{Ready: x.ready, ScannedAt: x.scanned, Total: len(x.live) + x.untracked, Untracked: x.untracked,
		Verdicts: Counts{}, Classes: Counts{}, IdleAfter: q.idleAfter.Milliseconds(), Offset: offset, Limit: limit,
		Edges: []EdgeJSON{}, Sessions: []SessionJSON{}}
	byEdge := map[string]*EdgeJSON{}
	var match []SessionJSON
	for _, s := range x.live {
		s.Class = Class(s.Verdict, s.LastSeen, q.now, q.idleAfter)
		out.Verdicts[s.Verdict]++
		out.Classes[s.Class]++
		e := byEdge[s.Edge]
		if e == nil {
			e = &EdgeJSON{ID: s.Edge, Verdicts: Counts{}, Classes: Counts{}, MinGen: s.AppliedGeneration}
			byEdge[s.Edge] = e
		}
		e.Sessions++
		e.Verdicts[s.Verdict]++
		e.Classes[s.Class]++
		e.MinGen, e.MaxGen = min(e.MinGen, s.AppliedGeneration), max(e.MaxGen, s.AppliedGeneration)
		if s.LastSeen.After(e.LastSeen) {
			e.LastSeen = s.LastSeen
		}
		if !slices.Contains(e.Groups, s.Group) && len(e.Groups) < 8 {
			e.Groups = append(e.Groups, s.Group)
		}
		if (edge == "" || s.Edge == edge) && (verdict == "" || s.Verdict == verdict) && (q.class == "" || s.Class == q.class) {
			match = append(match, s)
		}
	}
	x.mu.Unlock()

	for _, e := range byEdge {
		slices.Sort(e.Groups)
		out.Edges = append(out.Edges, *e)
	}
	slices.SortFunc(out.Edges, func(a, b EdgeJSON) int {
		return cmp.Or(cmp.Compare(b.Sessions, a.Sessions), strings.Compare(a.ID, b.ID))
	})
	if len(out.Edges) > MaxEdges {
		out.Edges, out.EdgesTruncated = out.Edges[:MaxEdges], true
	}
	slices.SortFunc(out.Edges, func(a, b EdgeJSON) int { return strings.Compare(a.ID, b.ID) })
	slices.SortFunc(match, func(a, b SessionJSON) int {
		return cmp.Or(strings.Compare(a.Edge, b.Edge), b.LastSeen.Compare(a.LastSeen), strings.Compare(a.ID, b.ID))
	})
	out.Matched = len(match)
	if offset < len(match) {
		out.Sessions = match[offset:min(len(match), offset+limit)]
	}
	return out
}

// RecentJSON is GET /v1/events/recent: up to limit events before
// generation before (default: the newest), oldest first, in brief (as the
// stream sends them; GET /v1/events has the full ones), and the log's
// bounds.
type RecentJSON struct {
	First  uint64        `json:"first"`
	Last   uint64        `json:"last"`
	Events []StreamEvent `json:"events"`
}

func (d *Dashboard) serveRecent(w http.ResponseWriter, r *http.Request) {
	secure(w.Header())
	q := r.URL.Query()
	limit, err := intParam(q.Get("limit"), DefaultRecent, MaxRecent)
	if err != nil || limit == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("events recent: limit: want 1..%d", MaxRecent)})
		return
	}
	var before uint64
	if s := q.Get("before"); s != "" {
		if before, err = strconv.ParseUint(s, 10, 64); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("events recent: before %q: want a generation", clip(s, 32))})
			return
		}
	}
	out, err := d.recent(r, limit, before)
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// recent reads the window; a purge between the bounds and the read moves
// the window up once.
func (d *Dashboard) recent(r *http.Request, limit int, before uint64) (RecentJSON, error) {
	for try := 0; ; try++ {
		first, last, err := d.o.Log.Bounds(r.Context())
		if err != nil {
			return RecentJSON{}, fmt.Errorf("events recent: %w", err)
		}
		out := RecentJSON{First: first, Last: last, Events: []StreamEvent{}}
		end := last + 1
		if before != 0 && before < end {
			end = before
		}
		if last == 0 || end <= first {
			return out, nil
		}
		from := first
		if end-first > uint64(limit) {
			from = end - uint64(limit)
		}
		evs, err := d.o.Log.Events(r.Context(), from, int(end-from))
		if errors.Is(err, events.ErrPurged) && try == 0 {
			continue
		}
		if err != nil {
			return RecentJSON{}, fmt.Errorf("events recent from %d: %w", from, err)
		}
		for _, ev := range evs {
			out.Events = append(out.Events, Brief(ev))
		}
		return out, nil
	}
}
