package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// StreamEvent is the data of FrameEvent: an event in brief. The page
// fetches the full event (GET /v1/events?from=G&limit=1) when its details
// are opened.
type StreamEvent struct {
	Generation uint64    `json:"generation"`
	Time       time.Time `json:"time"`
	Kind       string    `json:"kind"`
	Group      string    `json:"group,omitempty"`
	Backend    string    `json:"backend,omitempty"`
	Summary    string    `json:"summary"`
	// Health is the payload of a health_changed event, so the page can
	// show the new status at once.
	Health *events.HealthChangeJSON `json:"health,omitempty"`
	Error  string                   `json:"error,omitempty"`
}

// maxSummary bounds a summary, in runes.
const maxSummary = 240

// Brief converts an event to its stream form.
func Brief(ev events.EventJSON) StreamEvent {
	out := StreamEvent{Generation: ev.Generation, Time: ev.Time, Kind: ev.Kind, Group: ev.Group, Backend: ev.Backend,
		Summary: clip(Summary(ev), maxSummary), Error: clip(ev.Error, maxSummary)}
	if ev.Health != nil {
		h := *ev.Health
		h.Reason = clip(h.Reason, maxSummary)
		out.Health = &h
	}
	return out
}

// Summary is a one-line description of an event.
func Summary(ev events.EventJSON) string {
	switch {
	case ev.Error != "" && ev.Kind == "":
		return "undecodable event: " + ev.Error
	case ev.Kind == "backend_added" && ev.Config != nil:
		return fmt.Sprintf("backend added: %s (%s)", ev.Config.URL, orDefault(ev.Config.Transport, "streamable-http"))
	case ev.Kind == "backend_added":
		return "backend added"
	case ev.Kind == "backend_removed":
		return "backend removed"
	case ev.Kind == "health_changed" && ev.Health != nil:
		h := ev.Health
		s := fmt.Sprintf("%s → %s", orDefault(h.From, "unknown"), orDefault(h.To, "unknown"))
		if h.Reason != "" {
			s += ": " + h.Reason
		}
		return s
	case ev.Kind == "catalog_changed" && ev.Catalog != nil:
		c := ev.Catalog
		s := fmt.Sprintf("catalog: %s, %s, %s, %s", plural(len(c.Tools), "tool"), plural(c.Resources, "resource"),
			plural(c.Prompts, "prompt"), shortDigest(c.Digest))
		if n := len(c.InvalidTools); n > 0 {
			s += fmt.Sprintf(" (%s refused)", plural(n, "invalid tool"))
		}
		return s
	case ev.Kind == "policy_changed" && ev.Authorization != nil:
		a := ev.Authorization
		var sec struct {
			Default string            `json:"default"`
			Rules   []json.RawMessage `json:"rules"`
		}
		if len(a.Section) == 0 || string(a.Section) == "null" {
			return "policy removed: everything allowed"
		}
		if err := json.Unmarshal(a.Section, &sec); err != nil {
			return "policy: unreadable section"
		}
		return fmt.Sprintf("policy: default %s, %s, %s", orDefault(sec.Default, "allow"), plural(len(sec.Rules), "rule"), shortDigest(a.Digest))
	case ev.Error != "":
		return ev.Kind + ": " + ev.Error
	default:
		return strings.ReplaceAll(ev.Kind, "_", " ")
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// shortDigest keeps "sha256:" and 12 hex digits.
func shortDigest(d string) string {
	if d == "" {
		return "no digest"
	}
	if len(d) > 19 {
		return d[:19] + "…"
	}
	return d
}

// clip cuts s to n runes, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// follow sends every new event of the log to the streams, in order.
func (d *Dashboard) follow(ctx context.Context) error {
	changed, stop := d.o.Reader.Watch()
	defer stop()
	last := d.o.Reader.State().Generation
	if err := d.seed(ctx, last); err != nil && ctx.Err() == nil {
		d.report(fmt.Errorf("dashboard: status history from the log: %w", err))
	}
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-retry:
		}
		retry = nil
		if err := d.catchUp(ctx, &last); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			d.report(fmt.Errorf("dashboard: read events from %d: %w", last+1, err))
			retry = time.After(d.o.RetryDelay)
		}
	}
}

// catchUp sends the events after *last up to the follower's generation;
// more than MaxCatchUp of them, or a purged run, is a reset.
func (d *Dashboard) catchUp(ctx context.Context, last *uint64) error {
	for {
		head := d.o.Reader.State().Generation
		if head <= *last {
			return nil
		}
		if head-*last > MaxCatchUp {
			d.hub.broadcast(frame(FrameReset, head, map[string]uint64{"generation": head}))
			*last = head
			return nil
		}
		evs, err := d.read(ctx, *last+1, head)
		if errors.Is(err, events.ErrPurged) {
			d.hub.broadcast(frame(FrameReset, head, map[string]uint64{"generation": head}))
			*last = head
			return nil
		}
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			return fmt.Errorf("the log answers no events up to %d yet", head)
		}
		for _, ev := range evs {
			if ev.Generation <= *last {
				continue
			}
			d.history.addEvent(ev)
			d.hub.broadcast(frame(FrameEvent, ev.Generation, Brief(ev)))
			d.metrics.sent(ev.Time)
			*last = ev.Generation
		}
	}
}

// directReads is the longest run of new events read one by one (direct
// gets); a longer one is read with a scan of the log.
const directReads = 8

// read returns the events from..to: a short run by direct gets, a longer
// one, or one with an event a direct get cannot decode, by a scan (which
// carries undecodable events with their error).
func (d *Dashboard) read(ctx context.Context, from, to uint64) ([]events.EventJSON, error) {
	if to-from < directReads {
		out := make([]events.EventJSON, 0, to-from+1)
		for g := from; g <= to; g++ {
			ev, err := d.o.Log.Event(ctx, g)
			if errors.Is(err, events.ErrPurged) {
				return nil, err
			}
			if err != nil {
				break
			}
			out = append(out, events.ToJSON(ev))
		}
		if uint64(len(out)) == to-from+1 {
			return out, nil
		}
	}
	return d.o.Log.Events(ctx, from, int(to-from+1))
}
