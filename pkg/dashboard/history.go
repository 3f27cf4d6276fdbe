package dashboard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/timeline"
)

// StatusSource is the controller's record of the changes of the status it
// reports (the live source of the timelines); *timeline.Recorder is one.
type StatusSource interface {
	// Since returns the kept changes after sequence number seq and the
	// last sequence number.
	Since(seq uint64) ([]timeline.Change, uint64)
	// Watch signals (coalesced) when a change is recorded.
	Watch() (changed <-chan struct{}, stop func())
}

// Bounds of the status history and of GET /v1/timeline.
const (
	// SeedEvents is how many of the log's newest events the history is
	// read from when the dashboard starts.
	SeedEvents = 1000
	// MaxChangesPerBackend is the changes of one backend kept (the
	// oldest go first).
	MaxChangesPerBackend = 512
	// MaxHistoryBackends is the backends whose changes are kept.
	MaxHistoryBackends = 4096
	DefaultWindow      = time.Hour
	MinWindow          = 10 * time.Second
	MaxWindow          = 7 * 24 * time.Hour
)

type backendKey struct{ group, backend string }

// history holds every backend's status changes: those of the log (the
// events the dashboard follows) and the live ones (Options.Statuses).
type history struct {
	mu      sync.Mutex
	by      map[backendKey][]timeline.Change
	origin  time.Time // when the log began, once its first event was read
	dropped int       // changes of backends beyond MaxHistoryBackends
}

func newHistory() *history { return &history{by: map[backendKey][]timeline.Change{}} }

func (h *history) add(c timeline.Change) {
	k := backendKey{c.Group, c.Backend}
	h.mu.Lock()
	defer h.mu.Unlock()
	l, ok := h.by[k]
	if !ok && len(h.by) >= MaxHistoryBackends {
		h.dropped++
		return
	}
	if len(l) >= MaxChangesPerBackend {
		l = slices.Delete(l, 0, len(l)-MaxChangesPerBackend+1)
	}
	h.by[k] = append(l, c)
}

// addEvent adds the change an event of the log makes, if any.
func (h *history) addEvent(ev events.EventJSON) {
	if c, ok := timeline.FromEvent(ev); ok {
		c.Reason = clip(c.Reason, maxSummary)
		h.add(c)
	}
}

func (h *history) changes(group, backend string) []timeline.Change {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.by[backendKey{group, backend}])
}

// seed reads the newest SeedEvents events of the log up to generation
// upTo into the history.
func (d *Dashboard) seed(ctx context.Context, upTo uint64) error {
	first, last, err := d.o.Log.Bounds(ctx)
	if err != nil {
		return fmt.Errorf("bounds: %w", err)
	}
	last = min(last, upTo)
	if last == 0 || last < first {
		return nil
	}
	from := first
	if last-first >= SeedEvents {
		from = last - SeedEvents + 1
	}
	evs, err := d.o.Log.Events(ctx, from, int(last-from+1))
	if err != nil {
		return fmt.Errorf("events %d..%d: %w", from, last, err)
	}
	for _, ev := range evs {
		if ev.Generation == first && !ev.Time.IsZero() {
			d.history.mu.Lock()
			d.history.origin = ev.Time
			d.history.mu.Unlock()
		}
		d.history.addEvent(ev)
	}
	return nil
}

// StatusFrame is the data of FrameStatus: a change of the status the
// controller reports for a backend (the changes the log carries come as
// events as well).
type StatusFrame struct {
	Time    time.Time `json:"time"`
	Group   string    `json:"group"`
	Backend string    `json:"backend"`
	From    string    `json:"from,omitempty"`
	To      string    `json:"to"`
	Reason  string    `json:"reason,omitempty"`
}

// followStatus adds the controller's live changes to the history and
// sends each to the streams.
func (d *Dashboard) followStatus(ctx context.Context) error {
	changed, stop := d.o.Statuses.Watch()
	defer stop()
	var seq uint64
	for {
		cs, last := d.o.Statuses.Since(seq)
		seq = last
		for _, c := range cs {
			c.Reason = clip(c.Reason, maxSummary)
			d.history.add(c)
			d.hub.broadcast(frame(FrameStatus, 0, StatusFrame{Time: c.At, Group: c.Group, Backend: c.Backend,
				From: c.From, To: c.To, Reason: c.Reason}))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

// TimelineJSON is GET /v1/timeline: per backend of the fleet state, its
// status over [from, to] in runs (timeline.Segments of the log's changes
// and the controller's live ones).
type TimelineJSON struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// SinceLogBegan: the window was cut to begin where the log did.
	SinceLogBegan bool              `json:"since_log_began,omitempty"`
	Backends      []BackendTimeline `json:"backends"`
}

// BackendTimeline is one backend's row of TimelineJSON.
type BackendTimeline struct {
	Group   string `json:"group"`
	Backend string `json:"backend"`
	// Status is the last status the history knows (the log's when it
	// knows no change).
	Status     string             `json:"status"`
	LastChange time.Time          `json:"last_change,omitzero"`
	Segments   []timeline.Segment `json:"segments"`
}

var errWindow = errors.New("timeline: window: want a duration from 10s to 168h")

func (d *Dashboard) serveTimeline(w http.ResponseWriter, r *http.Request) {
	secure(w.Header())
	window := DefaultWindow
	if s := r.URL.Query().Get("window"); s != "" {
		v, err := time.ParseDuration(s)
		if err != nil || v < MinWindow || v > MaxWindow || len(s) > 32 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": errWindow.Error()})
			return
		}
		window = v
	}
	writeJSON(w, http.StatusOK, d.timelines(d.o.Reader.State(), window, d.now()))
}

// timelines builds GET /v1/timeline at now.
func (d *Dashboard) timelines(s *events.State, window time.Duration, now time.Time) TimelineJSON {
	out := TimelineJSON{From: now.Add(-window), To: now, Backends: []BackendTimeline{}}
	d.history.mu.Lock()
	origin := d.history.origin
	d.history.mu.Unlock()
	if !origin.IsZero() && origin.Add(-time.Second).After(out.From) {
		out.From, out.SinceLogBegan = origin.Add(-time.Second), true
		if now.Sub(out.From) < MinWindow {
			out.From = now.Add(-MinWindow)
		}
	}
	for _, g := range s.GroupNames() {
		grp := s.Groups[g]
		for _, name := range grp.BackendNames() {
			cs := d.history.changes(g, name)
			current := grp.Backends[name].Status
			if m := timeline.Merge(cs); len(m) > 0 {
				current = m[len(m)-1].To
			}
			out.Backends = append(out.Backends, BackendTimeline{Group: g, Backend: name, Status: cmp.Or(current, timeline.Unknown),
				LastChange: timeline.Last(cs), Segments: timeline.Segments(cs, current, out.From, now)})
		}
	}
	return out
}
